"""LanceDB-backed memory store, embedded in a directory by default.

Write order per clip: memories, then entities, then the clip row. The clip row is the commit
marker: ``has_clip`` is true only once everything of the clip is stored, and memories and
entities are upserted by content id, so a clip re-run after a crash adds nothing twice.
"""

from __future__ import annotations

import logging
import re
import time
from pathlib import Path
from typing import Protocol

import numpy as np
import pyarrow as pa

from graph.records import SCHEMA_VERSION, ClipRow, Entity, Hit, Memory

log = logging.getLogger(__name__)

RRF_K = 60
_WORD = re.compile(r"[A-Za-z0-9']+")


class Embedder(Protocol):
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


class StoreError(RuntimeError):
    pass


def _clip_schema() -> pa.Schema:
    return pa.schema([
        ("clip_id", pa.string()), ("source_path", pa.string()), ("source_sha256", pa.string()),
        ("index", pa.int32()), ("offset_s", pa.float64()), ("duration_s", pa.float64()),
        ("start_ts", pa.float64()), ("end_ts", pa.float64()), ("transcript", pa.string()),
        ("notes", pa.list_(pa.string())), ("ingested_ts", pa.float64()),
    ])


def _entity_schema() -> pa.Schema:
    return pa.schema([
        ("entity_id", pa.string()), ("kind", pa.string()), ("name", pa.string()),
        ("first_seen_ts", pa.float64()), ("last_seen_ts", pa.float64()),
        ("observations", pa.int64()), ("samples", pa.list_(pa.list_(pa.float32()))),
    ])


