"""The store's writes: one clip's commit (journaled, clip row last) and the bulk append.

``Store`` (``graph.store``) takes them from ``ClipWrites``, as it takes its searches from
``graph.search.HybridSearch``: the class names the tables and state of ``Store`` that they use.
``commit_clip`` writes memories (new ones, then the older ones the clip updated), edges, entities
and last the clip row, which commits them; ``graph.commit`` journals it first, so an error
part-way undoes it at once and a killed writer's is undone by the next ``Store.writing``.
``insert_memories`` appends in bulk (imports, benchmarks). ``disk_full`` turns LanceDB's full-disk
errors into one a person can act on.
"""

from __future__ import annotations

import errno
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from graph import commit, sql
from graph.embedder import Embedder
from graph.rows import ClipRow, Edge, Entity, Memory
from graph.schema import (
    clip_row_dict,
    clip_schema,
    edge_row,
    edge_schema,
    entity_row,
    entity_schema,
    memory_row,
)
from graph.sidefiles import Lease
from graph.spelling import search_text

if TYPE_CHECKING:
    from lancedb.table import Table

log = logging.getLogger(__name__)


def disk_full(uri: str, e: BaseException, doing: str) -> OSError | None:
    """``e`` as an error a person can act on when it says the disk is full (LanceDB raises a
    RuntimeError naming only its own source file); None for any other error."""
    if not (
        (isinstance(e, OSError) and e.errno == errno.ENOSPC)
        or "os error 28" in str(e)
        or "No space left on device" in str(e)
    ):
        return None
    return OSError(
        errno.ENOSPC,
        f"No space left on the disk that holds the store {uri} while {doing}: free space "
        "there and run again (what was committed before is kept, and the next writer "
        "undoes the unfinished commit)",
    )


