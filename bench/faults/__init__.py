"""``mnemo bench faults``: the faults and attacks a lifelog meets, each tried for real, and what
each left behind.

A scenario is a function ``(ctx, tally) -> None`` that runs its fault ``ctx.runs`` times (or once,
where one try says all there is to say) and records each try with ``tally.run(...)``:

- **lost**: things that should have been kept and were not: a clip committed before the fault, a
  user's file deleted or changed, a good file skipped because a bad one sat beside it, a row that an
  export then import did not bring back.
- **orphans**: things left behind that nothing owns: half a commit a reader can see, a journal not
  undone, a child process still running, a file of a forgotten clip still on disk.
- **leaks**: things that got out or in where they must not: a secret in the store's bytes, an answer
  to a request without a credential or from a forged host, a looser setting taken from a folder's
  ``mnemo.toml``, data deleted by one MCP call.

A try survived when it lost, orphaned and leaked nothing and ended as the scenario expects (a
clear error, a refusal, a finished rerun). A scenario that itself fails with an exception counts
one try that did not survive, with the error in its notes, and the bench goes on. A scenario marked
``@needs(extra)`` is not run where that optional extra is not installed: the report names the extra
and the command that installs it, and it counts as no try at all (neither survived nor failed).

Scenarios live in the modules named in ``MODULES``, one a family (store, media, access, processes);
each has a ``SCENARIOS`` dict from name to function, and the scenarios' code is in the family's
modules of one job each (``store_kills``, ``store_disk``, ..., with what they share in
``store_kit``, ``media_kit``, ``access_kit``, ``processes_kit``). Unlike the other benches they
import ``mnemo`` (its CLI, server and config), the one exception to ``bench/`` never importing the
composition root (``tests/test_layers.py``): what they attack is mnemo as a person runs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

log = logging.getLogger(__name__)

MODULES = (
    "bench.faults.store",
    "bench.faults.media",
    "bench.faults.access",
    "bench.faults.processes",
)
TOTALS = ("runs", "survived", "lost", "orphans", "leaks")
Scenario = TypeVar("Scenario", bound=Callable[..., None])
# scenario function -> the optional extra it needs (a key of mnemo.doctor.EXTRAS); see needs()
_NEEDS: dict[object, str] = {}


@dataclass
class Context:
    """What a scenario gets: a folder of its own, how many tries, the user's config, a progress line."""

    workdir: Path
    runs: int
    cfg: object
    progress: Callable[[str], None]


@dataclass
class Tally:
    scenario: str
    runs: int = 0
    survived: int = 0
    lost: int = 0
    orphans: int = 0
    leaks: int = 0
    seconds: float = 0.0
    # one line per thing that went wrong, for the report
    notes: list[str] = field(default_factory=list)
    # set when the scenario was not run: {"extra", "reason", "install"} (see missing_extra)
    not_run: dict[str, str] = field(default_factory=dict)

    def run(
        self, *, lost: int = 0, orphans: int = 0, leaks: int = 0, ok: bool = True, note: str = ""
    ) -> bool:
        """Record one try; ``ok`` is False when it did not end as expected even with nothing lost.
        Returns whether the try survived."""
        self.runs += 1
        self.lost += lost
        self.orphans += orphans
        self.leaks += leaks
        survived = ok and not (lost or orphans or leaks)
        self.survived += survived
        if note and not survived:
            self.notes.append(note)
        return survived

    @property
    def figures(self) -> dict:
        return {
            "scenario": self.scenario,
            **{k: getattr(self, k) for k in TOTALS},
            "seconds": round(self.seconds, 1),
        }


def mnemo_argv(args: list[str], prelude: str = "") -> list[str]:
    """The real CLI in a child: ``mnemo args`` in a new Python; with ``prelude``, that source runs
    first in the child (the seam a test breaks a guard through; the bench passes none)."""
    if not prelude:
        return [sys.executable, "-m", "mnemo", *args]
    return [
        sys.executable,
        "-c",
        f"{prelude}\nimport sys\nfrom mnemo.cli import main\nsys.exit(main(sys.argv[1:]))",
        *args,
    ]


def by_name(*scenarios: Callable[..., None]) -> dict[str, Callable[..., None]]:
    """A family's ``SCENARIOS``: each scenario function under its own name, in the order given."""
    return {fn.__name__: fn for fn in scenarios}


def needs(extra: str) -> Callable[[Scenario], Scenario]:
    """Mark a scenario as needing the optional extra ``extra`` (a key of ``mnemo.doctor.EXTRAS``):
    where it is not installed the bench does not run the scenario and says so."""

    def mark(fn: Scenario) -> Scenario:
        _NEEDS[fn] = extra
        return fn

    return mark


