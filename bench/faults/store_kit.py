"""What the store's fault scenarios share (``store_kills``, ``store_disk``): the synthetic clips a
writer commits, the child processes that write and forget (forked from a server that imported
LanceDB once: a fresh interpreter spends seconds on that import, and a try starts one or more
children), and the readers that say what a fault left.

The clips are synthetic (the hash text embedder; five memories, a face and a voice each) because
the faults are the store's: perception would only make each try slower. A writer child ``SIGKILL``s
itself at a named step of a commit (``graph.commit.step``), a ``mnemo forget`` child at a step of a
forget (``graph.forget_store.step``).
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import multiprocessing


COMMIT_STEPS = (
    "memories",
    "updated",
    "edges",
    "entities",
    "clip",
    "end",
)  # graph.commit.step names
FORGET_STEPS = (
    "remove",
    "edges",
    "entities",
    "memories",
    "clips",
    "derived",
    "rewrite",
    "purge",
    "done",
    "files",
    "images",
)  # graph.forget_store.step names
MEMORIES = 5  # per clip
T0 = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)  # the synthetic clips' start
CHILD_TIMEOUT_S = 180


# ---- the writer (a child process) ------------------------------------------------------------


def token(i: int) -> str:
    """A word only clip ``i``'s memories hold: forgotten, it must be in no file under the store."""
    return f"zq{i:03d}kettle"


def clip_id(i: int) -> str:
    return f"clip{i:03d}"


def _clip(store, i: int, source: str, t0: float):
    """Clip ``i``: its row, five memories (the first a fact), its face and the shared voice, edges,
    and clip 0's fact reinforced (so that a reinforcement counted twice shows in its weight)."""
    import numpy as np

    from graph.rows import ClipRow, Edge, Entity, Memory, content_id

    cid, start = clip_id(i), t0 + 30.0 * i
    face = f"face_{i + 1}"
    memories = [
        Memory(
            content_id(cid, j),
            "semantic" if j == 0 else "episodic",
            f"clip {i} memory {j}: {token(i)} about tea",
            cid,
            source,
            start + j,
            start + j + 1,
            entity_ids=(face,),
            provenance=(f"clip:{cid}",),
        )
        for j in range(MEMORIES)
    ]
    first = store.get_memories([content_id(clip_id(0), 0)]) if i else []
    updated = [dataclasses.replace(first[0], weight=first[0].weight + 1)] if first else []
    entities = [
        Entity("voice_1", "voice", t0, start + 30.0, [np.full(4, float(i), np.float32)], i + 1),
        Entity(face, "face", start, start + 30.0, [np.full(4, float(i), np.float32)], 1),
    ]
    edges = [
        Edge(
            "same_person", "voice_1", "face_1", float(i + 1), cid, (cid,)
        ),  # re-asserted by each clip
        Edge("mentions", memories[1].memory_id, face, 1.0, cid, (f"clip:{cid}",)),
    ]
    row = ClipRow(cid, source, "sha", i, 30.0 * i, 30.0, start, start + 30.0, "")
    return row, memories, entities, edges, updated


def write_clips(
    store,
    clips: int,
    source: str = "/r.mp4",
    t0: float = T0.timestamp(),
    kill_clip: int = -1,
    kill_step: str = "",
    committed: list[str] | None = None,
) -> None:
    """Commit clips 0 to ``clips - 1`` that the store lacks, as one writer; ``SIGKILL`` this
    process at ``kill_step`` of clip ``kill_clip``'s commit. ``committed`` collects the clip ids
    whose commit returned."""
    from graph import commit

    def step(name: str) -> None:
        if current == kill_clip and name == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    current = -1
    if kill_step:
        commit.step = step
    with store.writing("mnemo bench faults writer"):
        for i in range(clips):
            current = i
            if store.has_clip(clip_id(i)):
                continue
            row, memories, entities, edges, updated = _clip(store, i, source, t0)
            store.commit_clip(row, memories, entities, edges, updated)
            if committed is not None:
                committed.append(row.clip_id)


def write(spec: dict) -> dict:
    """A writer child's work: ``write_clips`` as ``spec`` says; the clips committed and the error
    that stopped it, if one did."""
    from embeddings.base import build_text_embedder
    from graph.store import Store

    exec(spec.get("patch") or "", {})  # noqa: S102 -- a test breaking a guard (see the module doc)
    committed: list[str] = []
    error = None
    try:
        store = Store(spec["store"], build_text_embedder("hash"))
        write_clips(
            store,
            spec["clips"],
            spec.get("source", "/r.mp4"),
            spec.get("t0", T0.timestamp()),
            spec.get("kill_clip", -1),
            spec.get("kill_step", ""),
            committed,
        )
    except Exception as e:  # reported to the scenario, which judges it
        error = {
            "type": type(e).__name__,
            "oserror": isinstance(e, OSError),
            "errno": getattr(e, "errno", None),
            "message": str(e),
        }
    return {"committed": committed, "error": error}


def forget_child(argv: list[str], kill_step: str, cwd: str) -> None:
    """``mnemo forget`` (``argv``) in a child that SIGKILLs itself at ``kill_step`` (``graph.forget_store.step``)."""
    from graph import forget_store as forget
    from mnemo.cli import main

    def step(name: str) -> None:
        if name == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    os.chdir(cwd)  # no ./mnemo.toml of the bench's folder applies
    os.environ["MNEMO_GRAPH__TEXT_EMBEDDER"] = "hash"
    forget.step = step
    sys.exit(main(argv))


PRELOAD = [
    "lancedb",
    "pyarrow",
    "graph.store",
    "graph.forget_store",
    "mnemo.forget_cli",
    "mnemo.forget_with_media",
    "embeddings.hash",
    "bench.faults.store_kit",
    "bench.faults.store_disk",
]


