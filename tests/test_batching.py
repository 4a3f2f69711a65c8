"""Concurrent embed calls coalesced into batches: same vectors, fewer model calls, errors shared."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from embeddings.base import build_text_embedder
from embeddings.batching import BatchingEmbedder


class Slow:
    """The hash embedder, taking its time like a model, and counting who calls it at once."""

    def __init__(self, fail_on: str = "") -> None:
        self.inner = build_text_embedder("hash")
        self.name, self.dim = "slow-hash", self.inner.dim
        self.fail_on = fail_on
        self.running = self.most_at_once = 0
        self.lock = threading.Lock()

    def embed(self, texts):
        with self.lock:
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            time.sleep(0.05)
            if self.fail_on and self.fail_on in texts:
                raise RuntimeError(f"model failed on {self.fail_on!r}")
            return self.inner.embed(texts)
        finally:
            with self.lock:
                self.running -= 1


def test_concurrent_calls_share_batches_and_get_their_own_vectors():
    slow = Slow()
    batching = BatchingEmbedder(slow)
    texts = [
        [f"question {i}", f"other {i}"] if i % 3 == 0 else [f"question {i}"] for i in range(24)
    ]
    with ThreadPoolExecutor(12) as pool:
        results = list(pool.map(batching.embed, texts))
    for asked, got in zip(texts, results):
        np.testing.assert_allclose(got, slow.inner.embed(asked))
    assert batching.calls < len(texts) / 2  # batched, not one model call per caller
    assert slow.most_at_once == 1  # the model is never run by two threads at once
    lone = BatchingEmbedder(Slow())
    lone.embed(["alone"])
    assert lone.calls == 1


def test_a_failed_batch_fails_its_callers_and_the_next_batch_runs():
    batching = BatchingEmbedder(Slow(fail_on="poison"))
    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(batching.embed, [t]) for t in ("a", "b", "poison", "c", "d", "e")]
        outcomes = []
        for f in futures:
            try:
                outcomes.append(f.result(timeout=10).shape)
            except RuntimeError as e:
                outcomes.append(str(e))
    assert "model failed on 'poison'" in outcomes
    assert batching.embed(["after"]).shape == (1, batching.dim)  # not stuck after the failure
    with pytest.raises(RuntimeError):
        batching.embed(["poison"])
