"""LoCoMo sessions spoken aloud: one 16 kHz mono WAV per session, one espeak-ng voice per speaker.

Each dialogue turn is spoken by espeak-ng (Debian ``espeak-ng``) with its speaker's voice, the turns
are laid end to end with ``PAUSE_S`` of silence between them, and the session is resampled to
16 kHz by sox (Debian ``sox``). Each turn's exact span in the WAV comes from the sample counts, and
goes to a JSON file beside the WAV. What is spoken is the turn's text only: a shared image's
caption is not audible, so it is not in the recording, and emoji and other symbols are left out
(espeak-ng would read their names aloud: nobody says "grinning face").

The WAV's mtime is the session's start plus the WAV's length, so that a probe that takes a file's
start as its mtime minus its duration (``perception.sources.media.probe``) puts the recording at
the session's time.

Renders are cached under ``bench.fixtures.cache_dir() / "locomo-spoken"``, one folder per
conversation, each file named by a hash of everything that shapes it (the turns' texts and
speakers, the voices, the pauses, ``espeak-ng --version`` and ``sox --version``), so a changed
input renders again and an unchanged one never does.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.fixtures import FixtureUnavailable

RENDER_VERSION = 1  # bump when the rendering changes in a way the hash cannot see
SAMPLE_RATE = 16000
PAUSE_S = 0.7  # silence between two turns
EDGE_S = 0.3  # silence before the first turn and after the last
SILENCE_LEVEL = 64  # int16 amplitude under which espeak-ng's own lead-in and tail count as silence
ESPEAK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Voice:
    """An espeak-ng voice: ``name`` is a language voice with a variant (``en-us+f3``)."""

    name: str
    pitch: int  # espeak-ng -p, 0-99
    rate_wpm: int  # espeak-ng -s, words per minute


# One pair per conversation (the n-th conversation takes pair n modulo their number), in different
# pitches and rates; 1 (two female voices) and 5 (two male ones) are same-gender pairs. Every voice
# must be told apart from every other one, since all conversations go into one store, as a life's
# recordings do: chosen from 42 espeak-ng variants by the speaker embedder's own similarity of one
# voice's two texts (0.955-0.983 here) against another voice's (at most 0.81 among these twelve).
# Variants of one engine are often alike to it: en-gb+f2 and en-gb+m6 were 0.985, en-us+f3 and
# en-us+f4 0.969, as alike as a voice to itself, so no speaker recognition could keep them apart.
VOICE_PAIRS: tuple[tuple[Voice, Voice], ...] = (
    (Voice("en-us+Alicia", 55, 165), Voice("en-us+Annie", 45, 155)),
    (Voice("en-us+travis", 45, 170), Voice("en-us+anika", 60, 160)),
    (Voice("en-us+Hugo", 40, 160), Voice("en-us+grandma", 55, 150)),
    (Voice("en-us+f4", 50, 175), Voice("en-us+norbert", 40, 160)),
    (Voice("en-us+Storm", 50, 165), Voice("en-us+Lee", 35, 155)),
    (Voice("en-us+Tweaky", 55, 170), Voice("en-us+klatt3", 45, 160)),
)


@dataclass(frozen=True)
class TurnSpan:
    """Where one dialogue turn is heard in its session's WAV (seconds from the WAV's start)."""

    dia_id: str
    speaker: str
    text: str  # what was spoken (the turn's text without symbols)
    start_s: float
    end_s: float


@dataclass(frozen=True)
class SpokenSession:
    conversation: str  # the conversation's key
    session_index: int
    path: Path  # the WAV (resolved)
    started_ts: float  # the session's start, seconds since the epoch
    duration_s: float
    turns: tuple[TurnSpan, ...]  # in order; turns with nothing to say are left out

    @property
    def end_ts(self) -> float:
        return self.started_ts + self.duration_s


class SynthUnavailable(FixtureUnavailable):
    """espeak-ng or sox is missing or failed; the message says what to install."""


def voices_for(speakers: Sequence[str], conversation_index: int) -> dict[str, Voice]:
    pair = VOICE_PAIRS[conversation_index % len(VOICE_PAIRS)]
    return {name: pair[i % 2] for i, name in enumerate(speakers)}


def spoken_text(text: str) -> str:
    """The words of a turn as they are said: symbols (emoji), format characters and variation
    selectors removed, whitespace collapsed."""
    kept = (
        ch
        for ch in text
        if unicodedata.category(ch) not in ("So", "Cf", "Cs", "Co")
        and not 0xFE00 <= ord(ch) <= 0xFE0F
    )
    return " ".join("".join(kept).split())


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SynthUnavailable(
            f"{name} not found: the spoken LoCoMo bench renders speech with espeak-ng and sox; "
            "install them with: sudo apt-get install espeak-ng sox (or `make xtools` as root)"
        )
    return path


def _version(tool: str) -> str:
    try:
        done = subprocess.run(
            [_tool(tool), "--version"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise SynthUnavailable(
            f"{tool} --version failed ({e}); reinstall it: sudo apt-get install {tool}"
        ) from e
    return (done.stdout or done.stderr).strip()


def require_tools() -> str:
    """``espeak-ng --version`` and ``sox --version``; ``SynthUnavailable`` saying what to install
    when either is missing."""
    return _version("espeak-ng") + "\n" + _version("sox")


def _variants() -> set[str]:
    """espeak-ng's variant names (``f3``, ``m7``, ``klatt``...): an unknown variant makes espeak-ng fall
    back to its default voice without a word, so each voice is checked before use."""
    done = subprocess.run(
        [_tool("espeak-ng"), "--voices=variant"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return {
        line.split()[4].removeprefix("!v/")
        for line in done.stdout.splitlines()[1:]
        if len(line.split()) >= 5
    }


def check_voices(voices: Sequence[Voice]) -> None:
    known = _variants()
    for v in voices:
        variant = v.name.partition("+")[2]
        if variant and variant not in known:
            raise ValueError(
                f"espeak-ng has no variant {variant!r} (voice {v.name!r}); "
                f"choose one of: {', '.join(sorted(known))}"
            )


def _speak(text: str, voice: Voice, workdir: Path, n: int):
    """One turn as int16 samples at espeak-ng's rate, without its silent lead-in and tail."""
    import wave

    import numpy as np

    out = workdir / f"turn-{n}.wav"
    cmd = [
        _tool("espeak-ng"),
        "-v",
        voice.name,
        "-p",
        str(voice.pitch),
        "-s",
        str(voice.rate_wpm),
        "-w",
        str(out),
        "--stdin",
    ]
    try:  # the text goes through stdin: never a shell, never an argument espeak-ng could read as an option
        subprocess.run(
            cmd,
            input=text.encode("utf-8"),
            capture_output=True,
            timeout=ESPEAK_TIMEOUT_S,
            check=True,
        )
        with wave.open(str(out), "rb") as w:
            rate, samples = (
                w.getframerate(),
                np.frombuffer(w.readframes(w.getnframes()), dtype="<i2"),
            )
    except (OSError, subprocess.SubprocessError, EOFError, wave.Error) as e:
        raise SynthUnavailable(
            f"espeak-ng failed on a turn with voice {voice.name!r} ({e}); check that "
            "`espeak-ng -v en-us 'hello' -w /tmp/x.wav` works"
        ) from e
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > SILENCE_LEVEL)
    return rate, (samples[loud[0] : loud[-1] + 1] if len(loud) else samples[:0])


