"""Who spoke when inside one clip: sliding-window voice embeddings, clustered, mapped onto time and words.

Whisper segments often run across a change of speaker, and a sentence-long turn is too short for a
reliable voice embedding. So:

1. find speech with Silero VAD (shipped inside faster-whisper), joined with the ASR turns;
2. embed 1.6 s windows every 0.25 s and cluster the windows centred in speech (average linkage,
   cosine distance ``max_distance``), but for those that span a pause between two stretches of
   speech: they hear the end of one turn and the start of the next, and take the label of the
   nearest cluster afterwards;
3. fold speakers with less than ``min_speaker_s`` of windows into their nearest big cluster: a
   handful of odd windows (laughter, overlap, a cough) is far likelier than a new person;
4. the result is a speaker timeline over the speech regions, and each word takes the label of the
   window centred nearest to it; inside a sentence, runs shorter than ``min_run_s`` take the
   sentence's dominant speaker; turns split where the label changes, and every turn carries the
   centroid of its speaker's cluster as its voice embedding (an estimate from the whole clip).

``max_distance`` and ``min_speaker_s`` are calibrated with ``mnemo bench perception`` (the default
distance lies in the middle of the range that finds both speakers of pyannote's ``sample.wav``);
``mnemo bench locomo --spoken`` measures the attribution of words to speakers.
"""

from __future__ import annotations

import numpy as np

from perception.cluster import agglomerate, fold_small
from perception.records import SpeakerSegment, SpeechTurn, Word
from perception.speech.base import SpeakerEmbedder

RATE_HZ = 4.0


