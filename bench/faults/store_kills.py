"""``kill_commit`` and ``kill_forget``: a writer killed mid-commit, a ``mnemo forget`` killed part-way,
each at every step it has. What was left is then read back: the store through a fresh ``Store``,
the journal and capture folders on disk, the user's files by their hashes, the forgotten text by
grepping every file under the store.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
from datetime import UTC, datetime
from pathlib import Path

from bench.faults.store_kit import (
    COMMIT_STEPS,
    FORGET_STEPS,
    T0,
    clip_id,
    finished,
    forget_child,
    in_child,
    journals,
    missing,
    open_store,
    raw_rows,
    seen_by_reader,
    start_child,
    token,
    wait_child,
    with_finished,
    write,
    write_clips,
)

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
    store = open_store(folder)
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
    lost, orphans, notes = with_finished(lost, orphans, notes, finished(store, clips))
    return lost, orphans, True, notes


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
    write_clips(open_store(live / "store"), FORGET_CLIPS, str(frames[0][0].parent), t0)
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
                start_child(forget_child, argv, step, str(ctx.workdir), log_to=log_to), log_to
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
    store = open_store(store_dir)
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
