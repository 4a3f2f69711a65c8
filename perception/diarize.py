"""Who spoke when inside one clip: sliding-window voice embeddings, clustered, mapped onto words.

Whisper segments often run across a change of speaker, and a sentence-long turn is too short for a
reliable voice embedding. So: embed 1.6 s windows every 0.25 s, cluster the windows that fall in
speech (average linkage, cosine distance), fold tiny clusters into their nearest big one, give each
word the label of the window centred nearest to it, split turns where the label changes, and give
every turn the centroid of its speaker's cluster as its voice embedding: an estimate from the whole
clip, not from a few words.
"""

from __future__ import annotations

import numpy as np

from perception.base import SpeakerEmbedder
from perception.cluster import agglomerate, fold_small
from perception.records import SpeechTurn, Word


def _cluster(embs: np.ndarray, max_distance: float, min_size: int) -> np.ndarray:
    return fold_small(agglomerate(embs, max_distance), embs, min_size)


def diarize(turns: list[SpeechTurn], audio: np.ndarray, sample_rate: int, speaker: SpeakerEmbedder,
            max_distance: float = 0.3, min_cluster_windows: int = 3) -> list[SpeechTurn]:
    """Turns split at speaker changes, each with a clip-local ``speaker`` label and that speaker's
    centroid as ``voice_embedding``.

    Segment ids get a ``.sN`` suffix per speaker run. Turns are returned in time order.
    """
    if not turns or audio.size < sample_rate:
        return list(turns)
    embs, centres = speaker.embed_windows(audio, sample_rate)
    in_speech = np.array([any(t.start_s - 0.2 <= c <= t.end_s + 0.2 for t in turns) for c in centres])
    if not in_speech.any():
        return list(turns)
    embs, centres = embs[in_speech], centres[in_speech]
    labels = _cluster(embs, max_distance, min_cluster_windows)
    centroids = []
    for k in range(labels.max() + 1):
        c = embs[labels == k].mean(axis=0)
        centroids.append((c / (np.linalg.norm(c) + 1e-9)).astype(np.float32))

    def label_at(t: float) -> int:
        return int(labels[int(np.argmin(np.abs(centres - t)))])

    out: list[SpeechTurn] = []
    for turn in turns:
        if not turn.words:
            k = label_at((turn.start_s + turn.end_s) / 2)
            out.append(SpeechTurn(turn.segment_id, turn.text, turn.start_s, turn.end_s, turn.language, (),
                                  centroids[k], f"s{k}"))
            continue
        runs: list[tuple[int, list[Word]]] = []
        for w in turn.words:
            k = label_at((w.start_s + w.end_s) / 2)
            if runs and runs[-1][0] == k:
                runs[-1][1].append(w)
            else:
                runs.append((k, [w]))
        for j, (k, words) in enumerate(runs):
            seg_id = turn.segment_id if len(runs) == 1 else f"{turn.segment_id}.s{j}"
            out.append(SpeechTurn(seg_id, " ".join(w.text for w in words), words[0].start_s, words[-1].end_s,
                                  turn.language, tuple(words), centroids[k], f"s{k}"))
    return out
