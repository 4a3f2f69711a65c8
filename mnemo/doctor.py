"""``mnemo doctor``: whether this machine runs mnemo, one line per check, each with what to do.

It reads and runs nothing heavy: packages are found without importing them (importing torch costs
hundreds of MB and seconds), models are checked by their files' sizes (``--hashes``: by SHA-256, about
1 GB read), no model is loaded and nothing goes on the network. It writes nothing.

This module holds the command and the order of the checks; the checks live by family in
``doctor_python`` (Python, mnemo, config, packages, extras), ``doctor_models``, ``doctor_system``
(ffmpeg, CPU), ``doctor_desktop`` (display, accessibility tree) and ``doctor_store`` (private
folders, free space), each returning ``doctor_check.Check``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from mnemo.doctor_check import GB, Check, pip_install, source_root
from mnemo.doctor_desktop import accessibility_check, display_check
from mnemo.doctor_models import model_checks, models_root_checks, packaged_checks
from mnemo.doctor_python import (
    EXTRAS,
    SUPPORTED_PYTHON,
    config_check,
    extra_check,
    extras_needed,
    mnemo_check,
    packages_check,
    python_check,
)
from mnemo.doctor_store import MIN_FREE_STORE, disk_check, private_checks, store_checks
from mnemo.doctor_system import cpu_check, ffmpeg_check

if TYPE_CHECKING:
    from mnemo.config import MnemoConfig

# the checks and their record, importable from here as before the families moved out
__all__ = [
    "EXTRAS",
    "GB",
    "MIN_FREE_STORE",
    "SUPPORTED_PYTHON",
    "Check",
    "accessibility_check",
    "add_parser",
    "cmd_doctor",
    "config_check",
    "cpu_check",
    "disk_check",
    "display_check",
    "extra_check",
    "extras_needed",
    "ffmpeg_check",
    "mnemo_check",
    "model_checks",
    "models_root_checks",
    "packaged_checks",
    "packages_check",
    "pip_install",
    "private_checks",
    "python_check",
    "run_checks",
    "source_root",
    "store_checks",
]


def run_checks(
    store: str | None = None,
    hashes: bool = False,
    load_config: Callable[[], MnemoConfig] | None = None,
) -> list[Check]:
    if load_config is None:
        from mnemo.config import load_config as load_default

        load_config = load_default
    checks = [python_check(tuple(sys.version_info[:3]), sys.executable), mnemo_check()]
    config, cfg = config_check(load_config)
    checks += [config, packages_check()]
    needed = extras_needed(cfg) if cfg is not None else {}
    checks += [extra_check(e, mods, gives, needed.get(e)) for e, (mods, gives) in EXTRAS.items()]
    checks += model_checks(hashes) + packaged_checks(hashes) + models_root_checks()
    checks += [
        ffmpeg_check(),
        display_check(os.environ),
        accessibility_check(os.environ),
        cpu_check(cfg.perception.threads if cfg else 0),
    ]
    default_store = cfg.graph.store if cfg is not None else "./mnemo-data"
    checks += store_checks(store or default_store, explicit=store is not None)
    if "://" not in (store or default_store):
        checks.append(
            disk_check(
                "disk: store",
                Path(store or default_store).expanduser().absolute(),
                MIN_FREE_STORE,
                "free space, or put the store on a larger disk (--store DIR, or [graph] store)",
            )
        )
    if cfg is not None:
        checks += private_checks(
            "capture folder", Path(cfg.capture.out).expanduser(), created_by="`mnemo capture`"
        )
    from mnemo.serve.auth import runtime_dir

    checks += private_checks("serve tokens", runtime_dir(), created_by="`mnemo serve`")
    return checks


def add_parser(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine for mnemo: Python, models, ffmpeg, display, accessibility, "
        "extras, store",
        description="One line per check (ok, warn, fail) with what to do about each one that is not "
        "ok. Exit 1 when a check failed. Imports no model library, loads no model, "
        "uses no network.",
    )
    from mnemo.cli_args import add_json, add_store, set_handler

    add_store(p, help="store directory to check (default: graph.store, ./mnemo-data)")
    add_json(p)
    p.add_argument(
        "--hashes",
        action="store_true",
        help="verify every model file's SHA-256 (reads about 1 GB) instead of its size",
    )
    set_handler(p, cmd_doctor, needs_config=False)


def cmd_doctor(args) -> int:
    t0 = time.monotonic()
    checks = run_checks(args.store, args.hashes)
    ok = not any(c.status == "fail" for c in checks)
    width = min(max(len(c.name) for c in checks), 34)  # a longer name pushes its own line only
    for c in checks:
        print(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix:
            print(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warn", "fail")}
    print(
        f"{len(checks)} checks: {counts['ok']} ok, {counts['warn']} warning(s), {counts['fail']} failed "
        f"({time.monotonic() - t0:.1f} s)"
    )
    if args.json:
        print(json.dumps({"ok": ok, "checks": [asdict(c) for c in checks]}))
    return 0 if ok else 1
