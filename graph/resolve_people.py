"""People, resolved when read: who is who, by what name, and the user's changes to it.

A *person* is a connected group of entities: voice and face entities and the characters that
``same_person`` edges tie together. The writers only ever add such edges (a voice and the face seen
while it speaks, a voice found again as the same as an earlier one: M3-Agent's equivalence classes),
and groups are found by union-find, so a memory that names ``<voice_3>`` belongs to whoever
``voice_3`` belongs to now. Nothing about a person is baked into memories: names and merges show
everywhere at once.

The user's own changes (``name``, ``merge``, ``split``, and ``me``: whose memory this is) are a log
in the ``people_log`` table, replayed in order over what inference wrote, so inference can never
overwrite them and ``undo`` is one more row: the latest change not undone is skipped from then on.
The writers never touch that table but once: while nobody is the owner and the user never said who
is, the voice first heard alone on the capture daemon's microphone is marked as the owner by a ``me``
row whose ``source`` is ``microphone`` (``graph.edit_people.heard_owner``). Such an owner is
``owner_heard``, not ``owner``: the user's own ``me`` (or ``[people] me`` in the config) wins
over it (``owner_of``), and once the user has marked anyone, or undone a mark, none is inferred again.

A person's id is the lowest-numbered character in the group (``character_2``), else its lowest
voice or face id; any member id finds the person too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from graph.rows import Edge, Entity, sources_of

# where an inferred name came from, strongest first (the edge kinds that carry its evidence)
NAME_EVIDENCE = ("introduced_as", "addressed_as")
MICROPHONE = "microphone"  # a ``me`` row's source when the owner was heard on the microphone
_ID = re.compile(r"^(character|voice|face)_(\d+)$")


class PeopleError(ValueError):
    """A people command that cannot apply; the message says why and what exists."""


def id_order(entity_id: str) -> tuple[int, int, str]:
    """Characters first, then voices, then faces; by number."""
    m = _ID.match(entity_id)
    if not m:
        return (3, 0, entity_id)
    return (("character", "voice", "face").index(m.group(1)), int(m.group(2)), entity_id)


@dataclass(frozen=True)
class PeopleOp:
    """One change the user made: ``name`` (person, name), ``merge`` (person, other), ``split``
    (person, members: the entities that leave it), ``me`` (person: the entity id the owner was
    marked by; ``source`` ``microphone`` and ``clip`` when the memorizer inferred it, see the
    module's docstring), ``undo`` (target: the seq it undoes)."""

    seq: int
    op: str
    person: str = ""
    args: dict = field(default_factory=dict)
    ts: float = 0.0

    def to_row(self) -> dict:
        return {
            "seq": self.seq,
            "op": self.op,
            "person": self.person,
            "args": json.dumps(self.args, sort_keys=True),
            "ts": self.ts,
        }

    @classmethod
    def from_row(cls, row: dict) -> PeopleOp:
        return cls(
            int(row["seq"]),
            row["op"],
            row["person"],
            json.loads(row["args"] or "{}"),
            float(row["ts"]),
        )

    @property
    def heard(self) -> bool:
        """A ``me`` the memorizer inferred from the microphone, not the user's."""
        return self.op == "me" and self.args.get("source") == MICROPHONE

    def describe(self) -> str:
        if self.op == "name":
            return f"name {self.person} {self.args.get('name', '')!r}"
        if self.op == "merge":
            return f"merge {self.person} {self.args.get('other', '')}"
        if self.op == "split":
            return f"split {self.person} {' '.join(self.args.get('members', []))}"
        if self.op == "me":
            return f"me {self.person}" + (" (heard on the microphone)" if self.heard else "")
        return f"undo #{self.args.get('target')}"


@dataclass(frozen=True)
class Person:
    person_id: str
    name: str  # "" while unnamed
    name_source: str  # "user", "enrolled", "introduced", "addressed", or "" while unnamed
    members: tuple[str, ...]  # every other entity id of the group: voices, faces, merged characters
    first_seen_ts: float = 0.0
    last_seen_ts: float = 0.0
    owner: bool = False  # the person whose memory this is ("I" in a question), as the user marked
    # the owner as inferred: the voice first heard alone on the microphone, while the user marked
    # nobody (``owner_of`` prefers the user's mark and the config's)
    owner_heard: bool = False

    @property
    def label(self) -> str:
        return self.name or f"<{self.person_id}>"

    @property
    def ids(self) -> tuple[str, ...]:
        return (self.person_id, *self.members)

    @property
    def voices(self) -> tuple[str, ...]:
        return tuple(m for m in self.members if m.startswith("voice_"))

    @property
    def faces(self) -> tuple[str, ...]:
        return tuple(m for m in self.members if m.startswith("face_"))


def active_ops(ops: list[PeopleOp]) -> list[PeopleOp]:
    """The changes in force: in order, without undo rows and the changes they undid."""
    undone = {int(o.args["target"]) for o in ops if o.op == "undo"}
    return [o for o in sorted(ops, key=lambda o: o.seq) if o.op != "undo" and o.seq not in undone]


def last_undoable(ops: list[PeopleOp]) -> PeopleOp | None:
    """The latest change in force (what ``undo`` reverses), None when there is none."""
    active = active_ops(ops)
    return active[-1] if active else None


class _Groups:
    """Union-find over entity ids, rebuilt from an edge list (splits remove edges)."""

    def __init__(self, nodes: set[str], links: list[tuple[str, str]]) -> None:
        self.nodes = set(nodes)
        self.links = list(links)

    def components(self) -> list[set[str]]:
        parent = {n: n for n in self.nodes}

        def find(x: str) -> str:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in self.links:
            parent.setdefault(a, a)
            parent.setdefault(b, b)
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb, key=id_order)] = min(ra, rb, key=id_order)
        groups: dict[str, set[str]] = {}
        for n in parent:
            groups.setdefault(find(n), set()).add(n)
        return list(groups.values())

    def group_of(self, entity_id: str) -> set[str]:
        for g in self.components():
            if entity_id in g:
                return g
        return {entity_id}


