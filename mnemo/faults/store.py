"""Fault scenarios of the store: a writer killed mid-commit, a forget killed part-way, a full disk.

Each fault is done for real: writers and ``mnemo forget`` run as child processes that ``SIGKILL``
themselves at a named step of a commit (``graph.commit.step``) or of a forget (``graph.forget_store.step``),
and the full disk is a small tmpfs mounted in a private mount namespace (``unshare -rm``). What was
left is then read back: the store through a fresh ``Store``, the journal and capture folders on
disk, the user's files by their hashes, the forgotten text by grepping every file under the store.

The clips are synthetic (the hash text embedder; five memories, a face and a voice each) because
the faults are the store's: perception would only make each try slower. The children are forked
from a server that imported LanceDB once (``start_child``): a fresh interpreter spends seconds on
that import, and a try starts one or more children.

``patch`` (full_disk): Python source every writer child runs first; a test uses it to break a guard
in the children (they run in another mount namespace) and see the scenario report it.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
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


def _forget_child(argv: list[str], kill_step: str, cwd: str) -> None:
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
    "mnemo.faults.store",
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


def _open(path: Path):
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


def _missing(problems: list[str]) -> int:
    """How many of ``finished``'s problems are clips lost (the others are things left twice)."""
    return sum("missing" in p for p in problems)


# ---- kill_commit -----------------------------------------------------------------------------


def kill_commit(ctx, tally, steps: tuple[str, ...] = COMMIT_STEPS, clips: int = 5) -> None:
    """A writer SIGKILLed at each step of a commit, then read, recovered (in this process, as the
    next writer) and ingested again."""
    for run in range(ctx.runs):
        kill_clip = 1 + (run + 2) % (clips - 1)  # 3, 4, 1, 2, ...: a different clip dies each run
        ctx.progress(
            f"kill_commit: run {run + 1}: writers killed at each step of clip {kill_clip}'s commit"
        )
        for step in steps:
            folder = ctx.workdir / f"run{run}-{step}"
            folder.mkdir()
            code, _, err = in_child(
                folder,
                "writer",
                write,
                {
                    "store": str(folder / "store"),
                    "clips": clips,
                    "kill_clip": kill_clip,
                    "kill_step": step,
                },
            )
            where = f"run {run + 1}, killed before {step!r} of clip {kill_clip}"
            if code != -signal.SIGKILL:
                tally.run(ok=False, note=f"{where}: the writer was not killed (exit {code}): {err}")
                continue
            lost, orphans, ok, notes = _after_kill(
                folder / "store", kill_clip, step == "end", clips
            )
            tally.run(lost=lost, orphans=orphans, ok=ok, note=f"{where}: " + "; ".join(notes))
            shutil.rmtree(folder, ignore_errors=True)


def _after_kill(
    folder: Path, kill_clip: int, whole: bool, clips: int
) -> tuple[int, int, bool, list[str]]:
    """Read what a killed writer left, recover as the next writer does, ingest again: lost, orphans,
    whether it ended as expected, and what went wrong. ``whole``: killed after the clip row."""
    lost = orphans = 0
    notes = []
    store = _open(folder)
    gone = missing(store, list(range(kill_clip)))
    lost += len(gone)
    notes += [f"clips committed before the kill lost: {gone}"] if gone else []
    if seen_by_reader(store, kill_clip) != whole:
        orphans += 1
        notes.append(f"a reader {'does not see' if whole else 'sees'} the killed clip's memories")
    try:
        with store.writing("mnemo bench faults: the next writer"):  # recovers the journal
            pass
    except Exception as e:  # the finding is what it left; the rerun below says whether it matters
        notes.append(f"the next writer failed to recover: {type(e).__name__}: {e}")
    left = journals(folder)
    orphans += bool(left)
    notes += [f"a journal is left after recovery: {left}"] if left else []
    if not whole and raw_rows(store, clip_id(kill_clip)):
        orphans += 1
        notes.append("rows of the killed clip are left in the tables after recovery")
    try:
        write_clips(store, clips)  # the ingest run again, in this process
    except Exception as e:
        return lost, orphans, False, [*notes, f"the rerun failed: {type(e).__name__}: {e}"]
    problems = finished(store, clips)
    return (
        lost + _missing(problems),
        orphans + len(problems) - _missing(problems),
        True,
        notes + problems,
    )


