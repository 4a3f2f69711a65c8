"""Average-linkage clustering of L2-normalised embeddings, with cannot-link constraints.

Used inside one clip: voice windows (diarization, no constraints) and faces (two faces of one frame
are two people: a cannot-link rule, so the loop never joins clusters sharing a group). One plain
merge loop (UPGMA) serves both: it merges the two clusters with the smallest average cosine
distance while that is at most the threshold. A clip holds at most a few hundred items, so its
O(n³) costs milliseconds, and no SciPy is needed at run time.
"""

from __future__ import annotations

import numpy as np


def agglomerate(
    embs: np.ndarray, max_distance: float, groups: list[int] | None = None
) -> np.ndarray:
    """Cluster labels 0..k-1 (numbered by first item), merging while the average cosine distance
    between two clusters is at most ``max_distance``. Items with the same ``groups`` value (e.g.
    the frame a face was seen in) never share a cluster."""
    n = len(embs)
    if n == 0:
        return np.zeros(0, dtype=int)
    embs = np.asarray(embs, dtype=np.float64)
    if groups is None:  # no constraint; and cosine distances whatever the norms, as voices come
        norms = np.linalg.norm(embs, axis=1, keepdims=True)
        embs = embs / np.where(norms > 0, norms, 1.0)
    total = embs @ embs.T  # sum of pairwise similarities between clusters i and j
    size = np.ones(n)
    g = np.asarray(groups if groups is not None else range(n))
    conflict = (g[:, None] == g[None, :]) & (groups is not None)
    alive = np.ones(n, dtype=bool)
    members = [[i] for i in range(n)]
    while alive.sum() > 1:
        avg = total / np.outer(size, size)
        mask = alive[:, None] & alive[None, :] & ~conflict
        np.fill_diagonal(mask, False)
        if not mask.any():
            break
        avg = np.where(mask, avg, -np.inf)
        i, j = np.unravel_index(int(np.argmax(avg)), avg.shape)
        if 1.0 - avg[i, j] > max_distance:
            break
        total[i, :] += total[j, :]
        total[:, i] += total[:, j]
        size[i] += size[j]
        conflict[i, :] |= conflict[j, :]
        conflict[:, i] |= conflict[:, j]
        alive[j] = False
        members[i] += members[j]
    labels = np.empty(n, dtype=int)
    for r in np.flatnonzero(alive):
        labels[members[r]] = r
    return _first_seen_order(labels)


def _first_seen_order(labels: np.ndarray) -> np.ndarray:
    """Labels renumbered 0..k-1 in the order their first item appears."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=int)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inverse]


def fold_small(labels: np.ndarray, embs: np.ndarray, min_size: int) -> np.ndarray:
    """Move members of clusters smaller than ``min_size`` into the nearest big cluster (by centroid),
    when there is one; labels are renumbered 0..k-1."""
    labels = labels.copy()
    sizes = np.bincount(labels)
    big = np.flatnonzero(sizes >= min_size)
    if big.size and big.size < sizes.size:
        centroids = np.stack([embs[labels == b].mean(axis=0) for b in big])
        for i in np.flatnonzero(sizes[labels] < min_size):
            labels[i] = big[int(np.argmax(centroids @ embs[i]))]
    _, labels = np.unique(labels, return_inverse=True)
    return labels
