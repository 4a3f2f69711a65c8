"""mnemo ingest --ray: perception on Ray actors gives the sequential path's store, bad input included."""

from __future__ import annotations

import os

import numpy as np
import pytest

import ray  # the [ray] extra, installed by `make test`: a missing Ray fails here rather than skipping


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray for the module: 2 CPUs, a small object store, no dashboard."""
    ray.init(num_cpus=2, object_store_memory=200 * 1024 * 1024, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"HF_HUB_OFFLINE": "1"}})
    yield
    ray.shutdown()


def table_rows(store) -> dict[str, list[tuple]]:
    """Each table's rows as sorted tuples, without what differs between runs (write times) and
    without the float vectors, which ``samples`` compares apart."""
    skip = {"vector", "samples", "ingested_ts", "created_ts"}
    out = {}
    for name in ("clips", "memories", "entities", "edges"):
        table = getattr(store, name).to_arrow()
        columns = [c for c in table.column_names if c not in skip]
        out[name] = sorted(tuple(str(row[c]) for c in columns) for row in table.select(columns).to_pylist())
    return out


def samples(store) -> dict[str, np.ndarray]:
    """Each face or voice entity's stored embedding samples."""
    return {r["entity_id"]: np.array(r["samples"], dtype=np.float32)
            for r in store.entities.to_arrow().select(["entity_id", "samples"]).to_pylist() if r["samples"]}


def test_ray_ingest_equals_the_sequential_store_and_names_broken_files(local_ray, tmp_path, demo_recording,
                                                                       demo_store, policies):
    from graph.store import Store
    from embeddings.base import build_text_embedder
    from mnemo.config import PerceptionConfig
    from ray_jobs.ingest import ingest_ray

    broken = tmp_path / "broken.mp4"
    broken.write_bytes(b"\x00\x00\x00\x18ftypmp42" + os.urandom(4000))
    store = Store(tmp_path / "ray-store", build_text_embedder("minilm"))
    lines: list[str] = []
    report = ingest_ray([str(demo_recording), str(broken)], store, PerceptionConfig(faces_backend="dlib"), policies,
                        workers=2, progress=lines.append)
    assert report.clips_new == 2 and [p for p, _ in report.files_failed] == [str(broken)]
    assert report.files_ingested == [str(demo_recording)]
    assert any("2 Ray worker(s)" in line for line in lines)
    ray_rows, seq_rows = table_rows(store), table_rows(demo_store)
    for name in ray_rows:
        assert ray_rows[name] == seq_rows[name], name
    assert len(seq_rows["memories"]) > 5
    # the same embeddings up to float rounding: the workers run their models with other thread counts
    ray_samples, seq_samples = samples(store), samples(demo_store)
    assert ray_samples.keys() == seq_samples.keys()
    for entity, emb in ray_samples.items():
        assert emb.shape == seq_samples[entity].shape and np.allclose(emb, seq_samples[entity], atol=1e-4), entity

    again = ingest_ray([str(demo_recording)], store, PerceptionConfig(faces_backend="dlib"), policies, workers=2,
                       progress=lines.append)
    assert again.clips_new == 0 and again.clips_skipped == 2 and table_rows(store) == ray_rows