def _found(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it (a dotted name: its parents
    are imported, as finding it needs)."""
    parent = module.rpartition(".")[0]
    return (not parent or _found(parent)) and importlib.util.find_spec(module) is not None


def missing_extra(extra: str) -> dict[str, str]:
    """Empty when the optional extra ``extra`` is installed; otherwise the extra, why, and the
    command that installs it (``mnemo doctor``'s)."""
    from mnemo.doctor import EXTRAS, pip_install

    absent = [m for m in EXTRAS[extra][0] if not _found(m)]
    if not absent:
        return {}
    why = f"the extra mnemo[{extra}] is not installed ({', '.join(absent)} not found)"
    return {"extra": extra, "reason": why, "install": pip_install(extra)}


def scenarios() -> dict[str, Callable[[Context, Tally], None]]:
    """Every scenario by name, in the order they run."""
    found: dict[str, Callable[[Context, Tally], None]] = {}
    for module in MODULES:
        for name, fn in importlib.import_module(module).SCENARIOS.items():
            if name in found:
                raise RuntimeError(f"fault scenario {name!r} is defined twice (second in {module})")
            found[name] = fn
    return found


def pick(names: str | None) -> dict[str, Callable[[Context, Tally], None]]:
    """The scenarios named in a comma-separated list (all when None); an unknown name is an error
    that lists the known ones."""
    known = scenarios()
    if not names:
        return known
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise ValueError(
            f"unknown fault scenario(s) {', '.join(unknown)}; choose from: {', '.join(known)}"
        )
    return {n: known[n] for n in wanted}


def run(
    cfg,
    workdir: Path,
    runs: int,
    names: str | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> list[Tally]:
    if runs < 1:
        raise ValueError(f"--runs must be at least 1 (got {runs})")
    tallies = []
    for name, fn in pick(names).items():
        tally = Tally(name)
        if extra := _NEEDS.get(fn):
            tally.not_run = missing_extra(extra)
        if tally.not_run:
            progress(f"faults: {name}: not run: {_not_run_line(tally)}")
            tallies.append(tally)
            continue
        folder = workdir / name
        folder.mkdir(parents=True, exist_ok=False)
        progress(f"faults: {name} ...")
        t0 = time.perf_counter()
        try:
            fn(Context(folder, runs, cfg, progress), tally)
        except Exception as e:  # a scenario that breaks is a finding, not the end of the bench
            log.debug("fault scenario %s failed", name, exc_info=True)
            tally.run(
                ok=False,
                note=f"the scenario itself failed: {type(e).__name__}: {e} "
                f"({traceback.extract_tb(e.__traceback__)[-1].filename.rsplit('/', 1)[-1]})",
            )
        tally.seconds = time.perf_counter() - t0
        if tally.runs == 0:
            tally.run(ok=False, note="the scenario recorded no try")
        progress(
            f"faults: {name}: {tally.survived}/{tally.runs} survived, lost {tally.lost}, "
            f"orphans {tally.orphans}, leaks {tally.leaks} ({tally.seconds:.1f} s)"
        )
        tallies.append(tally)
    return tallies


def _not_run_line(t: Tally) -> str:
    return f"{t.not_run['reason']}; install it with: {t.not_run['install']}"


def summary(tallies: list[Tally]) -> dict:
    """The totals over the scenarios that ran; those not run (an extra missing) apart, in
    ``not_run``."""
    ran = [t for t in tallies if not t.not_run]
    return {
        "scenarios": len(ran),
        **{k: sum(getattr(t, k) for t in ran) for k in TOTALS},
        "per_scenario": [t.figures for t in ran],
        "not_run": [{"scenario": t.scenario, **t.not_run} for t in tallies if t.not_run],
    }


def format_report(tallies: list[Tally]) -> str:
    width = max([len(t.scenario) for t in tallies] + [8])
    lines = [f"{'scenario':<{width}}  runs  survived  lost  orphans  leaks  seconds"]
    for t in (t for t in tallies if not t.not_run):
        lines.append(
            f"{t.scenario:<{width}}  {t.runs:>4}  {t.survived:>8}  {t.lost:>4}  {t.orphans:>7}  {t.leaks:>5}"
            f"  {t.seconds:>7.1f}"
        )
    s = summary(tallies)
    lines.append(
        f"{'all':<{width}}  {s['runs']:>4}  {s['survived']:>8}  {s['lost']:>4}  {s['orphans']:>7}  "
        f"{s['leaks']:>5}"
    )
    if not_run := [t for t in tallies if t.not_run]:
        lines.append("\nnot run (an optional extra is missing; not counted as a failure):")
        lines.extend(f"  {t.scenario}: {_not_run_line(t)}" for t in not_run)
    notes = [(t.scenario, n) for t in tallies for n in t.notes]
    if notes:
        lines.append("\nwhat went wrong:")
        lines.extend(f"  {name}: {note}" for name, note in notes)
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench faults``'s own options."""
    parser.add_argument(
        "--runs",
        type=int,
        default=3,
        metavar="N",
        help="tries of each scenario that can differ between tries (default 3)",
    )
    parser.add_argument(
        "--scenarios",
        metavar="NAME,...",
        help="only these scenarios, comma-separated (default: all)",
    )
