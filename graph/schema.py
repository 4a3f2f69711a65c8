"""The memory graph's tables as Arrow schemas, and conversion between their rows and records.

Every table carries ``schema_version`` in its metadata; a store written by another version is
refused with what to do (``Store`` checks it on open).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from graph.rows import ClipRow, Edge, Entity, Memory
from graph.spelling import search_text

SCHEMA_VERSION = 2
# every memory column but the vector: what searches return
MEMORY_COLUMNS = [
    "memory_id",
    "kind",
    "text",
    "clip_id",
    "source_path",
    "start_ts",
    "end_ts",
    "entity_ids",
    "provenance",
    "weight",
    "valid_from_ts",
    "valid_to_ts",
    "fact",
]


def versioned(fields: list) -> pa.Schema:
    return pa.schema(fields, metadata={"schema_version": str(SCHEMA_VERSION)})


def clip_schema() -> pa.Schema:
    return versioned(
        [
            ("clip_id", pa.string()),
            ("source_path", pa.string()),
            ("source_sha256", pa.string()),
            ("index", pa.int32()),
            ("offset_s", pa.float64()),
            ("duration_s", pa.float64()),
            ("start_ts", pa.float64()),
            ("end_ts", pa.float64()),
            ("media_location", pa.string()),
            ("transcript", pa.string()),
            ("screen_text", pa.string()),
            ("caption", pa.string()),
            ("notes", pa.list_(pa.string())),
            ("ingested_ts", pa.float64()),
        ]
    )


def entity_schema() -> pa.Schema:
    return versioned(
        [
            ("entity_id", pa.string()),
            ("kind", pa.string()),
            ("name", pa.string()),
            ("first_seen_ts", pa.float64()),
            ("last_seen_ts", pa.float64()),
            ("observations", pa.int64()),
            ("samples", pa.list_(pa.list_(pa.float32()))),
        ]
    )


def memory_schema(dim: int) -> pa.Schema:
    return versioned(
        [
            ("memory_id", pa.string()),
            ("kind", pa.string()),
            ("text", pa.string()),
            ("vector", pa.list_(pa.float32(), dim)),
            ("clip_id", pa.string()),
            ("source_path", pa.string()),
            ("start_ts", pa.float64()),
            ("end_ts", pa.float64()),
            ("entity_ids", pa.list_(pa.string())),
            ("provenance", pa.list_(pa.string())),
            ("weight", pa.float64()),
            ("valid_from_ts", pa.float64()),
            ("valid_to_ts", pa.float64()),
            ("fact", pa.string()),
            ("search_text", pa.string()),  # what the full-text index reads (graph/spelling.py)
        ]
    )


def edge_schema() -> pa.Schema:
    return versioned(
        [
            ("edge_id", pa.string()),
            ("kind", pa.string()),
            ("src_id", pa.string()),
            ("dst_id", pa.string()),
            ("weight", pa.float64()),
            ("clip_id", pa.string()),
            ("evidence", pa.list_(pa.string())),
            ("created_ts", pa.float64()),
        ]
    )


def people_log_schema() -> pa.Schema:
    return versioned(
        [
            ("seq", pa.int64()),
            ("op", pa.string()),
            ("person", pa.string()),
            ("args", pa.string()),
            ("ts", pa.float64()),
        ]
    )


def forget_log_schema() -> pa.Schema:
    """One row per ``mnemo forget``: when, the filters by name, the counts and the span; never the
    content. ``clip_ids`` (opaque hashes) are what ``mnemo ingest`` must not store again; the other
    ids and ``done`` let a forget killed part-way be finished."""
    return versioned(
        [
            ("ts", pa.float64()),
            ("filters", pa.string()),
            ("counts", pa.string()),
            ("span_start", pa.float64()),
            ("span_end", pa.float64()),
            ("clip_ids", pa.list_(pa.string())),
            ("entity_ids", pa.list_(pa.string())),
            ("people_ops", pa.list_(pa.string())),
            ("transcripts_of", pa.list_(pa.string())),
            ("done", pa.bool_()),
        ]
    )


def memory_row(m: Memory, vector) -> dict:
    return {
        "memory_id": m.memory_id,
        "kind": m.kind,
        "text": m.text,
        "vector": list(vector),
        "clip_id": m.clip_id,
        "source_path": m.source_path,
        "start_ts": m.start_ts,
        "end_ts": m.end_ts,
        "entity_ids": list(m.entity_ids),
        "provenance": list(m.provenance),
        "weight": m.weight,
        "valid_from_ts": m.start_ts if m.valid_from_ts is None else m.valid_from_ts,
        "valid_to_ts": m.valid_to_ts,
        "fact": m.fact,
        "search_text": search_text(m.kind, m.text),
    }


def memory_from_row(row: dict) -> Memory:
    return Memory(
        row["memory_id"],
        row["kind"],
        row["text"],
        row["clip_id"],
        row["source_path"],
        row["start_ts"],
        row["end_ts"],
        tuple(row["entity_ids"] or ()),
        tuple(row["provenance"] or ()),
        row["weight"],
        row["valid_from_ts"],
        row["valid_to_ts"],
        row["fact"] or "",
    )


def edge_from_row(row: dict) -> Edge:
    return Edge(
        row["kind"],
        row["src_id"],
        row["dst_id"],
        row["weight"],
        row["clip_id"],
        tuple(row["evidence"] or ()),
    )


def edge_row(e: Edge, clip_id: str, created_ts: float) -> dict:
    return {
        "edge_id": e.edge_id,
        "kind": e.kind,
        "src_id": e.src_id,
        "dst_id": e.dst_id,
        "weight": e.weight,
        "clip_id": e.clip_id or clip_id,
        "evidence": list(e.evidence),
        "created_ts": created_ts,
    }


def clip_row_dict(clip: ClipRow, ingested_ts: float) -> dict:
    return {
        "clip_id": clip.clip_id,
        "source_path": clip.source_path,
        "source_sha256": clip.source_sha256,
        "index": clip.index,
        "offset_s": clip.offset_s,
        "duration_s": clip.duration_s,
        "start_ts": clip.start_ts,
        "end_ts": clip.end_ts,
        "media_location": clip.media_location,
        "transcript": clip.transcript,
        "screen_text": clip.screen_text,
        "caption": clip.caption,
        "notes": list(clip.notes),
        "ingested_ts": ingested_ts,
    }


def entity_row(e: Entity) -> dict:
    return {
        "entity_id": e.entity_id,
        "kind": e.kind,
        "name": e.name,
        "first_seen_ts": e.first_seen_ts,
        "last_seen_ts": e.last_seen_ts,
        "observations": e.observations,
        "samples": [s.astype(np.float32).tolist() for s in e.samples],
    }


def entity_from_row(row: dict) -> Entity:
    return Entity(
        row["entity_id"],
        row["kind"],
        row["first_seen_ts"],
        row["last_seen_ts"],
        [np.asarray(s, dtype=np.float32) for s in row.get("samples") or ()],
        row["observations"],
        row["name"],
    )
