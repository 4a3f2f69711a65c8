"""Joining a Ray cluster at an address: a refusal is tried once more, and the last one says why.

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


def test_a_head_that_refuses_once_is_joined_on_the_second_try(monkeypatch):
    import ray

    from ray_jobs import ingest

    calls: list[str] = []
    said: list[str] = []
    monkeypatch.setattr(ray, "init", _refusing(1, calls))
    ingest._join("127.0.0.1:6390", said.append)
    assert calls == ["127.0.0.1:6390"] * 2
    assert len(said) == 1 and "No node info found" in said[0] and "trying again" in said[0]


def test_a_head_that_keeps_refusing_fails_with_ray_s_reason(monkeypatch):
    import ray

    from ray_jobs import ingest

    calls: list[str] = []
    monkeypatch.setattr(ray, "init", _refusing(ingest.JOIN_TRIES, calls))
    with pytest.raises(ConnectionError) as e:
        ingest._join("127.0.0.1:6390", lambda _: None)
    assert len(calls) == ingest.JOIN_TRIES
    text = str(e.value)
    assert "Failed to connect to Ray cluster at 127.0.0.1:6390" in text
    assert "No node info found" in text and "ray start --head" in text
