"""Shared fixtures: real media (fetched and cached outside git), real models, stores in tmp_path."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may wait on a hub

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def _fetched(fetch, what: str):
    """The fixture, or: in CI (``CI=true``) a failure, since a skipped real-media test tests nothing;
    locally a skip that says loudly what is missing."""
    from bench.fixtures import FixtureUnavailable

    try:
        return fetch()
    except FixtureUnavailable as e:
        if in_ci():
            pytest.fail(f"{what} unavailable in CI, so the real-media tests cannot run: {e}", pytrace=False)
        pytest.skip(f"REAL MEDIA MISSING, test not run: {what} unavailable: {e}")


@pytest.fixture(scope="session")
def pyannote_dir() -> Path:
    from bench.fixtures import pyannote_sample

    return _fetched(pyannote_sample, "pyannote sample")


@pytest.fixture(scope="session")
def opencv_dir() -> Path:
    from bench.fixtures import opencv_doc

    return _fetched(opencv_doc, "opencv-doc (Megamind.avi, screenshots)")


@pytest.fixture(scope="session")
def demo_recording(pyannote_dir) -> Path:
    from mnemo.demo_media import build_demo_recording

    return _fetched(build_demo_recording, "demo media")


@pytest.fixture(scope="session")
def sample_wav(pyannote_dir) -> Path:
    return pyannote_dir / "sample.wav"


@pytest.fixture(scope="session")
def perceivers():
    from mnemo.config import PerceptionConfig
    from mnemo.wiring import build_perceivers

    return build_perceivers(PerceptionConfig(faces_backend="dlib"))


@pytest.fixture(scope="session")
def policies():
    from mnemo.config import MemorizeConfig
    from mnemo.wiring import match_policies

    return match_policies(MemorizeConfig(), "dlib")


@pytest.fixture
def hash_store(tmp_path):
    from graph.store import Store
    from embeddings.base import build_text_embedder

    return Store(tmp_path / "store", build_text_embedder("hash"))


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, demo_recording, perceivers, policies):
    """The demo recording ingested once, with the real text embedder."""
    from graph.store import Store
    from mnemo.pipeline import ingest
    from embeddings.base import build_text_embedder

    store = Store(tmp_path_factory.mktemp("demo") / "store", build_text_embedder("minilm"))
    report = ingest([str(demo_recording)], store, perceivers, policies, progress=lambda _m: None)
    assert report.ok and report.clips_new == 2
    return store


def disk_full_on_commit(store, n: int) -> list[str]:
    """Make ``store``'s ``n``-th ``commit_clip`` fail as a full disk does; returns the clip ids it
    was asked to commit, in order (the failing one included). ``store.commit_clip`` is an instance
    attribute afterwards: delete it to restore the real method."""
    import errno

    real_commit, calls = store.commit_clip, []

    def commit_or_fill_disk(clip, *args, **kwargs):
        calls.append(clip.clip_id)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_commit(clip, *args, **kwargs)

    store.commit_clip = commit_or_fill_disk
    return calls


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from mnemo.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(scope="session")
def demo_server(demo_store):
    """``mnemo serve``'s app on the demo store, in uvicorn on a free loopback port (a thread)."""
    import threading
    import time

    import uvicorn

    from control.answer import OfflineAnswerer
    from mnemo.bench_serve import free_port
    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    port = free_port()
    app = create_app(MemoryService(demo_store, OfflineAnswerer(demo_store)))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
