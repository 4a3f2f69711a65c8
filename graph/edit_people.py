"""The user's changes to people: name, merge, split, me and undo, each checked first, then
recorded; and the one change inference records, the owner heard on the microphone (``heard_owner``).

Every change is one row appended to the ``people_log`` table (``graph.resolve_people.PeopleOp``) and
replayed when people are read, so nothing else is rewritten: a rename or a merge shows everywhere
at once, and ``undo`` is one more row. A change is checked against the people as they are now and
raises ``PeopleError`` (``UnknownPerson`` for an id or name nobody has), with nothing written, when
it cannot apply.

Two ``mnemo people`` commands may run at once on one store. Each reads the log, checks and numbers
its change and appends it while holding the store's people lock (``<store>/.people.lock``: a
``flock`` in a folder, a lease in a bucket, see ``graph.sidefiles``), so neither is lost and each
is checked against the other's result (without the lock two take one number: LanceDB's upsert does
not refuse a key another writer added meanwhile).

Splitting by clips is not offered: memories refer to entities (``<voice_3>``), not to a person,
and a person is a group of entities, so a voice's memories belong to whoever that voice belongs to;
splitting some clips off would need memories re-attributed entity by entity, which is inference's
job (it keeps a voice that was really two people apart as two voice entities).
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import unicodedata
from dataclasses import dataclass
from typing import Protocol

from graph.resolve_people import (
    MICROPHONE,
    PeopleError,
    PeopleOp,
    Person,
    find_person,
    last_undoable,
    may_hear_owner,
)
from graph.sidefiles import SideFiles

MAX_NAME_CHARS = 80
LOCK_FILE = ".people.lock"
_FORBIDDEN = re.compile(
    r"[<>]"
)  # memory text writes ids as <voice_1>; a name must never look like one
_ENTITY_ID = re.compile(r"^(character|voice|face)_\d+$", re.IGNORECASE)


class UnknownPerson(PeopleError):
    """No person has this id or name; the message lists who exists."""


class PeopleLog(Protocol):
    """What the changes need of a store (``graph.store.Store`` is one)."""

    uri: str
    side: SideFiles

    def people(self) -> list[Person]: ...

    def people_ops(self) -> list[PeopleOp]: ...

    def append_people_op(self, op: PeopleOp) -> None: ...


@dataclass(frozen=True)
class Change:
    """One recorded change: the log row, the change it undid (``undo`` only), and the people it
    touched as they are after it."""

    op: PeopleOp
    people: tuple[Person, ...]
    undone: PeopleOp | None = None

    def describe(self) -> str:
        if self.undone is not None:
            return f"#{self.op.seq}: undid #{self.undone.seq} ({self.undone.describe()})"
        return f"#{self.op.seq}: {self.op.describe()}"


def clean_name(name: str) -> str:
    """A name as the user may give it: stripped, 1 to ``MAX_NAME_CHARS`` characters, one line,
    printable, no angle brackets and not an entity id; ``PeopleError`` saying what is wrong."""
    if not isinstance(name, str):
        raise PeopleError(f"a name must be text, not {type(name).__name__}")
    name = unicodedata.normalize("NFC", name).strip()
    if not name:
        raise PeopleError("the name is empty; give the person's name, e.g. Carol")
    if len(name) > MAX_NAME_CHARS:
        raise PeopleError(
            f"the name is {len(name)} characters long; at most {MAX_NAME_CHARS} are allowed"
        )
    # control characters (newlines included) and format characters (bidi overrides, zero-width
    # marks) would break the table and the log, or make one name look like another
    bad = sorted(
        {f"U+{ord(c):04X}" for c in name if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")}
    )
    if bad:
        raise PeopleError(
            f"the name holds control or invisible characters ({', '.join(bad)}); give it on one line "
            "in plain text"
        )
    if _FORBIDDEN.search(name):
        raise PeopleError(
            "a name may not contain < or >: memory text marks people's ids with them (<voice_1>)"
        )
    if _ENTITY_ID.match(name):
        raise PeopleError(f"{name!r} is an id, not a name; give the person's name, e.g. Carol")
    return name


def _find(people: list[Person], who: str) -> Person:
    """``find_person``, with a name or id that nobody has raised as ``UnknownPerson``."""
    try:
        return find_person(people, who)
    except PeopleError as e:
        key = str(who).strip().strip("<>").lower()
        if any(p.name.lower() == key for p in people if p.name):
            raise  # several people have that name: the caller must pick one, which is not "unknown"
        raise UnknownPerson(str(e)) from None


def _touched(ids: list[str], people: list[Person]) -> tuple[Person, ...]:
    """The people holding any of these entity ids, once each, in id order."""
    out: list[Person] = []
    for p in people:
        if any(i in p.ids for i in ids) and p not in out:
            out.append(p)
    return tuple(out)


def _op_ids(op: PeopleOp) -> list[str]:
    return [
        op.person,
        *([op.args["other"]] if op.op == "merge" else []),
        *op.args.get("members", []),
    ]


# ---- the checks: each returns the op to record (without its number) or raises PeopleError ------


def _check_name(people: list[Person], ops: list[PeopleOp], who: str, name: str) -> PeopleOp:
    person = _find(people, who)
    name = clean_name(name)
    if person.name == name and person.name_source == "user":
        raise PeopleError(f"{person.person_id} is already called {name!r}")
    same = [
        p
        for p in people
        if p.person_id != person.person_id and p.name and p.name.lower() == name.lower()
    ]
    if same:
        raise PeopleError(
            f"{same[0].person_id} is already called {same[0].name!r}; if they are the same person "
            f"merge them (mnemo people merge {person.person_id} {same[0].person_id}), otherwise "
            "give a name that tells them apart"
        )
    return PeopleOp(0, "name", person.person_id, {"name": name})


def _check_merge(people: list[Person], ops: list[PeopleOp], a: str, b: str) -> PeopleOp:
    first, second = _find(people, a), _find(people, b)
    if first.person_id == second.person_id:
        what = "the same id" if str(a).strip("<> ") == str(b).strip("<> ") else "ids of one person"
        raise PeopleError(
            f"{a} and {b} are {what} ({first.person_id}: {', '.join(first.ids)}); "
            "merge two different people"
        )
    return PeopleOp(0, "merge", first.person_id, {"other": second.person_id})


def _check_split(
    people: list[Person], ops: list[PeopleOp], who: str, members: list[str]
) -> PeopleOp:
    person = _find(people, who)
    leaving = list(dict.fromkeys(str(m).strip().strip("<>") for m in members if str(m).strip()))
    if not leaving:
        raise PeopleError(
            f"say which of {person.person_id}'s entities leave it: {', '.join(person.ids)}"
        )
    foreign = [m for m in leaving if m not in person.ids]
    if foreign:
        raise PeopleError(
            f"{', '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} not part of "
            f"{person.person_id}; its entities are {', '.join(person.ids)}"
        )
    staying = [i for i in person.ids if i not in leaving]
    if not staying:
        raise PeopleError(
            f"splitting all of {person.person_id} ({', '.join(person.ids)}) off would leave nothing; "
            "name the entities that are someone else"
        )
    if not any(i.startswith(("character_", "voice_")) for i in staying):
        # a face alone is not a person: the rest of the group would vanish from the list
        raise PeopleError(
            f"{person.person_id} would keep only {', '.join(staying)}, and a face alone is not a person; "
            f"split {', '.join(staying)} off instead"
        )
    return PeopleOp(0, "split", person.person_id, {"members": leaving})


def _check_me(people: list[Person], ops: list[PeopleOp], who: str) -> PeopleOp:
    person = _find(people, who)
    if person.owner:
        raise PeopleError(f"{person.person_id} is already marked as you")
    return PeopleOp(0, "me", person.person_id, {})


def _check_undo(people: list[Person], ops: list[PeopleOp]) -> PeopleOp:
    target = last_undoable(ops)
    if target is None:
        raise PeopleError(
            "there is nothing to undo: no change to people is in force "
            "(mnemo people history shows the log)"
        )
    return PeopleOp(0, "undo", target.person, {"target": target.seq})


# ---- recording -----------------------------------------------------------------------------


def _locked(store: PeopleLog) -> contextlib.AbstractContextManager:
    """The store's people lock, held exclusively until the change is appended (``graph.sidefiles``)."""
    return store.side.lock(LOCK_FILE, f"pid {os.getpid()} (mnemo people)")


