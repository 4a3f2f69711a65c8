"""A clip's commit as one step: a journal of what it is about to change, so that a writer killed
part-way can be undone.

LanceDB commits each table write on its own, and a clip's commit writes four tables (memories,
edges, entities, then the clip row). Before the first write, ``begin`` saves the rows those writes
will replace (earlier memories the clip reinforces or supersedes, entities it updates, edges it
re-asserts) and the ids of the rows it will add, in ``<store>/.commit/``; ``end`` removes the
journal once the clip row is stored. ``recover``, run by the next writer (``Store.writing``), finds
a journal left behind: without its clip row the commit is undone (the rows it added deleted, the
rows it replaced put back); with it, the commit finished and only the journal goes.

The journal guards against a writer killed or failing part-way; it is not fsynced, so a power cut
is not covered, and a remote (``s3://``) store has none. Readers never wait for this: ``Store``
returns only memories whose clip row exists, so the memories of a commit in progress, or of one
that died, are never answered with. What such a commit changed in earlier rows (a memory it
superseded or reinforced, an entity, an edge) is seen as written until the next writer undoes it.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

from graph import sql
from graph.rows import Edge, Entity, Memory

log = logging.getLogger(__name__)

JOURNAL = ".commit"
TABLES = (("memories", "memory_id"), ("edges", "edge_id"), ("entities", "entity_id"))


def step(name: str) -> None:
    """Called between a commit's writes (``name`` says which comes next); does nothing. Tests
    replace it to kill a writer at each step."""


def journal_dir(store) -> Path | None:
    return None if "://" in store.uri else Path(store.uri) / JOURNAL


def begin(store, clip_id: str, memories: Sequence[Memory], updated: Sequence[Memory], entities: Sequence[Entity],
          edges: Sequence[Edge]) -> None:
    """Save what the commit of ``clip_id`` will change: for each table, the ids it will write and
    the rows those ids hold now."""
    final = journal_dir(store)
    if final is None:
        return
    if final.exists():  # a journal this writer did not recover: never write over it
        raise RuntimeError(f"{final} exists: a commit is unfinished; open the store for writing "
                           "(Store.writing) to recover it")
    # the rows the writes may replace: earlier memories the clip updates, and edges and entities by
    # id (upserts). New memories replace nothing (their ids hold the clip id); an earlier attempt's
    # rows of this clip are deleted by ``undo`` as the commit itself would have.
    replaced = {"memories": [m.memory_id for m in updated], "edges": [e.edge_id for e in edges],
                "entities": [e.entity_id for e in entities]}
    work = final.with_name(JOURNAL + ".new")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(mode=0o700)
    for name, key in TABLES:
        if replaced[name]:
            before = getattr(store, name).search().where(sql.in_list(key, replaced[name])).limit(None).to_arrow()
            if before.num_rows:
                _write_arrow(work / f"{name}.arrow", before)
    ids = dict(replaced, memories=[m.memory_id for m in (*memories, *updated)])
    (work / "commit.json").write_text(json.dumps({"clip_id": clip_id, "ids": ids}))
    os.rename(work, final)  # the journal exists whole or not at all


def end(store) -> None:
    """The clip row is stored (or the commit undone): the journal goes, first renamed at once, so
    that a writer killed while it is being deleted never leaves half a journal to recover from."""
    final = journal_dir(store)
    if final is not None and final.exists():
        done = final.with_name(JOURNAL + ".done")
        shutil.rmtree(done, ignore_errors=True)
        os.rename(final, done)
        shutil.rmtree(done, ignore_errors=True)


def recover(store) -> str | None:
    """Finish or undo a commit a writer left (see the module's doc); the clip id it concerned, or
    None when there was nothing to do. Run it holding the writer lock."""
    final = journal_dir(store)
    if final is None:
        return None
    shutil.rmtree(final.with_name(JOURNAL + ".new"), ignore_errors=True)  # died before the commit began
    shutil.rmtree(final.with_name(JOURNAL + ".done"), ignore_errors=True)  # died removing a finished one
    if not final.exists():
        return None
    meta = json.loads((final / "commit.json").read_bytes())
    clip_id = meta["clip_id"]
    store.catch_up()
    if not store.has_clip(clip_id):
        undo(store, final, meta)
        log.warning("%s: undid the commit of clip %s, left unfinished by a writer that stopped; "
                    "the clip will be ingested again", store.uri, clip_id)
    end(store)
    return clip_id


def undo(store, final: Path, meta: dict) -> None:
    """Delete the rows the commit wrote and put back those it replaced (safe to run twice)."""
    for name, key in TABLES:
        table = getattr(store, name)
        ids = meta["ids"][name]
        where = sql.in_list(key, ids) if ids else "false"
        if name != "entities":
            where = f"({where}) OR clip_id = {sql.quote(meta['clip_id'])}"
        table.delete(where)
        if (final / f"{name}.arrow").exists():
            before = _read_arrow(final / f"{name}.arrow")
            table.add(before.cast(table.schema) if before.schema != table.schema else before)


def _write_arrow(path: Path, table: pa.Table) -> None:
    with ipc.new_file(str(path), table.schema) as writer:
        writer.write_table(table)


def _read_arrow(path: Path) -> pa.Table:
    with ipc.open_file(pa.memory_map(str(path))) as reader:
        return reader.read_all()
