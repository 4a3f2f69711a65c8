"""``mnemo bench faults``'s frame: every scenario the issue names is there, a scenario that breaks
is counted as a try that did not survive (and the bench goes on), and the command's code and last
line say how it went. Each scenario's own tries are tested in tests/test_faults_*.py."""

from __future__ import annotations

import json
import sys

import pytest

from bench import faults
from mnemo.cli import main
from mnemo.doctor import pip_install

NAMED = {  # issue 42 item 8 and the hardening issue before it
    "kill_commit",
    "kill_forget",
    "full_disk",
    "corrupt_media",
    "malformed_llm",
    "killed_watcher",
    "killed_ray_worker",
    "rebinding_origin",
    "no_credential",
    "mcp_one_call_forget",
    "hostile_config",
    "planted_secrets",
    "capture_foreign_folder",
    "forget_users_folder",
    "export_import",
}


def test_every_named_scenario_is_there():
    assert NAMED <= set(faults.scenarios())


def test_an_unknown_scenario_is_an_error_naming_the_known_ones():
    with pytest.raises(
        ValueError, match="unknown fault scenario.*nope.*choose from: .*kill_commit"
    ):
        faults.pick("kill_commit,nope")


def _fake(monkeypatch, **fns):
    monkeypatch.setattr(faults, "scenarios", lambda: fns)


def test_a_broken_scenario_is_a_try_that_did_not_survive_and_the_rest_still_run(
    tmp_path, monkeypatch
):
    def breaks(ctx, tally):
        raise KeyError("the store had no clips table")

    def fine(ctx, tally):
        for _ in range(ctx.runs):
            tally.run()

    def silent(ctx, tally):
        pass

    _fake(monkeypatch, breaks=breaks, fine=fine, silent=silent)
    tallies = faults.run(None, tmp_path, 2)
    assert [(t.scenario, t.runs, t.survived) for t in tallies] == [
        ("breaks", 1, 0),
        ("fine", 2, 2),
        ("silent", 1, 0),
    ]
    report = faults.format_report(tallies)
    assert (
        "breaks: the scenario itself failed: KeyError" in report
        and "silent: the scenario recorded no try" in report
    )


def test_the_command_exits_1_when_a_try_did_not_survive_and_its_last_line_has_the_totals(
    tmp_path, monkeypatch, capsys
):
    def leaky(ctx, tally):
        tally.run(leaks=2, note="two answers without a token")
        tally.run(lost=1, orphans=1, note="a clip and a journal")
        tally.run()

    _fake(monkeypatch, leaky=leaky)
    assert main(["bench", "faults", "--json", "--runs", "1"]) == 1
    out = capsys.readouterr().out
    last = json.loads(out.strip().splitlines()[-1])
    assert {k: last[k] for k in ("scenarios", "runs", "survived", "lost", "orphans", "leaks")} == {
        "scenarios": 1,
        "runs": 3,
        "survived": 1,
        "lost": 1,
        "orphans": 1,
        "leaks": 2,
    }
    assert "two answers without a token" in out and "a clip and a journal" in out


def test_a_run_where_every_try_survived_exits_0(monkeypatch, capsys):
    _fake(monkeypatch, fine=lambda ctx, tally: [tally.run() for _ in range(ctx.runs)])
    assert main(["bench", "faults", "--json", "--runs", "2"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["survived"] == 2


def test_a_scenario_whose_extra_is_missing_is_not_run_names_its_install_and_does_not_fail(
    monkeypatch, capsys
):
    # Ray hidden as Python itself hides a module: a None in sys.modules makes `import ray` fail and
    # importlib.util.find_spec("ray") answer None (the light install of `make demo` has no Ray)
    monkeypatch.setitem(sys.modules, "ray", None)
    real = faults.scenarios()["killed_ray_worker"]
    _fake(monkeypatch, fine=lambda ctx, tally: tally.run(), killed_ray_worker=real)
    assert main(["bench", "faults", "--json", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    last = json.loads(out.strip().splitlines()[-1])
    install = pip_install("ray")
    assert {k: last[k] for k in ("scenarios", "runs", "survived")} == {
        "scenarios": 1,
        "runs": 1,
        "survived": 1,
    }
    assert [s["scenario"] for s in last["per_scenario"]] == ["fine"]
    assert last["not_run"] == [
        {
            "scenario": "killed_ray_worker",
            "extra": "ray",
            "reason": "the extra mnemo[ray] is not installed (ray not found)",
            "install": install,
        }
    ]
    assert (
        f"killed_ray_worker: the extra mnemo[ray] is not installed (ray not found); "
        f"install it with: {install}" in out
    )