def _record(store: PeopleLog, check, *args) -> Change:
    """Check the change against the people now, number it after the last one and append it, all
    under the lock, so a change made meanwhile by another command is neither lost nor unchecked."""
    with _locked(store):
        ops = store.people_ops()
        before = store.people()
        draft = check(before, ops, *args)
        op = PeopleOp(
            max((o.seq for o in ops), default=0) + 1,
            draft.op,
            draft.person,
            draft.args,
            time.time(),
        )
        store.append_people_op(op)
    undone = next((o for o in ops if o.seq == op.args["target"]), None) if op.op == "undo" else None
    # everyone the change may have touched: each whole person it named, as they were before it
    # (what a split leaves behind is named by no id of the op)
    ids = [i for p in _touched(_op_ids(undone or op), before) for i in p.ids]
    if (
        undone or op
    ).op == "me":  # the owner before it is touched too: no longer (or again) the owner
        ids += [i for p in before if p.owner or p.owner_heard for i in p.ids]
    return Change(op, _touched(ids, store.people()), undone)


def name(store: PeopleLog, who: str, name: str) -> Change:
    """Call a person ``name`` (by id, any member id or current name); it wins over inferred names."""
    return _record(store, _check_name, who, name)


def merge(store: PeopleLog, a: str, b: str) -> Change:
    """Make ``a`` and ``b`` one person (the lower id names the group)."""
    return _record(store, _check_merge, a, b)


def split(store: PeopleLog, who: str, members: list[str]) -> Change:
    """Take these member entities (voices, faces, characters of that person) out of it: they keep
    the links among themselves and form their own person(s); a face left alone is no one's."""
    return _record(store, _check_split, who, list(members))


def me(store: PeopleLog, who: str) -> Change:
    """Mark ``who`` as the owner: the person "I", "me" and "my" in a question mean (one at a time:
    marking another moves it; undo reverses it)."""
    return _record(store, _check_me, who)


def undo(store: PeopleLog) -> Change:
    """Reverse the latest change still in force (an undo of an undo is not offered: change again)."""
    return _record(store, _check_undo)


def heard_owner(store: PeopleLog, voice: str, clip_id: str) -> Change | None:
    """Mark ``voice``, heard alone on the capture daemon's microphone in clip ``clip_id``, as the
    owner, if the owner may still be inferred (``graph.resolve_people.may_hear_owner``: nobody is
    the owner and the user never said who is); None, with nothing written, otherwise. Called once
    the clip is committed, so the voice is in the store when the mark is read. Checked and
    appended under the people lock, as the user's changes are, so a ``mnemo people me`` made
    meanwhile wins."""
    with _locked(store):
        ops = store.people_ops()
        if not may_hear_owner(ops, store.people()):
            return None
        op = PeopleOp(
            max((o.seq for o in ops), default=0) + 1,
            "me",
            voice,
            {"source": MICROPHONE, "clip": clip_id},
            time.time(),
        )
        store.append_people_op(op)
    return Change(op, _touched([voice], store.people()))