def speech_regions(audio: np.ndarray, sample_rate: int) -> list[tuple[float, float]]:
    """Speech stretches (seconds) found by Silero VAD."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    stamps = get_speech_timestamps(
        audio.astype(np.float32, copy=False),
        VadOptions(min_silence_duration_ms=300, speech_pad_ms=100),
        sampling_rate=sample_rate,
    )
    return [(s["start"] / sample_rate, s["end"] / sample_rate) for s in stamps]


def union_spans(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Overlapping or touching spans joined, in time order."""
    out: list[list[float]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def within_one_stretch(
    centres: np.ndarray, window_s: float, regions: list[tuple[float, float]]
) -> np.ndarray:
    """Which windows (``window_s`` long, centred at ``centres``) span no pause between two of the
    speech ``regions`` (in time order, not overlapping)."""
    gaps = np.array([(b, a) for (_, b), (a, _) in zip(regions, regions[1:])]).reshape(-1, 2)
    half = window_s / 2
    spans = (centres[:, None] - half < gaps[None, :, 0]) & (
        gaps[None, :, 1] < centres[:, None] + half
    )
    return np.asarray(
        ~spans.any(axis=1)
    )  # (numpy's stubs type a reduction as a scalar or an array)


def _timeline(
    labels: np.ndarray, centres: np.ndarray, regions: list[tuple[float, float]]
) -> list[SpeakerSegment]:
    half = 0.5 / RATE_HZ
    pieces = []
    for k, c in zip(labels, centres):
        for a, b in regions:
            s, e = max(a, c - half), min(b, c + half)
            if e > s:
                pieces.append((float(s), float(e), f"s{k}"))
    out: list[SpeakerSegment] = []
    for s, e, k in sorted(pieces):
        if out and out[-1].speaker == k and s - out[-1].end_s < 1e-6:
            out[-1] = SpeakerSegment(k, out[-1].start_s, max(out[-1].end_s, e))
        else:
            out.append(SpeakerSegment(k, s, e))
    return out


def _smooth(labelled: list[tuple[int, Word]], min_run_s: float) -> list[tuple[int, list[Word]]]:
    """Runs of words by label, with runs shorter than ``min_run_s`` given the turn's dominant label:
    a sentence rarely changes speaker for one or two words, while window labels flicker where two
    voices overlap or alternate quickly."""

    def runs_of(items):
        runs: list[tuple[int, list[Word]]] = []
        for k, w in items:
            if runs and runs[-1][0] == k:
                runs[-1][1].append(w)
            else:
                runs.append((k, [w]))
        return runs

    runs = runs_of(labelled)
    if len(runs) < 2:
        return runs
    spoken: dict[int, float] = {}
    for k, words in runs:
        spoken[k] = spoken.get(k, 0.0) + sum(w.end_s - w.start_s for w in words)
    dominant = max(spoken, key=lambda k: spoken[k])
    return runs_of(
        (dominant if words[-1].end_s - words[0].start_s < min_run_s else k, w)
        for k, words in runs
        for w in words
    )


def diarize(
    turns: list[SpeechTurn],
    audio: np.ndarray,
    sample_rate: int,
    speaker: SpeakerEmbedder,
    max_distance: float = 0.25,
    min_speaker_s: float = 2.5,
    min_run_s: float = 1.0,
    regions: list[tuple[float, float]] | None = None,
) -> tuple[list[SpeechTurn], list[SpeakerSegment]]:
    """Turns split at speaker changes, each with a clip-local ``speaker`` label and that speaker's
    centroid as ``voice_embedding``, and the speaker timeline over the clip's speech.

    Segment ids get a ``.sN`` suffix per speaker run. Turns are returned in time order.
    ``regions`` (speech stretches in seconds) default to Silero VAD's.
    """
    if audio.size < sample_rate:
        return list(turns), []
    if regions is None:
        regions = speech_regions(audio, sample_rate)
    regions = union_spans(list(regions) + [(t.start_s, t.end_s) for t in turns])
    if not regions:
        return list(turns), []
    embs, centres = speaker.embed_windows(audio, sample_rate, RATE_HZ)
    in_speech = np.array([any(a - 0.2 <= c <= b + 0.2 for a, b in regions) for c in centres])
    if not in_speech.any():
        return list(turns), []
    embs, centres = embs[in_speech], centres[in_speech]
    # a window over a pause between two stretches of speech hears the end of one turn and the start
    # of the next, often two voices: such windows are labelled by the clusters of the rest, not clustered
    clustered = within_one_stretch(centres, speaker.window_s, regions)
    if clustered.sum() < 2:
        clustered[:] = True
    own = fold_small(
        agglomerate(embs[clustered], max_distance),
        embs[clustered],
        max(1, int(round(min_speaker_s * RATE_HZ))),
    )
    centroids = []
    for k in range(own.max() + 1):
        c = embs[clustered][own == k].mean(axis=0)
        centroids.append((c / (np.linalg.norm(c) + 1e-9)).astype(np.float32))
    labels = np.empty(len(embs), dtype=int)
    labels[clustered] = own
    if not clustered.all():
        labels[~clustered] = np.argmax(embs[~clustered] @ np.stack(centroids).T, axis=1)

    def label_at(t: float) -> int:
        return int(labels[int(np.argmin(np.abs(centres - t)))])

    out: list[SpeechTurn] = []
    for turn in turns:
        if not turn.words:
            k = label_at((turn.start_s + turn.end_s) / 2)
            out.append(
                SpeechTurn(
                    turn.segment_id,
                    turn.text,
                    turn.start_s,
                    turn.end_s,
                    turn.language,
                    (),
                    centroids[k],
                    f"s{k}",
                )
            )
            continue
        runs = _smooth([(label_at((w.start_s + w.end_s) / 2), w) for w in turn.words], min_run_s)
        for j, (k, words) in enumerate(runs):
            seg_id = turn.segment_id if len(runs) == 1 else f"{turn.segment_id}.s{j}"
            out.append(
                SpeechTurn(
                    seg_id,
                    " ".join(w.text for w in words),
                    words[0].start_s,
                    words[-1].end_s,
                    turn.language,
                    tuple(words),
                    centroids[k],
                    f"s{k}",
                )
            )
    return out, _timeline(labels, centres, regions)
