"""LanceDB-backed memory graph, embedded in a directory by default (or any LanceDB URI).

Tables: ``clips``, ``entities``, ``memories`` and ``edges``, each with an explicit Arrow schema
carrying ``schema_version``.

Write order per clip: memories (new ones, then older ones the clip updated: reinforced or
superseded), edges, entities, and last the clip row. The clip row is the commit marker:
``has_clip`` is true only once everything of the clip is stored, and reads return only memories
whose clip row exists, so the memories of a commit in progress are never answered with (the
earlier rows it updates are seen as written). A journal (``graph/commit.py``) lets the next writer
undo a commit that died part-way; the writes themselves are ``graph/writes.py``'s, the searches
``graph/search.py``'s. LanceDB commits each table write as a new version, so readers in
other processes see either the old or the new rows of a table, never half a write.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from graph import commit, sql
from graph.embedder import Embedder
from graph.resolve_people import NAME_EVIDENCE, PeopleOp, Person, resolve
from graph.rows import Edge, Entity, Memory
from graph.schema import (
    MEMORY_COLUMNS,
    SCHEMA_VERSION,
    clip_schema,
    edge_from_row,
    edge_schema,
    entity_from_row,
    entity_schema,
    forget_log_schema,
    memory_from_row,
    memory_schema,
    people_log_schema,
)
from graph.search import FTS_COLUMN, HybridSearch
from graph.sidefiles import Lease, LockBusy, SideFilesError, side_files
from graph.writes import ClipWrites, disk_full

if TYPE_CHECKING:
    from lancedb.table import Table

log = logging.getLogger(__name__)

MIN_SPAN_S = 60.0  # neighbour queries assume a memory may last this long, whatever the store holds
ALL_CLIPS_MAX = (
    200_000  # a reader holds every clip id of a store up to this many clips (about 30 MB)
)
ALL_CLIPS_EVERY_S = 10.0  # and reads them again at most this often when another process commits
VECTOR_INDEX_MIN_ROWS = 100_000  # below this an exact scan is fast enough (LanceDB's own guidance)


class StoreBusy(RuntimeError):
    """Another process writes the store and did not finish within the wait given."""


class StoreError(RuntimeError):
    pass


class Store(HybridSearch, ClipWrites):
    """Open (or create) a memory store at ``uri``; ``embedder`` embeds memories and queries."""

    def __init__(
        self, uri: str | Path, embedder: Embedder, read_consistency_s: float | None = 1.0
    ) -> None:
        """``read_consistency_s``: how stale reads may be when another process writes (0: every read
        checks for new versions; None: never, this handle keeps the version it opened)."""
        from datetime import timedelta

        import lancedb

        self.uri = str(uri)
        self.embedder = embedder
        if "://" not in self.uri:
            # a store holds a life: private to the user whatever the umask (files inside a 0700
            # folder cannot be opened by others; `mnemo` also writes them 0600)
            created = not Path(self.uri).exists()
            Path(self.uri).mkdir(parents=True, exist_ok=True, mode=0o700)
            if created:
                Path(self.uri).chmod(0o700)
        try:
            self.side = side_files(self.uri)  # locks, the commit journal, forget notes
        except SideFilesError as e:
            raise StoreError(str(e)) from None
        self._lease: Lease | None = None  # while this handle holds the writer lock
        interval = None if read_consistency_s is None else timedelta(seconds=read_consistency_s)
        self._db = lancedb.connect(self.uri, read_consistency_interval=interval)
        self.memories = self._open("memories", memory_schema(embedder.dim))
        self._check_memory_schema()
        self._add_search_text()
        self.clips = self._open("clips", clip_schema())
        self.entities = self._open("entities", entity_schema())
        self.edges = self._open("edges", edge_schema())
        self.people_log = self._open(
            "people_log", people_log_schema()
        )  # the user's changes to people
        self.forget_log = self._open(
            "forget_log", forget_log_schema()
        )  # what `mnemo forget` took back
        self._longest_s: float | None = (
            None  # the longest memory's duration, read once, kept up by our writes
        )
        # clip ids seen committed (reads keep only their memories), each with its offset in its
        # recording less its start time (what a citation adds to a memory's times)
        self._known_clips: dict[str, float] = {}
        self._all_clips_at: int | None = (
            None  # the clips table's version when every clip id was read
        )
        self._all_clips_read = -float("inf")  # when (time.monotonic())
        self._people: tuple[tuple[int, ...], list[Person]] | None = (
            None  # people() as of these table versions
        )

    def _open(self, name: str, schema: pa.Schema) -> Table:
        try:
            table = self._db.open_table(name)
        except (ValueError, FileNotFoundError):  # a new store
            return self._db.create_table(name, schema=schema, exist_ok=True)
        version = int((table.schema.metadata or {}).get(b"schema_version", b"1").decode())
        if version != SCHEMA_VERSION:
            newer = version > SCHEMA_VERSION
            raise StoreError(
                f"{self.uri}: table {name!r} has schema version {version}, this mnemo writes "
                f"{SCHEMA_VERSION}; "
                + (
                    "upgrade mnemo"
                    if newer
                    else "ingest again into a new --store (older stores are not migrated)"
                )
            )
        return table

    def _check_memory_schema(self) -> None:
        dim = self.memories.schema.field("vector").type.list_size
        if dim != self.embedder.dim:
            raise StoreError(
                f"{self.uri}: memories were embedded with {dim}-d vectors but the text embedder "
                f"{self.embedder.name!r} gives {self.embedder.dim}-d; use the embedder the store was "
                "built with (graph.text_embedder) or ingest into a new --store"
            )

    def _add_search_text(self) -> None:
        """A store written before ``search_text`` existed gets the column, holding each memory's
        text (the joins of screen words come with memories written from now on); its full-text
        index moves to the column at the next ``refresh_indexes``."""
        if "search_text" not in self.memories.schema.names:
            log.info("%s: adding the memories' search_text column", self.uri)
            try:
                self.memories.add_columns({"search_text": "text"})
            except (OSError, RuntimeError, ValueError):
                self.memories.checkout_latest()  # another process opening the store added it first
                if "search_text" not in self.memories.schema.names:
                    raise

    # ---- reads -------------------------------------------------------------------------------

    @contextmanager
    def writing(
        self, what: str, wait_s: float | None = None, say: Callable[[str], None] = log.warning
    ) -> Iterator[None]:
        """The right to write this store, one process at a time (``<store>/.writer.lock``, which
        names the holder; ``graph.sidefiles``): two writers would each number new people from what
        they read, and give two people one id. A commit the last writer left unfinished is undone
        first (``graph.commit.recover``). Waits for the holder, saying so once; ``StoreBusy`` after
        ``wait_s``."""
        try:
            with self.side.lock(
                ".writer.lock", f"pid {os.getpid()} on {socket.gethostname()} ({what})", wait_s, say
            ) as lease:
                try:
                    commit.recover(self)  # a writer killed mid-commit left it half-done
                except Exception as e:
                    full = disk_full(self.uri, e, "recovering an unfinished commit")
                    if full is None:
                        raise
                    raise full from e
                self._lease = lease
                try:
                    yield
                finally:
                    self._lease = None
        except LockBusy as e:
            raise StoreBusy(
                f"{self.uri} is being written by {e.holder}; try again when it is done"
            ) from None

    def committed(self, clip_ids: Iterable[str]) -> set[str]:
        """Those of ``clip_ids`` whose clip row is stored: reads keep only their memories, so a
        commit in progress (or one a killed writer left) is never answered with. Clip ids seen
        committed are remembered; only new ones cost a lookup.

        A store of up to ``ALL_CLIPS_MAX`` clips has every clip id read at once, as of the clips
        table's version then: until that version changes, an id not among them is not committed,
        with no lookup (each question reads memories of clips not seen before, and lookups cost
        CPU under many questions at once). A new version (a commit by ``mnemo ingest`` beside a server) reads them all again,
        at most every ``ALL_CLIPS_EVERY_S``; in between, and in a larger store, new ids are looked up."""
        ids = set(clip_ids)
        unknown = ids - self._known_clips.keys()
        if not unknown:
            return ids
        version = self.clips.version
        if version == self._all_clips_at:
            return ids - unknown
        now = time.monotonic()
        if (
            now - self._all_clips_read >= ALL_CLIPS_EVERY_S
            and self.clips.count_rows() <= ALL_CLIPS_MAX
        ):
            rows = (
                self.clips.search()
                .select(["clip_id", "offset_s", "start_ts"])
                .limit(None)
                .to_arrow()
            )
            # a new dict: clips forgotten since the last read drop out
            self._known_clips = dict(
                zip(
                    rows.column("clip_id").to_pylist(),
                    pc.subtract(rows.column("offset_s"), rows.column("start_ts")).to_pylist(),
                )
            )
            self._all_clips_at, self._all_clips_read = (
                version,
                now,
            )  # the version read before them: never newer
        else:
            rows = (
                self.clips.search()
                .where(sql.in_list("clip_id", sorted(unknown)))
                .select(["clip_id", "offset_s", "start_ts"])
                .limit(None)
                .to_list()
            )
            if len(self._known_clips) > 1_000_000:  # a bound on what a long-lived reader holds
                self._known_clips = {}
            self._known_clips.update((r["clip_id"], r["offset_s"] - r["start_ts"]) for r in rows)
        return {c for c in ids if c in self._known_clips}

    def clip_offset(self, clip_id: str) -> float | None:
        """What to add to a time in a committed clip to get its offset in the clip's recording (None
        while the clip is not committed): the span a citation points at."""
        self.committed([clip_id])
        return self._known_clips.get(clip_id)

    def only_committed(self, rows: list[dict]) -> list[dict]:
        """Memory ``rows`` of committed clips only, in their order."""
        keep = self.committed(r["clip_id"] for r in rows)
        return [r for r in rows if r["clip_id"] in keep]

    def committed_table(self, table: pa.Table) -> pa.Table:
        """The rows of a memory ``table`` (an Arrow result) of committed clips only."""
        if not table.num_rows:
            return table
        keep = self.committed(table.column("clip_id").to_pylist())
        return table.filter(
            pc.is_in(table.column("clip_id"), value_set=pa.array(sorted(keep), pa.string()))
        )

    def has_clip(self, clip_id: str) -> bool:
        return self.clips.count_rows(f"clip_id = {sql.quote(clip_id)}") > 0

    def count(self) -> dict[str, int]:
        return {
            "clips": self.clips.count_rows(),
            "entities": self.entities.count_rows(),
            "memories": self.memories.count_rows(),
            "edges": self.edges.count_rows(),
        }

    def load_entities(self, kind: str | None = None, samples: bool = True) -> list[Entity]:
        """Entities (of one ``kind``), by kind and number; ``samples=False`` leaves their embedding
        samples unread (most of a row's bytes)."""
        q = self.entities.search()
        if not samples:
            q = q.select([f.name for f in self.entities.schema if f.name != "samples"])
        if kind is not None:
            q = q.where(f"kind = {sql.quote(kind)}")
        out = [entity_from_row(r) for r in q.limit(None).to_list()]
        return sorted(out, key=lambda e: (e.kind, int(e.entity_id.rsplit("_", 1)[-1])))

    def newest_ts(self) -> float | None:
        """When the newest committed clip ends (None for an empty store)."""
        import pyarrow.compute as pc

        ends = self.clips.search().select(["end_ts"]).limit(None).to_arrow()["end_ts"]
        return pc.max(ends).as_py() if len(ends) else None

    def get_clip(self, clip_id: str) -> dict | None:
        rows = self.clips.search().where(f"clip_id = {sql.quote(clip_id)}").limit(1).to_list()
        return rows[0] if rows else None

    def get_clips(self, clip_ids: list[str]) -> list[dict]:
        """The rows of these clips that are stored, in one read."""
        if not clip_ids:
            return []
        return self.clips.search().where(sql.in_list("clip_id", clip_ids)).limit(None).to_list()

    def catch_up(self) -> None:
        """Read the newest memories, entities and edges from now on, whatever the read-consistency
        interval. Each table checks for new versions on its own clock, so a reader may see a clip
        row before the memories written ahead of it; one that calls this after reading clip rows
        sees everything those clips committed (a cheap version check per table). ``clips`` too:
        after a forget removed old versions, a handle still on one cannot read it."""
        for table in (
            self.memories,
            self.entities,
            self.edges,
            self.clips,
            self.people_log,
            self.forget_log,
        ):
            table.checkout_latest()

    def memories_of_clips(self, clip_ids: list[str]) -> list[Memory]:
        """All memories of these committed clips (rows read from this store), in time order; never
        fewer than the clips committed, whatever the read-consistency interval (see ``catch_up``)."""
        if not clip_ids:
            return []
        self.catch_up()
        return self.memories_where(sql.in_list("clip_id", clip_ids))

    def clips_in_range(
        self, start_ts: float, end_ts: float, limit: int | None = 1000
    ) -> list[dict]:
        """Committed clip rows overlapping ``[start_ts, end_ts]``, in time order."""
        rows = (
            self.clips.search()
            .where(f"end_ts >= {float(start_ts)!r} AND start_ts <= {float(end_ts)!r}")
            .limit(limit)
            .to_list()
        )
        return sorted(rows, key=lambda r: (r["start_ts"], r["clip_id"]))

    def get_memories(self, memory_ids: list[str]) -> list[Memory]:
        if not memory_ids:
            return []
        rows = (
            self.memories.search().where(sql.in_list("memory_id", memory_ids)).limit(None).to_list()
        )
        return [memory_from_row(r) for r in self.only_committed(rows)]

    def memories_where(self, where: str, limit: int | None = None) -> list[Memory]:
        """Memories matching a SQL filter (LanceDB/DataFusion syntax), in time order."""
        # without the vectors: a memory record has none, and they are most of a row's bytes
        rows = self.memories.search().where(where).select(MEMORY_COLUMNS).limit(limit).to_list()
        return sorted(
            (memory_from_row(r) for r in self.only_committed(rows)),
            key=lambda m: (m.start_ts, m.memory_id),
        )

    def memories_with_vectors(self, where: str) -> tuple[list[Memory], np.ndarray]:
        """Committed memories matching a SQL filter, in time order, and their stored vectors (one
        row each)."""
        rows = (
            self.memories.search()
            .where(where)
            .select([*MEMORY_COLUMNS, "vector"])
            .limit(None)
            .to_list()
        )
        rows = sorted(self.only_committed(rows), key=lambda r: (r["start_ts"], r["memory_id"]))
        vectors = np.array([r["vector"] for r in rows], dtype=np.float32).reshape(
            len(rows), self.embedder.dim
        )
        return [memory_from_row(r) for r in rows], vectors

    def about(self, entity_ids: list[str], limit: int | None = 50) -> list[Memory]:
        """Memories that involve any of these entities (a person's face, voice and character ids)."""
        if not entity_ids:
            return []
        return self.memories_where(sql.involves(entity_ids), limit)

    def in_time_range(
        self, start_ts: float, end_ts: float, limit: int | None = 100
    ) -> list[Memory]:
        return self.memories_where(
            f"end_ts >= {float(start_ts)!r} AND start_ts <= {float(end_ts)!r}", limit
        )

    def edges_of(self, node_id: str, kind: str | None = None) -> list[Edge]:
        where = f"(src_id = {sql.quote(node_id)} OR dst_id = {sql.quote(node_id)})"
        if kind is not None:
            where += f" AND kind = {sql.quote(kind)}"
        return [edge_from_row(r) for r in self.edges.search().where(where).limit(None).to_list()]

    def all_edges(self, kind: str) -> list[Edge]:
        return [
            edge_from_row(r)
            for r in self.edges.search().where(f"kind = {sql.quote(kind)}").limit(None).to_list()
        ]

    def people_ops(self) -> list[PeopleOp]:
        """The user's changes to people, in order (undone ones and undo rows included)."""
        self.people_log.checkout_latest()  # another process's change counts at once
        return sorted(
            (PeopleOp.from_row(r) for r in self.people_log.search().limit(None).to_list()),
            key=lambda o: o.seq,
        )

    def people(self) -> list[Person]:
        """Everyone in memory, resolved now (``graph.resolve_people``): groups of characters, voices and
        faces, with the user's names, merges and splits applied. Read again only when a table it
        reads from has a new version (a server answers many questions between two changes)."""
        self.people_log.checkout_latest()  # another process's change counts at once
        versions = (self.entities.version, self.edges.version, self.people_log.version)
        if self._people is None or self._people[0] != versions:
            entities = self.load_entities(samples=False)
            kinds = " OR ".join(f"kind = {sql.quote(k)}" for k in NAME_EVIDENCE)
            names = [
                edge_from_row(r) for r in self.edges.search().where(kinds).limit(None).to_list()
            ]
            self._people = (
                versions,
                resolve(entities, self.all_edges("same_person"), self.people_ops(), names),
            )
        return list(self._people[1])

    def append_people_op(self, op: PeopleOp) -> None:
        """Record one change to people (callers hold ``graph.edit_people``' lock, which numbers them)."""
        (
            self.people_log.merge_insert("seq")
            .when_not_matched_insert_all()
            .execute(pa.Table.from_pylist([op.to_row()], schema=people_log_schema()))
        )

    def longest_memory_s(self) -> float:
        """How long the longest memory lasts (at least ``MIN_SPAN_S``): read from the store once,
        then raised by this handle's writes. Memories lie within their clip, so a memory written by
        another process since is no longer than a clip, which ``MIN_SPAN_S`` covers."""
        if self._longest_s is None:
            spans = self.memories.search().select(["start_ts", "end_ts"]).limit(None).to_arrow()
            longest = (
                pc.max(pc.subtract(spans["end_ts"], spans["start_ts"])).as_py()
                if spans.num_rows
                else None
            )
            self._longest_s = max(MIN_SPAN_S, longest or 0.0)
        return self._longest_s

    # ---- index upkeep (the writes are ``graph.writes.ClipWrites``') ---------------------------

    def refresh_indexes(self, vector_index: bool | None = None) -> None:
        """Bring the indexes up to date after a batch of writes: the full-text index over memory
        text (``search_text``), scalar indexes on id, recording and start time (from 10,000
        memories) and on clip id (from 10,000 clips), and the vector index.

        Every table is compacted first: each clip write adds a small fragment per table, and reads
        slow down with their number. Existing indexes take in the new
        rows incrementally there, so a small ingest into a large store does not rebuild them;
        missing indexes are built after. Searches also
        see rows not yet indexed (scanned directly). ``vector_index=None`` builds IVF-PQ once the
        store holds ``VECTOR_INDEX_MIN_ROWS`` memories: ~√n partitions (at most n/256), 48 sub-vectors
        where the dimension allows (16 dimensions each for the 768-d mpnet default, 8 for 384-d
        MiniLM); searches re-rank 10x the candidates on full vectors.
        """
        n = self.memories.count_rows()
        if not n:
            return
        from lancedb.index import FTS, BTree, IvfPq

        # rows an older mnemo wrote into a migrated store carry no search_text: index their text
        if self.memories.count_rows(f"{FTS_COLUMN} IS NULL"):
            self.memories.update(where=f"{FTS_COLUMN} IS NULL", values_sql={FTS_COLUMN: "text"})
        for table in (self.memories, self.edges, self.entities, self.clips):
            table.optimize()
        have = {tuple(ix.columns) for ix in self.memories.list_indices()}
        if (FTS_COLUMN,) not in have:
            self.memories.create_index(FTS_COLUMN, config=FTS(), replace=True)
        if ("text",) in have:  # a store from before search_text: its old full-text index goes (even
            # when an earlier refresh stopped between building the new one and dropping it)
            self.memories.drop_index(
                next(ix.name for ix in self.memories.list_indices() if ix.columns == ["text"])
            )
        # from 10,000 memories: the id index keeps upserts fast, the recording and start-time
        # indexes serve neighbour queries (a time range in one recording)
        for column in ("memory_id", "source_path", "start_ts"):
            if (column,) not in have and n >= 10_000:
                self.memories.create_index(column, config=BTree(), replace=True)
        # and on clip ids: each question looks up the clips of the memories it read (committed?)
        if self.clips.count_rows() >= 10_000 and not any(
            ix.columns == ["clip_id"] for ix in self.clips.list_indices()
        ):
            self.clips.create_index("clip_id", config=BTree(), replace=True)
        if ("vector",) not in have and (
            vector_index or (vector_index is None and n >= VECTOR_INDEX_MIN_ROWS)
        ):
            dim = self.embedder.dim
            sub = next(d for d in (48, 32, 24, 16, 12, 8, 6, 4, 3, 2, 1) if dim % d == 0)
            # ~√n partitions, but no more than k-means can train (it wants 256 rows per partition)
            partitions = max(1, min(int(n**0.5), n // 256))
            self.memories.create_index(
                "vector",
                config=IvfPq(
                    distance_type="cosine", num_partitions=partitions, num_sub_vectors=sub
                ),
                replace=True,
            )