# ---- kill_forget -----------------------------------------------------------------------------

FORGET_CLIPS = 4  # clips 1 and 2 are forgotten, 0 and 3 kept
FORGOTTEN = (1, 2)


def _capture(root: Path, t0: float) -> tuple[dict[int, list[Path]], list[Path]]:
    """A marked capture folder with two frames (and sidecars) in each clip's span, written by the
    capture daemon's own store, and files of the user's beside them: the frames and sidecars of each
    clip, and the user's files."""
    import numpy as np

    from perception.capture.storage import CaptureStore

    capture = CaptureStore(root)
    capture.recover()
    rng = np.random.default_rng(7)
    frames: dict[int, list[Path]] = {}
    for i in range(FORGET_CLIPS):
        for s in (5, 15):
            when = datetime.fromtimestamp(t0 + 30.0 * i + s, UTC)
            jpeg = b"\xff\xd8" + rng.bytes(2000) + b"\xff\xd9"  # its bytes are not what is measured
            image = capture.write(
                jpeg, {"app": "xterm", "window": f"w{i}", "reason": "input"}, when, 1
            ).image
            frames.setdefault(i, []).extend([image, image.with_name(image.name + ".json")])
    day = frames[1][0].parent
    user = {
        day / "holiday.jpg": b"my photo",
        day / "20260105T120035Z_m1.jpg": b"near a frame's name, not one",
        day / f"{frames[1][0].name}.bak": b"my copy of a frame",
        root / "notes.txt": b"my notes",
        root / "2019" / "06" / "photo.jpg": b"an old photo",
    }
    for path, content in user.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return frames, list(user)


def _hashes(paths: list[Path]) -> dict[str, str | None]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None for p in paths
    }


def _forget_config(cfg):
    """The user's config with the hash text embedder (the store's), for the forget run in this process."""
    from mnemo.config import load_config

    cfg = cfg if cfg is not None and hasattr(cfg, "graph") else load_config()
    return cfg.model_copy(update={"graph": cfg.graph.model_copy(update={"text_embedder": "hash"})})


def kill_forget(ctx, tally, steps: tuple[str, ...] = FORGET_STEPS) -> None:
    """``mnemo forget --yes`` SIGKILLed at each step it has (``graph.forget_store.step``), then run again
    (in this process, as a person would after the crash): the forgotten clips must be gone from
    every table and file of the store and their screenshots from the capture folder, the other
    clips and every file mnemo did not write kept as they were. The capture folder and store are
    built once and copied for each try to where they were built (the clip rows hold its path)."""
    t0 = T0.timestamp()
    live, base = ctx.workdir / "live", ctx.workdir / "base"
    frames, user = _capture(live / "screens", t0)
    write_clips(_open(live / "store"), FORGET_CLIPS, str(frames[0][0].parent), t0)
    os.rename(live, base)
    cfg = _forget_config(ctx.cfg)
    argv = [
        "forget",
        "--from",
        _iso(t0 + 30.0),
        "--to",
        _iso(t0 + 90.0),
        "--store",
        str(live / "store"),
        "--yes",
    ]
    kept = [p for i, paths in frames.items() if i not in FORGOTTEN for p in paths]
    for run in range(ctx.runs):
        for step in steps:
            where = f"run {run + 1}, forget killed before {step!r}"
            ctx.progress(f"kill_forget: {where}")
            shutil.copytree(base, live, symlinks=True)
            before = _hashes(user + kept)
            log_to = ctx.workdir / "forget.log"
            code, out = wait_child(
                start_child(_forget_child, argv, step, str(ctx.workdir), log_to=log_to), log_to
            )
            log_to.unlink(missing_ok=True)
            if code != -signal.SIGKILL:
                tally.run(ok=False, note=f"{where}: the forget was not killed (exit {code}): {out}")
            else:
                rerun, said = _forget_here(argv, cfg)
                lost, orphans, notes = _after_forget(live / "store", frames, user, kept, before)
                notes = (
                    notes
                    if rerun == 0
                    else [f"`mnemo forget` run again exited {rerun}: {said}", *notes]
                )
                tally.run(
                    lost=lost, orphans=orphans, ok=rerun == 0, note=f"{where}: " + "; ".join(notes)
                )
            shutil.rmtree(live)


