"""The memory reads that ``mnemo serve`` and ``mnemo mcp`` expose, once for both.

Reads go through one ``Store`` handle whose read-consistency interval lets clips committed by
another process (``mnemo ingest``, ``capture --ingest``) appear within that window. A clip row is
the commit marker of its memories (see ``graph.store``), so a reader that sees a clip sees all of
its memories: there is no half-written clip to show.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from control.citations import known_names, render
from control.people import PersonSummary, summarize_people
from control.tools import MemoryTools, Person
from graph import edit_people
from graph.resolve_people import PeopleError, PeopleOp
from graph.rows import Memory
from graph.store import Store
from mnemo.serve.confirm import Confirmations, NonceRefused
from mnemo.serve.errors import BadRequest, NotFound
from mnemo.serve.models import (
    AskOut,
    ChangeOut,
    CitationOut,
    ClipOut,
    DigestOut,
    ForgetIn,
    ForgetOut,
    HealthOut,
    MemoryOut,
    PeopleOpOut,
    PersonOut,
    ProfileOut,
    TimelineOut,
    WrittenOut,
    WrittenSentenceOut,
)

CLIP_ID = re.compile(r"^[A-Za-z0-9_-]{1,100}$")
DAY_S = 86_400.0


def timestamp(when: datetime | float | None) -> float | None:
    """Seconds since the epoch; a time without a zone is local time (as ``mnemo ask --before``)."""
    if when is None or isinstance(when, (int, float)):
        return when
    return (when if when.tzinfo else when.astimezone()).timestamp()


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


class MemoryService:
    def __init__(self, store: Store, answerer, me: str = "", writer=None) -> None:
        """``answerer``: what ``mnemo ask`` uses (``mnemo.wiring.build_agent``); ``me``: ``[people] me``;
        ``writer``: the [llm] endpoint's client that writes digests up when asked, None without one."""
        self.store = store
        self.writer = writer
        self.tools = MemoryTools(store, me)
        self.answerer = answerer
        self.confirmations = Confirmations()  # forget's nonces, for REST and MCP alike

    # ---- the routes --------------------------------------------------------------------------

    def health(self) -> HealthOut:
        counts = self.store.count()
        return HealthOut(
            status="ok",
            store=self.store.uri,
            clips=counts["clips"],
            memories=counts["memories"],
            entities=counts["entities"],
            newest_ts=self.store.newest_ts(),
            reasoning=self.reasons,
            writes=self.writer is not None,
        )

    @property
    def reasons(self) -> bool:
        from control.reason import Reasoner

        return isinstance(self.answerer, Reasoner)

    def ask(
        self, question: str, before: datetime | float | None = None, quick: bool = False
    ) -> AskOut:
        """``quick``: the offline answer even where answers are reasoned (the page shows it while
        the reasoned one is written)."""
        question = question.strip()
        if not question:
            raise BadRequest("the question is empty")
        answerer = self.answerer
        if quick and self.reasons:
            from control.answer import OfflineAnswerer

            answerer = OfflineAnswerer(self.store, self.answerer.planner)
        answer = answerer.ask(question, before_ts=timestamp(before))
        out = AskOut.model_validate(answer.to_json())
        if answerer is self.answerer and self.reasons:
            out.reasoned = True
            if not answer.citations:
                from control.citations import cite

                closest = (cite(self.store, m) for m in answer.evidence[:3])
                out.closest = [CitationOut(**c.to_json()) for c in closest if c is not None]
        return out

    def search(
        self,
        query: str,
        kind: str | None = None,
        person: str | None = None,
        start: datetime | float | None = None,
        end: datetime | float | None = None,
        before: datetime | float | None = None,
        limit: int = 10,
    ) -> list[MemoryOut]:
        query = query.strip()
        if not query:
            raise BadRequest("the query is empty")
        start_ts, end_ts = timestamp(start), timestamp(end)
        if start_ts is not None and end_ts is not None and end_ts < start_ts:
            raise BadRequest(
                f"the time range ends ({_iso(end_ts)}) before it starts ({_iso(start_ts)})"
            )
        people = self.tools.list_people()
        entity_ids = None
        if person:
            p = self._person(person, people)
            entity_ids = list(p.ids)
        hits = self.tools.search(
            query,
            k=limit,
            kind=kind,
            entity_ids=entity_ids,
            start_ts=start_ts,
            end_ts=end_ts,
            before_ts=timestamp(before),
        )
        view = _People(people)
        return [view.memory(h.memory, score=h.score) for h in hits]

    def people(self) -> list[PersonOut]:
        """Everyone in memory, with where their name came from, clip count and a sample quote."""
        people = self.tools.list_people()
        owner = self.tools.owner(people)
        return [
            person_out(s, owner.person_id if owner else None)
            for s in summarize_people(self.store, people)
        ]

    def people_history(self) -> list[PeopleOpOut]:
        return history_out(self.store.people_ops())

    # ---- the user's changes to people (graph.edit_people: checked, recorded, reversible) --------

    def name_person(self, who: str, name: str) -> ChangeOut:
        return self._change(edit_people.name, who, name)

    def merge_people(self, a: str, b: str) -> ChangeOut:
        return self._change(edit_people.merge, a, b)

    def split_person(self, who: str, members: list[str]) -> ChangeOut:
        return self._change(edit_people.split, who, members)

    def mark_owner(self, who: str) -> ChangeOut:
        return self._change(edit_people.me, who)

    def undo_people_change(self) -> ChangeOut:
        return self._change(edit_people.undo)

    def _change(self, action, *args) -> ChangeOut:
        try:
            change = action(self.store, *args)
        except edit_people.UnknownPerson as e:
            raise NotFound(str(e)) from None
        except PeopleError as e:
            raise BadRequest(str(e)) from None
        return change_out(change, self.store)

    def forget(self, body: ForgetIn) -> ForgetOut:
        """Preview what ``body`` selects (no nonce) or forget it (the nonce of that preview, same
        filter). A preview with something to forget issues a single-use nonce bound to the store, the
        filter and what it selects (``mnemo.serve.confirm``): text an agent read in a recording
        cannot forget anything in one call. A filter that cannot be meant, or a nonce that does not
        fit, is a ``BadRequest`` and changes nothing. This handle reads the store's newest versions
        afterwards: the old ones are deleted from disk."""
        from graph.forget_store import Filter, ForgetError, plan
        from mnemo.forget_with_media import (
            capture_folders,
            finish_unfinished,
            forget_all,
            screenshots_to_delete,
        )

        retry = (
            "preview first: send the same filter without a nonce, show the person what it would forget, and "
            f"once they agree send that filter again with the nonce the preview returned (good once, for "
            f"{self.confirmations.lifetime_s:.0f} s)"
        )
        f = Filter(
            timestamp(body.start),
            timestamp(body.end),
            body.source,
            body.clip,
            body.app,
            body.window,
            body.person,
            body.query,
            body.older_than_days,
        )
        scope = json.dumps({"store": self.store.uri, "filter": vars(f)}, sort_keys=True)
        try:
            selected = plan(self.store, f)
        except ForgetError as e:
            raise BadRequest(str(e)) from None
        summary = selected.summary()
        if (body.confirm or body.nonce is not None) and not body.nonce:
            raise BadRequest(
                f"nothing was forgotten: forgetting needs the nonce of a preview (confirm=true alone "
                f"no longer forgets); {retry}"
            )
        if not body.nonce:
            if selected.empty:
                return ForgetOut(
                    forgotten=False,
                    **summary,
                    next_step="the filter selects nothing: nothing to forget",
                )
            lifetime = self.confirmations.lifetime_s
            doomed = screenshots_to_delete(selected.clips)
            return ForgetOut(
                forgotten=False,
                **summary,
                files_to_delete=len(doomed),
                delete_in=capture_folders(doomed),
                nonce=self.confirmations.issue(scope, _selection(selected)),
                nonce_expires_in_s=lifetime,
                next_step=f"nothing is forgotten yet. Show the person these counts; only if they agree, "
                f"send the same filter again with this nonce within {lifetime:.0f} s. "
                "Forgetting deletes the clips from every file of the store, for good",
            )
        try:
            self.confirmations.redeem(body.nonce, scope, _selection(selected), retry)
        except NonceRefused as e:
            raise BadRequest(f"nothing was forgotten: {e}") from None
        try:
            # an interrupted forget is finished first (as `mnemo forget` does); if that changed what the
            # filter selects, the person has not seen what would go now
            changed = finish_unfinished(self.store) and _selection(
                plan(self.store, f)
            ) != _selection(selected)
        except ForgetError as e:
            raise BadRequest(str(e)) from None
        if changed:
            raise BadRequest(
                f"nothing was forgotten: an interrupted forget was finished and changed what this "
                f"filter selects; {retry}"
            )
        counts = forget_all(self.store, selected, f)
        self.store.catch_up()
        return ForgetOut(
            forgotten=True,
            **summary,
            screenshots_deleted=counts["screenshots_deleted"],
            next_step="forgotten for good",
        )

    def clip(self, clip_id: str) -> ClipOut:
        row = self.clip_row(clip_id)
        return _People(self.tools.list_people()).clip(row, self.store.memories_of_clips([clip_id]))

    def timeline(
        self,
        start: datetime | float | None = None,
        end: datetime | float | None = None,
        limit: int = 500,
    ) -> TimelineOut:
        """Clips and their memories overlapping ``[start, end]``; by default the 24 hours up to the
        newest clip."""
        start_ts, end_ts = timestamp(start), timestamp(end)
        if end_ts is None:
            newest = self.store.newest_ts()
            end_ts = newest if newest is not None else datetime.now(UTC).timestamp()
            if start_ts is not None and start_ts > end_ts:
                end_ts = start_ts + DAY_S
        if start_ts is None:
            start_ts = end_ts - DAY_S
        if end_ts < start_ts:
            raise BadRequest(
                f"the time range ends ({_iso(end_ts)}) before it starts ({_iso(start_ts)})"
            )
        rows = self.store.clips_in_range(start_ts, end_ts, limit + 1)
        truncated = len(rows) > limit
        rows = rows[:limit]
        by_clip: dict[str, list[Memory]] = {}
        for m in self.store.memories_of_clips([r["clip_id"] for r in rows]):
            by_clip.setdefault(m.clip_id, []).append(m)
        view = _People(self.tools.list_people())
        return TimelineOut(
            from_ts=start_ts,
            to_ts=end_ts,
            truncated=truncated,
            clips=[view.clip(r, by_clip.get(r["clip_id"], [])) for r in rows],
        )

    def digest(
        self, period: str, day: date | None = None, tz: str | None = None, written: bool = False
    ) -> DigestOut:
        """What ``day`` (default: today), or its Monday-to-Sunday week, held, on the calendar of
        ``tz`` (an IANA zone such as Europe/Paris; default: this machine's); ``written``: also the
        account the [llm] endpoint writes from it (``control.digest_llm``)."""
        from control.digest import build, day_bounds, week_bounds

        if period not in ("day", "week"):
            raise BadRequest(f"period is day or week, not {period!r}")
        try:
            zone = ZoneInfo(tz) if tz else None  # None: this machine's, as on that day
        except (ZoneInfoNotFoundError, ValueError):
            raise BadRequest(
                f"{tz!r} is not a time zone this machine knows; write e.g. Europe/Paris"
            ) from None
        day = day or datetime.now(zone).date()  # zone None: local time
        if written and self.writer is None:
            raise BadRequest(
                "no model writes here: a digest is written up by the [llm] endpoint (set [llm] "
                'base_url) or the reasoning model ([control] agent = "local"); the extractive '
                "digest needs none"
            )
        d = build(
            self.store,
            *(day_bounds if period == "day" else week_bounds)(day, zone),
            period,
            self.tools.me,
        )
        out = DigestOut(**d.to_json(), text="\n".join(d.lines()))
        if written and not d.empty:
            out.written = self._written(d)
        return out

    def _written(self, d) -> WrittenOut:
        from control.digest_llm import write
        from llm.client import LLMError

        try:
            w = write(d, self.writer)
        except LLMError as e:
            return WrittenOut(model=self.writer.model, sentences=[], dropped=0, error=str(e))
        return WrittenOut(
            model=w.model,
            dropped=w.dropped,
            sentences=[
                WrittenSentenceOut(text=s.text, clip_ids=[c.clip_id for c in s.citations])
                for s in w.sentences
            ],
        )

    def profile(self, who: str | None = None) -> ProfileOut:
        """What memory holds about ``who`` (an id, a member id or a name; None: the owner)."""
        from control.profile import build
        from graph.resolve_people import PeopleError

        try:
            p = build(self.store, who, self.tools.me)
        except PeopleError as e:
            raise NotFound(str(e)) from None
        return ProfileOut(**p.to_json(), text="\n".join(p.lines()))

    # ---- helpers -----------------------------------------------------------------------------

    def clip_row(self, clip_id: str) -> dict:
        row = self.store.get_clip(clip_id) if CLIP_ID.match(clip_id) else None
        if row is None:
            raise NotFound(f"no clip {clip_id!r} in the store {self.store.uri}")
        return row

    def thumbnail(self, clip_id: str, at_s: float | None = None) -> bytes:
        """A small JPEG of the clip's frame at ``at_s`` (default its middle), cached in the store."""
        from mnemo.serve.thumbs import thumbnail

        return thumbnail(self.store, self.clip_row(clip_id), at_s)

    def face(self, who: str) -> bytes:
        """A square JPEG of the person's face, from a frame where it was the only face seen (their
        longest sightings first), cached in its clip's folder."""
        from mnemo.serve.media import MediaGone
        from mnemo.serve.thumbs import face_crop, face_moments

        person = self._person(who, self.tools.list_people())
        if not any(e.startswith("face_") for e in person.ids):
            raise NotFound(f"no face of {who!r} is in memory: only their voice was heard")
        moments = face_moments(self.store, list(person.ids))
        if not moments:
            raise NotFound(
                f"{who!r} was never seen without another face: a crop could show someone else"
            )
        gone = MediaGone(f"no frame of {who!r} shows one face")
        for memory, at in moments[:3]:  # a few tries: a frame cut again may not show one face
            try:
                return face_crop(self.store, self.clip_row(memory.clip_id), memory, at)
            except MediaGone as e:
                gone = e
        raise gone

    def _person(self, who: str, people: list[Person]) -> Person:
        try:
            return self.tools.person(who, people)
        except ValueError as e:
            raise NotFound(str(e)) from None


