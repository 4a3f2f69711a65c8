"""Folders that are the user's:

- ``capture_foreign_folder``: ``mnemo capture --out`` on a folder of the user's refuses and changes
  nothing; in a marked capture folder, the recovery the daemon runs at start deletes only its own
  leftovers, never the user's files beside them.
- ``forget_users_folder``: a folder of the user's photos is ingested, then ``mnemo forget --yes``
  over all, part or none of their time: the clips' memories go, every file of the folder stays.
"""

from __future__ import annotations

import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from bench.faults import Context, Tally, mnemo_argv
from bench.faults.processes_kit import (
    OLD,
    changed_files,
    child_env,
    finished,
    jpeg_photo,
    snapshot_tree,
    user_file,
)

# ------------------------------------------------------------------------------------------------
# capture_foreign_folder


def _users_tree(root: Path) -> None:
    """A user's folder as people have them: photos in nested folders, build leftovers, an encrypted
    draft, an image without a sidecar, a private file (mode 600)."""
    user_file(root / "Pictures" / "2019" / "wedding.jpg", jpeg_photo(0, 96), OLD)
    user_file(root / "Pictures" / "2019" / "summer" / "beach.jpg", jpeg_photo(1, 64), OLD)
    user_file(root / "projects" / "build.tmp", b"half a build", OLD)
    user_file(root / "projects" / "draft.enc", b"my encrypted draft", OLD, mode=0o600)
    user_file(root / "scan.jpg", jpeg_photo(2, 64), OLD)


def capture_foreign_folder(ctx: Context, tally: Tally, *, prelude: str = "") -> None:
    from perception.capture.owned import frame_name, temp_name
    from perception.capture.storage import CaptureStore, hold_folder

    for i in range(ctx.runs):
        # 1. a folder of the user's, no marker: refused, and nothing in it touched
        mine = ctx.workdir / f"try{i}" / "home"
        _users_tree(mine)
        os.chmod(mine, 0o755)
        before = snapshot_tree(mine)
        run = finished(
            mnemo_argv(["capture", "--out", str(mine), "--duration", "1s"], prelude),
            child_env(XDG_RUNTIME_DIR=str(ctx.workdir)),
            ctx.workdir,
            120,
        )
        lost, added = changed_files(before, snapshot_tree(mine))
        refused = run.returncode != 0 and "not empty" in run.stderr and "--out" in run.stderr
        notes = []
        if not refused:
            notes.append(
                f"capture into a folder of the user's was not refused with a message (exit "
                f"{run.returncode}): {(run.stderr or run.stdout)[-300:]}"
            )
        if lost or added:
            notes.append(
                f"capture changed the user's folder: {len(lost)} entries changed or deleted "
                f"{lost[:4]}, {len(added)} added {added[:4]}"
            )

        # 2. a marked capture folder with the user's files beside the daemon's: the start's recovery
        # (hold the folder, then CaptureStore.recover, as `mnemo capture` does) drops only its own leftovers
        root = ctx.workdir / f"try{i}" / "screens"
        store = CaptureStore(root)
        store.recover()
        t = datetime(2026, 1, 5, 10, 15, tzinfo=UTC)
        for k in range(3):
            store.write(
                jpeg_photo(2, 48 + 4 * k),
                {"app": "xterm", "window": f"w{k}", "reason": "input"},
                datetime.fromtimestamp(t.timestamp() + 20 * k, UTC),
                1,
            )
        day = next(root.rglob("*.jpg")).parent
        _users_tree(root)
        for name, content in {
            "holiday.jpg": jpeg_photo(0, 64),
            ".notes.txt.tmp": b"an editor's temp file",
            "scan.jpg.enc": b"user's own",
            "20260105T101500Z_m1.jpg": jpeg_photo(2, 40),
            "heartbeat.jsonl.bak": b"{}\n",
        }.items():
            user_file(day / name, content, OLD)  # in a day folder, close to the daemon's names
        users = {k: v for k, v in snapshot_tree(root).items() if k != "." and not _daemons(root, k)}
        leftovers = [day / frame_name(datetime.fromtimestamp(t.timestamp() + 300, UTC), 1, False)]
        leftovers[0].write_bytes(
            jpeg_photo(2, 32)
        )  # killed between the image's rename and its sidecar's
        leftovers += [
            day / temp_name(leftovers[0].name),
            day / temp_name(leftovers[0].name + ".json"),
        ]
        for p in leftovers[1:]:
            p.write_bytes(b"half")
        fd = hold_folder(root)
        try:
            counts = CaptureStore(root).recover()
        finally:
            os.close(fd)
        after = snapshot_tree(root)
        touched = [k for k, v in users.items() if after.get(k) != v]
        stayed = [str(p.relative_to(root)) for p in leftovers if p.exists()]
        if touched:
            notes.append(
                f"the daemon's recovery changed or deleted {len(touched)} file(s) of the user's: {touched[:4]}"
            )
        if stayed or counts.get("frames") != 3:
            notes.append(
                f"recovery left its own leftovers {stayed} or lost its frames (counted {counts})"
            )
        tally.run(
            lost=len(lost) + len(touched),
            orphans=len(added) + len(stayed),
            ok=refused,
            note="; ".join(notes),
        )


