"""``mnemo forget``: take back what was recorded. Without ``--yes`` it shows what would go (counts
per kind and the time span); with it the clips, memories, entities and edges go from every table,
index and old table version (``graph.forget_store``), and the screenshots mnemo captured in those clips are
deleted from its marked capture folder (the preview counts them). A user's own recordings and
folders are theirs: every file in them stays, and ``mnemo ingest`` skips the forgotten clips if it
meets them again."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

from mnemo.cli_args import add_duration, add_json, add_store, parse_time, set_handler


def add_parser(sub) -> None:
    p = sub.add_parser(
        "forget",
        help="forget clips, a time range, a recording, an app, a person or a text",
        description="Forget what a filter selects. Without --yes: a preview, nothing changes. "
        "Filters other than --person combine (all must hold) and forget whole 30 s clips.",
    )
    p.add_argument(
        "--from",
        dest="start",
        type=parse_time,
        metavar="TIME",
        help="start of a time range (ISO 8601; local time if no offset is given), with --to",
    )
    p.add_argument(
        "--to", dest="end", type=parse_time, metavar="TIME", help="end of the time range"
    )
    p.add_argument(
        "--source", metavar="PATH", help="a recording or screenshot folder that was ingested"
    )
    p.add_argument("--clip", metavar="ID", help="one clip id (as cited by `mnemo ask`)")
    p.add_argument("--app", metavar="NAME", help="screen clips with this application in front")
    p.add_argument(
        "--window", metavar="TEXT", help="screen clips with a window whose title holds this text"
    )
    p.add_argument(
        "--person", metavar="ID", help="everything said by or showing one person (id or name)"
    )
    p.add_argument(
        "--query",
        metavar="TEXT",
        help="clips whose memories, transcript or screen text hold this text (case-insensitive)",
    )
    add_duration(p, "--older-than", "clips that ended more than this long ago (e.g. 30d, 12h)")
    p.add_argument(
        "--apply-retention",
        action="store_true",
        help="forget now what graph.retention_days and "
        "graph.max_store_gb say must go (the capture daemon's ingest does it after each clip)",
    )
    add_store(p)
    p.add_argument(
        "--yes", action="store_true", help="forget now (without it: only show what would go)"
    )
    add_json(p)
    set_handler(p, cmd_forget)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")


def cmd_forget(args, cfg) -> int:
    from graph.forget_store import Filter, ForgetError, plan
    from mnemo.forget_with_media import (
        capture_folders,
        finish_unfinished,
        forget_all,
        screenshots_to_delete,
    )
    from mnemo.wiring import open_store
    from perception.capture.owned import capture_root_of

    if args.apply_retention:
        from mnemo.forget_with_media import apply_retention

        store = open_store(cfg.graph, args.store)
        gone = apply_retention(store, cfg.graph.retention_days, cfg.graph.max_store_gb)
        print(
            f"forgot {gone['expired_clips']} clip(s) older than graph.retention_days = {cfg.graph.retention_days:g} "
            f"(0: kept forever) and {gone['budget_clips']} to keep {store.uri} within graph.max_store_gb = "
            f"{cfg.graph.max_store_gb:g} (0: no cap)"
        )
        if args.json:
            print(json.dumps(gone))
        return 0
    try:
        f = Filter(
            start_ts=args.start and args.start.timestamp(),
            end_ts=args.end and args.end.timestamp(),
            source=str(Path(args.source).expanduser().resolve()) if args.source else None,
            clip_id=args.clip,
            app=args.app,
            window=args.window,
            person=args.person,
            query=args.query,
            older_than_days=None if args.older_than is None else args.older_than / 86400.0,
        )
        store = open_store(cfg.graph, args.store)
        if finish_unfinished(store):
            print("finished a forget that had been interrupted")
        selected = plan(store, f)
    except ForgetError as e:
        print(f"error: {e}; nothing was forgotten", file=sys.stderr)
        return 2
    summary = selected.summary()
    span = (
        f"from {_iso(selected.span[0])} to {_iso(selected.span[1])}"
        if selected.span
        else "no time span"
    )
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(selected.memory_kinds.items())) or "none"
    what = (
        f"{summary['clips']} clip(s), {summary['memories']} memories ({kinds}), "
        f"{summary['entities']} person id(s), {summary['people_changes']} change(s) to people; {span}"
    )
    if selected.empty:
        print(f"nothing matches in {store.uri}; nothing was forgotten")
        if args.json:
            print(json.dumps({"forgotten": False, **summary}))
        return 0
    doomed = screenshots_to_delete(selected.clips)
    folders = capture_folders(doomed)
    files = {"files_to_delete": len(doomed), "delete_in": folders}
    kept = sorted(
        {
            c["source_path"]
            for c in selected.clips
            if not (Path(c["source_path"]).is_dir() and capture_root_of(Path(c["source_path"])))
        }
    )
    if not args.yes:
        print(f"would forget {what}")
        print(
            f"would delete {len(doomed)} file(s) mnemo captured (screenshots, sound and their sidecars)"
            + (f" in {', '.join(folders)}" if folders else "")
            + "; no other file is touched"
        )
        for path in kept:
            print(f"note: {path} is yours and stays as it is")
        print("run again with --yes to forget it")
        if args.json:
            print(json.dumps({"forgotten": False, **summary, **files}))
        return 0
    counts = forget_all(store, selected, f)
    images = counts["screenshots_deleted"]
    print(
        f"forgot {what}; {counts['edges']} edge(s) and {counts['entities']} entities removed, "
        f"{counts['memories_changed']} other memories lost evidence; {images} screenshot(s) and sound file(s) mnemo captured "
        f"deleted" + (f" from {', '.join(folders)}" if folders else "")
    )
    for path in kept:
        print(
            f"note: {path} is yours and was left in place; `mnemo ingest` will not store the "
            "forgotten clips again"
        )
    if args.json:
        print(json.dumps({"forgotten": True, **summary, **counts, **files}))
    return 0
