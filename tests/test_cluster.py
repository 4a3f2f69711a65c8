"""Average-linkage clustering: the merge loop against SciPy's UPGMA (the test extra's reference; mnemo
runs without SciPy), and its cannot-link rule."""

import numpy as np
import pytest

from perception.cluster import agglomerate, fold_small


def _blobs(
    seed: int, k: int = 4, per: int = 30, dim: int = 32, spread: float = 0.35
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim))
    truth = rng.integers(0, k, k * per)
    x = centres[truth] + spread * rng.standard_normal((k * per, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True), truth


def _scipy_upgma(embs: np.ndarray, max_distance: float) -> np.ndarray:
    from scipy.cluster.hierarchy import fcluster, linkage
    from scipy.spatial.distance import pdist

    labels = fcluster(
        linkage(pdist(embs, "cosine"), method="average"), t=max_distance, criterion="distance"
    )
    return np.unique(labels, return_inverse=True)[1]


def _same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("max_distance", [0.1, 0.25, 0.5, 0.8])
def test_the_merge_loop_gives_scipys_average_linkage_clusters(seed, max_distance):
    embs, _ = _blobs(seed)
    embs = embs * np.random.default_rng(seed).uniform(
        0.5, 2.0, (len(embs), 1)
    )  # voices come unnormalised
    labels = agglomerate(embs, max_distance)
    assert _same_partition(labels, _scipy_upgma(embs, max_distance))
    assert list(dict.fromkeys(labels)) == list(range(labels.max() + 1))  # numbered by first item
    no_constraint = list(range(len(embs)))  # every item its own group: nothing forbidden
    unit = embs / np.linalg.norm(embs, axis=1, keepdims=True)
    assert np.array_equal(labels, agglomerate(unit, max_distance, no_constraint))


def test_well_separated_speakers_are_found_and_numbered_by_first_item():
    embs, truth = _blobs(7, k=3, spread=0.1)
    labels = agglomerate(embs, 0.25)
    assert labels[0] == 0 and len(set(labels)) == 3
    for k in range(3):  # one cluster per true speaker
        assert len(set(labels[truth == k])) == 1
    assert list(dict.fromkeys(labels)) == [0, 1, 2]


def test_cannot_link_keeps_faces_of_one_frame_apart():
    face = np.eye(4)[0]
    embs = np.stack([face, face, face])  # the same embedding thrice, two of them in frame 0
    assert len(set(agglomerate(embs, 0.5))) == 1
    labels = agglomerate(embs, 0.5, groups=[0, 0, 1])
    assert labels[0] != labels[1] and labels[2] in (labels[0], labels[1])


def test_edge_sizes_and_folding():
    assert agglomerate(np.zeros((0, 4)), 0.3).size == 0
    assert agglomerate(np.eye(4)[:1], 0.3).tolist() == [0]
    embs = np.eye(3)[[0, 0, 0, 0, 1]]
    labels = agglomerate(embs, 0.3)
    assert labels.tolist() == [0, 0, 0, 0, 1]
    assert fold_small(labels, embs, 2).tolist() == [
        0,
        0,
        0,
        0,
        0,
    ]  # the one-item speaker joins the big one
