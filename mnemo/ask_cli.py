"""``mnemo ask``: a question answered from memory, with its citations (the demo prints its answers here too)."""

from __future__ import annotations

import json
import sys

from mnemo.cli_args import add_json, add_store, parse_time, set_handler


def add_parser(sub) -> None:
    p = sub.add_parser("ask", help="answer a question from memory, with citations")
    p.add_argument("question")
    add_store(p)
    p.add_argument(
        "--before",
        type=parse_time,
        metavar="TIME",
        help="use only what was known before this time (ISO 8601; no offset: local time)",
    )
    add_json(p)
    set_handler(p, cmd_ask)


def print_answer(answer, as_json: bool) -> None:
    print(f"Q: {answer.question}")
    print(f"A: {answer.answer}")
    for c in answer.citations:
        print(f"   cites clip {c.clip_id} of {c.source} at {c.start_s:.1f}-{c.end_s:.1f} s")
    if as_json:
        print(json.dumps(answer.to_json(), ensure_ascii=False))


def cmd_ask(args, cfg) -> int:
    from mnemo.wiring import build_agent, open_store

    store = open_store(cfg.graph, args.store)
    if store.count()["memories"] == 0:
        print(
            f"error: the store {store.uri} holds no memories; run `mnemo ingest PATH --store {store.uri}` first",
            file=sys.stderr,
        )
        return 1
    answerer = build_agent(cfg.control, cfg.llm, store, cfg.people.me)
    before = args.before.timestamp() if args.before else None
    print_answer(answerer.ask(args.question, before_ts=before), args.json)
    return 0
