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

        written = written_by(lambda client: write(digest, client), cfg, args.reason)
        show_written(written, out, "the moments")
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    return 0


def show_written(written, out: dict, what: str) -> None:
    """Prints the written account (``control.digest_llm.Written``, or None: nothing to print) and
    adds it to ``out`` (the --json object)."""
    if written is None:
        return
    print(
        f"  written by {written.model}:" + ("" if written.sentences else f" nothing {what} support")
    )
    for s in written.sentences:
        print(f"    {s.text}  [clip {', '.join(c.clip_id for c in s.citations)}]")
    out["written"] = {
        "model": written.model,
        "dropped": written.dropped,
        "sentences": [
            {"text": s.text, "clip_ids": [c.clip_id for c in s.citations]}
            for s in written.sentences
        ],
    }


def written_by(write, cfg, reason: bool = False):
    """``write(client)`` with the LLM (``reason``: the reasoning model); None (said on stderr)
    when no usable reply came back."""
    import sys
    from contextlib import ExitStack

    from llm.client import LLMError
    from mnemo.wiring import llm_or_packaged, reasoning_client

    def say(m: str) -> None:
        print(m, file=sys.stderr)

    with ExitStack() as stack:
        try:
            if reason:
                client, server = reasoning_client(cfg.control, cfg.llm, say)
                if server is not None:
                    stack.callback(server.close)
            else:
                client = llm_or_packaged(cfg.llm, stack, say)
            return write(client)
        except LLMError as e:
            print(f"warning: no written account: {e}; what is above stands", file=sys.stderr)
            return None
