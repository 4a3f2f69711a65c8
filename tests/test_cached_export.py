"""``onnx_models.cached_export``'s cache when two builds of one graph run at once (a watcher and an
ingest started together on a fresh cache): each builds in a folder of its own, and what is left in
place is one whole graph with its whole weights beside it."""

import os
import threading
import time
from pathlib import Path

import pytest

from perception import onnx_models

TENSORS = [bytes([i + 1]) * 1000 for i in range(4)]


@pytest.fixture
def source(tmp_path, monkeypatch):
    """Weights to build from, and a cache of the test's own."""
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / "weights.bin"
    weights.write_bytes(b"weights")
    return weights


def test_two_builds_at_once_do_not_write_into_each_others_weights(source):
    both = threading.Barrier(2, timeout=20)

    def build(path: str) -> None:
        """As ``onnx.save_model`` writes external data: the weights file beside the graph opened by
        its name for each tensor and appended to; here the two builds take turns tensor by tensor."""
        data = Path(path).with_name("weights.data")
        data.unlink(missing_ok=True)
        both.wait()
        for tensor in TENSORS:
            with open(data, "ab") as f:
                f.write(tensor)
            both.wait()
        Path(path).write_bytes(b"graph")

    built, errors = [], []

    def export() -> None:
        try:
            built.append(
                onnx_models.cached_export(
                    "twice", source, build, version="test", beside=("weights.data",)
                )
            )
        except BaseException as e:  # said by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=export) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and len(built) == 2 and built[0] == built[1]
    folder = built[0].parent
    assert (folder / "weights.data").read_bytes() == b"".join(TENSORS)
    assert built[0].read_bytes() == b"graph"
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "source", "weights.data"]
    # and the cache holds: the next call builds nothing
    assert (
        onnx_models.cached_export("twice", source, _never, version="test", beside=("weights.data",))
        == built[0]
    )


def _never(path: str) -> None:
    raise AssertionError("built again")


def test_a_killed_builds_folder_is_cleared_by_the_next_build_and_a_running_ones_is_not(
    source, tmp_path
):
    folder = tmp_path / "cache" / "models" / "onnx" / "left"
    killed, running = folder / ".build-killed", folder / ".build-running"
    for f in (killed, running):
        f.mkdir(parents=True)
        (f / "model.onnx").write_bytes(b"half a graph")
    older = folder / "model.4242.onnx.part"  # an older mnemo's killed build
    older.write_bytes(b"half a graph")
    old = time.time() - onnx_models.STALE_BUILD_S - 60
    os.utime(killed, (old, old))
    os.utime(older, (old, old))
    onnx_models.cached_export("left", source, _graph, version="test")
    assert not killed.exists() and not older.exists() and running.is_dir()


def test_a_build_that_leaves_out_a_file_it_promised_fails_and_leaves_nothing(source, tmp_path):
    with pytest.raises(RuntimeError, match="building short's ONNX graph failed: .*no weights.data"):
        onnx_models.cached_export("short", source, _graph, version="test", beside=("weights.data",))
    assert not list((tmp_path / "cache" / "models" / "onnx" / "short").iterdir())


def _graph(path: str) -> None:
    Path(path).write_bytes(b"graph")
