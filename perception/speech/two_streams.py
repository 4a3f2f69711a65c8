"""Speech heard on two streams at once: the microphone (``mic``) and what the computer played
(``out``), as the capture daemon records them, each transcribed and diarized on its own.

One sound often reaches both. The microphone hears the loudspeakers (the far side of a call
without headphones), and a call or a monitoring app may play the owner's own voice back into the
sink. What was said is kept once, and the copy kept is the one that was heard first, since the
other is its echo: the microphone hearing the loudspeakers lags the sink (the far side spoke:
``out`` is kept), and the owner's voice played back lags the microphone (the owner spoke: ``mic``
is kept). Where the order cannot be told (one copy too faint or too unlike the other to correlate,
or the lag too small to trust), the ``out`` copy is kept: a voice is then not taken for the
owner's on doubtful evidence.

The copies are found word by word, not turn by turn: each stream's recogniser cuts its own turns
(the sink's may run the owner's played-back sentence and the far side's answer into one), so the
two streams' words are aligned (``difflib``'s longest matching runs of normalised words), a word
counting only where its two copies lie within ``slack_s`` of each other. The order of each run of
two such words or more (or of a whole short turn on both sides) is the lag: the peak of the
normalised cross-correlation of the two streams' samples over the run, searched within
``max_lag_s``. Runs that follow each other within ``slack_s`` on both streams in the same order
are one stretch (the two recognisers mishear different words, which cut the runs short; the
owner's sentence and the far side's answer a moment later stay apart), heard twice when it holds
``min_run`` matched words and they are at least half the echo's words in it. Every word of the
echo's side of a stretch is taken out of its turns, which are split where words went, and the
turns left with none are dropped. A turn left on either side whose sound is the other stream's,
heard later, goes too (``heard_once``).

Each stream's clip-local speakers get the stream's letter (``m0``, ``o1``), so the two streams'
labels never meet, and each turn its ``channel``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from perception.records import SpeakerSegment, SpeechTurn, Word

PREFIX = {"mic": "m", "out": "o"}  # a stream's letter on its clip-local speaker labels
_NOT_WORD = re.compile(r"[^\w']+")


def on_channel(
    turns: list[SpeechTurn], timeline: list[SpeakerSegment], channel: str, clip_id: str
) -> tuple[list[SpeechTurn], list[SpeakerSegment]]:
    """One stream's turns and speaker timeline as parts of the clip: each turn with its
    ``channel``, its segment id naming the stream (``<clip>:mic:…``: the two streams' recognisers
    number their segments alike), and the speakers labelled with the stream's letter (``s0`` ->
    ``m0``)."""
    letter = PREFIX[channel]

    def label(speaker: str) -> str:
        return letter + speaker.removeprefix("s") if speaker else ""

    head = f"{clip_id}:"
    return (
        [
            replace(
                t,
                segment_id=f"{clip_id}:{channel}:{t.segment_id.removeprefix(head)}",
                speaker=label(t.speaker),
                channel=channel,
            )
            for t in turns
        ],
        [replace(s, speaker=label(s.speaker)) for s in timeline],
    )


def normalized(text: str) -> str:
    return " ".join(_NOT_WORD.sub(" ", text.casefold()).split())


def lag_s(
    mic: np.ndarray,
    out: np.ndarray,
    sample_rate: int,
    start_s: float,
    end_s: float,
    max_lag_s: float = 0.5,
    min_correlation: float = 0.15,
    pad_s: float | None = None,
) -> float | None:
    """How many seconds the microphone lags the out stream over ``[start_s, end_s]`` (positive:
    the microphone heard it later; negative: the out stream did), found within ``max_lag_s``;
    None when either is silent there or no lag makes them correlate by ``min_correlation``. The
    samples compared reach ``pad_s`` beyond the span on each side (default ``max_lag_s``)."""
    pad = max_lag_s if pad_s is None else pad_s
    a = max(0, int((start_s - pad) * sample_rate))
    b = min(len(mic), len(out), int(np.ceil((end_s + pad) * sample_rate)))
    if b - a < sample_rate // 10:
        return None
    # pre-emphasis: speech's strong low tones make a broad peak; its edges place it
    x = np.diff(mic[a:b].astype(np.float64))
    y = np.diff(out[a:b].astype(np.float64))
    x -= x.mean()
    y -= y.mean()
    norm = float(np.linalg.norm(x) * np.linalg.norm(y))
    if norm < 1e-9:
        return None
    n = 1 << int(np.ceil(np.log2(2 * len(x))))
    cc = np.fft.irfft(np.fft.rfft(x, n) * np.conj(np.fft.rfft(y, n)), n)
    k = min(int(max_lag_s * sample_rate), len(x) - 1)
    lags = np.concatenate([cc[-k:], cc[: k + 1]]) if k else cc[:1]  # -k … 0 … +k
    best = int(np.argmax(lags))
    if lags[best] / norm < min_correlation:
        return None
    return (best - k) / sample_rate


@dataclass(frozen=True)
class HeardOnce:
    """The two streams' turns with what was heard on both kept once."""

    turns: list[SpeechTurn]  # both streams', in time order
    timeline: list[SpeakerSegment]
    twice: int  # stretches heard on both streams (each kept once)
    kept_first: dict[str, int]  # channel -> how many of those kept its copy


