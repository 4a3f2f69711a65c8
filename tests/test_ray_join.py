"""Joining a Ray cluster at an address: a refusal is tried once more, and the last one says why;
an address where nothing answers is said at once, by ``mnemo ingest`` too.

Ray's ``ray.init`` is replaced here by one that refuses as Ray does (``ConnectionError`` from the
reason): a real head that refuses a driver once and then takes it cannot be made on demand (the
suite met one, loaded, in CI), and one that never answers makes Ray wait for minutes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow  # quick, but needs the [ray] extra, which the fast tier's venv lacks


def _refusing(times: int, calls: list[str]):
    def init(address=None, **_):
        calls.append(address)
        if len(calls) <= times:
            try:
                raise RuntimeError("No node info found matching attributes")
            except RuntimeError as why:
                raise ConnectionError(f"Failed to connect to Ray cluster at {address}") from why

    return init


def test_a_head_that_refuses_once_is_joined_on_the_second_try(monkeypatch, head_port):
    import ray

    from ray_jobs import ingest

    calls: list[str] = []
    said: list[str] = []
    monkeypatch.setattr(ray, "init", _refusing(1, calls))
    ingest._join(f"127.0.0.1:{head_port}", said.append)
    assert calls == [f"127.0.0.1:{head_port}"] * 2
    assert len(said) == 1 and "No node info found" in said[0] and "trying again" in said[0]


def test_a_head_that_keeps_refusing_fails_with_ray_s_reason(monkeypatch, head_port):
    import ray

    from ray_jobs import ingest

    calls: list[str] = []
    monkeypatch.setattr(ray, "init", _refusing(ingest.JOIN_TRIES, calls))
    with pytest.raises(ConnectionError) as e:
        ingest._join(f"127.0.0.1:{head_port}", lambda _: None)
    assert len(calls) == ingest.JOIN_TRIES
    text = str(e.value)
    assert f"Failed to connect to Ray cluster at 127.0.0.1:{head_port}" in text
    assert "No node info found" in text and "ray start --head" in text


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_address_where_nothing_answers_fails_at_once_and_one_that_answers_passes(head_port):
    import time

    from ray_jobs import ingest

    port = _closed_port()
    t0 = time.monotonic()
    with pytest.raises(ConnectionError) as e:
        ingest.answers(f"127.0.0.1:{port}")
    assert time.monotonic() - t0 < 2.0
    assert f"nothing answers at 127.0.0.1:{port}" in str(e.value) and "ray start --head" in str(
        e.value
    )
    with pytest.raises(ConnectionError):
        ingest.answers(f"ray://127.0.0.1:{port}")
    ingest.answers(f"127.0.0.1:{head_port}")  # a port that accepts: Ray is left to judge the rest
    ingest.answers("auto")  # Ray's own forms are Ray's to resolve


def test_ingest_at_a_dead_address_says_so_at_once_and_stores_nothing(demo_recording, tmp_path):
    """``mnemo ingest --ray --address`` where no head runs: an error naming the address and what
    to run, in seconds (Ray alone waited two minutes), no traceback, and nothing stored."""
    import subprocess
    import sys
    import time

    port = _closed_port()
    store = tmp_path / "store"
    t0 = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mnemo", "ingest", str(demo_recording), "--store", str(store)]
        + ["--ray", "--address", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - t0
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"error: nothing answers at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr
    assert took < 60, took
    import lancedb

    db = lancedb.connect(store)
    assert {t: db.open_table(t).count_rows() for t in db.table_names()}.get("clips", 0) == 0


@pytest.fixture
def head_port():
    """A port that accepts connections, as a head's does, for the tests whose ``ray.init`` is
    replaced."""
    import socket

    with socket.socket() as head:
        head.bind(("127.0.0.1", 0))
        head.listen()
        yield head.getsockname()[1]