class ClipWrites:
    """The writes of ``Store`` (its tables, ``embedder`` and the state below)."""

    uri: str
    embedder: Embedder
    memories: Table
    clips: Table
    entities: Table
    edges: Table
    _lease: Lease | None  # while the handle holds the writer lock
    _known_clips: dict[str, float]  # committed clip ids (``Store.committed``)
    _longest_s: float | None  # the longest memory's span, once read (Store.longest_memory_s)

    def commit_clip(
        self,
        clip: ClipRow,
        memories: list[Memory],
        entities: list[Entity],
        edges: Sequence[Edge] = (),
        updated: Sequence[Memory] = (),
        vectors: np.ndarray | None = None,
    ) -> None:
        """Store one clip's memories, edges and touched entities, then the clip row that commits them.

        ``updated`` are memories of earlier clips this clip changed (reinforced or superseded); they
        keep their ids and vectors. Memories and edges left by an earlier attempt at this clip that
        died before its commit are dropped first: entity ids, and so memory texts, may differ on the
        retry. ``vectors`` are the memories' text embeddings when the caller computed them already.
        What the commit will change is journaled first (``graph.commit``): an error part-way undoes
        it at once, a killed writer's is undone by the next ``writing``.
        """
        if vectors is not None and len(vectors) != len(memories):
            raise ValueError(f"{len(vectors)} vectors for {len(memories)} memories")
        if memories and vectors is None:
            vectors = self.embedder.embed([m.text for m in memories])
        if self._lease is not None:
            self._lease.check()  # a bucket's lease lost: another writer may have the store now
        try:
            commit.begin(self, clip.clip_id, memories, updated, entities, edges)
            try:
                self._write_clip(clip, memories, entities, edges, updated, vectors)
            except BaseException:
                try:
                    commit.recover(self)
                except Exception as e:  # the journal stays: the next writer undoes the commit
                    log.error(
                        "%s: could not undo the unfinished commit of clip %s: %s",
                        self.uri,
                        clip.clip_id,
                        e,
                    )
                raise
            commit.end(self)
        except Exception as e:
            full = disk_full(self.uri, e, f"committing clip {clip.clip_id}")
            if full is None:
                raise
            raise full from e
        self._known_clips[clip.clip_id] = clip.offset_s - clip.start_ts

    def _write_clip(
        self,
        clip: ClipRow,
        memories: list[Memory],
        entities: list[Entity],
        edges: Sequence[Edge],
        updated: Sequence[Memory],
        vectors: np.ndarray | None,
    ) -> None:
        self.memories.delete(f"clip_id = {sql.quote(clip.clip_id)}")
        self.edges.delete(f"clip_id = {sql.quote(clip.clip_id)}")
        self._wrote(list(memories) + list(updated))
        commit.step("memories")
        if memories:
            assert vectors is not None  # commit_clip embeds memories that came without vectors
            rows = [memory_row(m, v) for m, v in zip(memories, vectors)]
            (
                self.memories.merge_insert("memory_id")
                .when_not_matched_insert_all()
                .execute(pa.Table.from_pylist(rows, schema=self.memories.schema))
            )
        commit.step("updated")
        if updated:
            stored = {
                r["memory_id"]: r["vector"]
                for r in self.memories.search()
                .where(sql.in_list("memory_id", [m.memory_id for m in updated]))
                .select(["memory_id", "vector"])
                .limit(None)
                .to_list()
            }
            rows = [memory_row(m, stored[m.memory_id]) for m in updated if m.memory_id in stored]
            if rows:
                (
                    self.memories.merge_insert("memory_id")
                    .when_matched_update_all()
                    .execute(pa.Table.from_pylist(rows, schema=self.memories.schema))
                )
        commit.step("edges")
        if edges:
            now = time.time()
            rows = [edge_row(e, clip.clip_id, now) for e in edges]
            (
                self.edges.merge_insert("edge_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(pa.Table.from_pylist(rows, schema=edge_schema()))
            )
        commit.step("entities")
        if entities:
            rows = [entity_row(e) for e in entities]
            (
                self.entities.merge_insert("entity_id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(pa.Table.from_pylist(rows, schema=entity_schema()))
            )
        commit.step("clip")
        (
            self.clips.merge_insert("clip_id")
            .when_not_matched_insert_all()
            .execute(pa.Table.from_pylist([clip_row_dict(clip, time.time())], schema=clip_schema()))
        )
        commit.step("end")

    def _wrote(self, memories: list[Memory]) -> None:
        if self._longest_s is not None and memories:
            self._longest_s = max(self._longest_s, max(m.end_ts - m.start_ts for m in memories))

    def insert_memories(self, memories: list[Memory], vectors: np.ndarray | None = None) -> None:
        """Append memories in bulk (imports, benchmarks): no per-clip commit and no dedup by id, so
        callers must not insert an id twice; their clips get bare rows (span only), which commit
        them. ``vectors`` skips embedding."""
        if not memories:
            return
        self._wrote(memories)
        if vectors is None:
            vectors = self.embedder.embed([m.text for m in memories])
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        schema = self.memories.schema
        columns = {
            "memory_id": [m.memory_id for m in memories],
            "kind": [m.kind for m in memories],
            "text": [m.text for m in memories],
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.ravel()), vectors.shape[1]
            ),
            "clip_id": [m.clip_id for m in memories],
            "source_path": [m.source_path for m in memories],
            "start_ts": [m.start_ts for m in memories],
            "end_ts": [m.end_ts for m in memories],
            "entity_ids": [list(m.entity_ids) for m in memories],
            "provenance": [list(m.provenance) for m in memories],
            "weight": [m.weight for m in memories],
            "valid_from_ts": [
                m.start_ts if m.valid_from_ts is None else m.valid_from_ts for m in memories
            ],
            "valid_to_ts": [m.valid_to_ts for m in memories],
            "fact": [m.fact for m in memories],
            "search_text": [search_text(m.kind, m.text) for m in memories],
        }
        self.memories.add(
            pa.table(
                [
                    pa.array(columns[f.name], type=f.type)
                    if f.name != "vector"
                    else columns[f.name]
                    for f in schema
                ],
                schema=schema,
            )
        )
        spans: dict[str, list] = {}
        for m in memories:
            span = spans.setdefault(m.clip_id, [m.source_path, m.start_ts, m.end_ts])
            span[1], span[2] = min(span[1], m.start_ts), max(span[2], m.end_ts)
        now = time.time()
        rows = [
            clip_row_dict(ClipRow(c, path, "", 0, 0.0, end - start, start, end, ""), now)
            for c, (path, start, end) in spans.items()
        ]
        (
            self.clips.merge_insert("clip_id")
            .when_not_matched_insert_all()
            .execute(pa.Table.from_pylist(rows, schema=clip_schema()))
        )
