"""``mnemo bench store``: hybrid search on a large memory store.

Builds a store of N synthetic memories and measures:
- bulk insert rate;
- index build time (full-text, id, and IVF-PQ vector index);
- hybrid search latency: vector plus full-text, fused, top 10;
- recall of the top 10 against the same hybrid search with an exact vector scan;
- the cost of one clip's write (the ingest path) into the full store.

Synthetic data, shaped like real memories:
- 384-d vectors drawn around 2,000 topic centres;
- texts mixing a topic's words with Zipf-distributed English words (wordninja's Wikipedia list);
- kinds, entity ids and times spread over the store.

The query vector is given directly, so the times leave out the text embedder (one query embedding
took 12 ms with MiniLM and 22 ms with the default mpnet on the 2-core dev machine). The vectors are
384-d, MiniLM's size; the default mpnet embedder's are 768-d.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from graph.rows import ClipRow, Memory, content_id
from graph.store import Store

DIM = 384
TOPICS = 2000


def _vocabulary() -> list[str]:
    import wordninja

    words = sorted(wordninja.DEFAULT_LANGUAGE_MODEL._wordcost.items(), key=lambda kv: kv[1])
    return [w for w, _ in words if w.isalpha() and len(w) > 2][:20000]


class _Synth:
    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.vocab = np.array(_vocabulary())
        self.centres = self.rng.standard_normal((TOPICS, DIM)).astype(np.float32)
        self.topic_words = self.rng.integers(0, len(self.vocab), (TOPICS, 40))

    def vectors(self, topics: np.ndarray) -> np.ndarray:
        v = self.centres[topics] + 0.6 * self.rng.standard_normal((len(topics), DIM)).astype(np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def texts(self, topics: np.ndarray, topic_n: int = 6, common_n: int = 6) -> list[str]:
        own = self.topic_words[topics[:, None], self.rng.integers(0, 40, (len(topics), topic_n))]
        common = np.minimum(self.rng.zipf(1.3, (len(topics), common_n)) - 1, len(self.vocab) - 1)
        words = self.vocab[np.concatenate([own, common], axis=1)]
        return [" ".join(row) for row in words]


def _batch(synth: _Synth, start: int, n: int) -> tuple[list[Memory], np.ndarray]:
    topics = synth.rng.integers(0, TOPICS, n)
    kinds = np.where(synth.rng.random(n) < 0.8, "episodic", "semantic")
    people = synth.rng.integers(1, 500, n)
    memories = [Memory(f"m{start + i:09d}", str(kinds[i]), text, f"clip{(start + i) // 20:08d}", "/synthetic.mp4",
                       1.7e9 + (start + i) * 1.5, 1.7e9 + (start + i) * 1.5 + 3.0, (f"voice_{people[i]}",))
                for i, text in enumerate(synth.texts(topics))]
    return memories, synth.vectors(topics)


def run(store_dir: Path, n: int, embedder, queries: int = 200, batch: int = 20_000,
        progress: Callable[[str], None] = lambda m: None) -> dict:
    store = Store(store_dir, embedder)
    if store.count()["memories"]:
        raise ValueError(f"{store_dir} is not empty; the store bench needs a fresh directory")
    synth = _Synth()
    t0 = time.perf_counter()
    for start in range(0, n, batch):
        memories, vectors = _batch(synth, start, min(batch, n - start))
        store.insert_memories(memories, vectors)
        if (start // batch) % 10 == 0:
            progress(f"inserted {start + len(memories):,} of {n:,} memories")
    insert_s = time.perf_counter() - t0
    progress("building the full-text, id and vector indexes …")
    t0 = time.perf_counter()
    store.refresh_indexes()
    index_s = time.perf_counter() - t0

    topics = synth.rng.integers(0, TOPICS, queries + 10)
    qvecs = synth.vectors(topics)
    qtexts = synth.texts(topics, topic_n=3, common_n=0)
    for i in range(10):  # warm caches: the first queries open index files
        store.search(qtexts[i], vector=qvecs[i])
    progress(f"{queries} hybrid searches …")
    latencies, found = [], []
    for q, text in zip(qvecs[10:], qtexts[10:]):
        t0 = time.perf_counter()
        found.append({h.memory.memory_id for h in store.search(text, k=10, vector=q)})
        latencies.append(time.perf_counter() - t0)
    # the reference runs after the timed searches: an exact scan reads every vector and would
    # evict the index from the caches the timed searches rely on
    progress("the same searches with an exact vector scan, for recall …")
    recalls = []
    for q, text, hits in zip(qvecs[10:], qtexts[10:], found):
        truth = {h.memory.memory_id for h in store.search(text, k=10, vector=q, exact=True)}
        recalls.append(len(truth & hits) / max(1, len(truth)))

    progress("timing clip writes into the full store …")
    writes = []
    for j in range(5):
        clip_id = f"bench-clip-{j}"
        memories = [Memory(content_id(clip_id, i), "episodic", f"bench memory {i} of clip {j}", clip_id,
                           "/bench.mp4", 1.6e9 + j * 30 + i, 1.6e9 + j * 30 + i + 1) for i in range(20)]
        row = ClipRow(clip_id, "/bench.mp4", "sha", j, j * 30.0, 30.0, 1.6e9 + j * 30, 1.6e9 + j * 30 + 30, "")
        t0 = time.perf_counter()
        store.commit_clip(row, memories, [])
        writes.append(time.perf_counter() - t0)
    ms = np.array(latencies) * 1000
    return {"memories": n, "search_p50_ms": round(float(np.percentile(ms, 50)), 2),
            "search_p95_ms": round(float(np.percentile(ms, 95)), 2),
            "recall_at_10_vs_exact": round(float(np.mean(recalls)), 4),
            "insert_per_s": round(n / insert_s, 1), "index_build_s": round(index_s, 1),
            "clip_write_ms": round(float(np.median(writes)) * 1000, 1)}


def format_report(figures: dict) -> str:
    return "\n".join([
        f"memories                {figures['memories']:,}",
        f"bulk insert             {figures['insert_per_s']:,.0f} memories/s",
        f"index build             {figures['index_build_s']:.1f} s (full-text, id, IVF-PQ vectors)",
        f"hybrid search p50/p95   {figures['search_p50_ms']:.1f} / {figures['search_p95_ms']:.1f} ms  (target p50 <= 50)",
        f"recall@10 vs exact      {figures['recall_at_10_vs_exact']:.3f}  (target >= 0.95)",
        f"one clip write (20)     {figures['clip_write_ms']:.0f} ms into the full store",
    ])
