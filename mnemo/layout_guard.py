"""A check that mnemo's generic top-level packages (``llm``, ``graph``, ``bench``, …) are its own.

mnemo installs several top-level packages with common names. Another distribution with one of them
(PyPI's ``llm`` is the likely one) either shadows ours on ``sys.path`` or overwrites it in the same
site-packages, and mnemo then fails far from the cause. This module names the clash and the remedy.
It imports only the standard library, so ``mnemo`` can run it at start before anything else loads.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

# The top-level packages mnemo installs: pyproject.toml's [tool.setuptools.packages.find] include
# list (tests/test_layout_guard.py keeps the two the same).
TOP_LEVEL_PACKAGES = (
    "graph",
    "llm",
    "embeddings",
    "perception",
    "memorize",
    "control",
    "bench",
    "pipeline",
    "ray_jobs",
    "mnemo",
)
DISTRIBUTION = "mnemo"

_warned = False


def mnemo_tree() -> Path:
    """The folder holding the ``mnemo`` package: the source tree, or site-packages when installed."""
    return Path(__file__).resolve().parent.parent


def _where(name: str) -> Path | None:
    """Where ``name`` resolves on the current ``sys.path`` (without importing it), or None."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in", "frozen"):
        return Path(spec.origin).resolve()
    locations = list(spec.submodule_search_locations or [])
    return Path(locations[0]).resolve() if locations else None


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def quick_providers() -> dict[str, list[str]]:
    """Top-level names to the distributions that declare them, from each ``*.dist-info`` or
    ``*.egg-info`` folder on ``sys.path`` (its ``top_level.txt``, else its own name). A fast stand-in
    for ``importlib.metadata.packages_distributions()``, which reads every RECORD file."""
    out: dict[str, list[str]] = {}
    for entry in dict.fromkeys(sys.path):
        try:
            names = [
                e for e in os.scandir(entry or ".") if e.name.endswith((".dist-info", ".egg-info"))
            ]
        except OSError:
            continue
        for meta in names:
            dist = meta.name.rsplit(".", 1)[0].split("-", 1)[0]
            try:
                declared = Path(meta.path, "top_level.txt").read_text(encoding="utf-8").split()
            except OSError:
                declared = [dist.replace("-", "_")]
            for top in declared:
                out.setdefault(top, []).append(dist)
    return out


def check_top_level_packages(providers: Mapping[str, list[str]] | None = None) -> list[str]:
    """One message for each of mnemo's top-level packages that resolves outside mnemo's tree, or that
    another installed distribution also provides. ``providers``: top-level names to distributions
    (default: ``importlib.metadata.packages_distributions()``, exact but slow; see ``quick_providers``)."""
    if providers is None:
        from importlib.metadata import packages_distributions

        providers = packages_distributions()
    tree = mnemo_tree()
    problems = []
    for name in TOP_LEVEL_PACKAGES:
        where = _where(name)
        others = sorted({d for d in providers.get(name, []) if _normalize(d) != DISTRIBUTION})
        outside = where is None or not where.is_relative_to(tree)
        if not outside and not others:
            continue
        if where is None:
            found = f"mnemo's top-level package {name!r} is not importable"
        elif outside:
            found = f"mnemo's top-level package {name!r} resolves to {where}, outside mnemo's tree {tree}"
        else:
            found = f"mnemo's top-level package {name!r} ({where}) shares its folder with another distribution's"
        if others:
            found += (
                f"; the distribution{'s' if len(others) > 1 else ''} {', '.join(map(repr, others))} also "
                f"install{'' if len(others) > 1 else 's'} a top-level {name!r} in this environment"
            )
        remedy = (
            f", or remove {' '.join(others)} from this one and reinstall mnemo "
            f"(pip uninstall {' '.join(others)} && pip install --force-reinstall mnemo)"
            if others
            else ""
        )
        problems.append(
            f"{found}. mnemo needs its own {name!r}: install mnemo in a virtual environment of its own "
            f"(python -m venv ~/.venvs/mnemo && ~/.venvs/mnemo/bin/pip install mnemo){remedy}."
        )
    return problems


def warn_if_shadowed(stream: TextIO | None = None) -> list[str]:
    """Print each clash (``quick_providers``: fast enough for every start) to stderr, once a process."""
    global _warned
    if _warned:
        return []
    _warned = True
    problems = check_top_level_packages(quick_providers())
    for problem in problems:
        print(f"warning: {problem}", file=stream or sys.stderr)
    return problems
