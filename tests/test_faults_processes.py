"""``mnemo bench faults``, processes: each scenario survives its fault on the real code, and reports
the fault once the guard it checks is broken (in the mnemo process it starts, through ``prelude``,
or here with monkeypatch where the guarded code runs in this process)."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import cast

import pytest

from bench.faults import Context, Tally, processes, processes_folders, processes_kit


def _run(name: str, tmp_path, **kw) -> Tally:
    tally = Tally(name)
    # SCENARIOS mixes functions of different keyword arguments, which mypy joins to `function`
    scenario = cast(Callable[..., None], processes.SCENARIOS[name])
    scenario(Context(tmp_path, 1, None, print), tally, **kw)
    return tally


def _survived(t: Tally) -> None:
    assert (t.runs, t.survived, t.lost, t.orphans, t.leaks) == (1, 1, 0, 0, 0), t.notes


# the supervisor without its restart: the watcher runs once
NO_RESTART = textwrap.dedent("""
    import mnemo.supervise as s
    def once(self):
        proc = self._spawn()
        if proc is not None:
            proc.wait()
    s.Supervised._run = once
""")
# the supervisor without the parent-death signal: a SIGKILLed daemon leaves its watcher running
NO_PDEATHSIG = "import mnemo.supervise as s\ns._libc = lambda: None\n"


@pytest.mark.slow
def test_killed_watcher_is_restarted_ingests_the_gap_and_dies_with_its_daemon(tmp_path):
    _survived(_run("killed_watcher", tmp_path))


@pytest.mark.slow
def test_killed_watcher_reports_a_supervisor_that_does_not_restart(tmp_path):
    t = _run("killed_watcher", tmp_path, prelude=NO_RESTART, gap_wait_s=15.0)
    assert t.survived == 0 and t.lost > 0, t.notes
    assert any("not restarted" in n for n in t.notes), t.notes


@pytest.mark.slow
def test_killed_watcher_reports_a_watcher_that_outlives_its_daemon(tmp_path):
    t = _run("killed_watcher", tmp_path, prelude=NO_PDEATHSIG, orphan_wait_s=20.0)
    assert t.survived == 0 and t.orphans >= 1, t.notes
    assert any("outlived its SIGKILL" in n for n in t.notes), t.notes


# Ray Data without actor restarts or task retries: a killed worker's clip is not tried again
RAY_NO_RETRY = textwrap.dedent("""
    import ray.data
    _map_batches = ray.data.Dataset.map_batches
    def map_batches(self, *a, **kw):
        kw.update(max_restarts=0, max_task_retries=0)
        return _map_batches(self, *a, **kw)
    ray.data.Dataset.map_batches = map_batches
""")


@pytest.mark.slow
def test_killed_ray_worker_the_ingest_finishes_with_the_sequential_store_and_no_ray_left(tmp_path):
    _survived(_run("killed_ray_worker", tmp_path))


@pytest.mark.slow
def test_killed_ray_worker_reports_an_ingest_without_retries(tmp_path):
    t = _run("killed_ray_worker", tmp_path, prelude=RAY_NO_RETRY)
    assert t.survived == 0 and t.lost > 0, t.notes
    assert t.orphans == 0, t.notes  # SIGTERM still ends every process of its Ray


def test_capture_refuses_a_users_folder_and_recovery_keeps_to_its_own_files(tmp_path):
    _survived(_run("capture_foreign_folder", tmp_path))


# the foreign-folder check gone: any folder is marked and captured into
CLAIM_ANY = textwrap.dedent("""
    from pathlib import Path
    import perception.capture.owned as o, perception.capture.storage as s
    def claim(root):
        o._write_marker(Path(root), adopted=False)
        return True
    o.claim = s.claim = claim
""")


def test_capture_foreign_folder_reports_a_capture_that_takes_any_folder(tmp_path):
    t = _run("capture_foreign_folder", tmp_path, prelude=CLAIM_ANY)
    assert t.survived == 0 and (t.lost or t.orphans), t.notes
    assert any("changed the user's folder" in n for n in t.notes), t.notes


def test_capture_foreign_folder_reports_a_recovery_that_deletes_the_users_files(
    tmp_path, monkeypatch
):
    from perception.capture import owned, storage

    def greedy(
        root, path
    ):  # any .tmp is a temp file, any .jpg a frame (then without a sidecar: deleted)
        if path.name.endswith(".tmp"):
            return "temp"
        return "frame" if path.name.endswith(".jpg") else owned.kind(root, path)

    monkeypatch.setattr(storage, "kind", greedy)
    t = _run("capture_foreign_folder", tmp_path)
    assert t.survived == 0 and t.lost >= 2, t.notes
    assert any("recovery changed or deleted" in n for n in t.notes), t.notes


@pytest.mark.slow
def test_forget_leaves_the_users_photo_folder_as_it_was(tmp_path):
    _survived(_run("forget_users_folder", tmp_path))


# forget deleting every file of an ingested folder, not only the capture's own frames
FORGET_ANY = textwrap.dedent("""
    from pathlib import Path
    import mnemo.forget_with_media as f
    f.screenshots_to_delete = lambda clips: sorted({p for c in clips for p in Path(c["source_path"]).iterdir()
                                                     if p.is_file()})
""")


@pytest.mark.slow
def test_forget_users_folder_reports_a_forget_that_deletes_the_users_photos(tmp_path):
    t = _run("forget_users_folder", tmp_path, prelude=FORGET_ANY)
    assert t.survived == 0 and t.lost > 0, t.notes


@pytest.mark.slow  # the real perception models ingest
def test_an_ingest_told_to_stop_ends_after_the_clip_in_hand_and_a_rerun_resumes(
    tmp_path, perceivers, policies
):
    """The bug killed_watcher found: a watcher sent SIGTERM by its dead daemon (the parent-death
    signal) went on through its whole backlog, outliving the daemon by over a minute on a busy
    machine. ``ingest(stop=...)`` begins no clip once stop is set."""
    import threading

    from embeddings.base import build_text_embedder
    from graph.store import Store
    from pipeline.ingest import ingest

    photos = tmp_path / "photos"
    for name, which in processes_folders.PHOTOS:  # four photos in three 30 s windows
        processes_kit.user_file(
            photos / name, processes_kit.jpeg_photo(which, 64), processes_kit.OLD
        )
    store = Store(tmp_path / "store", build_text_embedder("hash"))

    class ArrivesWithTheFirstClip(threading.Event):
        """Set as ingest asks the first time, before it begins the first clip: the stop comes while
        that clip is in hand (set from the commit thread's progress line instead, it came after all
        three clips were begun on a loaded machine)."""

        def is_set(self) -> bool:
            was = super().is_set()
            self.set()
            return was

    stop = ArrivesWithTheFirstClip()
    first = ingest([str(photos)], store, perceivers, policies, progress=lambda m: None, stop=stop)
    assert first.clips_new == 1  # the clip in hand is committed; the other two are never begun
    rest = ingest([str(photos)], store, perceivers, policies, progress=lambda m: None)
    assert rest.clips_new == 3 - first.clips_new and rest.clips_skipped == first.clips_new