@dataclass(frozen=True)
class _Token:
    turn: int  # index of its turn in its stream
    word: int  # index of its word in the turn
    text: str  # normalised
    start_s: float
    end_s: float


def _tokens(turns: list[SpeechTurn]) -> list[_Token]:
    """The stream's words in time order; a turn without word times is spread evenly over its span."""
    out = []
    for i, t in enumerate(turns):
        words = list(t.words) or _spread(t)
        for k, w in enumerate(words):
            if text := normalized(w.text):
                out.append(_Token(i, k, text, w.start_s, w.end_s))
    return sorted(out, key=lambda x: (x.start_s, x.turn, x.word))


def _spread(t: SpeechTurn) -> list[Word]:
    parts = t.text.split()
    step = (t.end_s - t.start_s) / max(len(parts), 1)
    return [
        Word(p, t.start_s + k * step, t.start_s + (k + 1) * step, 1.0) for k, p in enumerate(parts)
    ]


def _runs(mic: list[_Token], out: list[_Token], slack_s: float) -> list[list[tuple[int, int]]]:
    """Runs of aligned word pairs (positions in ``mic`` and ``out``) whose copies lie within
    ``slack_s`` of each other, consecutive on both sides and within one turn of each (``_apart``)."""
    from difflib import SequenceMatcher

    matcher = SequenceMatcher(None, [t.text for t in mic], [t.text for t in out], autojunk=False)
    runs: list[list[tuple[int, int]]] = []
    for a, b, size in matcher.get_matching_blocks():
        run: list[tuple[int, int]] = []
        for k in range(size):
            if run and _apart(mic, run[-1][0], a + k) or run and _apart(out, run[-1][1], b + k):
                runs.append(run)
                run = []
            if abs(mic[a + k].start_s - out[b + k].start_s) <= slack_s:
                run.append((a + k, b + k))
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
    return runs


def _apart(tokens: list[_Token], i: int, j: int, pause_s: float = 0.5) -> bool:
    """Words ``i`` and ``j`` of a stream are in different turns or a pause apart: a run of
    matched words is cut there, so that each sentence's order is told on its own."""
    return tokens[i].turn != tokens[j].turn or tokens[j].start_s - tokens[i].end_s > pause_s


Span = tuple[float, float]


def _stretches(
    runs: list[list[tuple[int, int]]],
    mic: list[_Token],
    out: list[_Token],
    join_s: float,
    owner_first: Callable[[Span, Span], bool],
) -> list[tuple[Span, Span, int, bool]]:
    """Each run's order (``owner_first`` of its spans on the microphone and on the out stream),
    and the runs joined where they follow each other within ``join_s`` on both streams in the
    same order (a misheard word between two runs is part of the same stretch; the owner's
    sentence and the far side's answer a moment later are not): each stretch's spans, how many
    words were matched in it, and its order."""
    spans = sorted(
        (
            (mic[r[0][0]].start_s, mic[r[-1][0]].end_s),
            (out[r[0][1]].start_s, out[r[-1][1]].end_s),
            len(r),
        )
        for r in runs
    )
    joined: list[tuple[Span, Span, int, bool]] = []
    for (m0, m1), (o0, o1), n in spans:
        first = owner_first((m0, m1), (o0, o1))
        if joined:
            (pm0, pm1), (po0, po1), pn, pfirst = joined[-1]
            near = m0 - pm1 <= join_s and o0 - po1 <= join_s and m0 >= pm0 and o0 >= po0
            if near and first == pfirst:
                joined[-1] = ((pm0, max(pm1, m1)), (po0, max(po1, o1)), pn + n, first)
                continue
        joined.append(((m0, m1), (o0, o1), n, first))
    return joined


def _whole_turns(run: list[tuple[int, int]], mic: list[_Token], out: list[_Token]) -> bool:
    """The run is the whole of one turn on each side (a short answer heard twice)."""
    for side, tokens in ((0, mic), (1, out)):
        turns = {tokens[p[side]].turn for p in run}
        if len(turns) != 1 or sum(t.turn in turns for t in tokens) != len(run):
            return False
    return True