def start_child(target, *args, log_to: Path) -> multiprocessing.context.ForkServerProcess:
    """``target(*args)`` in a child process forked from a server that imported LanceDB once (a
    fresh interpreter spends seconds on that import, and a try starts several children); its output
    goes to ``log_to``. LanceDB resets its event loop in a forked child."""
    import multiprocessing
    from multiprocessing import forkserver

    procs = multiprocessing.get_context("forkserver")
    procs.set_forkserver_preload(PRELOAD)
    # the server forks before any LanceDB call ran in it, so LanceDB's warning that a fork may catch
    # its runtime mid-operation does not apply; the server takes its -W options from ours
    warnoptions = list(sys.warnoptions)
    sys.warnoptions.append("ignore:lancedb fork support is experimental:RuntimeWarning")
    try:
        forkserver.ensure_running()
    finally:
        sys.warnoptions[:] = warnoptions
    proc = procs.Process(target=_logged, args=(str(log_to), target, args), daemon=False)
    proc.start()
    return proc


def _logged(log_to: str, target, args) -> None:
    fd = os.open(log_to, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115 -- the child's whole life
    sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
    target(*args)


def wait_child(proc, log_to: Path, timeout_s: float = CHILD_TIMEOUT_S) -> tuple[int, str]:
    """A child's exit code (-9 when it was SIGKILLed) and the end of its output."""
    proc.join(timeout_s)
    if proc.exitcode is None:  # hung: not the kill a scenario does, so not its exit code
        proc.kill()
        proc.join()
        return 124, f"(still running after {timeout_s:.0f} s: killed)"
    text = log_to.read_text(errors="replace") if log_to.exists() else ""
    return proc.exitcode, text[-1500:]


def in_child(folder: Path, name: str, fn, *args) -> tuple[int, Any, str]:
    """``fn(*args)`` in a child, to its end: its exit code, its JSON-able result (None when it was
    killed or failed) and its output. The report and output are ``folder/name.*``."""
    report, log_to = folder / f"{name}.json", folder / f"{name}.log"
    report.unlink(missing_ok=True)
    code, out = wait_child(start_child(_reported, str(report), fn, args, log_to=log_to), log_to)
    return code, (json.loads(report.read_text()) if report.exists() else None), out


def _reported(report: str, fn, args) -> None:
    Path(report).write_text(json.dumps(fn(*args)))


# ---- reading what was left -------------------------------------------------------------------


def open_store(path: Path):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    return Store(path, build_text_embedder("hash"), read_consistency_s=0)


def journals(store_dir: Path) -> list[str]:
    """The commit journal (or its halves) left in a store folder."""
    return sorted(p.name for p in store_dir.glob(".commit*"))


def missing(store, clips: list[int]) -> list[str]:
    """Clips (of ``clips``) that are not whole in the store: no clip row, or not their five
    memories as written."""
    out = []
    for i in clips:
        texts = sorted(m.text for m in store.memories_of_clips([clip_id(i)]))
        if not store.has_clip(clip_id(i)) or texts != [
            f"clip {i} memory {j}: {token(i)} about tea" for j in range(MEMORIES)
        ]:
            out.append(clip_id(i))
    return out


def seen_by_reader(store, i: int) -> bool:
    """Whether a reader is answered with clip ``i``'s memories (search, time range, by clip)."""
    start = T0.timestamp() + 30.0 * i
    found = {h.memory.clip_id for h in store.search(f"clip {i} memory {token(i)} about tea", k=50)}
    found |= {m.clip_id for m in store.in_time_range(start, start + 30.0)}
    found |= {m.clip_id for m in store.memories_of_clips([clip_id(i)])}
    return clip_id(i) in found


def raw_rows(store, clip: str) -> int:
    """Rows of ``clip`` in the memories and edges tables, committed or not."""
    from graph import sql

    where = f"clip_id = {sql.quote(clip)}"
    return store.memories.count_rows(where) + store.edges.count_rows(where)


def finished(store, clips: int) -> list[str]:
    """What is wrong with a store after an ingest of ``clips`` clips finished (empty: nothing):
    each clip once and whole, no memory twice, clip 0's fact reinforced once by each later clip."""
    from graph.rows import content_id

    store.catch_up()
    problems = [f"{c} missing or not whole" for c in missing(store, list(range(clips)))]
    counts = store.count()
    ids = (
        store.memories.search()
        .select(["memory_id"])
        .limit(None)
        .to_arrow()["memory_id"]
        .to_pylist()
    )
    if counts["clips"] != clips or len(ids) != clips * MEMORIES or len(set(ids)) != len(ids):
        problems.append(
            f"{counts['clips']} clip rows and {len(ids)} memory rows ({len(set(ids))} distinct) for "
            f"{clips} clips of {MEMORIES} memories"
        )
    first = store.get_memories([content_id(clip_id(0), 0)])
    if not first or first[0].weight != float(clips):
        problems.append(
            f"clip 0's fact has weight {first[0].weight if first else None}, not {clips}: a "
            "reinforcement lost or counted twice"
        )
    if {e.weight for e in store.all_edges("same_person")} != {float(clips)}:
        problems.append("the same_person edge does not carry the last clip's weight")
    return problems


def with_finished(
    lost: int, orphans: int, notes: list[str], problems: list[str]
) -> tuple[int, int, list[str]]:
    """A try's lost, orphans and notes with ``finished``'s problems added: a clip missing is lost,
    any other problem (a thing left twice) an orphan."""
    gone = sum("missing" in p for p in problems)
    return lost + gone, orphans + len(problems) - gone, notes + problems
