"""The reorder buffer between Ray perception and the in-order writer (no Ray needed)."""

import random

import pytest

from ray_jobs.order import ReorderBuffer, in_order


def test_results_come_out_in_sequence_whatever_order_they_arrive_in():
    for seed in range(20):
        seqs = list(range(30))
        random.Random(seed).shuffle(seqs)
        assert list(in_order((s, f"clip {s}") for s in seqs)) == [f"clip {s}" for s in range(30)]


def test_each_item_is_released_as_soon_as_everything_before_it_is_in():
    buffer = ReorderBuffer()
    assert buffer.put(2, "c") == [] and buffer.put(1, "b") == []
    assert buffer.put(0, "a") == ["a", "b", "c"] and len(buffer) == 0
    assert buffer.put(1, "b again") == []  # a retried task's second result is dropped
    assert buffer.put(3, "d") == ["d"]


def test_a_missing_result_is_an_error_not_a_silent_gap():
    with pytest.raises(RuntimeError, match="without result 1"):
        list(in_order([(0, "a"), (2, "c")]))


def test_plan_numbers_clips_in_memorizing_order_and_skips_committed_ones(tmp_path, hash_store):
    """Files first in the order given, then screenshot folders; a committed clip is not planned."""
    import numpy as np
    from scipy.io import wavfile

    from memorize.memorizer import clip_row
    from perception.records import ClipObservations
    from pipeline.ingest import IngestReport, plan

    for name, seconds in (("b.wav", 65), ("a.wav", 35)):
        wavfile.write(tmp_path / name, 16000, np.zeros(16000 * seconds, np.int16))
    paths = [str(tmp_path / "b.wav"), str(tmp_path / "a.wav")]
    first = plan(paths, hash_store, progress=lambda _m: None)
    assert [(j.seq, j.path.rsplit("/", 1)[-1], j.clip.index) for j in first.jobs] == [
        (0, "b.wav", 0),
        (1, "b.wav", 1),
        (2, "b.wav", 2),
        (3, "a.wav", 0),
        (4, "a.wav", 1),
    ]
    hash_store.commit_clip(clip_row(ClipObservations(first.jobs[0].clip, (), ())), [], [])
    report = IngestReport()
    again = plan(paths, hash_store, progress=lambda _m: None, report=report)
    assert [j.seq for j in again.jobs] == [0, 1, 2, 3] and again.jobs[0].clip.clip_id == first.jobs[
        1
    ].clip.clip_id
    assert report.clips_skipped == 1 and again.clips_of == first.clips_of
