"""``mnemo people``: the people in memory, what memory holds about one (show), and the user's
changes to them (name, merge, split, undo, history). Every change is checked first and recorded in the store's people log
(``graph.edit_people``); a bad one exits 2 with ``error: …`` and changes nothing."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mnemo.cli_args import add_json, add_store, set_handler

JSON_HELP = "print one JSON value (the people as a list, else an object) on the last line"


def add_parsers(sub) -> None:
    # --store and --json are accepted before and after the action; SUPPRESS keeps an action's
    # parser from overwriting what was given before it
    common = argparse.ArgumentParser(add_help=False)
    add_store(common, default=argparse.SUPPRESS)
    add_json(common, JSON_HELP, default=argparse.SUPPRESS)
    p = sub.add_parser(
        "people",
        help="who is in memory; name, merge and split people, undo a change",
        description="Without an action: everyone in memory, with where their name came from, their "
        "voices and faces, when they were first and last seen, in how many clips, and "
        "something they said. Names you give win over names heard in recordings; every "
        "change is recorded and `mnemo people undo` reverses the latest.",
    )
    add_store(p)
    add_json(p, JSON_HELP)
    set_handler(p, cmd_people)
    actions = p.add_subparsers(dest="people_action", metavar="ACTION")
    name = actions.add_parser(
        "name", parents=[common], help="give a person a name: people name voice_2 Carol"
    )
    name.add_argument(
        "who", metavar="ID", help="the person: their id, any member id (voice_2) or current name"
    )
    name.add_argument(
        "name", nargs="+", metavar="NAME", help="the name (words are joined by spaces)"
    )
    merge = actions.add_parser(
        "merge", parents=[common], help="make two people one: people merge voice_1 voice_3"
    )
    merge.add_argument("a", metavar="A")
    merge.add_argument("b", metavar="B")
    split = actions.add_parser(
        "split",
        parents=[common],
        help="take voices, faces or characters out of a person: people split character_1 voice_3",
    )
    split.add_argument("who", metavar="ID")
    split.add_argument(
        "members", nargs="+", metavar="MEMBER", help="the entities that are someone else"
    )
    me = actions.add_parser(
        "me",
        parents=[common],
        help="mark who you are (people me voice_3); without an id: who is "
        "marked, or whom mnemo proposes and why",
    )
    me.add_argument("who", nargs="?", metavar="ID", help="you: your id, any member id or your name")
    show = actions.add_parser(
        "show",
        parents=[common],
        help="what memory holds about a person (people show Caroline); without an id: about you",
    )
    show.add_argument(
        "who", nargs="?", metavar="ID", help="the person: their id, any member id or their name"
    )
    show.add_argument(
        "--reason",
        action="store_true",
        help="also a profile written by the packaged reasoning model ([control] reason_model; a "
        "configured [llm] endpoint is used instead) from the facts and their own words shown; a "
        "sentence not grounded in the notes it cites is dropped",
    )
    actions.add_parser("undo", parents=[common], help="reverse the latest change still in force")
    actions.add_parser("history", parents=[common], help="every change, oldest first")


def _open(cfg, store_dir: str | None):
    from mnemo.wiring import open_store

    where = store_dir or cfg.graph.store
    if "://" not in str(where) and not Path(where).is_dir():  # opening would create an empty store
        raise FileNotFoundError(
            f"no store at {where}: run `mnemo ingest PATH --store {where}` first, "
            "or pass --store DIR"
        )
    return open_store(cfg.graph, where)


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_people(people, heard_owner: str = "") -> str:
    """``PersonOut`` records as a table, one line each, with the quote on the line below.
    ``heard_owner``: the id of the owner known only by the microphone, shown as "you
    (microphone)" while unnamed."""
    if not people:
        return "nobody in memory yet"
    lines = [
        f"{'ID':<14} {'NAME':<22} {'FROM':<10} {'VOICES':<18} {'FACES':<14} {'CLIPS':>5}  {'FIRST SEEN':<20} "
        "LAST SEEN"
    ]
    for p in people:
        if p.id == heard_owner:
            name = f"{p.name} (me, microphone)" if p.name else "you (microphone)"
        else:
            name = (p.name or "-") + (" (me)" if p.owner else "")
        lines.append(
            f"{p.id:<14} {_cell(name, 22):<22} {p.name_source or '-':<10} "
            f"{_cell(','.join(p.voices) or '-', 18):<18} {_cell(','.join(p.faces) or '-', 14):<14} "
            f"{p.clips:>5}  {p.first_seen[:19].replace('T', ' '):<20} {p.last_seen[:19].replace('T', ' ')}"
        )
        if p.quote:
            lines.append(f'{"":<14} said: "{p.quote}"')
    return "\n".join(lines)