def _after_forget(
    store_dir: Path, frames: dict[int, list[Path]], user: list[Path], kept: list[Path], before: dict
) -> tuple[int, int, list[str]]:
    """What a forget of clips ``FORGOTTEN`` left: lost, orphans and what went wrong."""
    from graph import sql
    from mnemo.forget_with_media import PENDING

    notes = []
    store = _open(store_dir)
    gone = missing(store, [i for i in range(FORGET_CLIPS) if i not in FORGOTTEN])
    changed = [p for p, h in _hashes(user + kept).items() if h != before[p]]
    notes += [f"kept clips lost: {gone}"] if gone else []
    notes += [f"files mnemo must not touch changed or deleted: {changed}"] if changed else []
    ids = [clip_id(i) for i in FORGOTTEN]
    files = [p.name for i in FORGOTTEN for p in frames[i] if p.exists()]
    raw = [
        str(p.relative_to(store_dir))
        for p in store_dir.rglob("*")
        if p.is_file() and any(token(i).encode() in p.read_bytes() for i in FORGOTTEN)
    ]
    left = {
        "rows of the forgotten clips": store.clips.count_rows(sql.in_list("clip_id", ids))
        + sum(raw_rows(store, c) for c in ids),
        "edges with their evidence": sum(
            any(c in str(x) for c in ids for x in (e["clip_id"], *(e["evidence"] or ())))
            for e in store.edges.search().limit(None).to_list()
        ),
        "entities only they named": store.entities.count_rows(
            sql.in_list("entity_id", [f"face_{i + 1}" for i in FORGOTTEN])
        ),
        f"of their screenshot files {files}": len(files),
        f"files under the store holding their text {raw}": len(raw),
        "forgets logged as not done": store.forget_log.count_rows("NOT done"),
        "notes of screenshots still to delete": len(list((store_dir / PENDING).glob("*.json"))),
    }
    notes += [f"{n} {what} left" for what, n in left.items() if n]
    return len(gone) + len(changed), sum(left.values()), notes


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def _forget_here(argv: list[str], cfg) -> tuple[int, str]:
    """``mnemo forget`` run again in this process (``mnemo.cli``'s parser and command): its exit
    code and what it printed."""
    import contextlib
    import io

    from mnemo.cli import build_parser
    from mnemo.forget_cli import cmd_forget

    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        code = cmd_forget(build_parser(complete=False).parse_args(argv), cfg)
    return code, said.getvalue()[-1500:]


# ---- full_disk -------------------------------------------------------------------------------

DISK_MB = 4  # the tmpfs
DISK_CLIPS = (
    24  # what the writer tries to commit: about 2 MB of store, more than is left free at first
)
FREE_KB = (
    600,
    450,
    800,
)  # left free beside the filler, per run: the disk fills at a different clip


def full_disk(ctx, tally, patch: str = "") -> None:
    """A writer fills a real (small tmpfs) disk: a clear error, the clips before it intact, the store
    readable, nothing half done after the next writer's recovery; then space is freed and the
    ingest run again finishes. All of it runs inside a private mount namespace (the tmpfs goes with
    it), which reports what it found as one JSON line."""
    for run in range(ctx.runs):
        disk = ctx.workdir / f"run{run}"
        disk.mkdir(parents=True)
        filler = DISK_MB * 1024 * 1024 - FREE_KB[run % len(FREE_KB)] * 1024
        ctx.progress(
            f"full_disk: run {run + 1}: a {DISK_MB} MB disk with {FREE_KB[run % len(FREE_KB)]} KB free"
        )
        found, why = _on_small_disk(
            {"disk": str(disk), "filler": filler, "clips": DISK_CLIPS, "patch": patch},
            ctx.workdir / f"run{run}.log",
        )
        if found is None:
            tally.run(ok=False, note=f"run {run + 1}: {why}")
            continue
        tally.run(
            lost=found["lost"],
            orphans=found["orphans"],
            ok=found["ok"],
            note=f"run {run + 1} ({len(found['committed'])} clips fit): "
            + "; ".join(found["notes"]),
        )