def _name_sources(edges: list[Edge]) -> dict[tuple[str, str], str]:
    """(entity, name) -> how it was heard, from the name-evidence edges (strongest kind wins)."""
    out: dict[tuple[str, str], str] = {}
    for e in sorted(edges, key=lambda e: NAME_EVIDENCE.index(e.kind), reverse=True):
        for src in sources_of(e.src_id):  # evidence said to one of several voices names them all
            out[(src, e.dst_id.removeprefix("name:"))] = e.kind.removesuffix("_as")
    return out


def resolve(
    entities: list[Entity],
    same_person: list[Edge],
    ops: Sequence[PeopleOp] = (),
    name_edges: Sequence[Edge] = (),
) -> list[Person]:
    """Everyone in memory, after the user's changes: groups holding a character or a voice (a face
    seen alone is not a person until linked to one), sorted by id."""
    by_id = {e.entity_id: e for e in entities}
    groups = _Groups(set(by_id), [(e.src_id, e.dst_id) for e in same_person])
    user_names: dict[
        str, str
    ] = {}  # entity id (the person's id when named) -> name, later ones win
    # the entity the owner was last marked by, and whether that mark was inferred (the microphone)
    owner, by_mic = "", False
    for op in active_ops(list(ops)):
        if op.op == "merge":
            groups.links.append((op.person, op.args["other"]))
        elif op.op == "split":
            leaving = set(op.args["members"])
            group = groups.group_of(op.person)
            groups.links = [
                (a, b)
                for a, b in groups.links
                if not ((a in group or b in group) and ((a in leaving) != (b in leaving)))
            ]
            # each side stays whole: a member linked only through one that left (a voice hung on the
            # character split off) stays with the rest, as the split's check told the user
            for side in (group - leaving, group & leaving):
                ordered = sorted(side, key=id_order)
                groups.links += [(ordered[0], m) for m in ordered[1:]]
        elif op.op == "name":
            user_names.pop(op.person, None)  # to the end: the latest name given in a group wins
            user_names[op.person] = op.args["name"]
        elif op.op == "me":
            owner, by_mic = op.person, op.heard
    sources = _name_sources(list(name_edges))
    people = []
    for group in groups.components():
        ids = sorted(group, key=id_order)
        if not any(i.startswith(("character_", "voice_")) for i in ids):
            continue
        pid = ids[0]
        name, source = "", ""
        for entity_id, given in user_names.items():
            if entity_id in group:
                name, source = given, "user"
        if not name:
            for i in ids:  # the lowest-numbered named character's name
                e = by_id.get(i)
                if e is not None and e.kind == "character" and e.name:
                    name = e.name
                    heard = [sources[(m, name)] for m in ids if (m, name) in sources]
                    source = (
                        "introduced"
                        if "introduced" in heard
                        else "addressed"
                        if heard
                        else "enrolled"
                    )
                    break
        seen = [by_id[i] for i in ids if i in by_id]
        people.append(
            Person(
                pid,
                name,
                source,
                tuple(ids[1:]),
                min((e.first_seen_ts for e in seen), default=0.0),
                max((e.last_seen_ts for e in seen), default=0.0),
                owner in group and not by_mic,
                owner in group and by_mic,
            )
        )
    return sorted(people, key=lambda p: id_order(p.person_id))


