"""Average-linkage clustering: scipy's linkage (no constraints) and the cannot-link merge loop."""

import numpy as np
import pytest

from perception.cluster import agglomerate, fold_small


def _blobs(seed: int, k: int = 4, per: int = 30, dim: int = 32, spread: float = 0.35) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((k, dim))
    truth = rng.integers(0, k, k * per)
    x = centres[truth] + spread * rng.standard_normal((k * per, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True), truth


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("max_distance", [0.1, 0.25, 0.5, 0.8])
def test_scipy_linkage_gives_the_merge_loops_clusters(seed, max_distance):
    embs, _ = _blobs(seed)
    no_constraint = list(range(len(embs)))  # every item its own group: the loop, with nothing forbidden
    assert np.array_equal(agglomerate(embs, max_distance), agglomerate(embs, max_distance, no_constraint))


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
    assert fold_small(labels, embs, 2).tolist() == [0, 0, 0, 0, 0]  # the one-item speaker joins the big one
