"""LanceDB-backed memory graph, embedded in a directory by default (or any LanceDB URI).

Tables: ``clips``, ``entities``, ``memories`` and ``edges``, each with an explicit Arrow schema
carrying ``schema_version``.

Write order per clip: memories (new ones, then older ones the clip updated: reinforced or
superseded), edges, entities, and last the clip row. The clip row is the commit marker:
``has_clip`` is true only once everything of the clip is stored. Rows are upserted by content id,
so a clip re-run after a crash adds nothing twice. LanceDB commits each table write as a new
version, so readers in other processes see either the old or the new rows of a table, never half a
write.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from graph.records import MEMORY_KINDS, SCHEMA_VERSION, ClipRow, Edge, Entity, Hit, Memory

log = logging.getLogger(__name__)

RRF_K = 60
VECTOR_INDEX_MIN_ROWS = 100_000
_COLUMNS = ["memory_id", "kind", "text", "clip_id", "source_path", "start_ts", "end_ts", "entity_ids", "provenance",
            "weight", "valid_from_ts", "valid_to_ts", "fact"]  # all but the vector  # below this an exact scan is fast enough (LanceDB's own guidance)
_WORD = re.compile(r"[A-Za-z0-9']+")


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class StoreError(RuntimeError):
    pass


def _versioned(fields: list) -> pa.Schema:
    return pa.schema(fields, metadata={"schema_version": str(SCHEMA_VERSION)})


def _clip_schema() -> pa.Schema:
    return _versioned([
        ("clip_id", pa.string()), ("source_path", pa.string()), ("source_sha256", pa.string()),
        ("index", pa.int32()), ("offset_s", pa.float64()), ("duration_s", pa.float64()),
        ("start_ts", pa.float64()), ("end_ts", pa.float64()), ("media_location", pa.string()),
        ("transcript", pa.string()), ("screen_text", pa.string()), ("caption", pa.string()),
        ("notes", pa.list_(pa.string())), ("ingested_ts", pa.float64()),
    ])


def _entity_schema() -> pa.Schema:
    return _versioned([
        ("entity_id", pa.string()), ("kind", pa.string()), ("name", pa.string()),
        ("first_seen_ts", pa.float64()), ("last_seen_ts", pa.float64()),
        ("observations", pa.int64()), ("samples", pa.list_(pa.list_(pa.float32()))),
    ])


def _memory_schema(dim: int) -> pa.Schema:
    return _versioned([
        ("memory_id", pa.string()), ("kind", pa.string()), ("text", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)), ("clip_id", pa.string()), ("source_path", pa.string()),
        ("start_ts", pa.float64()), ("end_ts", pa.float64()), ("entity_ids", pa.list_(pa.string())),
        ("provenance", pa.list_(pa.string())), ("weight", pa.float64()),
        ("valid_from_ts", pa.float64()), ("valid_to_ts", pa.float64()), ("fact", pa.string()),
    ])


def _edge_schema() -> pa.Schema:
    return _versioned([
        ("edge_id", pa.string()), ("kind", pa.string()), ("src_id", pa.string()), ("dst_id", pa.string()),
        ("weight", pa.float64()), ("clip_id", pa.string()), ("evidence", pa.list_(pa.string())),
        ("created_ts", pa.float64()),
    ])


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _in(column: str, values) -> str:
    return f"{column} IN ({', '.join(map(_quote, values))})"


def _involves(entity_ids) -> str:
    return f"array_has_any(entity_ids, [{', '.join(map(_quote, entity_ids))}])"


class Store:
    """Open (or create) a memory store at ``uri``; ``embedder`` embeds memories and queries."""

    def __init__(self, uri: str | Path, embedder: Embedder, read_consistency_s: float | None = 1.0) -> None:
        """``read_consistency_s``: how stale reads may be when another process writes (0: every read
        checks for new versions; None: never, this handle keeps the version it opened)."""
        from datetime import timedelta

        import lancedb

        self.uri = str(uri)
        self.embedder = embedder
        self._executor = None
        if "://" not in self.uri:
            Path(self.uri).mkdir(parents=True, exist_ok=True)
        interval = None if read_consistency_s is None else timedelta(seconds=read_consistency_s)
        self._db = lancedb.connect(self.uri, read_consistency_interval=interval)
        self.memories = self._open("memories", _memory_schema(embedder.dim))
        self._check_memory_schema()
        self.clips = self._open("clips", _clip_schema())
        self.entities = self._open("entities", _entity_schema())
        self.edges = self._open("edges", _edge_schema())

    def _open(self, name: str, schema: pa.Schema):
        try:
            table = self._db.open_table(name)
        except (ValueError, FileNotFoundError):  # a new store
            return self._db.create_table(name, schema=schema, exist_ok=True)
        version = int((table.schema.metadata or {}).get(b"schema_version", b"1").decode())
        if version != SCHEMA_VERSION:
            newer = version > SCHEMA_VERSION
            raise StoreError(f"{self.uri}: table {name!r} has schema version {version}, this mnemo writes "
                             f"{SCHEMA_VERSION}; " + ("upgrade mnemo" if newer else
                                                       "ingest again into a new --store (older stores are not migrated)"))
        return table

    def _check_memory_schema(self) -> None:
        dim = self.memories.schema.field("vector").type.list_size
        if dim != self.embedder.dim:
            raise StoreError(
                f"{self.uri}: memories were embedded with {dim}-d vectors but the text embedder "
                f"{self.embedder.name!r} gives {self.embedder.dim}-d; use the embedder the store was "
                "built with (graph.text_embedder) or ingest into a new --store"
            )

    # ---- reads -------------------------------------------------------------------------------

    def has_clip(self, clip_id: str) -> bool:
        return self.clips.count_rows(f"clip_id = {_quote(clip_id)}") > 0

    def count(self) -> dict[str, int]:
        return {"clips": self.clips.count_rows(), "entities": self.entities.count_rows(),
                "memories": self.memories.count_rows(), "edges": self.edges.count_rows()}

    def load_entities(self, kind: str | None = None) -> list[Entity]:
        q = self.entities.search()
        if kind is not None:
            q = q.where(f"kind = {_quote(kind)}")
        out = [Entity(r["entity_id"], r["kind"], r["first_seen_ts"], r["last_seen_ts"],
                      [np.asarray(s, dtype=np.float32) for s in r["samples"]], r["observations"], r["name"])
               for r in q.limit(None).to_list()]
        return sorted(out, key=lambda e: (e.kind, int(e.entity_id.rsplit("_", 1)[-1])))

    def newest_ts(self) -> float | None:
        """When the newest committed clip ends (None for an empty store)."""
        import pyarrow.compute as pc

        ends = self.clips.search().select(["end_ts"]).limit(None).to_arrow()["end_ts"]
        return pc.max(ends).as_py() if len(ends) else None

    def get_clip(self, clip_id: str) -> dict | None:
        rows = self.clips.search().where(f"clip_id = {_quote(clip_id)}").limit(1).to_list()
        return rows[0] if rows else None

    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        rows = self.memories.search().where(_in("memory_id", memory_ids)) \
            .limit(None).to_list()
        return [_memory(r) for r in rows]

    def memories_where(self, where: str, limit: int | None = None) -> list[Memory]:
        """Memories matching a SQL filter (LanceDB/DataFusion syntax), in time order."""
        rows = self.memories.search().where(where).limit(limit).to_list()
        return sorted((_memory(r) for r in rows), key=lambda m: (m.start_ts, m.memory_id))

    def about(self, entity_ids: list[str], limit: int | None = 50) -> list[Memory]:
        """Memories that involve any of these entities (a person's face, voice and character ids)."""
        if not entity_ids:
            return []
        return self.memories_where(_involves(entity_ids), limit)

    def in_time_range(self, start_ts: float, end_ts: float, limit: int | None = 100) -> list[Memory]:
        return self.memories_where(f"end_ts >= {float(start_ts)!r} AND start_ts <= {float(end_ts)!r}", limit)

    def neighbours(self, memories: Memory | Sequence[Memory], window_s: float = 30.0,
                   limit: int | None = 20) -> list[Memory]:
        """Memories of the same recording within ``window_s`` before or after any of ``memories``
        (one query however many), the given ones left out; in time order."""
        memories = [memories] if isinstance(memories, Memory) else list(memories)
        return self.memories_where(_near(memories, window_s), limit) if memories else []

    def neighbour_hits(self, memories: Sequence[Memory], vector: np.ndarray, window_s: float = 30.0,
                       limit: int | None = 20, before_ts: float | None = None) -> list[Hit]:
        """``neighbours`` with each one's cosine similarity to ``vector`` (from its stored
        embedding, in the same query); no search ranks or BM25. Validity as in ``search``: not
        superseded, or with ``before_ts`` what was known then."""
        if not memories:
            return []
        valid, _ = self._filter(before_ts, None, None, None, None, False)
        rows, vectors = _split_vectors(self.memories.search().where(f"({_near(list(memories), window_s)}) AND {valid}")
                                       .limit(limit).to_arrow())
        hits = [Hit(_memory(r), 0.0, None, None, similarity=s) for r, s in zip(rows, _cosines(vectors, vector))]
        return sorted(hits, key=lambda h: (h.memory.start_ts, h.memory.memory_id))

    def edges_of(self, node_id: str, kind: str | None = None) -> list[Edge]:
        where = f"(src_id = {_quote(node_id)} OR dst_id = {_quote(node_id)})"
        if kind is not None:
            where += f" AND kind = {_quote(kind)}"
        return [_edge(r) for r in self.edges.search().where(where).limit(None).to_list()]

    def all_edges(self, kind: str) -> list[Edge]:
        return [_edge(r) for r in self.edges.search().where(f"kind = {_quote(kind)}").limit(None).to_list()]

    # ---- writes ------------------------------------------------------------------------------

    def write_clip(self, clip: ClipRow, memories: list[Memory], entities: list[Entity],
                   edges: list[Edge] = (), updated: list[Memory] = ()) -> None:
        """Store one clip's memories, edges and touched entities, then the clip row that commits them.

        ``updated`` are memories of earlier clips this clip changed (reinforced or superseded); they
        keep their ids and vectors. Memories and edges left by an earlier attempt at this clip that
        died before its commit are dropped first: entity ids, and so memory texts, may differ on the
        retry.
        """
        self.memories.delete(f"clip_id = {_quote(clip.clip_id)}")
        self.edges.delete(f"clip_id = {_quote(clip.clip_id)}")
        if memories:
            vectors = self.embedder.embed([m.text for m in memories])
            rows = [_memory_row(m, v) for m, v in zip(memories, vectors)]
            (self.memories.merge_insert("memory_id").when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=self.memories.schema)))
        if updated:
            vectors = {r["memory_id"]: r["vector"] for r in self.memories.search()
                       .where(_in("memory_id", [m.memory_id for m in updated]))
                       .select(["memory_id", "vector"]).limit(None).to_list()}
            rows = [_memory_row(m, vectors[m.memory_id]) for m in updated if m.memory_id in vectors]
            if rows:
                (self.memories.merge_insert("memory_id").when_matched_update_all()
                 .execute(pa.Table.from_pylist(rows, schema=self.memories.schema)))
        if edges:
            now = time.time()
            rows = [{"edge_id": e.edge_id, "kind": e.kind, "src_id": e.src_id, "dst_id": e.dst_id,
                     "weight": e.weight, "clip_id": e.clip_id or clip.clip_id, "evidence": list(e.evidence),
                     "created_ts": now} for e in edges]
            (self.edges.merge_insert("edge_id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=_edge_schema())))
        if entities:
            rows = [{
                "entity_id": e.entity_id, "kind": e.kind, "name": e.name,
                "first_seen_ts": e.first_seen_ts, "last_seen_ts": e.last_seen_ts,
                "observations": e.observations, "samples": [s.astype(np.float32).tolist() for s in e.samples],
            } for e in entities]
            (self.entities.merge_insert("entity_id").when_matched_update_all().when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=_entity_schema())))
        row = {
            "clip_id": clip.clip_id, "source_path": clip.source_path, "source_sha256": clip.source_sha256,
            "index": clip.index, "offset_s": clip.offset_s, "duration_s": clip.duration_s,
            "start_ts": clip.start_ts, "end_ts": clip.end_ts, "media_location": clip.media_location,
            "transcript": clip.transcript, "screen_text": clip.screen_text, "caption": clip.caption,
            "notes": list(clip.notes), "ingested_ts": time.time(),
        }
        (self.clips.merge_insert("clip_id").when_not_matched_insert_all()
         .execute(pa.Table.from_pylist([row], schema=_clip_schema())))

    def insert_memories(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Append memories in bulk (imports, benchmarks): no per-clip commit and no dedup by id, so
        callers must not insert an id twice. ``vectors`` skips embedding."""
        if not memories:
            return
        if vectors is None:
            vectors = self.embedder.embed([m.text for m in memories])
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        schema = self.memories.schema
        columns = {
            "memory_id": [m.memory_id for m in memories], "kind": [m.kind for m in memories],
            "text": [m.text for m in memories],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), vectors.shape[1]),
            "clip_id": [m.clip_id for m in memories], "source_path": [m.source_path for m in memories],
            "start_ts": [m.start_ts for m in memories], "end_ts": [m.end_ts for m in memories],
            "entity_ids": [list(m.entity_ids) for m in memories], "provenance": [list(m.provenance) for m in memories],
            "weight": [m.weight for m in memories],
            "valid_from_ts": [m.start_ts if m.valid_from_ts is None else m.valid_from_ts for m in memories],
            "valid_to_ts": [m.valid_to_ts for m in memories], "fact": [m.fact for m in memories],
        }
        self.memories.add(pa.table([pa.array(columns[f.name], type=f.type) if f.name != "vector" else columns[f.name]
                                    for f in schema], schema=schema))

    def refresh_indexes(self, vector_index: bool | None = None) -> None:
        """Bring the indexes up to date after a batch of writes: the full-text index over memory
        text, the id index that keeps upserts fast (from 10,000 memories), and the vector index.

        Every table is compacted first: each clip write adds a small fragment per table, and reads
        slow down with their number (measured on a LoCoMo conversation, 535 memories in 157
        fragments: a search took 70 ms, 12 ms after compaction). Existing indexes take in the new
        rows incrementally there, so a small ingest into a large store does not rebuild them;
        missing indexes are built after. Searches also
        see rows not yet indexed (scanned directly). ``vector_index=None`` builds IVF-PQ once the
        store holds ``VECTOR_INDEX_MIN_ROWS`` memories: one partition per ~√n rows, 48 sub-vectors
        where the dimension allows (16 dimensions each for the 768-d mpnet default, 8 for 384-d
        MiniLM); searches re-rank 10x the candidates on full vectors.
        """
        n = self.memories.count_rows()
        if not n:
            return
        from lancedb.index import FTS, BTree, IvfPq

        for table in (self.memories, self.edges, self.entities, self.clips):
            table.optimize()
        have = {tuple(ix.columns) for ix in self.memories.list_indices()}
        if ("text",) not in have:
            self.memories.create_index("text", config=FTS(), replace=True)
        if ("memory_id",) not in have and n >= 10_000:
            self.memories.create_index("memory_id", config=BTree(), replace=True)
        if ("vector",) not in have and (vector_index or (vector_index is None and n >= VECTOR_INDEX_MIN_ROWS)):
            dim = self.embedder.dim
            sub = next(d for d in (48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1) if dim % d == 0)
            self.memories.create_index("vector", config=IvfPq(distance_type="cosine", num_partitions=max(1, int(n ** 0.5)),
                                                              num_sub_vectors=sub), replace=True)

    # ---- search ------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, before_ts: float | None = None,
               kind: str | tuple[str, ...] | None = None, entity_ids: list[str] | None = None,
               start_ts: float | None = None, end_ts: float | None = None,
               include_superseded: bool = False, candidates: int = 50,
               vector: np.ndarray | None = None, exact: bool = False) -> list[Hit]:
        """Hybrid search: vector and full-text result lists fused by reciprocal rank.

        Filters: memory ``kind`` (one or several), memories involving any of ``entity_ids``, a time
        range overlapping ``[start_ts, end_ts]``, and ``before_ts``: only what was known at that
        time (memories that ended by then and were not yet superseded). Without ``before_ts``,
        superseded memories are left out unless ``include_superseded``. ``vector`` skips embedding
        the query (benchmarks, callers that embed in batches); ``exact`` scans every vector
        instead of using the vector index (the reference for recall).
        """
        if self.memories.count_rows() == 0:
            return []
        where, selective = self._filter(before_ts, kind, entity_ids, start_ts, end_ts, include_superseded)
        indexed = {tuple(ix.columns) for ix in self.memories.list_indices()}
        qvec = self.embedder.embed([query])[0] if vector is None else vector
        # Few memories are ever superseded, so the validity-only filter runs after the search
        # (measured at 1M memories: as a pre-filter it added ~40 ms to each of the two searches);
        # selective filters (person, kind, time) run before it, so they cannot starve the top k.
        vq = (self.memories.search(qvec, vector_column_name="vector").distance_type("cosine")
              .limit(candidates).select([*_COLUMNS, "_distance"]))
        if exact:
            vq = vq.bypass_vector_index()
        elif ("vector",) in indexed:
            vq = vq.nprobes(20).refine_factor(10)
        if where:
            vq = vq.where(where, prefilter=selective)
        tq = None
        terms = " ".join(_WORD.findall(query))
        if terms and ("text",) in indexed:
            tq = self.memories.search(terms, query_type="fts").limit(candidates).select([*_COLUMNS, "vector", "_score"])
            if where:
                tq = tq.where(where, prefilter=selective)
        # the two searches run concurrently: LanceDB releases the GIL while it works
        text_future = self._pool().submit(tq.to_arrow) if tq is not None else None
        vector_hits = vq.to_list()
        text_hits, text_vectors = _split_vectors(text_future.result()) if text_future is not None else ([], None)
        text_vector = {row["memory_id"]: i for i, row in enumerate(text_hits)}

        fused: dict[str, dict] = {}
        for source, hits in (("vector", vector_hits), ("text", text_hits)):
            for rank, row in enumerate(hits, start=1):
                entry = fused.setdefault(row["memory_id"], {"row": row, "score": 0.0})
                entry["score"] += 1.0 / (RRF_K + rank)
                entry[source] = rank
                entry[f"{source}_value"] = 1.0 - row["_distance"] if source == "vector" else row["_score"]
        ranked = sorted(fused.values(), key=lambda e: e["score"], reverse=True)[:k]
        text_only = [e for e in ranked if "vector_value" not in e]  # similarity from the stored vector
        if text_only:
            sims = _cosines(text_vectors[[text_vector[e["row"]["memory_id"]] for e in text_only]], qvec)
            for e, sim in zip(text_only, sims):
                e["vector_value"] = sim
        return [Hit(_memory(e["row"]), e["score"], e.get("vector"), e.get("text"), e.get("vector_value"),
                    e.get("text_value")) for e in ranked]

    def _pool(self):
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-fts")
        return self._executor

    @staticmethod
    def _filter(before_ts, kind, entity_ids, start_ts, end_ts, include_superseded) -> tuple[str | None, bool]:
        """The SQL filter, and whether it is selective enough to apply before the searches."""
        filters = []
        if before_ts is not None:
            t = float(before_ts)
            filters.append(f"end_ts <= {t!r} AND (valid_to_ts IS NULL OR valid_to_ts > {t!r})")
        elif not include_superseded:
            filters.append("valid_to_ts IS NULL")
        selective = before_ts is not None or bool(kind) or bool(entity_ids) or start_ts is not None or end_ts is not None
        if kind is not None:
            kinds = (kind,) if isinstance(kind, str) else tuple(kind)
            unknown = set(kinds) - set(MEMORY_KINDS)
            if unknown:
                raise ValueError(f"unknown memory kind(s) {sorted(unknown)}; choose from {', '.join(MEMORY_KINDS)}")
            filters.append(_in("kind", kinds))
        if entity_ids:
            filters.append(_involves(entity_ids))
        if start_ts is not None:
            filters.append(f"end_ts >= {float(start_ts)!r}")
        if end_ts is not None:
            filters.append(f"start_ts <= {float(end_ts)!r}")
        return (" AND ".join(f"({f})" for f in filters) or None), selective


def _near(memories: list[Memory], window_s: float) -> str:
    """SQL: memories of the same recordings within ``window_s`` of any of these, not these."""
    near = " OR ".join(f"(source_path = {_quote(m.source_path)} AND end_ts >= {m.start_ts - window_s!r} "
                       f"AND start_ts <= {m.end_ts + window_s!r})" for m in memories)
    return f"({near}) AND NOT {_in('memory_id', [m.memory_id for m in memories])}"


def _split_vectors(table: pa.Table) -> tuple[list[dict], np.ndarray]:
    """Rows without their ``vector`` column, and the vectors as one (n, dim) array."""
    column = table.column("vector").combine_chunks()
    if not len(column):
        return [], np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(column.flatten(), dtype=np.float32).reshape(len(column), -1)
    return table.drop_columns(["vector"]).to_pylist(), vectors


def _cosines(vectors: np.ndarray, query: np.ndarray) -> list[float]:
    if not len(vectors):
        return []
    m = np.asarray(vectors, dtype=np.float32)
    q = np.asarray(query, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1) * (np.linalg.norm(q) or 1.0)
    return [float(x) for x in (m @ q) / np.where(norms > 0, norms, 1.0)]


def _memory_row(m: Memory, vector) -> dict:
    return {
        "memory_id": m.memory_id, "kind": m.kind, "text": m.text, "vector": list(vector),
        "clip_id": m.clip_id, "source_path": m.source_path, "start_ts": m.start_ts, "end_ts": m.end_ts,
        "entity_ids": list(m.entity_ids), "provenance": list(m.provenance), "weight": m.weight,
        "valid_from_ts": m.start_ts if m.valid_from_ts is None else m.valid_from_ts,
        "valid_to_ts": m.valid_to_ts, "fact": m.fact,
    }


def _memory(row: dict) -> Memory:
    return Memory(row["memory_id"], row["kind"], row["text"], row["clip_id"], row["source_path"],
                  row["start_ts"], row["end_ts"], tuple(row["entity_ids"] or ()), tuple(row["provenance"] or ()),
                  row["weight"], row["valid_from_ts"], row["valid_to_ts"], row["fact"] or "")


def _edge(row: dict) -> Edge:
    return Edge(row["kind"], row["src_id"], row["dst_id"], row["weight"], row["clip_id"], tuple(row["evidence"] or ()))
