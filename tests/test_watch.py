"""`mnemo watch` follows file events: after its first look it reads nothing while nothing is
written, and plans only the day folder a frame went to once that frame's window has closed. The
ingest itself is recorded here, not run: what is under test is when the watcher looks and where
(the whole chain, from typing under capture to an answer, is tests/test_capture_cli.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mnemo import watch as watch_module
from pipeline.ingest import IngestReport


@pytest.fixture
def looks(monkeypatch) -> list[tuple[float, list[str]]]:
    seen: list[tuple[float, list[str]]] = []

    def ingest(paths, *a, **kw):
        seen.append((time.time(), list(paths)))
        return IngestReport()

    monkeypatch.setattr(watch_module, "ingest", ingest)
    return seen


def _frame(folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jpg").write_bytes(b"\xff\xd8 not decoded here")
    (folder / f"{name}.jpg.json").write_text("{}")


def _watch(root: Path, events: bool, stop: threading.Event) -> threading.Thread:
    t = threading.Thread(
        target=watch_module.watch,
        args=(root, None, None, (None, None)),
        kwargs=dict(
            clip_s=2.0, settle_s=0.2, poll_s=0.3, events=events, stop=stop, say=lambda m: None
        ),
        daemon=True,
    )
    t.start()
    return t


def _wait_for(cond, timeout_s: float) -> bool:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.slow  # waits out real idle windows on real file events (seconds of wall time)
def test_an_idle_folder_is_not_read_again_and_a_new_frame_is_planned_in_its_day_folder(
    tmp_path, looks
):
    root = tmp_path / "capture"
    _frame(root / "2026" / "11" / "20", "old")
    stop = threading.Event()
    thread = _watch(root, True, stop)
    try:
        assert _wait_for(lambda: looks, 5), "no first look"
        assert looks[0][1] == [str(root)]  # the first look is at everything
        # once more when the next window closes: frames written while the first look ran raised no event
        assert _wait_for(lambda: len(looks) > 1, 5) and looks[1][1] == [str(root)]
        del looks[:]
        time.sleep(3.0)  # idle: more than a window
        assert not looks, looks
        looks.append((0.0, ["(the first looks)"]))
        today = root / "2026" / "11" / "25"
        written = time.time()
        _frame(today, "new")
        assert _wait_for(lambda: len(looks) > 1, 6), "the new frame was never planned"
        when, paths = looks[1]
        assert paths == [str(today)]
        window_end = (written // 2.0 + 1) * 2.0
        assert when >= window_end  # not before its window closed (it could still gain frames)
        time.sleep(2.5)
        assert len(looks) == 2, looks  # and nothing after
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()


def test_without_file_events_it_looks_every_poll(tmp_path, looks):
    root = tmp_path / "capture"
    _frame(root / "2026" / "11" / "20", "old")
    stop = threading.Event()
    thread = _watch(root, False, stop)
    time.sleep(1.6)
    stop.set()
    thread.join(timeout=10)
    assert len(looks) >= 4 and all(paths == [str(root)] for _, paths in looks)


@pytest.mark.slow  # waits out real idle windows on real file events (seconds of wall time)
def test_a_folder_written_to_without_pause_is_still_looked_at_as_each_window_closes(
    tmp_path, looks
):
    """Frames every 0.3 s: a window's first frame often comes within settle_s of the last one
    closing; the folder is looked at when its earliest unread window closes, not put off."""
    root = tmp_path / "capture"
    day = root / "2026" / "11" / "25"
    _frame(day, "first")
    stop = threading.Event()
    thread = _watch(root, True, stop)
    try:
        assert _wait_for(lambda: len(looks) >= 2, 6)  # the first look and its repeat
        del looks[:]
        t0 = time.time()
        i = 0
        while time.time() - t0 < 7.0:  # 3.5 windows of 2 s
            _frame(day, f"f{i:03d}")
            i += 1
            time.sleep(0.3)
        assert len([1 for _, paths in looks if paths == [str(day)]]) >= 2, looks
    finally:
        stop.set()
        thread.join(timeout=10)