def _memory_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("memory_id", pa.string()), ("kind", pa.string()), ("text", pa.string()),
        ("vector", pa.list_(pa.float32(), dim)), ("clip_id", pa.string()), ("source_path", pa.string()),
        ("start_ts", pa.float64()), ("end_ts", pa.float64()), ("entity_ids", pa.list_(pa.string())),
        ("provenance", pa.list_(pa.string())),
    ], metadata={"schema_version": str(SCHEMA_VERSION)})


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class Store:
    """Open (or create) a memory store at ``uri``; ``embedder`` embeds memories and queries."""

    def __init__(self, uri: str | Path, embedder: Embedder) -> None:
        import lancedb

        self.uri = str(uri)
        self.embedder = embedder
        if "://" not in self.uri:
            Path(self.uri).mkdir(parents=True, exist_ok=True)
        self._db = lancedb.connect(self.uri)
        self.clips = self._db.create_table("clips", schema=_clip_schema(), exist_ok=True)
        self.entities = self._db.create_table("entities", schema=_entity_schema(), exist_ok=True)
        try:
            self.memories = self._db.open_table("memories")
        except (ValueError, FileNotFoundError):  # a new store
            self.memories = self._db.create_table("memories", schema=_memory_schema(embedder.dim), exist_ok=True)
        self._check_memory_schema()

    def _check_memory_schema(self) -> None:
        schema = self.memories.schema
        dim = schema.field("vector").type.list_size
        if dim != self.embedder.dim:
            raise StoreError(
                f"{self.uri}: memories were embedded with {dim}-d vectors but the text embedder "
                f"{self.embedder.name!r} gives {self.embedder.dim}-d; use the embedder the store was "
                "built with (graph.text_embedder) or ingest into a new --store"
            )
        version = (schema.metadata or {}).get(b"schema_version", b"0").decode()
        if int(version) > SCHEMA_VERSION:
            raise StoreError(f"{self.uri}: schema version {version} is newer than this mnemo "
                             f"({SCHEMA_VERSION}); upgrade mnemo")

    # ---- reads -------------------------------------------------------------------------------

    def has_clip(self, clip_id: str) -> bool:
        return self.clips.count_rows(f"clip_id = {_quote(clip_id)}") > 0

    def count(self) -> dict[str, int]:
        return {"clips": self.clips.count_rows(), "entities": self.entities.count_rows(),
                "memories": self.memories.count_rows()}

    def load_entities(self, kind: str) -> list[Entity]:
        rows = self.entities.search().where(f"kind = {_quote(kind)}").limit(None).to_list()
        out = [Entity(r["entity_id"], r["kind"], r["first_seen_ts"], r["last_seen_ts"],
                      [np.asarray(s, dtype=np.float32) for s in r["samples"]], r["observations"], r["name"])
               for r in rows]
        return sorted(out, key=lambda e: int(e.entity_id.rsplit("_", 1)[-1]))

    def get_clip(self, clip_id: str) -> dict | None:
        rows = self.clips.search().where(f"clip_id = {_quote(clip_id)}").limit(1).to_list()
        return rows[0] if rows else None

    # ---- writes ------------------------------------------------------------------------------

    def write_clip(self, clip: ClipRow, memories: list[Memory], entities: list[Entity]) -> None:
        """Store one clip's memories and touched entities, then the clip row that commits them.

        Memories left by an earlier attempt at this clip that died before its commit are dropped
        first: entity ids, and so memory texts, may differ on the retry.
        """
        self.memories.delete(f"clip_id = {_quote(clip.clip_id)}")
        if memories:
            vectors = self.embedder.embed([m.text for m in memories])
            rows = [{
                "memory_id": m.memory_id, "kind": m.kind, "text": m.text, "vector": v.tolist(),
                "clip_id": m.clip_id, "source_path": m.source_path, "start_ts": m.start_ts,
                "end_ts": m.end_ts, "entity_ids": list(m.entity_ids), "provenance": list(m.provenance),
            } for m, v in zip(memories, vectors)]
            (self.memories.merge_insert("memory_id").when_not_matched_insert_all()
             .execute(pa.Table.from_pylist(rows, schema=self.memories.schema)))
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
            "start_ts": clip.start_ts, "end_ts": clip.end_ts, "transcript": clip.transcript,
            "notes": list(clip.notes), "ingested_ts": time.time(),
        }
        (self.clips.merge_insert("clip_id").when_not_matched_insert_all()
         .execute(pa.Table.from_pylist([row], schema=_clip_schema())))

    def refresh_indexes(self) -> None:
        """Rebuild the full-text index over memory text (after a batch of writes)."""
        if self.memories.count_rows():
            from lancedb.index import FTS

            self.memories.create_index("text", config=FTS(), replace=True)

    # ---- search ------------------------------------------------------------------------------

    def search(self, query: str, k: int = 10, before_ts: float | None = None,
               kind: str | None = None, candidates: int = 50) -> list[Hit]:
        """Hybrid search: vector and full-text result lists fused by reciprocal rank."""
        if self.memories.count_rows() == 0:
            return []
        filters = []
        if before_ts is not None:
            filters.append(f"end_ts <= {float(before_ts)!r}")
        if kind is not None:
            filters.append(f"kind = {_quote(kind)}")
        where = " AND ".join(filters) or None

        qvec = self.embedder.embed([query])[0]
        vq = self.memories.search(qvec, vector_column_name="vector").distance_type("cosine").limit(candidates)
        if where:
            vq = vq.where(where, prefilter=True)
        vector_hits = vq.to_list()

        text_hits: list[dict] = []
        terms = " ".join(_WORD.findall(query))
        if terms and self.memories.list_indices():
            tq = self.memories.search(terms, query_type="fts").limit(candidates)
            if where:
                tq = tq.where(where, prefilter=True)
            text_hits = tq.to_list()

        fused: dict[str, dict] = {}
        for source, hits in (("vector", vector_hits), ("text", text_hits)):
            for rank, row in enumerate(hits, start=1):
                entry = fused.setdefault(row["memory_id"], {"row": row, "score": 0.0})
                entry["score"] += 1.0 / (RRF_K + rank)
                entry[source] = rank
        ranked = sorted(fused.values(), key=lambda e: e["score"], reverse=True)[:k]
        return [Hit(_memory(e["row"]), e["score"], e.get("vector"), e.get("text")) for e in ranked]


def _memory(row: dict) -> Memory:
    return Memory(row["memory_id"], row["kind"], row["text"], row["clip_id"], row["source_path"],
                  row["start_ts"], row["end_ts"], tuple(row["entity_ids"] or ()), tuple(row["provenance"] or ()))
