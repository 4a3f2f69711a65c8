"""Hybrid search over the memories table: vector and full-text result lists fused by reciprocal
rank, with filters by kind, person, time range and "known before"; and a memory's neighbours in
time with their similarity to a query."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
import pyarrow as pa

from graph import sql
from graph.embedder import Embedder
from graph.rows import Hit, Memory
from graph.schema import MEMORY_COLUMNS, memory_from_row
from graph.spelling import full_text_terms

if TYPE_CHECKING:
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table

RRF_K = 60
FTS_COLUMN = (
    "search_text"  # the full-text index's column: the text, and joins of screen words (spelling.py)
)


class HybridSearch:
    """Searches of ``Store`` (its ``memories`` table and ``embedder``)."""

    memories: Table
    embedder: Embedder
    longest_memory_s: Callable[[], float]  # how long the longest memory lasts (Store)
    only_committed: Callable[[list[dict]], list[dict]]  # memory rows of committed clips (Store)
    committed_table: Callable[[pa.Table], pa.Table]
    _executor = None

    def search(
        self,
        query: str,
        k: int = 10,
        before_ts: float | None = None,
        kind: str | tuple[str, ...] | None = None,
        entity_ids: list[str] | None = None,
        start_ts: float | None = None,
        end_ts: float | None = None,
        include_superseded: bool = False,
        candidates: int = 50,
        vector: np.ndarray | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        """Hybrid search: vector and full-text result lists fused by reciprocal rank.

        Filters: memory ``kind`` (one or several), memories involving any of ``entity_ids``, a time
        range overlapping ``[start_ts, end_ts]``, and ``before_ts``: only what was known before that
        time (memories that ended before it and were not yet superseded). Without ``before_ts``,
        superseded memories are left out unless ``include_superseded``. ``vector`` skips embedding
        the query (benchmarks, callers that embed in batches); ``exact`` scans every vector
        instead of using the vector index (the reference for recall).
        """
        if self.memories.count_rows() == 0:
            return []
        where, selective = sql.memory_filter(
            before_ts, kind, entity_ids, start_ts, end_ts, include_superseded
        )
        indexed = {tuple(ix.columns) for ix in self.memories.list_indices()}
        qvec = self.embedder.embed([query])[0] if vector is None else vector
        # Few memories are ever superseded, so the validity-only filter runs after the search (as a
        # pre-filter it slows both searches down on a large store); selective filters (person, kind, time) run before it, so they cannot starve the top k.
        vq = self.vector_query(qvec, candidates, exact, indexed)
        if where:
            vq = vq.where(where, prefilter=selective)
        tq = None
        terms = full_text_terms(query)
        # a store from before search_text keeps its index on text until the next ingest refreshes it
        fts = FTS_COLUMN if (FTS_COLUMN,) in indexed else "text" if ("text",) in indexed else None
        if terms and fts:
            tq = (
                self.memories.search(terms, query_type="fts", fts_columns=fts)
                .limit(candidates)
                .select([*MEMORY_COLUMNS, "vector", "_score"])
            )
            if where:
                tq = tq.where(where, prefilter=selective)
        # the two searches run concurrently: LanceDB releases the GIL while it works
        text_future = self._pool().submit(tq.to_arrow) if tq is not None else None
        vector_hits = self.only_committed(vq.to_list())
        text_hits, text_vectors = (
            split_vectors(self.committed_table(text_future.result()))
            if text_future is not None
            else ([], None)
        )
        return fuse(vector_hits, text_hits, text_vectors, qvec, k)

    def vector_query(
        self, qvec: np.ndarray, candidates: int, exact: bool = False, indexed: set | None = None
    ) -> LanceVectorQueryBuilder:
        """The vector half of ``search``: cosine distance, through the index when there is one
        (20 partitions probed, 10x candidates re-ranked on full vectors), or an exact scan."""
        if indexed is None:
            indexed = {tuple(ix.columns) for ix in self.memories.list_indices()}
        # a vector gives a vector query (LanceDB annotates search() with the builders' base class)
        query = cast(
            "LanceVectorQueryBuilder", self.memories.search(qvec, vector_column_name="vector")
        )
        vq = query.distance_type("cosine").limit(candidates).select([*MEMORY_COLUMNS, "_distance"])
        if exact:
            return vq.bypass_vector_index()
        if ("vector",) in indexed:
            return vq.nprobes(20).refine_factor(10)
        return vq

    def neighbour_hits(
        self,
        memories: Sequence[Memory],
        vector: np.ndarray,
        window_s: float = 30.0,
        limit: int | None = 20,
        before_ts: float | None = None,
    ) -> list[Hit]:
        """Memories of the same recording within ``window_s`` before or after any of ``memories``
        (one query however many; the given ones left out), in time order, each with its cosine
        similarity to ``vector`` (from its stored embedding, in the same query); no search ranks or
        BM25. Validity as in ``search``: not superseded, or with ``before_ts`` what was known then."""
        if not memories:
            return []
        valid, _ = sql.memory_filter(before_ts)
        near = sql.near(list(memories), window_s, self.longest_memory_s())
        rows, vectors = split_vectors(
            self.committed_table(
                self.memories.search().where(f"({near}) AND {valid}").limit(limit).to_arrow()
            )
        )
        hits = [
            Hit(memory_from_row(r), 0.0, None, None, similarity=s)
            for r, s in zip(rows, cosines(vectors, vector))
        ]
        return sorted(hits, key=lambda h: (h.memory.start_ts, h.memory.memory_id))

    def _pool(self):
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-fts")
        return self._executor


def fuse(
    vector_hits: list[dict],
    text_hits: list[dict],
    text_vectors: np.ndarray | None,
    qvec: np.ndarray,
    k: int,
) -> list[Hit]:
    """Reciprocal-rank fusion of the two lists, top ``k``; a hit only the full-text search found
    gets its similarity from its stored vector."""
    text_vector = {row["memory_id"]: i for i, row in enumerate(text_hits)}
    fused: dict[str, dict] = {}
    for source, hits in (("vector", vector_hits), ("text", text_hits)):
        for rank, row in enumerate(hits, start=1):
            entry = fused.setdefault(row["memory_id"], {"row": row, "score": 0.0})
            entry["score"] += 1.0 / (RRF_K + rank)
            entry[source] = rank
            entry[f"{source}_value"] = (
                1.0 - row["_distance"] if source == "vector" else row["_score"]
            )
    ranked = sorted(fused.values(), key=lambda e: e["score"], reverse=True)[:k]
    text_only = [e for e in ranked if "vector_value" not in e]
    if text_only:
        assert text_vectors is not None  # text hits come with their vectors
        sims = cosines(text_vectors[[text_vector[e["row"]["memory_id"]] for e in text_only]], qvec)
        for e, sim in zip(text_only, sims):
            e["vector_value"] = sim
    return [
        Hit(
            memory_from_row(e["row"]),
            e["score"],
            e.get("vector"),
            e.get("text"),
            e.get("vector_value"),
            e.get("text_value"),
        )
        for e in ranked
    ]


def split_vectors(table: pa.Table) -> tuple[list[dict], np.ndarray]:
    """Rows without their ``vector`` column, and the vectors as one (n, dim) array."""
    column = table.column("vector").combine_chunks()
    if not len(column):
        return [], np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(column.flatten(), dtype=np.float32).reshape(len(column), -1)
    return table.drop_columns(["vector"]).to_pylist(), vectors


def cosines(vectors: np.ndarray, query: np.ndarray) -> list[float]:
    if not len(vectors):
        return []
    m = np.asarray(vectors, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    return [float(x) for x in (m @ q) / np.where(norms > 0, norms, 1.0)]
