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


def _screenshot(folder: Path, when: float, text: str) -> None:
    """A real JPEG screenshot with ``text`` on it, and the sidecar the daemon writes."""
    import json
    from datetime import UTC, datetime

    import cv2
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    img = np.full((400, 900, 3), 255, np.uint8)
    cv2.putText(img, text, (30, 200), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (0, 0, 0), 3)
    name = datetime.fromtimestamp(when, UTC).strftime("%H%M%S_%f")
    cv2.imwrite(str(folder / f"{name}.jpg"), img)
    at = datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds")
    (folder / f"{name}.jpg.json").write_text(
        json.dumps({"captured_at": at, "app": "notes", "window": "notes", "monitor": 1})
    )


@pytest.mark.slow  # real perception and the real text embedder
def test_models_are_let_go_when_idle_and_loaded_again_for_the_next_clip(tmp_path):
    """After ``release_after_s`` without a clip, the perceivers and the store's text embedder used
    so far are dropped whole (nothing keeps them alive), and the next clip is ingested as well."""
    import gc
    import weakref

    from mnemo.capture_cli import watch_graph
    from mnemo.config import load_config
    from mnemo.wiring import (
        build_perceivers,
        faces_backend_name,
        match_policies,
        open_store,
        text_embedder,
    )

    cfg = load_config()
    graph = watch_graph(cfg.graph)
    store = open_store(graph, tmp_path / "store", lean=True)
    made: list[
        tuple[weakref.ref, weakref.ref]
    ] = []  # each pair handed out; weak: held by nobody here

    def fresh():
        pair = build_perceivers(cfg.perception), text_embedder(graph, lean=True)
        made.append((weakref.ref(pair[0]), weakref.ref(pair[1])))
        return pair

    def first_perceivers():
        perceivers, store.embedder = fresh()
        return perceivers

    root = tmp_path / "screens"
    _screenshot(root / "day", time.time(), "parking level 3 bay 42")
    stop = threading.Event()
    report_box: list = []
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))

    def run() -> None:
        report_box.append(
            watch_module.watch(
                root,
                store,
                first_perceivers(),
                policies,
                clip_s=3.0,
                settle_s=0.2,
                poll_s=0.3,
                stop=stop,
                say=lambda m: None,
                release_after_s=2.0,
                fresh=fresh,
            )
        )

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert _wait_for(lambda: len(made) >= 2, 120), "the models were not let go after 2 s idle"
        gc.collect()
        assert [r() for r in made[0]] == [None, None], "something still holds the released models"
        _screenshot(root / "day", time.time(), "dentist on friday at 9")
        assert _wait_for(lambda: len(made) >= 3, 120), (
            "the second clip was not ingested, or its models were never let go"
        )
    finally:
        stop.set()
        t.join(timeout=60)
    assert report_box and report_box[0].clips_new == 2, report_box
    texts = " ".join(m.text for m in store.memories_where("true"))
    assert "42" in texts and "dentist" in texts.lower(), texts


_READ_TWICE = """
import ctypes, json, mmap, resource, sys
import numpy as np
from mnemo.watch import watch_malloc
from perception.malloc import limit_malloc

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

# huge pages would fault a 2 MB page at a time: the counts below are of 4 KiB pages
ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE
limit_malloc()  # as the CLI sets it for every command
if sys.argv[1] == "watch":
    watch_malloc()
# the grounds: does this kernel count a fresh mapping's pages, and does malloc map a 16 MB block?
before = faults()
region = mmap.mmap(-1, 16 << 20)
np.frombuffer(region, np.uint8)[:] = 1
mapped = faults() - before
del region
before = faults()
block = np.ones(16 << 20, np.uint8)
malloced = faults() - before
del block
readings = []
for _ in range(4):  # a reading's buffers, 8 MB, taken, written and freed; the first grows the heap
    before = faults()
    buffers = np.ones(8 << 20, np.uint8)
    readings.append(faults() - before)
    del buffers
print(json.dumps({"mapped": mapped, "malloced": malloced, "reading": min(readings[1:])}))
"""


@pytest.mark.slow
def test_the_watchers_heap_keeps_a_readings_buffers_instead_of_faulting_them_in_again():
    """A reading's buffers of 8 MB (the size of the OCR's line activations on a wide line: between
    the CLI's 4 MB mmap threshold and the watcher's 32 MB), taken and freed four times: under the
    CLI's malloc settings each time mapped afresh and every page faulted in again; under the
    watcher's (``watch_malloc``) taken from the heap kept. Page faults counted (the fewest of the
    last three), a process each, with huge pages off. The figures on real OCR readings are in
    docs/benchmarks.md: they hang on the CPU and ONNX Runtime's kernels (a CI machine's recogniser
    mapped no buffer of that size, here 4,000 to 28,000 pages a reading), so the allocator is
    tested on blocks of its own.

    Its grounds are measured first, in the same processes: a kernel that does not count the
    faults of a fresh 16 MB mapping (some sandboxes), or an allocator that does not map a 16 MB
    block under the CLI's settings (one preloaded, or set by ``GLIBC_TUNABLES``), leaves nothing
    to compare, and the test says which and skips rather than fail on the machine."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    got = {
        how: json.loads(
            subprocess.run(
                [sys.executable, "-c", _READ_TWICE, how],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
        )
        for how in ("cli", "watch")
    }
    pages = (16 << 20) // 4096
    if got["cli"]["mapped"] < pages // 2:
        pytest.skip(f"this kernel does not count a fresh mapping's page faults: {got}")
    if got["cli"]["malloced"] < pages // 2:
        pytest.skip(
            "malloc here does not map a 16 MB block under the CLI's settings (LD_PRELOAD="
            f"{os.environ.get('LD_PRELOAD', '')!r}, GLIBC_TUNABLES="
            f"{os.environ.get('GLIBC_TUNABLES', '')!r}): {got}"
        )
    faults = {how: got[how]["reading"] for how in got}
    assert faults["cli"] > pages // 4, got  # 8 MB mapped afresh: 2,048 pages
    assert faults["watch"] < faults["cli"] / 10, got


_FREEZE = """
import gc, json, weakref
from mnemo.watch import release_memory
class Node:
    pass
def cycle():
    node = Node()
    node.me = node  # only the collector frees it
    return weakref.ref(node)
before = cycle()
release_memory()
frozen = gc.get_freeze_count()
after = cycle()
release_memory()
print(json.dumps({"before": before() is None, "frozen": frozen, "after": after() is None}))
"""


def test_what_stays_is_frozen_out_of_each_clips_collection_and_later_garbage_still_goes():
    """The first ``release_memory`` (after the first clip) collects, then freezes what is alive,
    so each later collection looks only at what came since; a cycle made after it is still
    collected. In a process of its own: a freeze is the whole process's."""
    import json
    import subprocess
    import sys

    got = json.loads(
        subprocess.run(
            [sys.executable, "-c", _FREEZE], capture_output=True, text=True, check=True
        ).stdout
    )
    assert got["before"] and got["after"], got
    assert got["frozen"] > 0, got  # what was alive (375 objects on 3.12)
