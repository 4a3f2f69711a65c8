"""mnemo's generic top-level packages resolve inside its own tree, and a clash is named clearly."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from conftest import run_python
from mnemo import layout_guard

ROOT = Path(__file__).resolve().parent.parent


def test_the_list_of_top_level_packages_is_pyprojects():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(p.rstrip("*").rstrip(".") for p in include) == sorted(
        layout_guard.TOP_LEVEL_PACKAGES
    ), (
        "pyproject.toml's setuptools include list and mnemo.layout_guard.TOP_LEVEL_PACKAGES differ: make them agree"
    )


def test_every_top_level_package_resolves_inside_mnemos_tree():
    assert layout_guard.mnemo_tree() == ROOT
    for name in layout_guard.TOP_LEVEL_PACKAGES:
        assert (ROOT / name / "__init__.py").is_file(), name
    assert layout_guard.check_top_level_packages() == []
    assert layout_guard.check_top_level_packages(layout_guard.quick_providers()) == []


def test_another_distribution_with_the_same_name_is_named():
    problems = layout_guard.check_top_level_packages({"llm": ["mnemo", "llm"], "graph": ["mnemo"]})
    assert len(problems) == 1
    assert "'llm'" in problems[0] and "distribution 'llm'" in problems[0]
    assert "virtual environment of its own" in problems[0] and "pip uninstall llm" in problems[0]


def _shadowing_llm(tmp_path):
    """A folder holding another distribution's ``llm``, as PyPI's llm CLI would install it."""
    shadow = tmp_path / "shadow"
    (shadow / "llm").mkdir(parents=True)
    (shadow / "llm" / "__init__.py").write_text(
        "raise SystemExit('the shadowing llm was imported')\n"
    )
    meta = shadow / "llm-0.19.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: llm\nVersion: 0.19\n")
    (meta / "top_level.txt").write_text("llm\n")
    return shadow


def test_a_shadowing_package_first_on_sys_path_is_reported(tmp_path):
    shadow = _shadowing_llm(tmp_path)
    script = (
        f"import sys, json; sys.path.insert(0, {str(shadow)!r}); from mnemo import layout_guard as g; "
        "quick = g.warn_if_shadowed(); again = g.warn_if_shadowed(); "
        "print(json.dumps([g.check_top_level_packages(), quick, again]))"
    )
    done = run_python(script, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr
    exact, quick, again = json.loads(done.stdout.strip().splitlines()[-1])
    assert again == []  # once a process
    for problems in (exact, quick):
        assert len(problems) == 1, problems
        message = problems[0]
        assert "'llm'" in message and str(shadow / "llm" / "__init__.py") in message
        assert "outside mnemo's tree" in message and str(ROOT) in message
        assert "distribution 'llm'" in message and "virtual environment of its own" in message
    assert done.stderr.count("warning: mnemo's top-level package 'llm'") == 1


def test_mnemo_says_so_at_start(tmp_path):
    shadow = _shadowing_llm(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(shadow)}
    done = subprocess.run(
        [sys.executable, "-m", "mnemo", "--version"],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("mnemo "), done.stderr
    assert done.stderr.count("warning: mnemo's top-level package 'llm'") == 1, done.stderr


def test_warn_prints_to_the_stream_given(monkeypatch):
    monkeypatch.setattr(layout_guard, "_warned", False)
    monkeypatch.setattr(layout_guard, "quick_providers", lambda: {"bench": ["bench"]})
    out = io.StringIO()
    assert len(layout_guard.warn_if_shadowed(out)) == 1
    assert out.getvalue().startswith("warning: mnemo's top-level package 'bench'")