def _selection(p) -> str:
    """A digest of what a forget plan removes: a confirmation is for these rows, not for whatever
    its filter selects by then."""
    parts = [sorted(p.clip_ids), sorted(p.memory_ids), sorted(p.entity_ids), sorted(p.people_ops)]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def person_out(s: PersonSummary, owner_id: str | None = None) -> PersonOut:
    """``owner_id``: the owner's id when configured rather than marked (``[people] me``)."""
    p = s.person
    return PersonOut(
        id=p.person_id,
        name=p.name,
        name_source=p.name_source,
        label=p.label,
        members=list(p.members),
        voices=list(p.voices),
        faces=list(p.faces),
        clips=s.clips,
        first_seen_ts=p.first_seen_ts,
        last_seen_ts=p.last_seen_ts,
        first_seen=_iso(p.first_seen_ts),
        last_seen=_iso(p.last_seen_ts),
        quote=s.quote,
        owner=p.owner or p.person_id == owner_id,
    )


def history_out(ops: list[PeopleOp]) -> list[PeopleOpOut]:
    """The people log in order, each change marked when a later undo reversed it."""
    undone = {int(o.args["target"]) for o in ops if o.op == "undo"}
    by_seq = {o.seq: o for o in ops}

    def describe(o: PeopleOp) -> str:
        target = by_seq.get(int(o.args["target"])) if o.op == "undo" else None
        return f"undo #{target.seq} ({target.describe()})" if target else o.describe()

    return [
        PeopleOpOut(
            seq=o.seq,
            op=o.op,
            person=o.person,
            args=o.args,
            ts=o.ts,
            time=_iso(o.ts),
            description=describe(o),
            undone=o.seq in undone,
        )
        for o in ops
    ]


