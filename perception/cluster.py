"""Average-linkage clustering of L2-normalised embeddings, with cannot-link constraints.

Used inside one clip: voice windows (diarization, no constraints: ``scipy.cluster.hierarchy``'s
UPGMA on cosine distances) and faces (two faces of one frame are two people: a cannot-link rule that
scipy's linkage cannot express, so a plain merge loop that never joins clusters sharing a group;
clips hold at most a few hundred faces). Both merge while the average cosine distance between two
clusters is at most the threshold, so they give the same clusters where no constraint applies.
"""

from __future__ import annotations

import numpy as np


def agglomerate(embs: np.ndarray, max_distance: float, groups: list[int] | None = None) -> np.ndarray:
    """Cluster labels 0..k-1 (numbered by first item), merging while the average cosine distance
    between two clusters is at most ``max_distance``. Items with the same ``groups`` value (e.g.
    the frame a face was seen in) never share a cluster."""
    n = len(embs)
    if n == 0:
        return np.zeros(0, dtype=int)
    if groups is None:
        return _average_linkage(np.asarray(embs, dtype=np.float64), max_distance)
    sims = np.asarray(embs, dtype=np.float64) @ np.asarray(embs, dtype=np.float64).T
    total = sims.copy()  # sum of pairwise similarities between clusters i and j
    size = np.ones(n)
    g = np.asarray(groups)
    conflict = g[:, None] == g[None, :]
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


def _average_linkage(embs: np.ndarray, max_distance: float) -> np.ndarray:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist

    if len(embs) == 1:
        return np.zeros(1, dtype=int)
    distances = np.clip(pdist(embs, "cosine"), 0.0, 2.0)  # rounding can make a self-similar pair slightly negative
    tree = linkage(distances, method="average")
    return _first_seen_order(fcluster(tree, t=max_distance, criterion="distance"))


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
