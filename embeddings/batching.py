"""Concurrent ``embed`` calls coalesced into batches (a server answering many queries at once).

One text through mpnet costs nearly as much as several in one batch, and concurrent calls each running the model on every
core only fight over them. So callers queue their texts; one of them, the leader, embeds everything
queued in one call and hands the lead to the next waiting caller. A lone call is embedded at once,
with no added wait.
"""

from __future__ import annotations

import threading

import numpy as np


class _Job:
    __slots__ = ("texts", "result", "error", "lead", "wake")

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.result: np.ndarray | None = None
        self.error: BaseException | None = None
        self.lead = False
        self.wake = threading.Event()


class BatchingEmbedder:
    """Wraps a text embedder (``name``, ``dim``, ``embed``); thread-safe, and the wrapped one is
    only ever called by one thread at a time."""

    def __init__(self, inner, max_batch: int = 64) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.max_batch = max_batch
        self.calls = 0  # the wrapped embedder's calls: fewer than ours when batching works
        self._lock = threading.Lock()
        self._pending: list[_Job] = []
        self._busy = False

    def embed(self, texts: list[str]) -> np.ndarray:
        job = _Job(list(texts))
        with self._lock:
            self._pending.append(job)
            if not self._busy:
                self._busy = job.lead = True
        if not job.lead:
            job.wake.wait()  # done by a leader, or made the leader
        if job.result is None and job.error is None:
            self._lead()
        if job.error is not None:
            raise job.error
        assert job.result is not None  # a leader embeds the batch that holds its own job
        return job.result

    def _lead(self) -> None:
        with self._lock:
            batch: list[_Job] = []
            count = 0
            while self._pending and (
                not batch or count + len(self._pending[0].texts) <= self.max_batch
            ):
                batch.append(self._pending.pop(0))
                count += len(batch[-1].texts)
        try:
            self.calls += 1
            vectors = self.inner.embed([t for j in batch for t in j.texts])
            start = 0
            for j in batch:
                j.result = vectors[start : start + len(j.texts)]
                start += len(j.texts)
        except BaseException as e:  # every caller of the batch gets the error, none waits forever
            for j in batch:
                j.error = e
        with self._lock:
            if self._pending:
                self._pending[0].lead = True
                self._pending[0].wake.set()
            else:
                self._busy = False
        for j in batch:
            j.wake.set()
