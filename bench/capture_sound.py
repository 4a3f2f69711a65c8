"""The ordinary hour's call, heard: ``mnemo bench capture --audio``.

A real PulseAudio server (``bench/pulse_server.py``) stands in for the sound card. The call is a
real recorded one (pyannote's ``sample.wav``: Diane and Sheila): Diane is the owner, her turns
played into the virtual microphone; Sheila is the far side, her turns played through the sink;
and the microphone hears the loudspeakers 150 ms late (the server's loopback module: a laptop
call without headphones). The daemon records both streams (``capture --audio``) and its watcher
ingests them; ``figures`` then reads the store:

- ``wer_mic`` / ``wer_out``: the word error rate of what each stream's memories say against the
  speaker's own turns in the script (``sample.stm``), every time the call was played;
- ``owner_attribution``: of the words said in speech memories, the share attributed to the right
  side (Diane's stream to the owner, Sheila's to anyone else);
- ``duplicated_sentences``: sentences of the script found in memories of both streams
  (``heard_twice``);
- ``audio_mb_per_hour``: the sound files stored, per hour of the session;
- ``speech_lag_s``: from the end of the first sentence played to a memory that holds it.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import numpy as np

from bench.pulse_server import CALL_SINK, MIC_FEED, PulseServer

OWNER, FAR = "Diane", "Sheila"  # the recorded call's two speakers: the owner and the far side
ECHO_MS = 150  # the loudspeakers heard by the microphone this late
_WORD = re.compile(r"[a-z0-9']+")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


class CallSound:
    """The server, the call's two tracks, and what was played when."""

    def __init__(self, workdir: Path) -> None:
        import soundfile as sf

        from bench.fixtures import pyannote_sample, read_stm

        folder = pyannote_sample()
        call, self.rate = sf.read(folder / "sample.wav", dtype="float32")
        self.turns = read_stm(folder / "sample.stm")  # (speaker, start_s, end_s, text)
        self.call_s = len(call) / self.rate
        self.tracks: dict[str, Path] = {}
        for who in (OWNER, FAR):
            track = np.zeros_like(call)
            for speaker, start, end, _ in self.turns:
                if speaker == who:
                    a, b = int(start * self.rate), int(end * self.rate)
                    track[a:b] = call[a:b]
            self.tracks[who] = workdir / f"{who.lower()}.wav"
            sf.write(self.tracks[who], track, self.rate)
        self.server = PulseServer(workdir / "pulse")
        self.env = {
            k: self.server.env[k]
            for k in ("PULSE_SERVER", "PULSE_RUNTIME_PATH", "PULSE_STATE_PATH", "PULSE_COOKIE")
        }
        self.played: list[float] = []  # when each play of the call began (wall clock)
        self.first_heard: float | None = None  # when the first sentence's memory was found

    def play(self, seconds: float) -> None:
        """The call, as many times as fits ``seconds`` (at least once), with the loudspeakers' echo."""
        loop = self.server.pactl(
            "load-module",
            "module-loopback",
            f"source={CALL_SINK}.monitor",
            f"sink={MIC_FEED}",
            f"latency_msec={ECHO_MS}",
            "source_dont_move=true",
            "sink_dont_move=true",
        )
        try:
            time.sleep(0.5)
            for _ in range(max(1, int(seconds // self.call_s))):
                self.played.append(time.time())
                owner = self.server.play(self.tracks[OWNER], MIC_FEED, wait=False)
                far = self.server.play(self.tracks[FAR], CALL_SINK, wait=False)
                owner.wait(self.call_s + 30)
                far.wait(self.call_s + 30)
        finally:
            self.server.pactl("unload-module", loop)

    def watch_store(self, store: Path, timeout_s: float = 300.0) -> threading.Thread:
        """From the first play on, look for a memory of the call's first sentence (``speech_lag_s``)."""
        first = next(t for t in self.turns if len(_words(t[3])) >= 4)
        probe = " ".join(_words(first[3])[-3:])

        def look() -> None:
            deadline = time.time() + timeout_s
            while time.time() < deadline and self.first_heard is None:
                if self.played and any(probe in " ".join(_words(t)) for t in _texts(store)):
                    self.first_heard = time.time()
                time.sleep(1.0)

        thread = threading.Thread(target=look, daemon=True)
        thread.start()
        self._first_end = first[2]
        return thread

    @property
    def heard_by(self) -> float:
        """When the last play of the call ended (0 before the first)."""
        return self.played[-1] + self.call_s if self.played else 0.0

    def figures(self, store: Path, out: Path, wall_s: float, ingested: bool = True) -> dict:
        from bench.metrics import word_error_rate
        from graph.resolve_people import owner_of
        from graph.rows import HEARD_ON_MIC
        from graph.store import Store

        sound_bytes = sum(p.stat().st_size for p in out.rglob("*Z_a*.ogg*"))
        figures: dict = {
            "call_plays": len(self.played),
            "audio_mb_per_hour": round(sound_bytes / 1e6 / (wall_s / 3600), 2),
            "speech_lag_s": round(self.first_heard - self.played[0] - self._first_end, 1)
            if self.first_heard is not None and self.played
            else None,
        }
        figures["call_ingested"] = ingested
        if not (store / "memories.lance").exists() or not self.played or not ingested:
            # what the stream's memories say is not known: not a WER of 1
            return figures | {"wer_mic": None, "wer_out": None, "owner_attribution": None}
        db = Store(store, _Reader(store))
        begin, end = self.played[0] - 1, self.played[-1] + self.call_s + 5
        said = sorted(
            (m for m in db.memories_where("kind = 'episodic'") if " said: " in m.text),
            key=lambda m: m.start_ts,
        )
        said = [m for m in said if begin <= m.start_ts <= end]
        mic = [m for m in said if HEARD_ON_MIC in m.provenance]
        far = [m for m in said if HEARD_ON_MIC not in m.provenance]
        plays = len(self.played)

        def reference(who: str) -> str:
            return " ".join(t[3] for t in self.turns if t[0] == who)

        def spoken(ms: list) -> str:
            return " ".join(m.text.split(" said: ", 1)[1].strip('"') for m in ms)

        owner = owner_of(db.people())
        mine = set(owner.ids) if owner is not None else set()
        right = sum(len(_words(spoken([m]))) for m in mic if set(m.entity_ids) & mine)
        right += sum(len(_words(spoken([m]))) for m in far if not set(m.entity_ids) & mine)
        total = sum(len(_words(spoken([m]))) for m in said)
        return figures | {
            "wer_mic": round(word_error_rate(" ".join([reference(OWNER)] * plays), spoken(mic)), 3),
            "wer_out": round(word_error_rate(" ".join([reference(FAR)] * plays), spoken(far)), 3),
            "owner_attribution": round(right / total, 3) if total else None,
            "duplicated_sentences": len(
                heard_twice(
                    [(t[0], t[3]) for t in self.turns],
                    [m.text for m in mic],
                    [m.text for m in far],
                )
            ),
            "speech_memories": len(said),
        }

    def close(self) -> None:
        self.server.close()


def heard_twice(
    script: list[tuple[str, str]], mic: list[str], far: list[str], share: float = 0.6
) -> list[str]:
    """The script's sentences (``(speaker, sentence)``; those of four words or more) that memories
    of both streams hold: a memory holds a sentence when it has ``share`` of its words and no
    sentence of another speaker shares more words with it. Two speakers' sentences may share
    words ("originally from Chicago", said by each in turn): a memory of one is no copy of the
    other."""

    def holds(text: str, speaker: str, words: set[str]) -> bool:
        said = set(_words(text))
        mine = len(words & said)
        return mine >= share * len(words) and all(
            len(set(_words(other)) & said) <= mine for who, other in script if who != speaker
        )

    twice = []
    for speaker, sentence in script:
        words = set(_words(sentence))
        if len(_words(sentence)) >= 4 and all(
            any(holds(t, speaker, words) for t in stream) for stream in (mic, far)
        ):
            twice.append(sentence)
    return twice


class _Reader:
    """The embedder a store is opened with to be read, never searched: the dimension its memories
    have (the watcher's own model is not loaded for that)."""

    name = "reader"

    def __init__(self, store: Path) -> None:
        import lancedb

        table = lancedb.connect(str(store)).open_table("memories")
        self.dim = table.schema.field("vector").type.list_size

    def embed(self, texts: list[str]) -> np.ndarray:
        raise RuntimeError("a store opened to be read is not searched")


def wait_for_clip(store: Path, ends_by: float, timeout_s: float, progress=print) -> bool:
    """Wait (at most ``timeout_s``) until the watcher has committed to ``store`` a clip that ends at
    ``ends_by`` or later: what was said until then is all in the store, however far the ingest fell
    behind on a loaded machine. False when it has not by then."""
    deadline = time.time() + timeout_s
    said = False
    while _latest_clip_end(store) < ends_by:
        if time.time() > deadline:
            return False
        if not said:
            progress(f"bench capture: waiting (at most {timeout_s:.0f} s) for the watcher's ingest")
            said = True
        time.sleep(min(2.0, max(0.0, deadline - time.time())))
    return True


def _latest_clip_end(store: Path) -> float:
    """The end of the latest clip committed to ``store`` (0 before the first, or while the table is
    being written)."""
    import lancedb

    if not (store / "clips.lance").exists():
        return 0.0
    try:
        ends = lancedb.connect(str(store)).open_table("clips").to_arrow().column("end_ts")
        return max((e for e in ends.to_pylist() if e is not None), default=0.0)
    except (OSError, ValueError, RuntimeError):
        return 0.0


def _texts(store: Path) -> list[str]:
    import lancedb

    if not (store / "memories.lance").exists():
        return []
    try:
        table = lancedb.connect(str(store)).open_table("memories")
        return table.to_arrow().column("text").to_pylist()
    except (OSError, ValueError, RuntimeError):  # being written: look again
        return []


def file_wer(sound: CallSound, asr) -> dict:
    """The two tracks transcribed as files by the same recogniser (``asr``: a ``SpeechRecognizer``):
    what the streams' WER is compared with."""
    import soundfile as sf

    from bench.metrics import word_error_rate

    out = {}
    for who, key in ((OWNER, "wer_mic_file"), (FAR, "wer_out_file")):
        audio, rate = sf.read(sound.tracks[who], dtype="float32")
        segments, _ = asr.transcribe(audio, rate)
        reference = " ".join(t[3] for t in sound.turns if t[0] == who)
        out[key] = round(word_error_rate(reference, " ".join(s.text for s in segments)), 3)
    return out
