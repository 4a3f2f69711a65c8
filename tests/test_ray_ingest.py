"""mnemo ingest --ray: perception on Ray actors gives the sequential path's store, bad input included."""

from __future__ import annotations

import os
import sys
from functools import partialmethod

import pytest

# a local Ray, and perception on its actors; alone (serial): beside another test's Ray on 2 cores, a
# CI rehearsal's local Ray timed out starting ("the GCS has become overloaded") and the pytest
# worker that drove it died
pytestmark = [pytest.mark.slow, pytest.mark.serial]


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module: 2 CPUs, a small object store, no dashboard."""
    import ray  # the [ray] extra, installed by `make test`: a missing Ray fails the tests rather than skipping

    from ray_jobs.ingest import loopback_only

    loopback_only()
    ray.init(
        num_cpus=2,
        object_store_memory=200 * 1024 * 1024,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1"}},
    )
    assert {n["NodeManagerAddress"] for n in ray.nodes()} == {
        "127.0.0.1"
    }  # no test traffic beyond loopback
    yield
    ray.shutdown()


def _ray_store(tmp_path):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    return Store(tmp_path / "ray-store", build_text_embedder("minilm"))


def _ingest_ray(paths: list[str], store, policies, **options):
    """``ingest_ray`` of ``paths`` on two workers, dlib finding the faces, as each test runs it."""
    from mnemo.config import PerceptionConfig
    from mnemo.wiring import perceivers_factory
    from ray_jobs.ingest import ingest_ray

    perceivers = perceivers_factory(PerceptionConfig(faces_backend="dlib"))
    return ingest_ray(paths, store, perceivers, policies, workers=2, **options)


def _dying_here(actor: type[DyingPerceive | PoisonPerceive], marker, die_on: int) -> type:
    """``actor`` (``DyingPerceive``, ``PoisonPerceive``) told its marker file and its clip, as Ray
    builds it: sent to the workers by value (they cannot import this test module)."""
    from ray import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    init = partialmethod(actor.__init__, str(marker), die_on)
    return type(f"{actor.__name__}Here", (actor,), {"__init__": init})


def test_ray_ingest_equals_the_sequential_store_and_names_broken_files(
    local_ray, tmp_path, demo_recording, demo_store, policies
) -> None:
    from graph.compare import differences, table_rows

    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(4000))
    store = _ray_store(tmp_path)
    lines: list[str] = []
    report = _ingest_ray([str(demo_recording), str(broken)], store, policies, progress=lines.append)
    assert report.clips_new == 2 and [p for p, _ in report.files_failed] == [str(broken)]
    assert report.files_ingested == [str(demo_recording)]
    assert any("2 Ray worker(s)" in line for line in lines)
    # the same rows, and the same embeddings up to float rounding (workers run other thread counts)
    assert differences(store, demo_store) == []
    ray_rows = table_rows(store)
    assert len(ray_rows["memories"]) > 5

    again = _ingest_ray([str(demo_recording)], store, policies, progress=lines.append)
    assert again.clips_new == 0 and again.clips_skipped == 2 and table_rows(store) == ray_rows


class DyingPerceive:
    """``Perceive`` whose process exits in the middle of the clip numbered ``die_on``, the first
    time any worker reaches it (a marker file remembers across processes)."""

    def __init__(self, marker: str, die_on: int, *args) -> None:
        from ray_jobs.ingest import Perceive

        self.inner = Perceive(*args)
        self.marker, self.die_on = marker, die_on

    def __call__(self, batch: dict) -> dict:
        if self.die_on in [int(s) for s in batch["seq"]] and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)  # no cleanup, as a kill or an out-of-memory end
        return self.inner(batch)


def test_a_perception_worker_killed_mid_clip_is_restarted_and_the_clip_retried(
    local_ray, tmp_path, demo_recording, demo_store, policies
):
    from graph.compare import differences

    marker = tmp_path / "died"
    dying = _dying_here(DyingPerceive, marker, 1)
    store = _ray_store(tmp_path)
    report = _ingest_ray(
        [str(demo_recording)], store, policies, progress=lambda _m: None, actor=dying
    )
    assert marker.exists()  # a worker did die in the second clip
    assert report.clips_new == 2 and not report.clips_failed
    assert differences(store, demo_store) == []


class PoisonPerceive:
    """``Perceive`` whose process exits every time its perception reaches the clip numbered
    ``die_on``, as a clip that crashes a native decoder, or needs more memory than a worker has,
    does. Each death is a line in ``marker``."""

    def __init__(self, marker: str, die_on: int, *args) -> None:
        from ray_jobs import ingest

        real = ingest.observe_job

        def observe_job(job, perceivers):
            if job.seq == die_on:
                with open(marker, "a") as f:
                    f.write("died\n")
                os._exit(1)
            return real(job, perceivers)

        ingest.observe_job = observe_job  # in this worker process only
        self.inner = ingest.Perceive(*args)

    def __call__(self, batch: dict) -> dict:
        return self.inner(batch)


def test_a_clip_that_keeps_killing_its_worker_fails_alone_and_the_ingest_finishes(
    local_ray, tmp_path, demo_recording, policies
) -> None:
    from ray_jobs.ingest import MAX_DEATHS

    deaths = tmp_path / "deaths"
    poison = _dying_here(PoisonPerceive, deaths, 0)
    store = _ray_store(tmp_path)
    lines: list[str] = []
    report = _ingest_ray(
        [str(demo_recording)], store, policies, progress=lines.append, actor=poison
    )
    assert (
        deaths.read_text().count("died") == MAX_DEATHS
    )  # tried until it had killed MAX_DEATHS workers
    assert report.clips_new == 1 and len(report.clips_failed) == 1, report
    path, reason = report.clips_failed[0]
    assert path == str(demo_recording) and f"died {MAX_DEATHS} times" in reason
    assert any("skipped" in line and "died" in line for line in lines)
    assert store.count()["clips"] == 1  # the other clip is stored
    again = _ingest_ray([str(demo_recording)], store, policies, progress=lines.append)
    assert (
        again.clips_new == 1 and store.count()["clips"] == 2
    )  # not poisoned any more: a rerun ingests it
