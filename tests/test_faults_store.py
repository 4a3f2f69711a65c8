"""``mnemo bench faults``, the store's scenarios: each survives as mnemo is, and each reports the
failure when the guard it checks is broken (so the bench can fail).

The bugs they found are fixed, and the clean runs here are their tests: kill_forget failed at
``files``/``images`` (an interrupted forget's screenshots stayed: mnemo/forget_with_media.py now notes them
first), at ``purge`` (the log said done before the purge, so the forgotten text stayed in old table
versions) and at ``edges``/``entities`` (the faces only forgotten memories named stayed, as those
memories were deleted before the entities were decided); full_disk failed on LanceDB's full disk
error, a RuntimeError naming no store (graph/store.py). The last tests pin two of them alone."""

from __future__ import annotations

import errno
from collections.abc import Callable
from typing import cast

import pytest

from bench.faults import Context, Tally, store_kills, store_kit
from bench.faults import store as faults
from embeddings.base import build_text_embedder
from graph import commit
from graph.rows import ClipRow, Memory, content_id
from graph.store import Store
from mnemo.config import load_config


def _run(tmp_path, name: str, **seams) -> Tally:
    tally = Tally(name)
    # SCENARIOS mixes functions of different keyword arguments, which mypy joins to `function`
    scenario = cast(Callable[..., None], faults.SCENARIOS[name])
    scenario(Context(tmp_path, 1, load_config(), print), tally, **seams)
    return tally


def _clean(tally: Tally, runs: int) -> None:
    assert (tally.runs, tally.survived, tally.lost, tally.orphans, tally.leaks) == (
        runs,
        runs,
        0,
        0,
        0,
    ), tally.notes


@pytest.mark.slow
def test_a_writer_killed_at_each_step_of_a_commit_loses_and_leaves_nothing(tmp_path):
    _clean(_run(tmp_path, "kill_commit"), len(store_kit.COMMIT_STEPS))


def test_kill_commit_reports_a_recovery_that_does_not_undo_the_journal(tmp_path, monkeypatch):
    monkeypatch.setattr(commit, "undo", lambda store, meta: None)  # the journal goes, its rows stay
    tally = _run(
        tmp_path, "kill_commit", steps=("edges",)
    )  # killed with its memories and reinforcement written
    assert tally.survived == 0 and tally.orphans >= 2, tally.figures
    assert any("rows of the killed clip are left" in n for n in tally.notes)
    assert any(
        "counted twice" in n for n in tally.notes
    )  # the killed commit's reinforcement kept, then redone


@pytest.mark.slow
def test_a_forget_killed_at_each_step_is_finished_by_the_next(tmp_path):
    _clean(_run(tmp_path, "kill_forget"), len(store_kit.FORGET_STEPS))


def test_kill_forget_reports_screenshots_a_forget_did_not_delete(tmp_path, monkeypatch):
    from mnemo import forget_with_media as forgetting

    monkeypatch.setattr(
        forgetting, "forget_screenshots", lambda clips: 0
    )  # the rerun runs in this process
    tally = _run(tmp_path, "kill_forget", steps=("files",))
    assert tally.survived == 0 and tally.orphans == 8, (
        tally.notes
    )  # 2 clips x 2 frames x (image + sidecar)
    assert tally.lost == 0


@pytest.mark.slow
def test_a_full_disk_gives_a_clear_error_and_the_ingest_finishes_once_space_is_freed(tmp_path):
    _clean(_run(tmp_path, "full_disk"), 1)


SWALLOW = """
from graph.store import Store
commit_clip = Store.commit_clip
def swallowing(self, *args, **kwargs):
    try:
        return commit_clip(self, *args, **kwargs)
    except OSError:
        pass
Store.commit_clip = swallowing
"""


@pytest.mark.slow
def test_full_disk_reports_a_store_that_swallows_the_error(tmp_path):
    tally = _run(tmp_path, "full_disk", patch=SWALLOW)
    assert tally.survived == 0 and tally.lost > 0, (
        tally.notes
    )  # clips said committed that are not there
    # no error where the disk filled; the next commit meets the journal it could not undo
    assert any("reported no error" in n or "not a clear ENOSPC" in n for n in tally.notes), (
        tally.notes
    )


def test_a_full_disk_in_lancedb_is_an_oserror_naming_the_store(tmp_path, monkeypatch):
    """LanceDB says a full disk as a RuntimeError naming its own source file; the store says ENOSPC
    and itself, so that a person knows what to free (and ingest's OSError handling applies)."""
    store = Store(tmp_path / "s", build_text_embedder("hash"))

    def full(name):
        if name == "edges":
            raise RuntimeError(
                "lance error: LanceError(IO): Generic LocalFileSystem error: Unable to copy data to "
                "file: No space left on device (os error 28), /root/.cargo/registry/src/commit.rs:1663:50"
            )

    monkeypatch.setattr(commit, "step", full)
    clip = ClipRow("c1", "/r.mp4", "sha", 0, 0.0, 30.0, 1000.0, 1030.0, "")
    with pytest.raises(OSError) as raised:
        store.commit_clip(
            clip,
            [Memory(content_id("c1", 0), "episodic", "tea", "c1", "/r.mp4", 1000.0, 1001.0)],
            [],
        )
    assert raised.value.errno == errno.ENOSPC and str(tmp_path / "s") in str(raised.value)
    assert "free space" in str(raised.value) and isinstance(raised.value.__cause__, RuntimeError)
    assert (
        store.count()["memories"] == 0 and not (tmp_path / "s" / ".commit").exists()
    )  # undone at once


def test_a_note_of_screenshots_whose_forget_never_began_deletes_nothing(tmp_path):
    """A forget killed after noting its screenshots but before its log row forgot nothing: the
    finisher must leave those clips' screenshots (and the note, for when they are forgotten)."""
    from mnemo.forget_with_media import PENDING, _note_screenshots, finish_unfinished

    t0 = store_kit.T0.timestamp()
    frames, _ = store_kills._capture(tmp_path / "screens", t0)
    store = store_kit.open_store(tmp_path / "store")
    store_kit.write_clips(store, store_kills.FORGET_CLIPS, str(frames[0][0].parent), t0)
    rows = [store.get_clip(store_kit.clip_id(i)) for i in store_kills.FORGOTTEN]
    note = _note_screenshots(store, rows)
    assert note is not None and (tmp_path / "store" / note).parent == tmp_path / "store" / PENDING
    assert finish_unfinished(store) == 0
    assert (
        all(p.exists() for paths in frames.values() for p in paths)
        and (tmp_path / "store" / note).exists()
    )
