"""mnemo deletes and changes only what it wrote: a user's photo folder that was ingested keeps every
file through a forget; capture refuses a folder that holds files and no marker; in its own marked
folder, crash recovery, the age limit, the budget and forget touch only the capture's own files."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cv2
import pytest
from skimage import data

from conftest import run_cli
from mnemo.serve.models import ForgetIn
from perception.capture.owned import (
    HEARTBEATS,
    MARKER,
    NotACaptureFolder,
    adopt,
    frame_name,
    is_frame_name,
    temp_name,
)
from perception.capture.storage import CaptureStore, hold_folder


def _photo(which: str, size: int = 96) -> bytes:
    """A small real photo (scikit-image's astronaut or camera) as JPEG bytes."""
    image = getattr(data, which)()
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
    ok, buf = cv2.imencode(".jpg", cv2.resize(image, (size, size)))
    assert ok
    return buf.tobytes()


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every file and folder under ``root`` (root included): bytes, mtime and mode."""
    out: dict[str, tuple[bytes | None, int, int]] = {
        ".": (None, root.stat().st_mtime_ns, root.stat().st_mode)
    }
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(root))] = (
            p.read_bytes() if p.is_file() else None,
            st.st_mtime_ns,
            st.st_mode,
        )
    return out


def _user_file(path: Path, content: bytes, mtime: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    os.utime(path, (mtime, mtime))


T = datetime(2026, 1, 5, 10, 15, tzinfo=UTC)
OLD = datetime(2019, 6, 1, 12, 0, tzinfo=UTC).timestamp()  # the user's files' times


@pytest.fixture
def hash_embedder(monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    monkeypatch.setenv("MNEMO_PERCEPTION__FACES_BACKEND", "dlib")


@pytest.mark.slow  # the real perception models ingest a photo folder
def test_forget_leaves_every_file_of_an_ingested_photo_folder_as_it_was(
    tmp_path, capsys, hash_embedder
):
    photos = tmp_path / "photos"
    for name, which in [
        ("IMG_20260105_101500.jpg", "astronaut"),
        ("IMG_20260105_101510.jpg", "camera"),
        ("IMG_20260106_083000.jpg", "astronaut"),
        ("IMG_20260110_120000.jpg", "camera"),
    ]:
        _user_file(
            photos / name, _photo(which), OLD
        )  # the time comes from the name (no sidecar, no EXIF)
    _user_file(photos / "IMG_20260105_101500.jpg.json", b'{"note": "my own"}', OLD)
    # a copy of an old capture the user keeps elsewhere: mnemo's names and layout, but no marker
    kept = tmp_path / "backup" / "2026" / "01" / "05"
    name = frame_name(T + timedelta(minutes=1), 1, encrypted=False)
    _user_file(kept / name, _photo("camera", 80), OLD)
    _user_file(
        kept / f"{name}.json",
        json.dumps({"captured_at": (T + timedelta(minutes=1)).isoformat()}).encode(),
        OLD,
    )
    before = {"photos": _snapshot(photos), "backup": _snapshot(tmp_path / "backup")}
    store = str(tmp_path / "store")

    code, out, err = run_cli(
        capsys, "ingest", str(photos), str(tmp_path / "backup"), "--store", store
    )
    assert code == 0, err
    window = ("--from", "2026-01-04T00:00:00Z", "--to", "2026-01-07T00:00:00Z")
    code, out, _ = run_cli(capsys, "forget", *window, "--store", store, "--json")
    preview = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and preview["clips"] == 3 and preview["forgotten"] is False
    assert preview["files_to_delete"] == 0 and preview["delete_in"] == []
    assert f"{photos} is yours and stays as it is" in out and "would delete 0 file(s)" in out
    code, out, _ = run_cli(capsys, "forget", *window, "--store", store, "--yes", "--json")
    done = json.loads(out.strip().splitlines()[-1])
    assert (
        code == 0
        and done["forgotten"] is True
        and done["clips"] == 3
        and done["screenshots_deleted"] == 0
    )
    assert {"photos": _snapshot(photos), "backup": _snapshot(tmp_path / "backup")} == before
    code, out, _ = run_cli(capsys, "forget", *window, "--store", store)
    assert "nothing matches" in out  # the store did forget them


def _capture_folder(root: Path, n: int = 4, start: datetime = T) -> CaptureStore:
    store = CaptureStore(root)
    store.recover()
    for i in range(n):
        store.write(
            _photo("camera", 48 + 4 * i),
            {"app": "xterm", "window": f"w{i}", "reason": "input"},
            start + timedelta(seconds=20 * i),
            1,
        )
    return store


def test_capture_refuses_a_folder_with_files_and_no_marker_and_changes_nothing(tmp_path, capsys):
    mine = tmp_path / "Pictures"
    _user_file(mine / "2019" / "wedding.jpg", _photo("astronaut"), OLD)
    _user_file(mine / "projects" / "build.tmp", b"half a build", OLD)
    _user_file(mine / "projects" / "draft.enc", b"my encrypted draft", OLD)
    os.chmod(mine, 0o755)
    before = _snapshot(mine)
    for attempt in (
        lambda: CaptureStore(mine).recover(),
        lambda: hold_folder(mine),
        lambda: CaptureStore(mine).write(_photo("camera"), {}, T, 1),
        lambda: CaptureStore(mine).heartbeat({"reason": "static"}),
    ):
        with pytest.raises(NotACaptureFolder, match="new or empty folder"):
            attempt()
    code, _, err = run_cli(capsys, "capture", "--out", str(mine), "--duration", "1s")
    assert code == 2 and str(mine) in err and "not empty" in err and "--out" in err
    assert _snapshot(mine) == before and not (mine / MARKER).exists()


def test_an_older_capture_folder_is_refused_until_adopted(tmp_path, capsys):
    old = tmp_path / "screens"
    _capture_folder(old, n=2)
    (old / MARKER).unlink()  # as an older mnemo left it: frames and sidecars, no marker
    before = _snapshot(old)
    code, _, err = run_cli(capsys, "capture", "--out", str(old), "--duration", "1s")
    assert code == 2 and "2 frame(s)" in err and f"mnemo capture --out {old} --adopt" in err
    assert _snapshot(old) == before
    assert adopt(old).frames == 2
    assert CaptureStore(old).recover() == {"temps": 0, "orphans": 0, "frames": 2}


def test_an_empty_folder_and_a_new_one_become_capture_folders(tmp_path):
    (tmp_path / "empty").mkdir()
    for root in (tmp_path / "empty", tmp_path / "new" / "screens"):
        _capture_folder(root, n=1)
        assert json.loads((root / MARKER).read_text())["format"] == 1
        assert oct(root.stat().st_mode & 0o777) == "0o700"


def test_recovery_age_and_budget_delete_only_the_captures_own_files(tmp_path):
    root = tmp_path / "screens"
    _capture_folder(root, n=3)
    day = next(root.rglob("*.jpg")).parent
    three = sum(p.stat().st_size for p in day.iterdir())  # frames and sidecars
    user = {  # the user's files beside mnemo's, whatever their names
        root / "Pictures" / "2019" / "wedding.jpg": _photo("astronaut"),
        root / "projects" / "build.tmp": b"half a build",
        root / "projects" / "draft.enc": b"my encrypted draft",
        root / "projects" / "heartbeat.jsonl": b"{}\n",
        root
        / "logs"
        / "app"
        / "today"
        / "heartbeat.jsonl": b"{}\n",  # three deep, not a day folder
        root / "2019" / "06" / "photo.jpg": _photo("camera"),  # no day folder: a month one
        day / "holiday.jpg": _photo("astronaut"),  # an image without a sidecar, in a day folder
        day / ".notes.txt.tmp": b"an editor's temp file",
        day / "scan.jpg.enc": b"user's own",
        day / "20260105T101500Z_m1.jpg": _photo(
            "camera"
        ),  # close to mnemo's names, not one of them
    }
    for path, content in user.items():
        _user_file(path, content, OLD)
    before = {p: _snapshot(p.parent)[p.name] for p in user}
    # what a crash leaves: temp files of both kinds and an image whose sidecar was never written
    orphan = day / frame_name(T + timedelta(minutes=5), 1, encrypted=False)
    orphan.write_bytes(_photo("camera", 32))
    leftovers = [day / temp_name(orphan.name), day / temp_name(f"{orphan.name}.json"), orphan]
    for p in leftovers[:2]:
        p.write_bytes(b"half")

    again = CaptureStore(root, budget_bytes=2 * three // 3, max_age_days=1)
    assert again.recover() == {"temps": 2, "orphans": 1, "frames": 3}
    assert not any(p.exists() for p in leftovers)
    again.write(
        _photo("camera", 40), {"reason": "input"}, T + timedelta(minutes=6), 1
    )  # over budget: oldest go
    assert again.deleted >= 1
    again.heartbeat({"reason": "static"})
    assert again.expire(now=(T + timedelta(days=400)).timestamp()) >= 1
    assert not [
        p
        for p in root.rglob("*")
        if is_frame_name(p.name) or is_frame_name(p.name.removesuffix(".json"))
    ]
    assert {p: _snapshot(p.parent)[p.name] for p in user} == before


@pytest.mark.slow
def test_forget_deletes_the_captured_frames_of_forgotten_clips_and_the_preview_counts_them(
    tmp_path, capsys, hash_embedder
):
    root = tmp_path / "screens"
    _capture_folder(root, n=4, start=T)  # 10:15:00, :20, :40 and 10:16:00
    _capture_folder(root, n=2, start=T + timedelta(hours=2))  # not in the range
    day = next(root.rglob("*.jpg")).parent
    _user_file(
        day / "IMG_20260105_101510.jpg", _photo("astronaut"), OLD
    )  # the user's, in the forgotten clip
    theirs = _snapshot(day)["IMG_20260105_101510.jpg"]
    store = str(tmp_path / "store")
    assert run_cli(capsys, "ingest", str(root), "--store", store)[0] == 0
    window = ("--from", "2026-01-05T10:14:00Z", "--to", "2026-01-05T10:16:30Z")
    code, out, _ = run_cli(capsys, "forget", *window, "--store", store, "--json")
    preview = json.loads(out.strip().splitlines()[-1])
    assert (
        code == 0
        and preview["files_to_delete"] == 8
        and preview["delete_in"] == [str(root.resolve())]
    )
    assert (
        f"would delete 8 file(s) mnemo captured (screenshots, sound and their sidecars) in {root.resolve()}"
        in out
    )
    rest = _service(store).forget(
        ForgetIn(start="2026-01-05T10:14:00Z", end="2026-01-05T10:16:30Z")
    )
    assert (rest.files_to_delete, rest.delete_in, rest.forgotten) == (
        8,
        [str(root.resolve())],
        False,
    )  # REST, MCP
    assert len(list(root.rglob("*Z_m1.jpg"))) == 6  # a preview deletes nothing
    code, out, _ = run_cli(capsys, "forget", *window, "--store", store, "--yes", "--json")
    assert code == 0 and json.loads(out.strip().splitlines()[-1])["screenshots_deleted"] == 4
    left = sorted(p.name for p in root.rglob("*Z_m1.jpg*"))
    later = [frame_name(T + timedelta(hours=2, seconds=s), 1, encrypted=False) for s in (0, 20)]
    assert left == sorted([*later, *(f"{n}.json" for n in later)])
    assert _snapshot(day)["IMG_20260105_101510.jpg"] == theirs
    assert (root / MARKER).is_file()


def test_forget_deletes_nothing_where_the_marker_is_gone(tmp_path):
    from mnemo.forget_with_media import forget_screenshots, screenshots_to_delete

    root = tmp_path / "screens"
    _capture_folder(root, n=2)
    day = next(root.rglob("*.jpg")).parent
    clip = {"source_path": str(day), "start_ts": T.timestamp(), "end_ts": T.timestamp() + 30}
    assert len(screenshots_to_delete([clip])) == 4
    (root / MARKER).unlink()
    before = _snapshot(root)
    assert screenshots_to_delete([clip]) == [] and forget_screenshots([clip]) == 0
    assert _snapshot(root) == before


def _service(store_dir: str):
    """``mnemo serve``'s and ``mnemo mcp``'s service on the store at ``store_dir``."""
    from control.answer import OfflineAnswerer
    from mnemo.config import GraphConfig
    from mnemo.serve.service import MemoryService
    from mnemo.wiring import open_store

    store = open_store(GraphConfig(text_embedder="hash"), store_dir)
    return MemoryService(store, OfflineAnswerer(store))


def test_links_in_a_capture_folder_lead_mnemo_nowhere(tmp_path):
    """A year folder linked to the user's pictures, a heartbeat log linked to their notes: capture
    refuses to write through either, and forget deletes nothing through the linked year."""
    from mnemo.forget_with_media import screenshots_to_delete

    pictures, notes = tmp_path / "Pictures" / "2026", tmp_path / "notes.txt"
    pictures.mkdir(parents=True)
    _user_file(notes, b"my notes\n", OLD)
    store = _capture_folder(tmp_path / "screens", n=1)
    day = next((tmp_path / "screens").rglob("*.jpg")).parent
    photo = (
        pictures / day.parent.name / day.name / frame_name(T, 1, encrypted=False)
    )  # a capture-like name
    photo.parent.mkdir(parents=True)
    _user_file(photo, _photo("camera"), OLD)
    before = _snapshot(tmp_path / "Pictures") | {"notes": _snapshot(tmp_path)["notes.txt"]}

    store.heartbeat({"reason": "static"})  # today's day folder and its log, then the log as a link
    (log,) = (tmp_path / "screens").rglob(HEARTBEATS)
    log.unlink()
    log.symlink_to(notes)
    with pytest.raises(OSError):
        store.heartbeat({"reason": "static"})
    year = day.parent.parent
    shutil.rmtree(year)
    year.symlink_to(pictures)
    with pytest.raises(NotACaptureFolder, match="leads out of .* through a link"):
        store.write(_photo("camera", 40), {"reason": "input"}, T + timedelta(seconds=1), 1)
    clip = {"source_path": str(day), "start_ts": T.timestamp() - 60, "end_ts": T.timestamp() + 60}
    assert day.resolve() == photo.parent.resolve()  # the clip's folder is now the user's
    assert screenshots_to_delete([clip]) == []
    assert _snapshot(tmp_path / "Pictures") | {"notes": _snapshot(tmp_path)["notes.txt"]} == before
