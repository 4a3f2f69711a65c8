"""The writer memorizes clip n+1 while clip n's memories are embedded, commits in order, and a
writer that dies with clips memorized but uncommitted leaves a store a rerun completes exactly."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest


class DyingEmbedPool(ThreadPoolExecutor):
    """Embeds in a thread, slowly, and dies on the ``die_on``-th clip (the writer killed mid-run)."""

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


def test_a_writer_killed_with_clips_memorized_but_uncommitted_resumes_to_the_same_store(
        tmp_path, demo_recording, demo_store, perceivers, policies):
    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store
    from memorize.memorizer import Memorizer
    from mnemo.pipeline import ClipWriter, IngestReport, ingest, observe_job, plan

    store = Store(tmp_path / "store", build_text_embedder("minilm"))
    report = IngestReport()
    planned = plan([str(demo_recording)], store, progress=lambda _m: None, report=report)
    pool = DyingEmbedPool(die_on=2)
    writer = ClipWriter(store, Memorizer(store, *policies), report, lambda _m: None, embed_pool=pool)
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