def _without_words(
    turns: list[SpeechTurn], gone: dict[int, set[int]]
) -> tuple[list[SpeechTurn], list[SpeechTurn]]:
    """The turns with the words ``gone`` (turn index -> word indexes) taken out, each turn split
    where words went (``<segment>.p<k>`` for its pieces), and the stretches taken out as turns
    of their speakers (for the timeline)."""
    kept: list[SpeechTurn] = []
    removed: list[SpeechTurn] = []
    for i, t in enumerate(turns):
        if i not in gone:
            kept.append(t)
            continue
        words = list(t.words) or _spread(t)
        pieces: list[list[Word]] = [[]]
        for k, w in enumerate(words):
            if k in gone[i]:
                removed.append(replace(t, start_s=w.start_s, end_s=w.end_s, words=(w,)))
                if pieces[-1]:
                    pieces.append([])
            else:
                pieces[-1].append(w)
        pieces = [p for p in pieces if p]
        for k, piece in enumerate(pieces):
            kept.append(
                replace(
                    t,
                    segment_id=t.segment_id if len(pieces) == 1 else f"{t.segment_id}.p{k}",
                    text=" ".join(w.text for w in piece),
                    start_s=piece[0].start_s,
                    end_s=piece[-1].end_s,
                    words=tuple(piece) if t.words else (),
                )
            )
    return kept, removed


def heard_once(
    mic: tuple[list[SpeechTurn], list[SpeakerSegment], np.ndarray],
    out: tuple[list[SpeechTurn], list[SpeakerSegment], np.ndarray],
    sample_rate: int,
    slack_s: float = 1.0,
    min_run: int = 3,
    max_lag_s: float = 0.5,
    min_lag_s: float = 0.005,
    max_residue: int = 4,
) -> HeardOnce:
    """Both streams' turns (already ``on_channel``) and timelines, the later copy of each stretch
    heard on both taken out (see the module's docstring). A lag under ``min_lag_s`` tells no
    order. A turn of at most ``max_residue`` words left on either side goes too when its sound is
    the other stream's, heard later (correlation at least 0.5 over the turn's own span): an echo
    the two recognisers heard as other words ("Okay" on one, "Hey" on the other). Longer turns are
    never dropped on the sound alone: one may hold the owner speaking over the far side."""
    (mic_turns, mic_line, mic_audio), (out_turns, out_line, out_audio) = mic, out
    mic_tokens, out_tokens = _tokens(mic_turns), _tokens(out_turns)
    gone: dict[str, dict[int, set[int]]] = {"mic": {}, "out": {}}
    kept_first = {"mic": 0, "out": 0}
    runs = [
        r
        for r in _runs(mic_tokens, out_tokens, slack_s)
        if len(r) >= 2 or _whole_turns(r, mic_tokens, out_tokens)
    ]
    twice = 0

    def owner_first(mic_span: Span, out_span: Span) -> bool:
        """The out stream heard it later: the owner's voice played back."""
        a, b = min(mic_span[0], out_span[0]), max(mic_span[1], out_span[1])
        lag = lag_s(mic_audio, out_audio, sample_rate, a, b, max_lag_s)
        return lag is not None and lag <= -min_lag_s

    for (m0, m1), (o0, o1), matched, mine in _stretches(
        runs, mic_tokens, out_tokens, slack_s, owner_first
    ):
        echo, tokens, (a, b) = (
            ("out", out_tokens, (o0, o1)) if mine else ("mic", mic_tokens, (m0, m1))
        )
        inside = [t for t in tokens if t.start_s >= a - 0.05 and t.end_s <= b + 0.05]
        if matched < min_run or matched < 0.5 * len(inside):  # a few words alike by chance
            continue
        for token in inside:  # every word of the echo's stretch, misheard ones too
            gone[echo].setdefault(token.turn, set()).add(token.word)
        kept_first["mic" if mine else "out"] += 1
        twice += 1
    mic_kept, mic_removed = _without_words(mic_turns, gone["mic"])
    out_kept, out_removed = _without_words(out_turns, gone["out"])
    for kept, removed, later in ((mic_kept, mic_removed, 1), (out_kept, out_removed, -1)):
        for t in [t for t in kept if len(t.words or t.text.split()) <= max_residue]:
            lag = lag_s(
                mic_audio, out_audio, sample_rate, t.start_s, t.end_s, max_lag_s, 0.5, pad_s=0.0
            )
            if lag is not None and lag * later >= min_lag_s:  # its side heard it later: an echo
                kept.remove(t)
                removed.append(t)
                kept_first["out" if later == 1 else "mic"] += 1
                twice += 1
    return HeardOnce(
        sorted(mic_kept + out_kept, key=lambda t: (t.start_s, t.end_s, t.channel)),
        sorted(
            _without(mic_line, mic_removed) + _without(out_line, out_removed),
            key=lambda s: (s.start_s, s.end_s, s.speaker),
        ),
        twice,
        kept_first,
    )


def _without(timeline: list[SpeakerSegment], dropped: list[SpeechTurn]) -> list[SpeakerSegment]:
    """The timeline without the stretches of the dropped speech's speakers that it holds (at
    least half of a stretch inside it)."""

    def inside(s: SpeakerSegment) -> float:
        return sum(
            max(0.0, min(s.end_s, t.end_s) - max(s.start_s, t.start_s))
            for t in dropped
            if t.speaker == s.speaker
        )

    return [s for s in timeline if inside(s) < 0.5 * max(s.end_s - s.start_s, 1e-6)]
