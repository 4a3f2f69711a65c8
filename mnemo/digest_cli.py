"""``mnemo day`` and ``mnemo week``: what a day or a week held, each moment citing its clip (``control.digest``)."""

from __future__ import annotations

import json
from datetime import datetime


def add_parsers(sub) -> None:
    for period, what in (("day", "a day"), ("week", "the week (Monday to Sunday) of a day")):
        p = sub.add_parser(period, help=f"what {what} held: when, with whom, which windows, the salient moments")
        p.add_argument("date", nargs="?", default="today",
                       help="2023-05-08, today (default), yesterday, last Tuesday, 8 May 2023, ...")
        p.add_argument("--store", help="store directory (default: graph.store, ./mnemo-data)")
        p.add_argument("--json", action="store_true", help="print one JSON object on the last line")


def cmd_digest(args, cfg) -> int:
    from control.digest import build, day_bounds, parse_day, week_bounds
    from mnemo.people_cli import _open

    now = datetime.now().astimezone()  # the user's days, in local time
    day = parse_day(args.date, now)
    store = _open(cfg, args.store)
    bounds = (day_bounds if args.command == "day" else week_bounds)(day)  # this machine's zone on that day
    digest = build(store, *bounds, args.command, cfg.people.me)
    print("\n".join(digest.lines()))
    if args.json:
        print(json.dumps(digest.to_json(), ensure_ascii=False))
    return 0