def change_out(change: edit_people.Change, store: Store) -> ChangeOut:
    """A recorded change, and the people it touched with their clip counts and quotes."""
    ops = store.people_ops()
    log = {o.seq: o for o in history_out(ops)}
    summaries = summarize_people(store, list(change.people), known_names(store.people()))
    return ChangeOut(
        change=log[change.op.seq],
        undid=log[change.undone.seq] if change.undone else None,
        people=[person_out(s) for s in summaries],
    )


class _People:
    """Names and labels of the people in memories, for one response."""

    def __init__(self, people: list[Person]) -> None:
        self.names = known_names(people)
        self.label = {e: p.label for p in people for e in p.ids}

    def people_of(self, memories: list[Memory]) -> list[str]:
        return sorted({self.label[e] for m in memories for e in m.entity_ids if e in self.label})

    def memory(self, m: Memory, score: float | None = None) -> MemoryOut:
        return MemoryOut(
            memory_id=m.memory_id,
            kind=m.kind,
            text=render(m.text, self.names),
            clip_id=m.clip_id,
            source=m.source_path,
            start_ts=m.start_ts,
            end_ts=m.end_ts,
            time=_iso(m.start_ts),
            people=self.people_of([m]),
            score=score,
        )

    def clip(self, row: dict, memories: list[Memory]) -> ClipOut:
        return ClipOut(
            clip_id=row["clip_id"],
            source=row["source_path"],
            media_location=row["media_location"],
            media_url=f"/media/{row['clip_id']}",
            index=row["index"],
            start_ts=row["start_ts"],
            end_ts=row["end_ts"],
            offset_s=row["offset_s"],
            duration_s=row["duration_s"],
            transcript=row["transcript"],
            screen_text=row["screen_text"],
            caption=row["caption"],
            notes=list(row["notes"] or ()),
            people=self.people_of(memories),
            memories=[self.memory(m) for m in memories],
        )
