"""``mnemo day`` and ``mnemo week``: what a day or a week held, each moment citing its clip (``control.digest``)."""

from __future__ import annotations

import json
from datetime import datetime

from mnemo.cli_args import add_json, add_store, set_handler


def add_parsers(sub) -> None:
    for period, what in (("day", "a day"), ("week", "the week (Monday to Sunday) of a day")):
        p = sub.add_parser(
            period, help=f"what {what} held: when, with whom, which windows, the salient moments"
        )
        p.add_argument(
            "date",
            nargs="?",
            default="today",
            help="2023-05-08, today (default), yesterday, last Tuesday, 8 May 2023, ...",
        )
        add_store(p)
        add_json(p)
        p.add_argument(
            "--llm",
            action="store_true",
            help="also an account written by the [llm] endpoint (without one: the packaged model, served "
            "here for the command) from the digest's cited moments; a sentence not grounded in "
            "the moments it cites is dropped",
        )
        p.add_argument(
            "--reason",
            action="store_true",
            help="as --llm, written by the packaged reasoning model ([control] reason_model; a "
            "running `mnemo llm serve` of it is used, else it is served here for the command)",
        )
        set_handler(p, cmd_digest)


def cmd_digest(args, cfg) -> int:
    from control.digest import build, day_bounds, parse_day, week_bounds
    from mnemo.people_cli import _open

    now = datetime.now().astimezone()  # the user's days, in local time
    day = parse_day(args.date, now)
    store = _open(cfg, args.store)
    bounds = (day_bounds if args.command == "day" else week_bounds)(
        day
    )  # this machine's zone on that day
    digest = build(store, *bounds, args.command, cfg.people.me)
    print("\n".join(digest.lines()))
    wanted = args.llm or args.reason
    out = digest.to_json()
    if wanted and not digest.empty:
        from control.digest_llm import write
        from mnemo.written import show_written, written_by

        written = written_by(
            lambda client, say: write(digest, client, progress=say), cfg, args.reason
        )
        show_written(written, out, "the moments")
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    return 0