def _on_small_disk(spec: dict, log_to: Path) -> tuple[dict | None, str]:
    """Run ``disk_main`` with a ``DISK_MB`` tmpfs mounted on ``spec['disk']``: in a private mount
    namespace (``unshare -rm``), else, as root, mounted here and unmounted after. Its findings, or
    None and why it could not run."""
    import shlex

    disk = spec["disk"]
    driver = [
        sys.executable,
        "-c",
        "from mnemo.faults.store import disk_main; disk_main()",
        json.dumps(spec),
    ]
    mount = ["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m,mode=0700", "tmpfs", disk]
    tries: list[tuple[str, list[str] | None]] = []
    unshare = shutil.which("unshare")
    if unshare:
        tries.append(
            (
                "unshare -rm",
                [unshare, "-rm", "sh", "-c", f"{shlex.join(mount)} && exec {shlex.join(driver)}"],
            )
        )
    if os.geteuid() == 0:
        tries.append(("mount as root", None))
    why = [] if unshare else ["unshare (util-linux) is not installed"]
    for how, argv in tries:
        if argv is None:
            proc = subprocess.run(mount, capture_output=True, text=True)
            if proc.returncode:
                why.append(f"{how}: {proc.stderr.strip()}")
                continue
            try:
                proc = subprocess.run(
                    driver,
                    capture_output=True,
                    text=True,
                    timeout=CHILD_TIMEOUT_S * 3,
                    env=_child_env(),
                )
            finally:
                subprocess.run(["umount", disk], capture_output=True)
        else:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S * 3, env=_child_env()
            )
        log_to.write_text(proc.stdout + proc.stderr)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if lines:
            return json.loads(lines[-1]), ""
        why.append(f"{how}: exit {proc.returncode}: {proc.stderr.strip()[-600:]}")
    return None, "no small disk could be made, so no disk was filled: " + "; ".join(
        why or ["not root and no unshare"]
    )


def _child_env() -> dict:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    root = str(Path(__file__).resolve().parents[2])  # this mnemo, wherever it is imported from
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


def disk_main() -> None:
    """In the mount namespace: ``python -c 'from mnemo.faults.store import disk_main; disk_main()' SPEC``."""
    import tempfile

    spec = json.loads(sys.argv[1])
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-faults-") as notes:  # not on the full disk
            found = fill_disk(
                Path(spec["disk"]),
                spec["filler"],
                spec["clips"],
                spec.get("patch", ""),
                Path(notes),
            )
    except Exception as e:  # the scenario reports it as a try that did not survive
        found = {
            "lost": 0,
            "orphans": 0,
            "ok": False,
            "committed": [],
            "notes": [f"the driver failed: {type(e).__name__}: {e}"],
        }
    print(json.dumps(found), flush=True)


