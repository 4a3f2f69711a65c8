"""Ingest and ask through the CLI on real media, with real models (slow)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import disk_full_on_commit, run_cli

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, demo_recording):
    import ffmpeg

    from perception.sources.media import ffmpeg_exe

    d = tmp_path_factory.mktemp("bad")
    (d / "empty.mp4").write_bytes(b"")
    (d / "notes.mp4").write_text("this is a text file, not a recording\n" * 20)
    data = demo_recording.read_bytes()
    (d / "truncated.mp4").write_bytes(data[: len(data) // 10])
    shutil.copy(demo_recording.parent.parent / "pyannote-sample" / "sample.rttm", d / "sample.rttm")
    from bench.fixtures import group_photo

    shutil.copy(group_photo(), d / "photo.jpg")
    video_only = d / "video_only.mp4"
    (
        ffmpeg.input(str(demo_recording), ss=31, t=4)
        .output(str(video_only), an=None, vcodec="libx264")
        .global_args("-loglevel", "error")
        .run(cmd=ffmpeg_exe(), quiet=True)
    )
    return d


def _store_state(store_dir):
    from mnemo.config import GraphConfig
    from mnemo.wiring import open_store

    store = open_store(GraphConfig(), store_dir)  # as `mnemo ingest` opened it
    return store.count(), {t.name: t.version for t in (store.clips, store.entities, store.memories)}


def test_bad_files_are_named_and_the_good_ones_still_ingested(
    capsys, tmp_path, bad_files, sample_wav
):
    store = tmp_path / "store"
    missing = tmp_path / "missing.mp4"
    code, out, err = run_cli(
        capsys,
        "ingest",
        str(missing),
        str(bad_files / "empty.mp4"),
        str(bad_files / "notes.mp4"),
        str(bad_files / "truncated.mp4"),
        str(bad_files / "sample.rttm"),
        str(bad_files / "photo.jpg"),
        str(sample_wav),
        str(bad_files / "video_only.mp4"),
        "--store",
        str(store),
    )
    assert code == 0, err
    assert f"{missing}: no such file" in err
    assert f"{bad_files / 'empty.mp4'}: the file is empty" in err
    assert f"{bad_files / 'notes.mp4'}: not a readable audio/video file" in err
    assert f"{bad_files / 'sample.rttm'}: not a readable audio/video file" in err
    assert f"{bad_files / 'photo.jpg'}: a still image, not a recording" in err
    assert str(bad_files / "truncated.mp4") in err and "truncated" in err
    # a file's missing stream is said once for the file; an audio file is not expected to have video
    assert err.count("no audio stream: speech skipped") == 1 and "no video stream" not in err
    assert (
        "ingested 3 file(s)" in out
    )  # audio-only, video-only and the readable part of the truncated file

    # re-running adds nothing, and a run of only bad files changes nothing and fails
    before = _store_state(store)
    code, out, err = run_cli(
        capsys, "ingest", str(sample_wav), str(bad_files / "video_only.mp4"), "--store", str(store)
    )
    assert code == 0 and "0 new clip(s)" in out and "already stored" in err
    assert _store_state(store) == before
    code, out, err = run_cli(
        capsys, "ingest", str(missing), str(bad_files / "notes.mp4"), "--store", str(store)
    )
    assert code == 1
    assert _store_state(store) == before


@pytest.mark.cpu_kind
def test_ask_json_answers_from_the_recording_with_citations(capsys, tmp_path, demo_recording):
    store = tmp_path / "store"
    code, out, err = run_cli(capsys, "ingest", str(demo_recording), "--store", str(store))
    assert code == 0, err
    assert "clip 1/2 [0-30 s]" in err and "clip 2/2 [30-40 s]" in err  # progress per clip

    code, out, err = run_cli(
        capsys, "ask", "Where is Sheila from?", "--store", str(store), "--json"
    )
    assert code == 0, err
    reply = json.loads(out.strip().splitlines()[-1])
    assert "Chicago" in reply["answer"]
    (cite,) = reply["citations"]
    assert cite["source"] == str(demo_recording)
    assert (
        14.0 <= cite["start_s"] < cite["end_s"] <= 18.5
    )  # Sheila says it at 14.4-17.8 s (sample.stm)

    code, out, err = run_cli(
        capsys,
        "ask",
        "Where is Sheila from?",
        "--store",
        str(store),
        "--json",
        "--before",
        "2026-11-20T10:00:10Z",
    )
    reply = json.loads(out.strip().splitlines()[-1])
    assert "Chicago" not in reply["answer"]  # it was said at 10:00:14


def test_ask_on_an_empty_store_says_what_to_do(capsys, tmp_path):
    code, out, err = run_cli(capsys, "ask", "anything?", "--store", str(tmp_path / "empty"))
    assert code == 1 and "mnemo ingest" in err


def test_a_failed_write_names_the_file_and_keeps_committed_clips(
    tmp_path, demo_recording, perceivers, policies
):
    """A full disk on the second clip: a clear error; the first clip stays; a rerun finishes the job."""
    from embeddings.base import build_text_embedder
    from graph.store import Store
    from pipeline.ingest import ingest

    store = Store(tmp_path / "store", build_text_embedder("minilm"))
    calls = disk_full_on_commit(store, 2)
    with pytest.raises(OSError) as e:
        ingest([str(demo_recording)], store, perceivers, policies, progress=lambda _m: None)
    assert str(demo_recording) in str(e.value) and "No space left" in str(e.value)
    assert "run ingest again" in str(e.value)
    assert store.count()["clips"] == 1 and store.has_clip(calls[0])
    assert store.search("Sheila Chicago")  # the committed clip is searchable

    del store.commit_clip  # the real method again
    report = ingest([str(demo_recording)], store, perceivers, policies, progress=lambda _m: None)
    assert (report.clips_new, report.clips_skipped) == (1, 1)
    assert store.count()["clips"] == 2


def test_an_ingest_killed_after_its_first_commit_resumes_from_the_store(
    tmp_path, demo_recording, demo_store, perceivers, policies
):
    """SIGKILL, no cleanup: the rerun skips the committed clip, ingests the rest, duplicates nothing."""
    import os
    import signal
    import subprocess
    import sys

    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store
    from pipeline.ingest import ingest

    env = dict(
        os.environ,
        MNEMO_GRAPH__TEXT_EMBEDDER="minilm",
        MNEMO_PERCEPTION__FACES_BACKEND="dlib",
        HF_HUB_OFFLINE="1",
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "mnemo",
            "ingest",
            str(demo_recording),
            "--store",
            str(tmp_path / "store"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "clip 1/2" in line and "memories in" in line:  # printed once clip 1 is committed
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "".join(seen[-5:])

    store = Store(tmp_path / "store", build_text_embedder("minilm"))
    assert store.count()["clips"] == 1
    report = ingest([str(demo_recording)], store, perceivers, policies, progress=lambda _m: None)
    assert (report.clips_new, report.clips_skipped) == (1, 1)
    assert differences(store, demo_store) == []


def test_a_second_writer_waits_at_most_wait_seconds_then_fails_naming_the_first(
    capsys, tmp_path, sample_wav
):
    from mnemo.config import GraphConfig
    from mnemo.wiring import open_store

    store = open_store(GraphConfig(), tmp_path / "store")
    with store.writing("a test holding the store"):
        code, out, err = run_cli(
            capsys, "ingest", str(sample_wav), "--store", str(tmp_path / "store"), "--wait", "0.5s"
        )
    assert code == 1
    assert (
        "is being written by pid" in err
        and "a test holding the store" in err
        and "try again" in err
    )
    assert store.count()["clips"] == 0  # nothing of it was written
