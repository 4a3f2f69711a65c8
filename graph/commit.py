"""A clip's commit as one step: a journal of what it is about to change, so that a writer killed
part-way can be undone.

LanceDB commits each table write on its own, and a clip's commit writes four tables (memories,
edges, entities, then the clip row). Before the first write, ``begin`` saves the rows those writes
will replace (earlier memories the clip reinforces or supersedes, entities it updates, edges it
re-asserts) and the ids of the rows it will add, in the store's side files
(``graph.sidefiles``: ``<store>/.commit/``, in the folder or the bucket): the rows first, then
``commit.json``, whose presence makes the journal. ``end`` removes ``commit.json`` once the clip row
is stored, then the rest. ``recover``, run by the next writer (``Store.writing``), finds a journal
left behind: without its clip row the commit is undone (the rows it added deleted, the rows it
replaced put back); with it, the commit finished and only the journal goes.

The journal guards against a writer killed or failing part-way; a local one is not fsynced, so a
power cut is not covered. Readers never wait for this: ``Store`` returns only memories whose clip
row exists, so the memories of a commit in progress, or of one that died, are never answered with.
What such a commit changed in earlier rows (a memory it superseded or reinforced, an entity, an
edge) is seen as written until the next writer undoes it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.ipc as ipc

from graph import sql
from graph.rows import Edge, Entity, Memory
from graph.sidefiles import delete_folder

log = logging.getLogger(__name__)

JOURNAL = ".commit"
TABLES = (("memories", "memory_id"), ("edges", "edge_id"), ("entities", "entity_id"))


def step(name: str) -> None:
    """Called between a commit's writes (``name`` says which comes next); does nothing. Tests
    replace it to kill a writer at each step."""


MARK = f"{JOURNAL}/commit.json"


def begin(
    store,
    clip_id: str,
    memories: Sequence[Memory],
    updated: Sequence[Memory],
    entities: Sequence[Entity],
    edges: Sequence[Edge],
) -> None:
    """Save what the commit of ``clip_id`` will change: for each table, the ids it will write and
    the rows those ids hold now."""
    side = store.side
    if side.read(MARK) is not None:  # a journal this writer did not recover: never write over it
        raise RuntimeError(
            f"{side.where}/{MARK} exists: a commit is unfinished; open the store for "
            "writing (Store.writing) to recover it"
        )
    delete_folder(side, JOURNAL)  # rows of a begin that died before its commit.json
    # the rows the writes may replace: earlier memories the clip updates, and edges and entities by
    # id (upserts). New memories replace nothing (their ids hold the clip id); an earlier attempt's
    # rows of this clip are deleted by ``undo`` as the commit itself would have.
    replaced = {
        "memories": [m.memory_id for m in updated],
        "edges": [e.edge_id for e in edges],
        "entities": [e.entity_id for e in entities],
    }
    for name, key in TABLES:
        if replaced[name]:
            before = (
                getattr(store, name)
                .search()
                .where(sql.in_list(key, replaced[name]))
                .limit(None)
                .to_arrow()
            )
            if before.num_rows:
                side.write(f"{JOURNAL}/{name}.arrow", _arrow_bytes(before))
    ids = dict(replaced, memories=[m.memory_id for m in (*memories, *updated)])
    side.write(
        MARK, json.dumps({"clip_id": clip_id, "ids": ids}).encode()
    )  # the journal exists whole now


def end(store) -> None:
    """The clip row is stored (or the commit undone): ``commit.json`` goes first, so that a writer
    killed while the rest is deleted never leaves half a journal to recover from."""
    store.side.delete(MARK)
    delete_folder(store.side, JOURNAL)


def recover(store) -> str | None:
    """Finish or undo a commit a writer left (see the module's doc); the clip id it concerned, or
    None when there was nothing to do. Run it holding the writer lock."""
    side = store.side
    mark = side.read(MARK)
    if mark is None:
        delete_folder(
            side, JOURNAL
        )  # died before the commit began, or while removing a finished one
        return None
    meta = json.loads(mark)
    clip_id = meta["clip_id"]
    store.catch_up()
    if not store.has_clip(clip_id):
        undo(store, meta)
        log.warning(
            "%s: undid the commit of clip %s, left unfinished by a writer that stopped; "
            "the clip will be ingested again",
            store.uri,
            clip_id,
        )
    end(store)
    return clip_id


def undo(store, meta: dict) -> None:
    """Delete the rows the commit wrote and put back those it replaced (safe to run twice)."""
    for name, key in TABLES:
        table = getattr(store, name)
        ids = meta["ids"][name]
        where = sql.in_list(key, ids) if ids else "false"
        if name != "entities":
            where = f"({where}) OR clip_id = {sql.quote(meta['clip_id'])}"
        table.delete(where)
        saved = store.side.read(f"{JOURNAL}/{name}.arrow")
        if saved is not None:
            before = _arrow_table(saved)
            table.add(before.cast(table.schema) if before.schema != table.schema else before)


def _arrow_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _arrow_table(data: bytes) -> pa.Table:
    with ipc.open_file(pa.BufferReader(data)) as reader:
        return reader.read_all()