def cmd_people(args, cfg) -> int:
    from control.people import summarize_people
    from graph import edit_people
    from mnemo.serve.service import change_out, history_out, person_out

    store = _open(cfg, args.store)
    action = args.people_action or "list"
    if action == "list":
        from graph.resolve_people import MICROPHONE, owner_how

        everyone = store.people()
        owner, how = owner_how(everyone, cfg.people.me)
        people = [
            person_out(s, owner.person_id if owner else None)
            for s in summarize_people(store, everyone)
        ]
        print(format_people(people, owner.person_id if owner and how == MICROPHONE else ""))
        if args.json:
            print(json.dumps([p.model_dump() for p in people], ensure_ascii=False))
        return 0
    if action == "history":
        log = history_out(store.people_ops())
        for o in log:
            print(
                f"#{o.seq:<4} {o.time[:19].replace('T', ' ')}  {o.description}{'  (undone)' if o.undone else ''}"
            )
        if not log:
            print("no changes to people yet")
        if args.json:
            print(json.dumps([o.model_dump() for o in log], ensure_ascii=False))
        return 0
    if action == "me" and not args.who:
        return _show_owner(store, cfg, args.json)
    if action == "show":
        from control.profile import build

        profile = build(store, args.who, cfg.people.me)
        print("\n".join(profile.lines()))
        shown = profile.to_json()
        if args.reason and (profile.facts or profile.statements):
            from control.profile_llm import to_write, write
            from mnemo.written import show_written, written_by

            notes = to_write(store, args.who, cfg.people.me)
            written = written_by(
                lambda client, say: write(notes, client, progress=say), cfg, reason=True
            )
            show_written(written, shown, "the notes")
        if args.json:
            print(json.dumps(shown, ensure_ascii=False))
        return 0
    if action == "name":
        change = edit_people.name(store, args.who, " ".join(args.name))
    elif action == "me":
        change = edit_people.me(store, args.who)
    elif action == "merge":
        change = edit_people.merge(store, args.a, args.b)
    elif action == "split":
        change = edit_people.split(store, args.who, args.members)
    else:
        change = edit_people.undo(store)
    out = change_out(change, store)
    print(change.describe())
    print(format_people(out.people, _heard_owner(store, cfg)))
    if args.json:
        print(json.dumps(out.model_dump(), ensure_ascii=False))
    return 0


def _heard_owner(store, cfg) -> str:
    """The id of the owner known only by the microphone; "" when the owner is marked, configured
    or nobody."""
    from graph.resolve_people import MICROPHONE, owner_how

    owner, how = owner_how(store.people(), cfg.people.me)
    return owner.person_id if owner is not None and how == MICROPHONE else ""


def _show_owner(store, cfg, as_json: bool) -> int:
    """Who is marked as the owner; with nobody marked, whom mnemo proposes, with its evidence."""
    from control.people import propose_owner
    from graph.resolve_people import MICROPHONE, owner_how

    people = store.people()
    owner, source = owner_how(people, cfg.people.me)
    if owner is not None:
        how = (
            "marked with `mnemo people me`"
            if source == "user"
            else "the voice first heard alone on the microphone (if that is not you: "
            "`mnemo people me ID`)"
            if source == MICROPHONE
            else f"[people] me = {cfg.people.me!r} in the config"
        )
        print(
            f"you are {owner.person_id}" + (f" ({owner.name})" if owner.name else "") + f", {how}"
        )
        out = {
            "owner": owner.person_id,
            "name": owner.name,
            "marked": owner.owner,
            "heard_on_microphone": source == MICROPHONE,
        }
    else:
        proposal = propose_owner(store, people)
        if proposal is None:
            print(
                "nobody is marked as you, and no voice stands out to propose: mark yourself with "
                "`mnemo people me ID` (ids: `mnemo people`)"
            )
            out = {"owner": None, "proposal": None}
        else:
            p = proposal.person
            print(
                f"nobody is marked as you. mnemo proposes {p.person_id}"
                + (f" ({p.name})" if p.name else "")
                + f": heard on {proposal.days} of {proposal.of_days} days, in {proposal.recordings} of "
                f"{proposal.of_recordings} recordings, {proposal.clips} clips"
            )
            if proposal.runner_up is not None:
                r, days, recordings = proposal.runner_up
                print(
                    f"  next: {r.person_id}"
                    + (f" ({r.name})" if r.name else "")
                    + f", heard on {days} days in {recordings} recordings"
                )
            print(f"if that is you: mnemo people me {p.person_id}")
            out = {
                "owner": None,
                "proposal": {
                    "id": p.person_id,
                    "name": p.name,
                    "days": proposal.days,
                    "recordings": proposal.recordings,
                    "clips": proposal.clips,
                },
            }
    if as_json:
        print(json.dumps(out, ensure_ascii=False))
    return 0
