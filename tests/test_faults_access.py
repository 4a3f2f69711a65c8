"""``mnemo bench faults``' access scenarios (bench/faults/access.py and its access_* modules): each survives against the real
servers and the real config loading, and each reports the attack once the guard it checks is broken
inside the child that serves (the scenarios' ``prelude``)."""

from __future__ import annotations

import pytest

from bench.faults import Context, Tally
from bench.faults.access import SCENARIOS
from bench.faults.access_config import hostile_values
from bench.faults.access_kit import MARKERS, carries_data

pytestmark = (
    pytest.mark.slow
)  # real servers in child processes: 20-60 s each on a busy 2-core machine


def _run(name: str, tmp_path, prelude: str = "") -> Tally:
    from mnemo.config import load_config

    tally = Tally(name)
    SCENARIOS[name](
        Context(tmp_path / name, 1, load_config(), lambda _m: None), tally, prelude=prelude
    )
    return tally


@pytest.fixture(autouse=True)
def _workdir(tmp_path, monkeypatch):
    for name in SCENARIOS:
        (tmp_path / name).mkdir()
    monkeypatch.chdir(tmp_path)  # no ./mnemo.toml of the checkout is read by load_config here


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_each_access_scenario_survives(name, tmp_path):
    tally = _run(name, tmp_path)
    assert (tally.runs, tally.survived, tally.lost, tally.orphans, tally.leaks) == (
        1,
        1,
        0,
        0,
        0,
    ), tally.notes


HOST_CHECK_OFF = """
import mnemo.serve.guard as _g
class _All(frozenset):
    def __contains__(self, _x): return True
_init = _g.Guard.__init__
_g.Guard.__init__ = lambda self, app, credentials, hosts, *a, **k: _init(self, app, credentials, _All(hosts), *a, **k)
_g._full = lambda scheme, authority: ("every origin is this one",)
"""


def test_rebinding_origin_reports_a_host_check_and_an_origin_check_that_pass_everything(tmp_path):
    tally = _run("rebinding_origin", tmp_path, HOST_CHECK_OFF)
    assert tally.survived == 0 and tally.leaks > 20, tally.notes
    [notes] = tally.notes
    assert "requests under a forged Host answered or obeyed" in notes and "'evil.example'" in notes
    assert (
        "changes from another origin made or answered" in notes
        and "from 'http://evil.example' was made" in notes
    )


AUTH_OFF = """
import os, mnemo.serve.auth as _a, mnemo.serve.guard as _g
_g.Guard._credential = lambda self, scope, cookie: None
_a._private = lambda path, what: os.path.lexists(path)
_write = _a.write_token_file
def _loose(port, token):
    path = _write(port, token)
    path.chmod(0o644)
    return path
_a.write_token_file = _loose
"""


def test_no_credential_reports_auth_that_accepts_anything_and_loose_token_files(tmp_path):
    tally = _run("no_credential", tmp_path, AUTH_OFF)
    assert tally.survived == 0 and tally.leaks > 30, tally.notes
    [notes] = tally.notes
    assert "requests without a valid credential answered" in notes and "carrying" in notes
    assert "is open to others (mode 644, needs 600)" in notes  # the running server's file
    assert "a token file others could read was not refused" in notes
    assert "a token folder others could read was not refused" in notes


NONCE_CHECK_OFF = """
import mnemo.serve.confirm as _c, mnemo.serve.mcp_server as _m
_c.Confirmations.redeem = lambda self, *args, **kwargs: None
_build = _m.build_server
_m.build_server = lambda service, allow_forget=False: _build(service, True)
"""


def test_mcp_one_call_forget_reports_a_skipped_nonce_check_and_forget_always_on(tmp_path):
    tally = _run("mcp_one_call_forget", tmp_path, NONCE_CHECK_OFF)
    assert tally.survived == 0 and tally.leaks >= 4, tally.notes
    [notes] = tally.notes
    assert "forget is offered without --allow-forget" in notes
    assert "a made-up nonce: deleted" in notes


RULES_OFF = """
import mnemo.config as _m
for _key in _m.PROJECT_RULES:
    _m.PROJECT_RULES[_key] = _m.FREE
"""


def test_hostile_config_reports_each_looser_setting_that_took_effect_and_the_key_sent_away(
    tmp_path,
):
    tally = _run("hostile_config", tmp_path, RULES_OFF)
    [notes] = tally.notes
    # every guarded setting the user left at its default is loosened; those the user set hold
    left = [k for k, (trusted, _) in hostile_values().items() if trusted == _default(k)]
    assert tally.leaks >= len(left) + 2, notes
    assert "call(s) reached the folder's LLM endpoint" in notes and "API key(s) reached it" in notes


def test_hostile_config_fails_a_looser_setting_ignored_without_a_warning(tmp_path):
    tally = _run(
        "hostile_config",
        tmp_path,
        "import logging\nlogging.getLogger('mnemo.config').disabled = True",
    )
    assert tally.leaks == 0 and tally.survived == 0, tally.notes
    assert (
        "ignored without a warning naming them" in tally.notes[0]
        and "[memorize] redact" in tally.notes[0]
    )


def _default(key: str):
    from mnemo.config import MnemoConfig

    section, name = key.split(".")
    return getattr(getattr(MnemoConfig.model_construct(), section), name)


def test_the_looser_values_cover_every_guarded_setting_and_are_looser():
    """Each setting PROJECT_RULES guards gets a value its rule calls looser (a new setting is tried
    without a change here), and the markers find the store's data in an answer."""
    from mnemo.config import FREE, PROJECT_RULES

    guarded = {k for k, rule in PROJECT_RULES.items() if rule is not FREE}
    for variant in (0, 1):
        values = hostile_values(variant)
        assert set(values) == guarded
        for key, (trusted, looser) in values.items():
            value, loosens = PROJECT_RULES[key].stricter(trusted, looser)
            assert loosens and value != looser, (key, trusted, looser)
    assert carries_data('{"name": "Quillon Ashgrove"}') and not carries_data(
        '{"error": "wrong token"}'
    )
    assert "fault-clip-" in MARKERS


PROXY_HEADERS_TRUSTED = """
import uvicorn
_config = uvicorn.Config.__init__
uvicorn.Config.__init__ = lambda self, app, **kw: _config(self, app, **{**kw, "proxy_headers": True})
"""


def test_no_credential_reports_wrong_tokens_that_escape_the_limit_by_claiming_addresses(
    tmp_path,
) -> None:
    """The bug no_credential found: uvicorn took X-Forwarded-For from any loopback client, so each
    wrong token could claim a new address and the limit of 5 per address never held. `mnemo serve`
    now ignores proxy headers (test_each_access_scenario_survives[no_credential] holds it); with them
    trusted again, the check reports every guess past 5."""
    from bench.faults.access_credentials import guess_limit
    from bench.faults.access_kit import build_store, start_serve

    build_store(tmp_path / "store")
    server = start_serve(tmp_path, tmp_path / "store", prelude=PROXY_HEADERS_TRUSTED)
    wrong: list[str] = []
    try:
        assert guess_limit(server, wrong) == 4, wrong
        assert "X-Forwarded-For" in wrong[0]
    finally:
        assert server.stop()
