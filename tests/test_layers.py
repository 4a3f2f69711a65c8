"""The layers' arrows point one way: every import of every module, read with ``ast`` (imports inside
functions count too: a lazy import is still a dependency).

- each package imports only what its row of ``docs/architecture.md``'s rooms table allows;
- no lower package (everything but the composition root ``mnemo``) imports ``mnemo``, but for the
  modules in ``IMPORT_THE_ROOT``;
- ``ray_jobs`` and ``mnemo`` do not import each other (``mnemo`` calls ``ray_jobs``, not back);
- no files import each other, directly or round a loop, in any package (tests aside): what two
  files share lives in a module below both, or is handed in by the caller;
- no module is longer than ``MAX_LINES`` (the design's ~600), but for those in ``LONG_MODULES``
  with the reason: a module that grows past it is split by job.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPOSITION_ROOT = "mnemo"
PACKAGES = sorted(
    p.name for p in ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"
)


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = _modules()
# modules of a lower package that may import ``mnemo`` all the same (a package: every module under
# it), and why; docs/architecture.md names them under its rooms table
IMPORT_THE_ROOT = {
    "bench.faults": "mnemo bench faults kills, fills and attacks mnemo as a person runs it: its "
    "commands (mnemo.cli), its server (mnemo.serve) and its config (mnemo.config)",
}


MAX_LINES = 600
# modules allowed past MAX_LINES (at most two), and why; none today
LONG_MODULES: dict[str, str] = {}


def _imported(module: str, path: Path) -> Iterator[str]:
    """The modules (ours or not) that ``module`` imports anywhere in its file."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one step up per extra dot
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join([*package, *([base] if base else [])])
            for alias in node.names:  # `from pkg import mod` imports the module pkg.mod
                yield f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base


def _graph() -> dict[str, set[str]]:
    return {m: set(_imported(m, p)) for m, p in MODULES.items()}


def _top(module: str) -> str:
    return module.split(".")[0]


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (or a module importing itself),
    by Tarjan's algorithm, among our modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _rooms() -> dict[str, list[str]]:
    """``docs/architecture.md``'s rooms table: each package and the modules or packages it may
    import (its own aside): the names in backticks in its last cell, "all of the above" for the
    rows above it, "everything" for every package."""
    rooms: dict[str, list[str]] = {}
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text.split("## The rooms", 1)[1].split("\n\n", 2)[1]
    for row in table.splitlines()[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        package, allowed = cells[0].strip("`/"), cells[-1]
        if allowed == "everything":
            rooms[package] = list(PACKAGES)
        elif allowed == "all of the above":
            rooms[package] = list(rooms)
        else:
            rooms[package] = re.findall(r"`([a-z_.]+)`", allowed)
    return rooms


def _allowed(name: str, allowed: list[str]) -> bool:
    return any(name == a or name.startswith(a + ".") for a in allowed)


def _may_import_the_root(module: str) -> bool:
    return _top(module) == COMPOSITION_ROOT or _allowed(module, list(IMPORT_THE_ROOT))


def test_each_package_imports_only_what_its_room_allows():
    rooms = _rooms()
    assert set(rooms) == set(PACKAGES), "packages missing from the rooms table, or not packages"
    crossing = sorted(
        f"{m} imports {i}"
        for m, imports in _graph().items()
        for i in imports
        if i in MODULES and _top(i) != _top(m) and not _allowed(i, rooms[_top(m)])
        if not (_top(i) == COMPOSITION_ROOT and _may_import_the_root(m))
    )
    assert not crossing, (
        "imports that docs/architecture.md's rooms table does not allow:\n" + "\n".join(crossing)
    )


def test_the_rooms_table_is_read():
    rooms = _rooms()
    assert rooms["graph"] == [] and rooms["perception"] == ["llm"]
    assert "perception.malloc" in rooms["embeddings"] and set(rooms["mnemo"]) == set(PACKAGES)
    assert not _allowed("perception.observe", rooms["memorize"])
    assert _allowed("memorize.places", rooms["control"])


def test_the_modules_are_found():
    assert {"mnemo.cli", "ray_jobs.ingest", "bench.speed", "graph.store"} <= set(MODULES)


def test_no_lower_package_imports_the_composition_root():
    upward = sorted(
        f"{m} imports {i}"
        for m, imports in _graph().items()
        if not _may_import_the_root(m)
        for i in imports
        if _top(i) == COMPOSITION_ROOT
    )
    assert not upward, "arrows point up into mnemo:\n" + "\n".join(upward)


def test_the_modules_that_may_import_the_root_are_there_and_said_in_the_architecture():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    for module in IMPORT_THE_ROOT:
        assert any(_allowed(m, [module]) for m in MODULES), f"{module} is gone: drop it"
        assert f"`{module.replace('.', '/')}/`" in text, (
            f"docs/architecture.md does not say {module}"
        )
    assert not _may_import_the_root("bench.speed") and _may_import_the_root("bench.faults.store")


def test_ray_jobs_and_mnemo_do_not_import_each_other():
    graph = _graph()
    both = [
        f"{m} imports {i}"
        for m, imports in graph.items()
        for i in imports
        if {_top(m), _top(i)} == {"ray_jobs", COMPOSITION_ROOT}
    ]
    directions = {(_top(line.split()[0]), _top(line.split()[-1])) for line in both}
    assert len(directions) < 2, "ray_jobs and mnemo import each other:\n" + "\n".join(sorted(both))


def test_no_import_circle_between_files():
    """No circle of imports between files, in any package: module-level and function-level imports
    alike (a lazy import or one under ``TYPE_CHECKING`` hides a circle from Python, not from a
    reader). Each circle is listed by its files."""
    circles = [[str(MODULES[m].relative_to(ROOT)) for m in c] for c in _cycles(_graph())]
    assert not circles, "import circles between files:\n" + "\n".join(
        f"  {', '.join(files)}" for files in circles
    )


def test_the_cycle_finder_finds_a_circle_and_a_lazy_import():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from mnemo.cli import main\n")
    assert [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] == ["mnemo.cli"]


def test_no_module_is_longer_than_the_design_allows():
    assert len(LONG_MODULES) <= 2, "at most two long modules, each with its reason"
    long = {
        m: n
        for m, path in MODULES.items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
        and m not in LONG_MODULES
    }
    assert not long, (
        f"modules over {MAX_LINES} lines (split each by job; docs/architecture.md): {long}"
    )
    assert all(m in MODULES for m in LONG_MODULES), "a long module listed that is gone"
