"""``full_disk``: a writer fills a real disk, a small tmpfs mounted in a private mount namespace
(``unshare -rm``); the driver inside it (``disk_main``) runs writers and readers as children and
reports what it found as one JSON line.

``patch``: Python source every writer child runs first; a test uses it to break a guard in the
children (they run in another mount namespace) and see the scenario report it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from bench.faults.store_kit import (
    CHILD_TIMEOUT_S,
    clip_id,
    finished,
    in_child,
    journals,
    missing,
    open_store,
    raw_rows,
    seen_by_reader,
    with_finished,
    write,
)

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
        "from bench.faults.store_disk import disk_main; disk_main()",
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
    """In the mount namespace: ``python -c 'from bench.faults.store_disk import disk_main; disk_main()' SPEC``."""
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
        found = _failed(0, 0, [], [f"the driver failed: {type(e).__name__}: {e}"])
    print(json.dumps(found), flush=True)


def fill_disk(disk: Path, filler: int, clips: int, patch: str, reports: Path) -> dict:
    """On the small disk ``disk``: a filler file leaving little space, a writer until the disk is
    full, then the checks of ``full_disk``; lost, orphans, whether it ended as expected, notes.
    Writers and readers are children (this process never imports LanceDB: the children's server
    does, once); their reports and output go to ``reports``."""
    got = os.statvfs(disk)
    if got.f_blocks * got.f_frsize > 2 * DISK_MB * 1024 * 1024:
        return _failed(0, 0, [], [f"{disk} is not the {DISK_MB} MB disk mounted for the test"])
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
        return _failed(0, 0, [], [f"the writer ended without a report (exit {code}): {out}"])
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
        return _failed(
            0,
            0,
            committed,
            [*notes, f"a reader could not open or read the store (exit {code}): {out}"],
        )
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
        return _failed(
            lost,
            orphans,
            committed,
            [*notes, f"the ingest run again failed: {report['error'] if report else out}"],
        )
    code, problems, out = in_child(reports, "finished", _read_finished, str(store_dir), clips)
    if problems is None:
        return _failed(
            lost, orphans, committed, [*notes, f"a reader failed after the rerun: {out}"]
        )
    lost, orphans, notes = with_finished(lost, orphans, notes, problems)
    return {"lost": lost, "orphans": orphans, "ok": ok, "committed": committed, "notes": notes}


def _read_full(store_dir: str, committed: list[str], half: int) -> dict:
    """A reader of the store the disk filled: the committed clips not whole, and whether clip
    ``half`` (-1: none) is seen though its commit was stopped."""
    store = open_store(Path(store_dir))
    return {
        "gone": missing(store, [int(c.removeprefix("clip")) for c in committed]),
        "half_seen": half >= 0
        and not store.has_clip(clip_id(half))
        and seen_by_reader(store, half),
    }


def _read_recovered(store_dir: str, half: int) -> dict:
    store = open_store(Path(store_dir))
    return {
        "journals": journals(Path(store_dir)),
        "stray": raw_rows(store, clip_id(half)) if not store.has_clip(clip_id(half)) else 0,
    }


def _read_finished(store_dir: str, clips: int) -> list[str]:
    return finished(open_store(Path(store_dir)), clips)


def _clear(error: dict, store_dir: Path) -> bool:
    """An error a person can act on: ENOSPC as an OSError, naming the store."""
    return (
        error["oserror"] and error["errno"] == errno.ENOSPC and str(store_dir) in error["message"]
    )


def _failed(lost: int, orphans: int, committed: list, notes: list[str]) -> dict:
    """A try's result when a step of it failed and the rest could not be run."""
    return {"lost": lost, "orphans": orphans, "ok": False, "committed": committed, "notes": notes}
