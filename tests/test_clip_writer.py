"""The writer memorizes clip n+1 while clip n's memories are embedded and committed, in order, and a
writer that dies with clips memorized but uncommitted leaves a store a rerun completes exactly."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import disk_full_on_commit


class DyingCommitPool(ThreadPoolExecutor):
    """Embeds and commits in a thread, slowly, and dies on the ``die_on``-th clip (the writer killed mid-run)."""

    def __init__(self, die_on: int) -> None:
        super().__init__(1)
        self.calls = 0
        self.die_on = die_on

    def submit(self, fn, *args, **kwargs):
        self.calls += 1
        if self.calls == self.die_on:

            def die(*_a, **_k):
                raise RuntimeError("writer killed")

            return super().submit(die)

        def slow(*a, **k):
            time.sleep(0.5)  # the next clip is memorized before this one commits
            return fn(*a, **k)

        return super().submit(slow, *args, **kwargs)


@pytest.mark.slow
def test_a_writer_killed_with_clips_memorized_but_uncommitted_resumes_to_the_same_store(
    tmp_path, demo_recording, demo_store, perceivers, policies
):
    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store
    from memorize.memorizer import Memorizer
    from pipeline.ingest import ClipWriter, IngestReport, ingest, observe_job, plan

    store = Store(tmp_path / "store", build_text_embedder("minilm"))
    report = IngestReport()
    planned = plan([str(demo_recording)], store, progress=lambda _m: None, report=report)
    pool = DyingCommitPool(die_on=2)
    writer = ClipWriter(
        store, Memorizer(store, *policies), report, lambda _m: None, commit_pool=pool
    )
    with pytest.raises(RuntimeError, match="writer killed"):
        try:
            for job in planned.jobs:
                writer.write(job, *observe_job(job, perceivers))
            assert len(writer.pending) == 2  # both memorized, neither committed yet
        finally:
            writer.finish(planned)
    pool.shutdown()
    assert store.count()["clips"] == 1  # the first clip committed, with its own entities' state

    again = ingest([str(demo_recording)], store, perceivers, policies, progress=lambda _m: None)
    assert (again.clips_new, again.clips_skipped) == (1, 1)
    assert differences(store, demo_store) == []


def test_after_a_failed_commit_no_later_clip_commits(tmp_path):
    """Clips commit behind the writer, in order: when clip 2's commit fails (a full disk), clip 3,
    already memorized and queued, must not commit after the gap; the error names the file."""
    from embeddings.base import build_text_embedder
    from factories import DAY, day_jobs
    from graph.store import Store
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer
    from pipeline.ingest import ClipWriter, IngestPlan, IngestReport

    store = Store(tmp_path / "store", build_text_embedder("hash"))
    calls = disk_full_on_commit(store, 2)
    writer = ClipWriter(
        store,
        Memorizer(store, MatchPolicy(0.9, 8), MatchPolicy(0.75, 8)),
        IngestReport(),
        lambda _m: None,
        max_pending=3,
    )
    with pytest.raises(OSError, match="/rec/day.mp4.*run ingest again"):
        try:
            for job, obs in day_jobs(3):
                writer.write(job, obs)
        finally:
            writer.finish(IngestPlan([], {DAY.path: 3}))
    assert calls == ["day-0", "day-1"]  # clip 3 was never committed
    assert store.count()["clips"] == 1 and store.has_clip("day-0")


def test_a_serial_writer_commits_each_clip_before_it_returns(tmp_path):
    """``max_pending`` 0 (the watcher's ``ingest(serial=True)``): a clip is embedded and committed
    before the next is observed, so perception's peak of memory and the embedder's do not add up."""
    from embeddings.base import build_text_embedder
    from factories import DAY, day_jobs
    from graph.store import Store
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer
    from pipeline.ingest import ClipWriter, IngestPlan, IngestReport

    store = Store(tmp_path / "store", build_text_embedder("hash"))
    writer = ClipWriter(
        store,
        Memorizer(store, MatchPolicy(0.9, 8), MatchPolicy(0.75, 8)),
        IngestReport(),
        lambda _m: None,
        commit_pool=DyingCommitPool(die_on=0),  # each commit 0.5 s behind
        max_pending=0,
    )
    for k, (job, obs) in enumerate(day_jobs(3), start=1):
        writer.write(job, obs)
        assert not writer.pending and store.count()["clips"] == k
    writer.finish(IngestPlan([], {DAY.path: 3}))
