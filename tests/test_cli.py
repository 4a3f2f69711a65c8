"""The ``mnemo`` parser: bad input is argparse's error with exit code 2, durations and times are read
one way everywhere, every command and bench is a real sub-parser with its handler, and ``--help``
imports no bench or model code. Fast: no model is loaded."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest

from conftest import run_cli
from mnemo.cli import build_parser, version
from mnemo.cli_args import parse_duration, parse_time


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings}


def test_an_unknown_command_is_a_usage_error_listing_the_commands(capsys):
    code, _, err = run_cli(capsys, "remember", "this")
    assert code == 2
    assert "invalid choice: 'remember'" in err and "'ingest'" in err and "'bench'" in err


def test_an_unknown_flag_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "ask", "where?", "--no-such-flag")
    assert code == 2 and "unrecognized arguments: --no-such-flag" in err


def test_an_unknown_bench_lists_the_benches(capsys):
    code, _, err = run_cli(capsys, "bench", "fastest")
    assert (
        code == 2 and "invalid choice: 'fastest'" in err and "'locomo'" in err and "'faults'" in err
    )


@pytest.mark.parametrize(
    "argv, flag",
    [
        (("bench", "day", "--first-person"), "--first-person"),  # locomo's
        (("bench", "store", "--blocks", "3"), "--blocks"),  # day's
        (("bench", "perception", "--data", "x.json"), "--data"),  # locomo's, digest's, profile's
    ],
)
def test_a_bench_takes_only_its_own_flags(capsys, argv, flag):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and f"unrecognized arguments: {flag}" in err


@pytest.mark.parametrize(
    "argv",
    [
        ("capture", "pause", "--for", "15"),
        ("forget", "--older-than", "30"),
        ("watch", "folder", "--duration", "90"),
        ("ingest", "x.mp4", "--wait", "5"),
    ],
)
def test_a_duration_without_a_unit_is_a_usage_error_naming_the_units(capsys, argv):
    code, _, err = run_cli(capsys, *argv)
    n = argv[-1]
    assert code == 2 and "has no unit" in err and f"{n}s, {n}m, {n}h or {n}d" in err


@pytest.mark.parametrize(
    "text, seconds",
    [("90s", 90), ("15m", 900), ("2h", 7200), ("3d", 259200), ("0.5s", 0.5), (" 1.5h ", 5400)],
)
def test_durations_carry_their_unit(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "s", "-5s", "5 minutes", "5w", "1e3s"])
def test_what_is_not_a_duration_is_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="s, m, h, d"):
        parse_duration(text)


def test_times_are_iso_8601_with_z_as_utc_and_no_offset_as_local_time():
    assert parse_time("2026-11-20T09:00Z") == datetime(2026, 11, 20, 9, tzinfo=UTC)
    assert parse_time("2026-11-20T10:00:00+01:00") == datetime(2026, 11, 20, 9, tzinfo=UTC)
    local = parse_time("2026-11-20T10:00")
    assert local.tzinfo is not None and local == datetime(2026, 11, 20, 10).astimezone()
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601"):
        parse_time("yesterday")


def test_a_bad_time_is_a_usage_error(capsys):
    code, _, err = run_cli(capsys, "ask", "where?", "--before", "last week")
    assert code == 2 and "argument --before" in err and "ISO 8601" in err


def test_the_parsed_flags_arrive_in_seconds_and_aware_times():
    args = build_parser().parse_args(
        ["forget", "--older-than", "2d", "--from", "2026-01-01T00:00Z", "--to", "2026-01-02T00:00Z"]
    )
    assert args.older_than == 2 * 86400 and args.end - args.start == timedelta(days=1)
    assert build_parser().parse_args(["capture", "pause", "--for", "15m"]).for_ == 900


def test_version(capsys):
    code, out, _ = run_cli(capsys, "--version")
    assert code == 0 and out.strip() == f"mnemo {version()}" and version()


def test_every_command_and_bench_is_a_sub_parser_with_help_and_a_handler():
    parser = build_parser()
    choices = {
        a.dest: a.help
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for a in action._choices_actions
    }
    commands = _subparsers(parser)
    assert {
        "ingest",
        "ask",
        "demo",
        "capture",
        "watch",
        "serve",
        "mcp",
        "people",
        "day",
        "week",
        "forget",
        "status",
        "llm",
        "models",
        "doctor",
        "export",
        "import",
        "backup",
        "bench",
    } <= set(commands)
    assert all(choices[name] for name in commands), "a command without help"
    benches = _subparsers(commands["bench"])
    assert {
        "perception",
        "ocr",
        "store",
        "locomo",
        "digest",
        "profile",
        "speed",
        "day",
        "capture",
        "m3",
        "screenshotvqa",
        "serve",
        "redact",
        "faults",
    } == set(benches)
    assert "--first-person" in _flags(benches["locomo"]) and "--first-person" not in _flags(
        benches["day"]
    )
    assert "--blocks" in _flags(benches["day"]) and "--runs" in _flags(benches["faults"])

    def leaves(p: argparse.ArgumentParser, path: tuple[str, ...]):
        subs = _subparsers(p)
        if p.get_default("func") is not None:
            yield path, p
        for name, sub in subs.items():
            yield from leaves(sub, (*path, name))

    handled = {path for path, _ in leaves(parser, ())}
    assert (
        ("bench", "locomo") in handled and ("people",) in handled and ("models", "fetch") in handled
    )
    for path, p in leaves(parser, ()):
        assert all(a.help for a in p._actions if a.option_strings), (
            f"mnemo {' '.join(path)}: a flag without help"
        )
        assert (
            "--store" not in _flags(p)
            or next(a for a in p._actions if "--store" in a.option_strings).metavar == "DIR"
        )


def test_help_imports_no_bench_and_no_model_code():
    probe = (
        "import contextlib, io, sys\nfrom mnemo.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    codes = [main(['--help']), main(['bench', '--help']), main(['capture', '--help'])]\n"
        "heavy = ('bench', 'numpy', 'lancedb', 'pyarrow', 'torch', 'onnxruntime', 'pydantic', 'graph.store')\n"
        "print(codes, sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert out.strip() == "[0, 0, 0] []"


def test_a_bench_named_on_the_command_line_gets_its_own_flags(capsys):
    code, out, _ = run_cli(capsys, "bench", "locomo", "--help")
    assert code == 0 and "--first-person" in out and "--blocks" not in out


def test_ingest_json_names_a_corrupt_file_and_exits_nonzero(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(bytes(range(256)) * 40)  # not a container ffmpeg can read
    code, out, err = run_cli(
        capsys, "ingest", str(bad), "--store", str(tmp_path / "store"), "--json"
    )
    assert code == 1, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["ok"] is False and result["clips_stored"] == 0 and result["files_ingested"] == []
    assert [f["path"] for f in result["files_failed"]] == [str(bad)]
    assert "not a readable audio/video file" in result["files_failed"][0]["reason"]


@pytest.mark.parametrize("nice", ["25", "-3"])
def test_watch_refuses_a_niceness_out_of_range(capsys, tmp_path, nice):
    code, _, err = run_cli(capsys, "watch", str(tmp_path), "--nice", nice)
    assert code == 2 and "--nice is 1 to 19" in err
