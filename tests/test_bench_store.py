"""``mnemo bench store`` end to end on a small store (the 1M figures are in the issue notes)."""

import json

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow  # thousands of memories embedded and indexed


def test_store_bench_measures_the_vector_index_and_a_whole_ask(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv(
        "MNEMO_GRAPH__TEXT_EMBEDDER", "hash"
    )  # its dimension, and a quick query embedding
    code, out, _ = run_cli(
        capsys, "bench", "store", "--memories", "4000", "--store", str(tmp_path / "b"), "--json"
    )
    assert code == 0
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["memories"] == 4000 and figures["dim"] == 384
    # the IVF-PQ index is built even at this size, so its recall is measured, not an exact scan's 1.0
    # twice over; searches probe 20 of its 63 partitions and re-rank on full vectors
    assert 0.9 <= figures["ann_recall_at_10"] <= 1.0
    assert 0.9 <= figures["hybrid_agreement_at_10"] <= 1.0
    assert 0 < figures["search_p50_ms"] <= figures["search_p95_ms"]
    assert 0 < figures["ask_p50_ms"] <= figures["ask_p95_ms"]
    assert "vector index recall@10" in out and "ask retrieval p50/p95" in out


def test_store_bench_refuses_a_store_with_data(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    run_cli(capsys, "bench", "store", "--memories", "100", "--store", str(tmp_path / "b"))
    code, _, err = run_cli(
        capsys, "bench", "store", "--memories", "100", "--store", str(tmp_path / "b")
    )
    assert code == 2 and "not empty" in err
