"""What a forget selects: the filters (``Filter``), their checks, and the plan (``ForgetPlan``) of
the clips, memories and entities a filter selects in a store, read without changing anything.

A filter selects whole clips (a time range, a recording, a clip id, an app or window in front, a
text, an age) or one person (their memories, entities and the user's changes to them).
``graph.forget_store`` removes what a plan selects.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from graph import sql
from graph.resolve_people import PeopleError, find_person

_USING = re.compile(r"^Using (?:(?P<app>.+?) \((?P<window>.*)\)|(?P<only>.+?)) from \d")
_IDS = re.compile(r"<[a-z]+_\d+>")


class ForgetError(ValueError):
    """A filter that selects nothing sensible (empty or inverted range, unknown id, no filter)."""


@dataclass(frozen=True)
class Filter:
    start_ts: float | None = None
    end_ts: float | None = None
    source: str | None = None
    clip_id: str | None = None
    app: str | None = None
    window: str | None = None
    person: str | None = None
    query: str | None = None
    older_than_days: float | None = None

    def kinds(self) -> list[str]:
        """The filters given, by name only (what the audit log records)."""
        names = {"start_ts": "from", "end_ts": "to", "older_than_days": "older-than"}
        return [
            names.get(k, k.replace("_id", "")) for k, v in vars(self).items() if v not in (None, "")
        ]


@dataclass
class ForgetPlan:
    """What a forget removes: whole clips, and memories and entities (a person's, or those only
    forgotten clips supported)."""

    clip_ids: list[str] = field(default_factory=list)
    clips: list[dict] = field(
        default_factory=list
    )  # their rows (source, span), for media and the preview
    memory_ids: list[str] = field(default_factory=list)
    memory_kinds: dict[str, int] = field(default_factory=dict)
    entity_ids: list[str] = field(
        default_factory=list
    )  # a person's ids (their entities go even if named elsewhere)
    people_ops: list[int] = field(default_factory=list)  # the user's changes to a forgotten person
    transcripts_of: list[str] = field(
        default_factory=list
    )  # clips whose transcript held a forgotten person's words
    span: tuple[float, float] | None = None

    @property
    def empty(self) -> bool:
        return not (self.clip_ids or self.memory_ids or self.entity_ids)

    def summary(self) -> dict:
        return {
            "clips": len(self.clip_ids),
            "memories": len(self.memory_ids),
            "memory_kinds": dict(self.memory_kinds),
            "entities": len(self.entity_ids),
            "people_changes": len(self.people_ops),
            "span": list(self.span) if self.span else None,
        }


def _check(f: Filter, now: float) -> None:
    given = f.kinds()
    if not given:
        raise ForgetError(
            "say what to forget: --from/--to, --source, --clip, --app, --window, --person, --query "
            "or --older-than"
        )
    if f.person and len(given) > 1:
        raise ForgetError("--person forgets everything of one person and takes no other filter")
    if (f.start_ts is None) != (f.end_ts is None):
        raise ForgetError("a time range needs both --from and --to")
    if f.start_ts is not None and f.end_ts is not None and f.end_ts <= f.start_ts:
        raise ForgetError("the time range is empty or inverted: --to must be after --from")
    if f.older_than_days is not None and f.older_than_days < 0:
        raise ForgetError("the age to forget from (older_than_days) must be 0 or more")
    for name in ("app", "window", "query", "source", "clip_id"):
        value = getattr(f, name)
        if value is not None and not value.strip():
            raise ForgetError(f"--{name.replace('_id', '')} is empty")


def _clip_rows(store, where: str) -> list[dict]:
    return (
        store.clips.search()
        .where(where)
        .select(["clip_id", "source_path", "start_ts", "end_ts", "duration_s"])
        .limit(None)
        .to_list()
    )


def _memory_clips(store, where: str) -> set[str]:
    return {
        r["clip_id"]
        for r in store.memories.search().where(where).select(["clip_id"]).limit(None).to_list()
    }


def _clips_in(clip_ids: set[str]) -> str:
    return sql.in_list("clip_id", sorted(clip_ids)) if clip_ids else "false"


def plan(store, f: Filter, now: float | None = None) -> ForgetPlan:
    """What ``f`` selects in ``store``; nothing is changed. ``ForgetError`` for a filter that
    cannot be meant (none, an inverted range, an unknown clip or person)."""
    now = time.time() if now is None else now
    _check(f, now)
    store.catch_up()  # another process's forget may have purged the versions this one's handles are on
    if f.person:
        return _plan_person(store, f.person)
    conditions = []
    if f.start_ts is not None:
        conditions.append(f"end_ts > {f.start_ts!r} AND start_ts < {f.end_ts!r}")
    if f.older_than_days is not None:
        conditions.append(f"end_ts <= {now - f.older_than_days * 86400.0!r}")
    if f.source:
        conditions.append(f"source_path = {sql.quote(f.source)}")
    if f.clip_id:
        if not store.has_clip(f.clip_id):
            raise ForgetError(f"no clip {f.clip_id!r} in {store.uri}")
        conditions.append(f"clip_id = {sql.quote(f.clip_id)}")
    where = " AND ".join(f"({c})" for c in conditions) or "true"
    if f.app or f.window:
        # a screen clip has a memory per window in front: "Using APP (WINDOW) from 09:00 to 09:01"
        candidates = store.memories_where(
            "kind = 'episodic' AND "
            + sql.starts_with("text", "Using ")
            + "".join(f" AND {sql.contains('text', x)}" for x in (f.app, f.window) if x)
        )
        hits = set()
        for m in candidates:
            shown = _USING.match(m.text)
            if shown is None:
                continue
            # with only one of them known the memory names that one alone: it may be either
            app = shown.group("app") or shown.group("only")
            window = shown.group("window") if shown.group("app") else shown.group("only")
            if (not f.app or f.app.strip().casefold() == app.casefold()) and (
                not f.window or f.window.casefold() in window.casefold()
            ):
                hits.add(m.clip_id)
        where += " AND " + _clips_in(hits)
    if f.query:
        # the text may be in a memory, or in a clip's transcript or screen text that no memory quotes;
        # ids in memory text (<voice_1>) are not what a user searches for
        needle = f.query.casefold()
        hits = {
            m.clip_id
            for m in store.memories_where(sql.contains("text", f.query))
            if needle in _IDS.sub("", m.text).casefold()
        }
        hits |= {
            r["clip_id"]
            for r in store.clips.search()
            .where(
                " OR ".join(
                    sql.contains(c, f.query) for c in ("transcript", "screen_text", "caption")
                )
            )
            .select(["clip_id"])
            .limit(None)
            .to_list()
        }
        where += " AND " + _clips_in(hits)
    clips = _clip_rows(store, where)
    out = ForgetPlan(clip_ids=sorted(c["clip_id"] for c in clips), clips=clips)
    if clips:
        out.span = (min(c["start_ts"] for c in clips), max(c["end_ts"] for c in clips))
        memories = store.memories_where(sql.in_list("clip_id", out.clip_ids))
        out.memory_ids = [m.memory_id for m in memories]
        for m in memories:
            out.memory_kinds[m.kind] = out.memory_kinds.get(m.kind, 0) + 1
    return out


def _plan_person(store, who: str) -> ForgetPlan:
    try:
        person = find_person(store.people(), who)
    except PeopleError as e:
        raise ForgetError(str(e)) from e
    ids = list(person.ids)
    memories = store.about(ids, limit=None)
    out = ForgetPlan(
        memory_ids=[m.memory_id for m in memories],
        entity_ids=ids,
        people_ops=[
            op.seq
            for op in store.people_ops()
            if op.person in ids
            or set(op.args.get("members", [])) & set(ids)
            or op.args.get("other") in ids
        ],
        # the clips they spoke in (not those where others spoke to or of them)
        transcripts_of=sorted(
            {
                m.clip_id
                for m in memories
                if " said: " in m.text and set(m.entity_ids) & set(person.voices)
            }
        ),
    )
    for m in memories:
        out.memory_kinds[m.kind] = out.memory_kinds.get(m.kind, 0) + 1
    if memories:
        out.span = (min(m.start_ts for m in memories), max(m.end_ts for m in memories))
    return out
