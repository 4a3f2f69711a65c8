"""Speech heard on two streams at once: the microphone (``mic``) and what the computer played
(``out``), as the capture daemon records them, each transcribed and diarized on its own.

One sound often reaches both. The microphone hears the loudspeakers (the far side of a call
without headphones), and a call or a monitoring app may play the owner's own voice back into the
sink. Such a turn is kept once, and the copy kept is the one that was heard first, since the other
is its echo: the microphone hearing the loudspeakers lags the sink (the far side spoke: ``out``
is kept), and the owner's voice played back lags the microphone (the owner spoke: ``mic`` is
kept). Where the order cannot be told (one copy too faint or too unlike the other to correlate,
or the lag too small to trust), the ``out`` copy is kept: a voice is then not taken for the
owner's on doubtful evidence.

Two turns are one sound heard twice when they overlap in time (with ``slack_s``: each stream's
turn boundaries are its own recogniser's) and their words are alike: rapidfuzz's token-set ratio of
the normalised texts at least ``min_similarity``, and neither holding less than half the other's
words (a token-set ratio calls "yes" alike to any sentence that says yes). The lag is the peak of
the normalised cross-correlation of the two streams' samples over the turns' span, searched
within ``max_lag_s``.

Each stream's clip-local speakers get the stream's letter (``m0``, ``o1``), so the two streams'
labels never meet, and each turn its ``channel``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import numpy as np

from perception.records import SpeakerSegment, SpeechTurn

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


def alike(a: str, b: str, min_similarity: float = 70.0) -> bool:
    """The words of two turns are one sentence's, heard twice (see the module's docstring)."""
    from rapidfuzz import fuzz

    x, y = normalized(a), normalized(b)
    if not x or not y:
        return False
    nx, ny = len(x.split()), len(y.split())
    if min(nx, ny) < 0.5 * max(nx, ny):
        return False
    return fuzz.token_set_ratio(x, y) >= min_similarity


def lag_s(
    mic: np.ndarray,
    out: np.ndarray,
    sample_rate: int,
    start_s: float,
    end_s: float,
    max_lag_s: float = 0.5,
    min_correlation: float = 0.15,
) -> float | None:
    """How many seconds the microphone lags the out stream over ``[start_s, end_s]`` (positive:
    the microphone heard it later; negative: the out stream did), found within ``max_lag_s``;
    None when either is silent there or no lag makes them correlate by ``min_correlation``."""
    a = max(0, int((start_s - max_lag_s) * sample_rate))
    b = min(len(mic), len(out), int(np.ceil((end_s + max_lag_s) * sample_rate)))
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
    """The two streams' turns with each sound heard on both kept once."""

    turns: list[SpeechTurn]  # both streams', in time order
    timeline: list[SpeakerSegment]
    twice: int  # turns heard on both streams (each kept once)
    kept_first: dict[str, int]  # channel -> how many of those kept its copy


def heard_once(
    mic: tuple[list[SpeechTurn], list[SpeakerSegment], np.ndarray],
    out: tuple[list[SpeechTurn], list[SpeakerSegment], np.ndarray],
    sample_rate: int,
    slack_s: float = 1.0,
    min_similarity: float = 70.0,
    max_lag_s: float = 0.5,
    min_lag_s: float = 0.005,
) -> HeardOnce:
    """Both streams' turns (already ``on_channel``) and timelines, the copy of each sound heard on
    both that came later dropped (see the module's docstring). A lag under ``min_lag_s`` tells no
    order. Pairs are matched one to one, most alike first."""
    from rapidfuzz import fuzz

    (mic_turns, mic_line, mic_audio), (out_turns, out_line, out_audio) = mic, out
    pairs = []
    for i, m in enumerate(mic_turns):
        for j, o in enumerate(out_turns):
            overlap = m.start_s - slack_s < o.end_s and o.start_s - slack_s < m.end_s
            if overlap and alike(m.text, o.text, min_similarity):
                score = fuzz.token_set_ratio(normalized(m.text), normalized(o.text))
                pairs.append((-score, i, j))
    dropped_mic: set[int] = set()
    dropped_out: set[int] = set()
    paired_mic: set[int] = set()
    paired_out: set[int] = set()
    kept_first = {"mic": 0, "out": 0}
    for _, i, j in sorted(pairs):
        if i in paired_mic or j in paired_out:
            continue
        paired_mic.add(i)
        paired_out.add(j)
        m, o = mic_turns[i], out_turns[j]
        lag = lag_s(
            mic_audio,
            out_audio,
            sample_rate,
            min(m.start_s, o.start_s),
            max(m.end_s, o.end_s),
            max_lag_s,
        )
        if lag is not None and lag <= -min_lag_s:  # the out stream heard it later: the owner's
            dropped_out.add(j)
            kept_first["mic"] += 1
        else:  # the microphone heard it later, or no order can be told: not the owner's
            dropped_mic.add(i)
            kept_first["out"] += 1
    turns = [t for i, t in enumerate(mic_turns) if i not in dropped_mic] + [
        t for j, t in enumerate(out_turns) if j not in dropped_out
    ]
    timeline = _without(mic_line, [mic_turns[i] for i in dropped_mic]) + _without(
        out_line, [out_turns[j] for j in dropped_out]
    )
    return HeardOnce(
        sorted(turns, key=lambda t: (t.start_s, t.end_s, t.channel)),
        sorted(timeline, key=lambda s: (s.start_s, s.end_s, s.speaker)),
        len(dropped_mic) + len(dropped_out),
        kept_first,
    )


def _without(timeline: list[SpeakerSegment], dropped: list[SpeechTurn]) -> list[SpeakerSegment]:
    """The timeline without the stretches of the dropped turns' speakers that those turns hold
    (at least half of a stretch inside one)."""

    def inside(s: SpeakerSegment, t: SpeechTurn) -> bool:
        shared = min(s.end_s, t.end_s) - max(s.start_s, t.start_s)
        return s.speaker == t.speaker and shared >= 0.5 * max(s.end_s - s.start_s, 1e-6)

    return [s for s in timeline if not any(inside(s, t) for t in dropped)]
