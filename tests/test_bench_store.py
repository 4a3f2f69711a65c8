"""``mnemo bench store`` end to end on a small store (the 1M figures are in the issue notes)."""

import json

from conftest import run_cli


def test_store_bench_prints_its_figures_and_the_json_contract(capsys, tmp_path):
    code, out, _ = run_cli(capsys, "bench", "store", "--memories", "3000", "--store", str(tmp_path / "b"), "--json")
    assert code == 0
    figures = json.loads(out.strip().splitlines()[-1])
    assert set(figures) >= {"memories", "search_p50_ms", "search_p95_ms", "recall_at_10_vs_exact", "insert_per_s"}
    assert figures["memories"] == 3000 and figures["recall_at_10_vs_exact"] == 1.0  # no index yet: exact either way
    assert "hybrid search p50/p95" in out


def test_store_bench_refuses_a_store_with_data(capsys, tmp_path):
    run_cli(capsys, "bench", "store", "--memories", "100", "--store", str(tmp_path / "b"))
    code, _, err = run_cli(capsys, "bench", "store", "--memories", "100", "--store", str(tmp_path / "b"))
    assert code == 2 and "not empty" in err