def owner_of(people: list[Person], configured: str = "") -> Person | None:
    """The owner: the person the user marked (``mnemo people me``), else the one ``configured``
    names (``[people] me``: an id or a name), else the one heard on the microphone
    (``Person.owner_heard``), else None. A configured owner nobody matches is none."""
    return owner_how(people, configured)[0]


def owner_how(people: list[Person], configured: str = "") -> tuple[Person | None, str]:
    """``owner_of``, and how the owner is known: ``user`` (marked), ``config`` or ``microphone``;
    "" with no owner."""
    marked = next((p for p in people if p.owner), None)
    if marked is not None:
        return marked, "user"
    if configured.strip():
        try:
            return find_person(people, configured), "config"
        except PeopleError:
            return None, ""
    heard = next((p for p in people if p.owner_heard), None)
    return (heard, MICROPHONE) if heard is not None else (None, "")


def may_hear_owner(ops: Sequence[PeopleOp], people: Sequence[Person]) -> bool:
    """Whether the owner may still be inferred from the microphone: nobody is the owner, the user
    never marked anyone (even a mark undone since), and never undid an inferred one."""
    me = {o.seq for o in ops if o.op == "me"}
    if any(o.op == "me" and not o.heard for o in ops):
        return False
    if any(o.op == "undo" and int(o.args.get("target", -1)) in me for o in ops):
        return False
    return not any(p.owner or p.owner_heard for p in people)


def find_person(people: list[Person], who: str) -> Person:
    """A person by name (case-insensitive) or by any of their ids (``<voice_1>`` too);
    ``PeopleError`` naming who exists otherwise."""
    key = who.strip().strip("<>")
    for p in people:
        if key in p.ids:
            return p
    named = [p for p in people if p.name and p.name.lower() == key.lower()]
    if len(named) == 1:
        return named[0]
    known = (
        ", ".join(f"{p.person_id}" + (f" ({p.name})" if p.name else "") for p in people)
        or "nobody yet"
    )
    if len(named) > 1:
        raise PeopleError(
            f"{len(named)} people are called {who!r} ({', '.join(p.person_id for p in named)}); "
            "give an id instead"
        )
    raise PeopleError(f"no person {who!r} in memory; known: {known}")
