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
    p.add_argument(
        "--reason",
        action="store_true",
        help="after the quick answer, a reasoned one: the packaged model ([control] reason_model) "
        "reads the memories found and answers in a few words, citing them, or says 'not in "
        "memory' (a configured [llm] endpoint is used instead)",
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
    before = args.before.timestamp() if args.before else None
    if args.reason or cfg.control.agent == "local":
        return _reasoned(args, cfg, store, before)
    answerer = build_agent(cfg.control, cfg.llm, store, cfg.people.me)
    print_answer(answerer.ask(args.question, before_ts=before), args.json)
    return 0


def _reasoned(args, cfg, store, before: float | None) -> int:
    """The quick offline answer at once, then the reasoned one (``control.reason``)."""
    from control.citations import known_names, render
    from mnemo.wiring import build_answerers, build_reasoner

    say = (lambda m: print(m, file=sys.stderr)) if args.json else print
    offline, _ = build_answerers(cfg.control, store, None, cfg.people.me)
    if not args.json:
        quick = offline.ask(args.question, before_ts=before)
        print(f"quick: {quick.answer}", flush=True)
    reasoner = build_reasoner(cfg.control, cfg.llm, store, cfg.people.me, progress=say)
    streamed: list[str] = []

    def show(piece: str) -> None:  # the model's answer as it writes it, before it is checked
        if not streamed:
            print("reasoning: ", end="")
        streamed.append(piece)
        print(piece, end="", flush=True)

    try:
        answer = reasoner.ask(
            args.question, before_ts=before, on_step=say, on_text=None if args.json else show
        )
    finally:
        reasoner.close()
    if streamed:
        print()
    print_answer(answer, args.json)
    if not args.json:
        for step in answer.steps[1:]:
            print(f"   ({step})")
        if not answer.citations and answer.evidence:
            print("   closest memories:")
            names = known_names(offline.planner.people(before))
            for m in answer.evidence[:3]:
                print(f"   - clip {m.clip_id}: {render(m.text, names)[:120]}")
    return 0