def fill_disk(disk: Path, filler: int, clips: int, patch: str, reports: Path) -> dict:
    """On the small disk ``disk``: a filler file leaving little space, a writer until the disk is
    full, then the checks of ``full_disk``; lost, orphans, whether it ended as expected, notes.
    Writers and readers are children (this process never imports LanceDB: the children's server
    does, once); their reports and output go to ``reports``."""
    got = os.statvfs(disk)
    if got.f_blocks * got.f_frsize > 2 * DISK_MB * 1024 * 1024:
        return {
            "lost": 0,
            "orphans": 0,
            "ok": False,
            "committed": [],
            "notes": [f"{disk} is not the {DISK_MB} MB disk mounted for the test"],
        }
    with open(disk / "filler", "wb") as fill:
        fill.write(b"\0" * filler)
        os.fsync(fill.fileno())
    store_dir = disk / "store"
    spec = {"store": str(store_dir), "clips": clips, "patch": patch}
    lost = orphans = 0
    notes: list[str] = []
    ok = True

    code, report, out = in_child(reports, "full", write, spec)
    if report is None:
        return {
            "lost": 0,
            "orphans": 0,
            "ok": False,
            "committed": [],
            "notes": [f"the writer ended without a report (exit {code}): {out}"],
        }
    committed = report["committed"]
    error = report["error"]
    if error is None:
        ok = False
        notes.append(
            f"the writer reported no error: all {len(committed)} clips said committed on a full disk"
        )
    elif not _clear(error, store_dir):
        ok = False
        notes.append(
            f"the error is not a clear ENOSPC naming the store: {error['type']}: {error['message'][:300]}"
        )
    half = len(committed)  # the clip the full disk stopped
    code, read, out = in_child(
        reports, "read", _read_full, str(store_dir), committed, half if half < clips else -1
    )
    if read is None:
        return {
            "lost": 0,
            "orphans": 0,
            "ok": False,
            "committed": committed,
            "notes": [*notes, f"a reader could not open or read the store (exit {code}): {out}"],
        }
    lost += len(read["gone"])
    notes += (
        [f"clips committed before the disk filled lost: {read['gone']}"] if read["gone"] else []
    )
    if read["half_seen"]:
        orphans += 1
        notes.append(
            f"a reader sees the memories of {clip_id(half)}, whose commit the full disk stopped"
        )
    code, report, out = in_child(
        reports, "next", write, dict(spec, clips=0)
    )  # the next writer, the disk still full
    if report is None or (report["error"] is not None and not _clear(report["error"], store_dir)):
        ok = False
        notes.append(
            f"the next writer on the full disk failed unclearly: {report['error'] if report else out}"
        )
    (disk / "filler").unlink()
    code, report, out = in_child(
        reports, "recover", write, dict(spec, clips=0)
    )  # space freed: it recovers
    if report is None or report["error"] is not None:
        ok = False
        notes.append(
            f"the next writer failed with space freed: {report['error'] if report else out}"
        )
    code, read, out = in_child(reports, "recovered", _read_recovered, str(store_dir), half)
    read = read or {"journals": ["(the reader failed: " + out + ")"], "stray": 0}
    orphans += bool(read["journals"]) + bool(read["stray"])
    notes += [f"a journal is left after recovery: {read['journals']}"] if read["journals"] else []
    notes += (
        [f"{read['stray']} rows of the half-written clip are left after recovery"]
        if read["stray"]
        else []
    )
    code, report, out = in_child(reports, "rerun", write, spec)
    if report is None or report["error"] is not None:
        return {
            "lost": lost,
            "orphans": orphans,
            "ok": False,
            "committed": committed,
            "notes": [*notes, f"the ingest run again failed: {report['error'] if report else out}"],
        }
    code, problems, out = in_child(reports, "finished", _read_finished, str(store_dir), clips)
    if problems is None:
        return {
            "lost": lost,
            "orphans": orphans,
            "ok": False,
            "committed": committed,
            "notes": [*notes, f"a reader failed after the rerun: {out}"],
        }
    return {
        "lost": lost + _missing(problems),
        "orphans": orphans + len(problems) - _missing(problems),
        "ok": ok,
        "committed": committed,
        "notes": notes + problems,
    }


def _read_full(store_dir: str, committed: list[str], half: int) -> dict:
    """A reader of the store the disk filled: the committed clips not whole, and whether clip
    ``half`` (-1: none) is seen though its commit was stopped."""
    store = _open(Path(store_dir))
    return {
        "gone": missing(store, [int(c.removeprefix("clip")) for c in committed]),
        "half_seen": half >= 0
        and not store.has_clip(clip_id(half))
        and seen_by_reader(store, half),
    }


def _read_recovered(store_dir: str, half: int) -> dict:
    store = _open(Path(store_dir))
    return {
        "journals": journals(Path(store_dir)),
        "stray": raw_rows(store, clip_id(half)) if not store.has_clip(clip_id(half)) else 0,
    }


def _read_finished(store_dir: str, clips: int) -> list[str]:
    return finished(_open(Path(store_dir)), clips)


def _clear(error: dict, store_dir: Path) -> bool:
    """An error a person can act on: ENOSPC as an OSError, naming the store."""
    return (
        error["oserror"] and error["errno"] == errno.ENOSPC and str(store_dir) in error["message"]
    )


SCENARIOS = {"kill_commit": kill_commit, "kill_forget": kill_forget, "full_disk": full_disk}
