"""``mnemo doctor``'s checks of the install: the Python version, mnemo itself, the settings, the core
dependencies and the optional extras (found without importing them)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from mnemo.doctor_check import Check, pip_install

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from mnemo.config import MnemoConfig

# as pyproject.toml's requires-python (tests/test_doctor.py holds them together)
SUPPORTED_PYTHON = ((3, 11), (3, 13))

# extra -> (top-level or dotted modules it installs, what it gives); as pyproject.toml's extras
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "torch": (
        (
            "torch",
            "torchvision",
            "open_clip",
            "sentence_transformers",
            "efficientnet_lite_pytorch",
            "resemblyzer",
        ),
        'models in torch: a GPU, bfloat16 text on CPUs that have it, model_runtime/text_runtime "torch", '
        'image_backend "open-clip"',
    ),
    "insightface": (
        ("insightface",),
        'faces_backend "insightface" (its model pack is yours to place)',
    ),
    "bench": (("pyannote.metrics",), "the diarization error rate in `mnemo bench perception`"),
    "ray": (("ray",), "`mnemo ingest --ray`: perception on a Ray cluster"),
    "llm-local": (("xllamacpp",), "`mnemo llm serve`: a local LLM on llama.cpp's server"),
    "s3": (("boto3",), "a store on s3:// (its locks, commit journal and forget notes)"),
    "heic": (("pillow_heif",), "HEIC/HEIF photos (a phone's pictures)"),
}


def python_check(version: tuple[int, ...], executable: str) -> Check:
    (lo, hi), v = SUPPORTED_PYTHON, ".".join(map(str, version[:3]))
    span = f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}"
    if lo <= tuple(version[:2]) <= hi:
        venv = (
            "a virtual environment" if sys.prefix != sys.base_prefix else "no virtual environment"
        )
        return Check("python", "ok", f"Python {v} at {executable} ({venv}; supported: {span})")
    newest = f"{hi[0]}.{hi[1]}"
    return Check(
        "python",
        "fail",
        f"Python {v} at {executable}: mnemo runs on Python {span} only",
        f"install Python {newest} (Debian: `apt-get install python3`, or `pyenv install {newest}`) and make "
        f"the environment with it: `python{newest} -m venv .venv && .venv/bin/pip install -e .` (in the "
        f"repository: `rm -rf .venv && make PYTHON=python{newest} install`)",
    )


def mnemo_check() -> Check:
    import importlib.metadata as md

    from mnemo import __version__

    where = Path(__file__).resolve().parent
    try:
        installed = md.version("mnemo")
    except md.PackageNotFoundError:
        return Check(
            "mnemo",
            "warn",
            f"mnemo {__version__} from {where}, not installed in this environment "
            "(no `mnemo` command, no package metadata)",
            pip_install(),
        )
    if installed != __version__:
        return Check(
            "mnemo",
            "warn",
            f"mnemo {__version__} runs from {where}, but {installed} is installed: "
            "the installed metadata (dependencies, `mnemo` command) is stale",
            pip_install(),
        )
    return Check("mnemo", "ok", f"mnemo {__version__} from {where}")


def config_check(load: Callable[[], MnemoConfig]) -> tuple[Check, MnemoConfig | None]:
    from mnemo.config import user_config_file

    files = [
        p for p in (os.environ.get("MNEMO_CONFIG"), user_config_file(), Path("mnemo.toml")) if p
    ]
    read = [str(p) for p in files if Path(p).is_file()]
    env = sorted(k for k in os.environ if k.startswith("MNEMO_") and "__" in k)
    try:
        cfg = load()
    except (OSError, ValueError) as e:  # pydantic's ValidationError is a ValueError
        return Check(
            "config",
            "fail",
            f"the settings do not load: {e}".replace("\n", " "),
            "correct the setting named above in "
            + (", ".join(read) or "the MNEMO_ variables")
            + " (docs/configuration.md)",
        ), None
    said = ", ".join(read) if read else "no mnemo.toml"
    return Check(
        "config", "ok", f"{said}" + (f"; from the environment: {', '.join(env)}" if env else "")
    ), cfg


def _requirements() -> list[str] | None:
    import importlib.metadata as md

    try:
        return md.requires("mnemo") or []
    except md.PackageNotFoundError:
        return None


def packages_check(reqs: list[str] | None = None) -> Check:
    """The core dependencies (``reqs``: as mnemo's metadata names them), each installed at a version
    it accepts; an extra's are left to the extras' lines."""
    import importlib.metadata as md

    reqs = _requirements() if reqs is None else reqs
    if reqs is None:
        return Check(
            "packages",
            "warn",
            "mnemo's package metadata is missing, so its dependencies cannot be checked",
            pip_install(),
        )
    try:
        from packaging.requirements import InvalidRequirement, Requirement

        versions_known = True
    except ImportError:  # not a dependency of mnemo's own (onnxruntime's): presence only, by name
        versions_known = False
    missing: list[str] = []
    wrong: list[str] = []
    n = 0
    for line in reqs:
        spec: SpecifierSet | None
        if not versions_known:
            if "extra ==" in line or not (m := re.match(r"[A-Za-z0-9._-]+", line)):
                continue
            name, spec = m.group(0), None
        else:
            try:
                req = Requirement(line)
            except InvalidRequirement as e:
                raise ValueError(
                    f"mnemo's metadata holds the requirement {line!r}, which pip would not read "
                    f"either; reinstall mnemo: {pip_install()}"
                ) from e
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's, or not for this platform
            name, spec = req.name, req.specifier
        n += 1
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            missing.append(line.split(";")[0].strip())
            continue
        if spec and not spec.contains(have, prereleases=True):
            wrong.append(f"{name} {have} (needs {spec})")
    if missing or wrong:
        said = "; ".join(
            x
            for x in (
                ("missing: " + ", ".join(missing)) if missing else "",
                ("wrong version: " + ", ".join(wrong)) if wrong else "",
            )
            if x
        )
        return Check(
            "packages",
            "fail",
            f"{len(missing) + len(wrong)} of {n} dependencies: {said}",
            pip_install(),
        )
    versions = (
        "at versions mnemo accepts" if versions_known else "(versions not checked: no `packaging`)"
    )
    return Check("packages", "ok", f"all {n} dependencies installed {versions}")


def _installed(module: str) -> bool:
    from perception.weights import installed

    try:
        return installed(module)
    except ModuleNotFoundError:  # a dotted name whose parent is not there
        return False


def extras_needed(cfg) -> dict[str, str]:
    """extra -> the setting that needs it, for the settings in force."""
    p, g = cfg.perception, cfg.graph
    torch_settings = [
        (p.model_runtime == "torch", '[perception] model_runtime = "torch"'),
        (p.device not in ("auto", "cpu"), f'[perception] device = "{p.device}"'),
        (p.image_backend == "open-clip", '[perception] image_backend = "open-clip"'),
        (g.text_runtime == "torch", '[graph] text_runtime = "torch"'),
        (g.text_device not in ("auto", "cpu"), f'[graph] text_device = "{g.text_device}"'),
        (g.text_dtype in ("bfloat16", "float16"), f'[graph] text_dtype = "{g.text_dtype}"'),
    ]
    need = {}
    if setting := next((s for on, s in torch_settings if on), None):
        need["torch"] = setting
    if p.faces_backend == "insightface":
        need["insightface"] = '[perception] faces_backend = "insightface"'
    if str(g.store).startswith("s3://"):
        need["s3"] = f'[graph] store = "{g.store}"'
    return need


def extra_check(
    extra: str, modules: tuple[str, ...], gives: str, needed_by: str | None = None
) -> Check:
    """Whether the extra ``extra`` (its ``modules``) is installed; a failure when ``needed_by`` (a
    setting in force) needs it, a warning when it is installed in part."""
    name, cmd = f"extra {extra}", pip_install(extra)
    missing = [m for m in modules if not _installed(m)]
    if not missing:
        return Check(name, "ok", f"installed: {gives}")
    what = f"{', '.join(missing)} not installed"
    if needed_by:
        return Check(
            name,
            "fail",
            f"{needed_by} needs mnemo[{extra}]: {what}",
            f"{cmd} (or change {needed_by})",
        )
    if len(missing) < len(modules):
        return Check(name, "warn", f"installed in part ({what}): {gives}", cmd)
    return Check(name, "ok", f"not installed (optional): {gives}; to add it: {cmd}")
