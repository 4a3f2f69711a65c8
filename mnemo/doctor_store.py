"""``mnemo doctor``'s checks of the folders mnemo keeps private (the store, the capture folder, the
serve tokens: yours, closed to group and others) and of the free space on their disks."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from mnemo.doctor_check import GB, Check, quoted

MIN_FREE_STORE = 1 * GB  # below this a day of ingest may not fit


def nearest(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def private_checks(
    label: str, path: Path, *, explicit: bool = False, created_by: str = ""
) -> list[Check]:
    """``path`` (a folder mnemo keeps private: 0700, its files 0600): the user's, closed to group and
    others, and nothing inside open to them. Missing: fine unless the user named it (``explicit``)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if explicit:
            return [
                Check(
                    label,
                    "warn",
                    f"{path} does not exist",
                    f"check the path; {created_by} creates it",
                )
            ]
        return [Check(label, "ok", f"{path} not created yet ({created_by} creates it, mode 700)")]
    if not stat.S_ISDIR(st.st_mode):
        return [
            Check(
                label,
                "fail",
                f"{path} is not a folder",
                f"point mnemo at a folder, or move {quoted(path)} away",
            )
        ]
    if st.st_uid != os.geteuid():
        return [
            Check(
                label,
                "fail",
                f"{path} belongs to user id {st.st_uid}, not to you ({os.geteuid()})",
                f'sudo chown -R "$(id -un)" {quoted(path)}',
            )
        ]
    mode = stat.S_IMODE(st.st_mode)
    folder_open = bool(mode & 0o077)
    out = [
        Check(
            label,
            "fail",
            f"{path} is open to other users (mode {mode:o}, needs 700)",
            f"chmod 700 {quoted(path)}",
        )
        if folder_open
        else Check(label, "ok", f"{path}: yours, mode {mode:o}")
    ]
    opened, foreign, total, unread = [], [], 0, []
    for top, dirs, files in os.walk(path, onerror=lambda e: unread.append(e.filename)):
        for entry in dirs + files:
            p = Path(top) / entry
            try:
                s = p.lstat()
            except OSError:
                unread.append(str(p))
                continue
            if stat.S_ISLNK(s.st_mode):
                continue
            total += 1
            if s.st_uid != os.geteuid():
                foreign.append(p)
            elif s.st_mode & 0o077:
                opened.append(p)
    inside = f"{label} files"
    if foreign:
        out.append(
            Check(
                inside,
                "fail",
                f"{len(foreign)} of {total} entries in {path} are another user's "
                f"(e.g. {foreign[0]})",
                f'sudo chown -R "$(id -un)" {quoted(path)}',
            )
        )
    elif opened:
        # behind a 700 folder nobody else can open them: a warning; behind an open one, a leak
        out.append(
            Check(
                inside,
                "fail" if folder_open else "warn",
                f"{len(opened)} of {total} entries in {path} are open to group or others "
                f"(e.g. {opened[0]}, mode {stat.S_IMODE(opened[0].lstat().st_mode):o}; mnemo writes 600)",
                f"chmod -R go-rwx {quoted(path)}",
            )
        )
    elif unread:
        out.append(
            Check(
                inside,
                "warn",
                f"{len(unread)} entries in {path} cannot be read by you (e.g. {unread[0]})",
                f"chmod -R u+rwX {quoted(path)}",
            )
        )
    else:
        out.append(Check(inside, "ok", f"{total} entries, none open to group or others"))
    return out


def store_checks(store: str, explicit: bool) -> list[Check]:
    if "://" in store:
        from graph.sidefiles import SideFilesError, side_files

        try:
            side_files(store)  # an s3:// store checks that its bucket answers
        except SideFilesError as e:
            return [Check("store", "fail", str(e), "see docs/ingest.md, 'A store on S3'")]
        return [Check("store", "ok", f"{store}: object storage, its access is the bucket's policy")]
    return private_checks(
        "store", Path(store).expanduser().absolute(), explicit=explicit, created_by="`mnemo ingest`"
    )


def disk_check(label: str, path: Path, need: float, fix: str) -> Check:
    where = nearest(path)
    free = shutil.disk_usage(where).free
    said = f"{free / GB:.1f} GB free on the disk of {path}"
    if free < need:
        return Check(label, "warn", f"{said}, under the {need / GB:.1f} GB it needs", fix)
    return Check(label, "ok", said)