def _cache_key(session, voices: dict[str, Voice], tools: str) -> str:
    payload = {
        "version": RENDER_VERSION,
        "tools": tools,
        "pause_s": PAUSE_S,
        "edge_s": EDGE_S,
        "rate": SAMPLE_RATE,
        "silence": SILENCE_LEVEL,
        "voices": {k: asdict(v) for k, v in sorted(voices.items())},
        "turns": [[t.dia_id, t.speaker, spoken_text(t.text)] for t in session.turns],
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


def _render(
    session, voices: dict[str, Voice], wav: Path, workdir: Path
) -> tuple[list[TurnSpan], float]:
    """Speak the session into ``wav`` (16 kHz mono int16); returns the turn spans and the length."""
    import wave
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    spoken = [(t, spoken_text(t.text)) for t in session.turns]
    spoken = [(t, text) for t, text in spoken if text]
    fallback = next(
        iter(voices.values())
    )  # a turn by someone not in the speaker list (not expected)
    with ThreadPoolExecutor(
        max_workers=os.cpu_count() or 2
    ) as pool:  # one espeak-ng process per turn
        audio = list(
            pool.map(
                lambda a: _speak(a[1][1], voices.get(a[1][0].speaker, fallback), workdir, a[0]),
                enumerate(spoken),
            )
        )
    rates = {rate for rate, _ in audio}
    if len(rates) > 1:
        raise SynthUnavailable(
            f"espeak-ng wrote WAVs at several rates {sorted(rates)}; expected one"
        )
    rate = rates.pop() if rates else SAMPLE_RATE
    pause, edge = np.zeros(round(PAUSE_S * rate), "<i2"), np.zeros(round(EDGE_S * rate), "<i2")
    parts, spans, at = [edge], [], len(edge)  # ``at``: samples so far, so the spans are exact
    for k, ((turn, text), (_, samples)) in enumerate(zip(spoken, audio)):
        if k:
            parts.append(pause)
            at += len(pause)
        spans.append(
            TurnSpan(turn.dia_id, turn.speaker, text, at / rate, (at + len(samples)) / rate)
        )
        parts.append(samples)
        at += len(samples)
    parts.append(edge)
    raw = workdir / "session-raw.wav"
    with wave.open(str(raw), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.concatenate(parts).tobytes())
    part = wav.with_name(
        f"{wav.name}.{os.getpid()}.part"
    )  # one per process: two may speak it at once
    try:  # -D: no dither, which is random, so the same text gives the same file (and clip ids)
        subprocess.run(
            [
                _tool("sox"),
                "-D",
                "-V1",
                str(raw),
                "-t",
                "wav",
                "-r",
                str(SAMPLE_RATE),
                "-c",
                "1",
                "-b",
                "16",
                str(part),
            ],
            capture_output=True,
            timeout=600,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise SynthUnavailable(
            f"sox could not resample {raw} to {SAMPLE_RATE} Hz ({e}); check `sox --version`"
        ) from e
    with wave.open(str(part), "rb") as w:
        duration_s = w.getnframes() / w.getframerate()
    part.replace(wav)  # atomic: a killed render leaves no half file
    return spans, duration_s


def _read_spans(path: Path) -> tuple[list[TurnSpan], float] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [TurnSpan(**t) for t in data["turns"]], float(data["duration_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def render_session(
    conversation: str,
    session,
    voices: dict[str, Voice],
    folder: Path,
    progress: Callable[[str], None] = lambda m: None,
) -> SpokenSession:
    """The session as a WAV in ``folder`` (rendered, or taken from an earlier render of the same
    inputs), with its mtime set to the session's start plus its length."""
    import wave

    tools = require_tools()
    key = _cache_key(session, voices, tools)
    folder.mkdir(parents=True, exist_ok=True)
    wav = folder / f"session_{session.index:02d}-{key}.wav"
    spans_path = wav.with_suffix(".json")
    cached = _read_spans(spans_path) if wav.is_file() else None
    if cached is not None:
        try:
            with wave.open(str(wav), "rb") as w:
                ok = abs(w.getnframes() / w.getframerate() - cached[1]) < 1e-9
        except (OSError, EOFError, wave.Error):
            ok = False
        cached = cached if ok else None
    if cached is None:
        progress(
            f"rendering {conversation} session {session.index} ({len(session.turns)} turns) -> {wav}"
        )
        with tempfile.TemporaryDirectory(prefix="mnemo-speak-") as tmp:
            spans, duration_s = _render(session, voices, wav, Path(tmp))
        record = {
            "conversation": conversation,
            "session": session.index,
            "started_at": session.started_at.isoformat(),
            "duration_s": duration_s,
            "voices": {k: asdict(v) for k, v in voices.items()},
            "turns": [asdict(s) for s in spans],
        }
        part = spans_path.with_name(f"{spans_path.name}.{os.getpid()}.part")
        part.write_text(json.dumps(record, indent=1, ensure_ascii=False), encoding="utf-8")
        part.replace(spans_path)
    else:
        spans, duration_s = cached
        progress(f"{conversation} session {session.index}: cached {wav}")
    started_ts = session.started_at.timestamp()
    end_ns = round((started_ts + duration_s) * 1e9)
    os.utime(
        wav, ns=(end_ns, end_ns)
    )  # set on every use: a copy or a touch must not move the recording
    return SpokenSession(
        conversation, session.index, wav.resolve(), started_ts, duration_s, tuple(spans)
    )


def render_conversation(
    conv,
    conversation_index: int,
    root: Path | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> tuple[dict[str, Voice], list[SpokenSession]]:
    """Every session of ``conv`` (a ``bench.datasets.locomo.Conversation``) spoken, in order, in
    one folder per conversation under ``root`` (default: the cache)."""
    if root is None:
        from bench.fixtures import cache_dir

        root = cache_dir() / "locomo-spoken"
    voices = voices_for(conv.speakers, conversation_index)
    check_voices(list(voices.values()))
    return voices, [
        render_session(conv.key, s, voices, root / conv.key, progress) for s in conv.sessions
    ]
