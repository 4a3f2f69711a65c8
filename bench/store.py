"""``mnemo bench store``: hybrid search on a large memory store.

Builds a store of N synthetic memories at the text embedder's dimension (768 for the default
mpnet) and measures:
- bulk insert rate, and index build time (full-text, id, and IVF-PQ vector index, always built);
- the vector index's own recall@10: its top 10 against an exact scan of every vector;
- hybrid search latency (vector plus full-text, fused, top 10; the query vector given) and the
  agreement of its top 10 with the same hybrid search on an exact scan (the full-text half is the
  same in both, so agreement is higher than the index's own recall);
- the latency of a whole ``mnemo ask`` retrieval: the offline planner's searches and neighbour
  expansion, the query embedding included (with the real text embedder);
- the cost of one clip's write (the ingest path) into the full store.

Synthetic data, shaped like real memories:
- vectors drawn around 2,000 topic centres;
- texts mixing a topic's words with Zipf-distributed English words (wordninja's Wikipedia list);
- kinds, entity ids and times spread over the store, 2,000 memories per recording.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from graph.rows import ClipRow, Memory, content_id
from graph.store import Store

TOPICS = 2000
PER_RECORDING = 2000


def _vocabulary() -> list[str]:
    """The 20,000 most frequent English words of three letters or more."""
    from perception.ocr.spacing import english_words

    return [w for w in english_words() if w.isalpha() and len(w) > 2][:20000]


class _Synth:
    def __init__(self, dim: int, seed: int = 0) -> None:
        self.dim = dim
        self.rng = np.random.default_rng(seed)
        self.vocab = np.array(_vocabulary())
        self.centres = self.rng.standard_normal((TOPICS, dim)).astype(np.float32)
        self.topic_words = self.rng.integers(0, len(self.vocab), (TOPICS, 40))

    def vectors(self, topics: np.ndarray) -> np.ndarray:
        v = self.centres[topics] + 0.6 * self.rng.standard_normal((len(topics), self.dim)).astype(
            np.float32
        )
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
    memories = [
        Memory(
            f"m{start + i:09d}",
            str(kinds[i]),
            text,
            f"clip{(start + i) // 20:08d}",
            f"/synthetic/{(start + i) // PER_RECORDING:05d}.mp4",
            1.7e9 + (start + i) * 1.5,
            1.7e9 + (start + i) * 1.5 + 3.0,
            (f"voice_{people[i]}",),
        )
        for i, text in enumerate(synth.texts(topics))
    ]
    return memories, synth.vectors(topics)


def fill(
    store: Store, n: int, batch: int = 20_000, progress: Callable[[str], None] = lambda m: None
) -> _Synth:
    """Insert ``n`` synthetic memories (vectors given, nothing embedded); the generator, to draw
    queries on the same topics from."""
    synth = _Synth(store.embedder.dim)
    for start in range(0, n, batch):
        memories, vectors = _batch(synth, start, min(batch, n - start))
        store.insert_memories(memories, vectors)
        if (start // batch) % 10 == 0:
            progress(
                f"inserted {start + len(memories):,} of {n:,} memories ({store.embedder.dim}-d)"
            )
    return synth


def queries(dim: int, n: int, seed: int = 1) -> list[str]:
    """``n`` query texts on the topics of a store ``fill`` made (its topics are drawn before any
    memory, so a new generator has the same ones)."""
    synth = _Synth(dim)
    synth.rng = np.random.default_rng(seed)
    return synth.texts(synth.rng.integers(0, TOPICS, n), topic_n=3, common_n=0)


def _percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.array(seconds) * 1000
    return round(float(np.percentile(ms, 50)), 2), round(float(np.percentile(ms, 95)), 2)


def _agreement(found: list[set[str]], truth: list[set[str]]) -> float:
    return round(float(np.mean([len(t & f) / max(1, len(t)) for f, t in zip(found, truth)])), 4)


def run(
    store_dir: Path,
    n: int,
    embedder,
    queries: int = 200,
    asks: int = 50,
    batch: int = 20_000,
    progress: Callable[[str], None] = lambda m: None,
) -> dict:
    """Build the store with ``embedder``'s dimension and measure it; ``embedder`` also embeds the
    ask questions."""
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools

    store = Store(store_dir, embedder)
    if store.count()["memories"]:
        raise ValueError(f"{store_dir} is not empty; the store bench needs a fresh directory")
    t0 = time.perf_counter()
    synth = fill(store, n, batch, progress)
    insert_s = time.perf_counter() - t0
    progress("building the full-text, id and vector indexes …")
    t0 = time.perf_counter()
    store.refresh_indexes(vector_index=True)
    index_s = time.perf_counter() - t0

    topics = synth.rng.integers(0, TOPICS, queries + 10)
    qvecs = synth.vectors(topics)
    qtexts = synth.texts(topics, topic_n=3, common_n=0)
    for i in range(10):  # warm caches: the first queries open index files
        store.search(qtexts[i], vector=qvecs[i])
    progress(f"{queries} hybrid searches …")
    latencies, found, ann = [], [], []
    for q, text in zip(qvecs[10:], qtexts[10:]):
        t0 = time.perf_counter()
        found.append({h.memory.memory_id for h in store.search(text, k=10, vector=q)})
        latencies.append(time.perf_counter() - t0)
        # the vector half as search runs it (50 candidates, so 500 re-ranked on full vectors); its top 10
        ann.append({r["memory_id"] for r in store.vector_query(q, 50).to_list()[:10]})
    progress(
        f"{asks} ask retrievals (query embedding, the planner's searches, neighbour expansion) …"
    )
    planner = OfflinePlanner(MemoryTools(store))
    planner.retrieve("warm up the planner and the text embedder")
    ask_latencies = []
    for text in qtexts[10 : 10 + asks]:
        t0 = time.perf_counter()
        planner.retrieve(f"What did I say about {text}?")
        ask_latencies.append(time.perf_counter() - t0)
    # the references run after the timed searches: an exact scan reads every vector and would
    # evict the index from the caches the timed searches rely on
    progress("the same searches with an exact vector scan, for recall …")
    exact_vector, exact_hybrid = [], []
    for q, text in zip(qvecs[10:], qtexts[10:]):
        exact_vector.append(
            {r["memory_id"] for r in store.vector_query(q, 10, exact=True).to_list()}
        )
        exact_hybrid.append(
            {h.memory.memory_id for h in store.search(text, k=10, vector=q, exact=True)}
        )

    progress("timing clip writes into the full store …")
    writes = []
    for j in range(5):
        clip_id = f"bench-clip-{j}"
        memories = [
            Memory(
                content_id(clip_id, i),
                "episodic",
                f"bench memory {i} of clip {j}",
                clip_id,
                "/bench.mp4",
                1.6e9 + j * 30 + i,
                1.6e9 + j * 30 + i + 1,
            )
            for i in range(20)
        ]
        row = ClipRow(
            clip_id, "/bench.mp4", "sha", j, j * 30.0, 30.0, 1.6e9 + j * 30, 1.6e9 + j * 30 + 30, ""
        )
        t0 = time.perf_counter()
        store.commit_clip(row, memories, [])
        writes.append(time.perf_counter() - t0)
    search_p50, search_p95 = _percentiles(latencies)
    ask_p50, ask_p95 = _percentiles(ask_latencies)
    return {
        "memories": n,
        "dim": embedder.dim,
        "embedder": embedder.name,
        "search_p50_ms": search_p50,
        "search_p95_ms": search_p95,
        "ann_recall_at_10": _agreement(ann, exact_vector),
        "hybrid_agreement_at_10": _agreement(found, exact_hybrid),
        "ask_p50_ms": ask_p50,
        "ask_p95_ms": ask_p95,
        "insert_per_s": round(n / insert_s, 1),
        "index_build_s": round(index_s, 1),
        "clip_write_ms": round(float(np.median(writes)) * 1000, 1),
    }


def format_report(figures: dict) -> str:
    return "\n".join(
        [
            f"memories                {figures['memories']:,} ({figures['dim']}-d, asked with {figures['embedder']})",
            f"bulk insert             {figures['insert_per_s']:,.0f} memories/s",
            f"index build             {figures['index_build_s']:.1f} s (full-text, id, IVF-PQ vectors)",
            f"vector index recall@10  {figures['ann_recall_at_10']:.3f} against an exact scan  (target >= 0.95)",
            f"hybrid search p50/p95   {figures['search_p50_ms']:.1f} / {figures['search_p95_ms']:.1f} ms  (target p50 <= 50)",
            f"hybrid agreement@10     {figures['hybrid_agreement_at_10']:.3f} with the same search on an exact scan",
            f"ask retrieval p50/p95   {figures['ask_p50_ms']:.1f} / {figures['ask_p95_ms']:.1f} ms  (target p50 <= 150; "
            "embedding, searches, neighbours)",
            f"one clip write (20)     {figures['clip_write_ms']:.0f} ms into the full store",
        ]
    )


def add_arguments(parser, memories: str = "how many synthetic memories (default 1000000)") -> None:
    """``mnemo bench store``'s own options (``mnemo bench serve``'s too, for its large store, with
    its own help for ``--memories``)."""
    parser.add_argument("--memories", type=int, default=1_000_000, metavar="N", help=memories)
