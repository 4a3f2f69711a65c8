"""``bench.serve``'s load loop against the real app on the demo store: figures, errors, bounds."""

from __future__ import annotations

import socket
import time

import pytest

from bench import serve

pytestmark = pytest.mark.slow


def test_load_phases_on_the_demo_server(demo_server):
    import os

    from bench.tree_meter import TreeMeter

    # the demo server runs in this process (its clients too): its CPU seconds are this process's
    figures = serve.run(
        demo_server.url,
        ["Where is Sheila from?", "Where does Diane live?"],
        ["Chicago", "Yankee"],
        token=demo_server.token,
        requests=8,
        levels=(1, 4),
        server_cpu_s=TreeMeter(os.getpid()).root_cpu_s,
    )
    assert set(figures) == {"ask_1", "ask_4", "search_1", "search_4"}
    for name, f in figures.items():
        clients = int(name.rsplit("_", 1)[1])
        assert f["errors"] == 0 and f["requests"] == clients * max(3, 8 // clients), (name, f)
        assert 0 < f["p50_ms"] <= f["p95_ms"] and f["per_s"] > 0
        # an ask embeds the question and searches: it costs CPU, and no more than its wall time on every core
        assert 0 < f["cpu_ms"] and 0 < f["cores"] <= os.cpu_count() + 0.5, (name, f)
    report = serve.format_report(
        {"stores": {"demo": {"memories": 23, "phases": {**figures, "ask_16": figures["ask_4"]}}}}
    )
    assert "/ask" in report and "errors == 0 (0)" in report and "CPU ms" in report
    assert f"{figures['ask_4']['cpu_ms']:>8.1f}" in report


def test_errors_are_counted_and_the_loop_is_bounded(demo_server):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    phase = serve.load(dead, "search", ["x"], clients=2, per_client=3, timeout_s=2)
    assert phase.errors == 6 and not phase.latencies_ms and "ConnectError" in phase.first_error
    # an empty query: 422
    wrong = serve.load(
        demo_server.url, "search", [""], clients=1, per_client=2, token=demo_server.token
    )
    assert wrong.errors == 2 and wrong.first_error.startswith("HTTP 422")
    t0 = time.monotonic()
    slow = serve.load(
        demo_server.url,
        "ask",
        ["Where is Sheila from?"],
        clients=1,
        per_client=10_000,
        max_s=1.0,
        token=demo_server.token,
    )
    assert time.monotonic() - t0 < 20 and 0 < len(slow.latencies_ms) < 10_000


def test_answers_are_compared_with_the_first_runs(demo_server, tmp_path):
    from mnemo.bench_serve import ANSWERS_FILE, check_answers

    questions = ["Where is Sheila from?", "Where does Diane live?"]
    now = serve.answers(demo_server.url, questions, demo_server.token)
    assert [a["question"] for a in now] == questions and all(
        a["answer"] and a["citations"] for a in now
    )
    assert serve.changed([dict(now[0], answer="something else"), now[1]], now) == [questions[0]]
    assert serve.changed(now, now[:1]) == [questions[1]]  # a question not asked counts as changed

    first = check_answers(demo_server.url, tmp_path, questions, print, demo_server.token)
    assert (
        first["changed"] == []
        and "recorded now" in first["reference"]
        and (tmp_path / ANSWERS_FILE).exists()
    )
    again = check_answers(demo_server.url, tmp_path, questions, print, demo_server.token)
    assert again == {"checked": 2, "changed": [], "reference": again["reference"]}
    assert again["reference"].startswith(f"recorded in {tmp_path / ANSWERS_FILE} on ")