def _daemons(root: Path, rel: str) -> bool:
    from perception.capture.owned import kind

    return kind(root, root / rel) is not None or (root / rel).is_dir()


# ------------------------------------------------------------------------------------------------
# forget_users_folder

PHOTOS = [
    ("IMG_20260105_101500.jpg", 0),
    ("IMG_20260105_101510.jpg", 2),
    ("IMG_20260106_083000.jpg", 1),
    ("IMG_20260110_120000.jpg", 3),
]


def forget_users_folder(ctx: Context, tally: Tally, *, prelude: str = "") -> None:
    from embeddings.base import build_text_embedder
    from graph import sql
    from graph.store import Store

    photos = ctx.workdir / "photos"
    for name, photo_index in PHOTOS:
        user_file(photos / name, jpeg_photo(photo_index, 96), OLD)
    user_file(
        photos / "IMG_20260105_101500.jpg.json", b'{"note": "my own"}', OLD
    )  # the user's, not a sidecar
    user_file(photos / "album.json", b'{"title": "January"}', OLD, mode=0o600)
    user_file(photos / "trip" / "IMG_20260106_090000.jpg", jpeg_photo(0, 64), OLD)
    os.chmod(photos, 0o750)
    before = snapshot_tree(photos)
    built = ctx.workdir / "built"
    # the models a photo clip needs least stay off: what is under test is forget, not perception
    env = child_env(
        MNEMO_PERCEPTION__FACES_BACKEND="dlib",
        MNEMO_PERCEPTION__IMAGE_BACKEND="none",
        MNEMO_PERCEPTION__OCR_BACKEND="none",
    )
    run = finished(
        mnemo_argv(["ingest", str(photos), "--store", str(built)]), env, ctx.workdir, 600
    )
    if run.returncode != 0:
        raise RuntimeError(f"`mnemo ingest {photos}` failed: {run.stderr[-800:]}")
    clips = sorted(
        (r["start_ts"], r["end_ts"], r["clip_id"])
        for r in Store(built, build_text_embedder("hash")).clips.search().limit(None).to_list()
    )
    if len(clips) < 3:
        raise RuntimeError(
            f"the photos made {len(clips)} clip(s), expected one per time window (3 or more)"
        )
    kinds = ["all", "part", "none"]
    for i in range(ctx.runs):
        which = kinds[i % 3]
        store_dir = ctx.workdir / f"try{i}"
        shutil.copytree(built, store_dir)
        if which == "all":
            start, end, gone = clips[0][0] - 60, clips[-1][1] + 60, clips
        elif which == "part":  # the first clips up to halfway to the next one
            k = 1 + i % (len(clips) - 1)
            start, end, gone = clips[0][0] - 60, (clips[k - 1][1] + clips[k][0]) / 2, clips[:k]
        else:
            start, end, gone = clips[0][0] - 86400, clips[0][0] - 3600, []
        window = ["--from", _iso(start), "--to", _iso(end), "--store", str(store_dir)]
        preview = finished(mnemo_argv(["forget", *window], prelude), env, ctx.workdir, 300)
        notes = []
        says_kept = (
            (
                f"{photos} is yours and stays as it is" in preview.stdout
                and "would delete 0 file(s)" in preview.stdout
            )
            if gone
            else "nothing matches" in preview.stdout
        )
        if preview.returncode != 0 or not says_kept:
            notes.append(
                f"the preview ({which}) did not say it deletes no file of {photos}: {preview.stdout[-300:]}"
            )
        done = finished(mnemo_argv(["forget", *window, "--yes"], prelude), env, ctx.workdir, 300)
        if done.returncode != 0:
            notes.append(
                f"`mnemo forget --yes` failed (exit {done.returncode}): {done.stderr[-300:]}"
            )
        lost, added = changed_files(before, snapshot_tree(photos))
        if lost or added:
            notes.append(
                f"forget ({which}) changed the user's folder: {lost[:4]} changed or deleted, {added[:4]} added"
            )
        store = Store(store_dir, build_text_embedder("hash"))
        gone_ids = [c for _, _, c in gone]
        kept_ids = [c for _, _, c in clips if c not in gone_ids]
        left = (
            (
                store.clips.count_rows(sql.in_list("clip_id", gone_ids))
                + store.memories.count_rows(sql.in_list("clip_id", gone_ids))
            )
            if gone_ids
            else 0
        )
        stored = {
            r["clip_id"] for r in store.clips.search().select(["clip_id"]).limit(None).to_list()
        }
        wrongly = [c for c in kept_ids if c not in stored]
        if left:
            notes.append(
                f"{left} clip row(s) and memories of the {len(gone_ids)} forgotten clip(s) still stored"
            )
        if wrongly:
            notes.append(f"{len(wrongly)} clip(s) outside the range were forgotten too")
        ok = not notes
        tally.run(
            lost=len(lost) + len(wrongly), orphans=left + len(added), ok=ok, note="; ".join(notes)
        )
        ctx.progress(
            f"faults: forget_users_folder: forgot {len(gone_ids)} of {len(clips)} clip(s) ({which})"
        )


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
