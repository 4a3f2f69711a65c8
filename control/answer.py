"""Answers with citations: the record both agents return, and the offline answerer.

The offline answerer is deterministic and model-free (beyond the store's text embedder): the
planner's retrieval, then the best memory quoted. It cites exactly the memory its answer quotes,
and so never a clip it did not read.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime

from control.citations import Citation, cite, known_names, render
from control.planner import OfflinePlanner
from control.tools import MemoryTools
from graph.rows import Memory
from graph.store import Store
from memorize.places import MOVE, PHOTO, STAY, begins_as, is_place_memory, places_in

WHERE_MEMORIES = 8  # positions quoted in an answer about where the owner was


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    citations: tuple[Citation, ...]
    evidence: tuple[Memory, ...]  # what was read, best first
    steps: tuple[str, ...] = ()  # what the agent did, round by round

    def to_json(self) -> dict:
        return {
            "answer": self.answer,
            "citations": [c.to_json() for c in self.citations],
            "steps": list(self.steps),
        }


def utc_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class OfflineAnswerer:
    """The offline planner's retrieval, then an extractive answer: the best memory, rendered with
    names and its time, citing the clip it came from."""

    def __init__(self, store: Store, planner: OfflinePlanner | None = None) -> None:
        self.store = store
        self.planner = planner or OfflinePlanner(MemoryTools(store))

    def ask(self, question: str, before_ts: float | None = None) -> Answer:
        found = self.planner.retrieve(question, before_ts)
        if (period := about_a_period(found.plan, before_ts)) is not None:
            return self._digest(question, found, *period)
        if (window := where_in_a_period(found.plan, before_ts)) is not None:
            return self._where(question, found, *window)
        if (place := when_at_a_place(question)) is not None:
            if (answer := self._when_at(question, found, *place, before_ts)) is not None:
                return answer
        if before_ts is None and (who := about_a_person(question)) is not None:
            if (answer := self._profile(question, found, who)) is not None:
                return answer
        read = tuple(found.memories)
        for memory in read[:1]:
            citation = cite(self.store, memory)
            if citation is None:
                return Answer(
                    question, "I don't know: the matching memory is not committed yet.", (), read
                )
            text = render(memory.text, known_names(self.planner.people(before_ts)))
            return Answer(
                question,
                f"{text} (at {utc_time(memory.start_ts)})",
                (citation,),
                read,
                found.rounds,
            )
        return Answer(
            question, "I don't know: nothing in memory matches the question.", (), (), found.rounds
        )

    def _digest(self, question: str, found, start: datetime, end: datetime) -> Answer:
        """A question about what a period held, answered by its digest (``control.digest``)."""
        from control.digest import build

        days = (end - start).total_seconds() / 86400
        digest = build(
            self.store,
            start,
            end,
            "day" if days <= 1 else "week" if days <= 7 else "period",
            self.planner.tools.me,
        )
        steps = (
            *found.rounds,
            f"the digest of {digest.title}: {digest.clips} clip(s), {len(digest.moments)} moment(s)",
        )
        if not digest.moments and not digest.places:
            return Answer(
                question, f"I don't know: nothing in memory for {digest.title}.", (), (), steps
            )
        with_whom = (
            f" With {', '.join(name for name, _ in digest.people[:3])}." if digest.people else ""
        )
        places = f" At {'; '.join(p.summary for p in digest.places[:3])}." if digest.places else ""
        text = f"On {digest.title}:{with_whom}{places} " + " ".join(
            f"{m.text} (at {utc_time(m.at_ts)})." for m in digest.moments
        )
        citations = [p.citation for p in digest.places[:3]] + [m.citation for m in digest.moments]
        return Answer(
            question,
            text.rstrip(),
            tuple(dict.fromkeys(citations)),
            tuple(m.memory for m in digest.moments),
            steps,
        )

    def _where(self, question: str, found, start_ts: float, end_ts: float) -> Answer:
        """Where the owner was in a period: its memories that hold a position (photos with GPS,
        stays and moves of GPS tracks), in time order, each cited; "I don't know" without any."""
        memories = sorted(
            (
                m
                for m in self.store.in_time_range(start_ts, end_ts, limit=None)
                if is_place_memory(m.text) and m.end_ts > start_ts and m.start_ts < end_ts
            ),
            key=lambda m: (m.start_ts, m.memory_id),
        )  # a stay from the night before counts
        steps = (
            *found.rounds,
            f"{len(memories)} memory(ies) with a position from {utc_time(start_ts)} "
            f"to {utc_time(end_ts)}",
        )
        return self._quote_places(
            question,
            memories,
            steps,
            "no photo with a position and no GPS track in memory "
            f"from {utc_time(start_ts)} to {utc_time(end_ts)}",
        )

    def _when_at(
        self, question: str, found, place: str, last: bool, before_ts: float | None
    ) -> Answer | None:
        """When the owner was at a named place: the memories whose position is named so, newest
        first (``last``: the newest alone); None when no place in memory has that name (then the
        question is searched: "the dentist" is no place name, but may have been said)."""
        memories = sorted(
            (
                m
                for m in place_memories(self.store, before_ts)
                if any(same_place(place, name) for name in places_in(m.text))
            ),
            key=lambda m: (-m.start_ts, m.memory_id),
        )
        if not memories:
            return None
        steps = (*found.rounds, f"{len(memories)} memory(ies) at a place named {place!r}")
        return self._quote_places(question, memories, steps, "", 1 if last else WHERE_MEMORIES)

    def _quote_places(
        self,
        question: str,
        memories: list[Memory],
        steps: tuple[str, ...],
        none: str,
        most: int = WHERE_MEMORIES,
    ) -> Answer:
        """At most ``most`` of ``memories`` quoted in order, each cited (one not committed yet is passed over)."""
        quoted: list[str] = []
        citations: list[Citation] = []
        for m in memories:
            if len(quoted) < most and (citation := cite(self.store, m)) is not None:
                quoted.append(f"{m.text} (at {utc_time(m.start_ts)}).")
                citations.append(citation)
        if not quoted:
            return Answer(
                question,
                f"I don't know: {none or 'the matching memories are not committed yet'}.",
                (),
                (),
                steps,
            )
        more = (
            f" And {len(memories) - len(quoted)} more."
            if len(memories) > len(quoted) and most > 1
            else ""
        )
        return Answer(
            question,
            " ".join(quoted) + more,
            tuple(dict.fromkeys(citations)),
            tuple(memories),
            steps,
        )

    def _profile(self, question: str, found, who: str) -> Answer | None:
        """A question about a person as a whole, answered by their profile (``control.profile``):
        its facts and their latest statements; None when nobody in memory is ``who`` or nothing is
        known of them (then the question is searched)."""
        from control.profile import build
        from graph.resolve_people import PeopleError

        try:
            profile = build(self.store, None if who in MYSELF else who, self.planner.tools.me)
        except PeopleError:
            return None
        said = profile.statements[-PROFILE_STATEMENTS:]
        if not profile.facts and not said:
            return None
        text = f"About {'you' if profile.is_owner else profile.label}: " + " ".join(
            [f.text for f in profile.facts] + [f"{s.text} (at {utc_time(s.at_ts)})" for s in said]
        )
        citations = tuple(
            dict.fromkeys([f.citations[0] for f in profile.facts] + [s.citation for s in said])
        )
        steps = (
            *found.rounds,
            f"the profile of {profile.label}: {len(profile.facts)} fact(s), "
            f"{len(profile.statements)} statement(s) of {profile.candidates}",
        )
        return Answer(question, text, citations, (), steps)


# "Where was I on 3 October 2010?", "Where were we last weekend?": the period's positions
_WHERE_QUESTION = re.compile(r"^\s*where\s+(?:was|were|have)\s+(?:i|we)\b", re.IGNORECASE)
# "When was I last in Paris?", "When did I last go to Buzet?", "When did we visit Rakek?"
_WHEN_AT_QUESTION = re.compile(
    r"^\s*when\s+(?:was|were|did|have)\s+(?:i|we)\s+(?P<last>last\s+)?(?:(?:been|gone|go|went|travel\w*|get|got|come|"
    r"came)\s+)?(?:(?:in|at|to)\s+|visit(?:ed)?\s+)(?:the\s+)?(?P<place>[^?!.]{1,80}?)(?P<last_after>\s+last)?\s*[?.!]*\s*$",
    re.IGNORECASE,
)


def where_in_a_period(plan, before_ts: float | None = None) -> tuple[float, float] | None:
    """The one window a "Where was I …?" question names, cut at ``before_ts``, when it asks
    nothing else ("Where was I on 3 May?", "Where have I been this week?"); None for any other
    question: "Where was I working in 2019?" or "Where was I when Sarah called last Tuesday?" ask
    something a position does not answer, and are searched."""
    m = _WHERE_QUESTION.match(plan.question)
    if not m or len(plan.windows) != 1:
        return None
    w = plan.windows[0]
    rest = (
        re.sub(re.escape(w.text), " ", plan.question[m.end() :], flags=re.IGNORECASE)
        if w.text
        else ""
    )
    if set(re.findall(r"[a-z]+", rest.lower())) - _WHERE_FILLER:
        return None
    end = w.end_ts + 1e-3 if before_ts is None else min(w.end_ts + 1e-3, before_ts)
    return (w.start_ts, end) if end > w.start_ts else None


_WHERE_FILLER = frozenset(
    "been on in at during of the that this day week month year whole all".split()
)


def when_at_a_place(question: str) -> tuple[str, bool] | None:
    """The place a "When was I (last) in …?" question names, and whether it asks for the last time."""
    m = _WHEN_AT_QUESTION.match(question)
    return (m.group("place").strip(), bool(m.group("last") or m.group("last_after"))) if m else None


def _folded(text: str) -> str:
    """Lower case without accents: "Île-de-France" and "ile-de-france" are one place."""
    return "".join(
        c for c in unicodedata.normalize("NFKD", text.casefold()) if not unicodedata.combining(c)
    ).strip()


def same_place(asked: str, name: str) -> bool:
    """Whether a place named in a question is ``name`` ("Paris, Île-de-France, France") or one of
    its parts: "Paris", "France", "paris, france"."""
    parts = [_folded(p) for p in name.split(",")]
    wanted = [_folded(p) for p in asked.split(",") if p.strip()]
    return bool(wanted) and all(w in parts for w in wanted)


def place_memories(store: Store, before_ts: float | None = None) -> list[Memory]:
    """Every memory that puts the owner somewhere (``memorize.places.is_place_memory``)."""
    where = begins_as(PHOTO, STAY, MOVE)
    if before_ts is not None:
        where += f" AND start_ts < {before_ts!r}"
    return [m for m in store.memories_where(where) if is_place_memory(m.text)]


# "What do I know about Caroline?", "Tell me about Sheila", "Who is Diane?": a person's profile
_PERSON_QUESTION = re.compile(
    r"^\s*(?:what\s+do\s+(?:i|we|you)\s+know\s+about|tell\s+me\s+(?:everything\s+)?about|"
    r"who\s+is|who's)\s+(?P<who>[\w<>' .-]{1,80}?)\s*[?.!]*\s*$",
    re.IGNORECASE,
)
MYSELF = frozenset({"me", "myself"})
PROFILE_STATEMENTS = 5  # the latest things a person said of themself, in an answer about them


def about_a_person(question: str) -> str | None:
    """Whom a question asks about as a whole ("What do I know about Caroline?" -> "Caroline",
    "Tell me about myself" -> "myself"); None for any other question."""
    m = _PERSON_QUESTION.match(question)
    return m.group("who").strip().removesuffix("'s") if m else None


# "What happened on 8 May 2023?", "What did I do last Tuesday?", "How was my week?": a period's digest
_PERIOD_QUESTION = re.compile(
    r"^\s*(?:what\s+(?:happened|went\s+on|did\s+(?:i|we)\s+do|was\s+i\s+(?:doing|up\s+to))"
    r"|how\s+was\s+my\s+(?:day|week)|summari[sz]e)\b",
    re.IGNORECASE,
)
PERIOD_MAX_DAYS = 31  # a longer window is searched, not digested


def about_a_period(plan, before_ts: float | None = None) -> tuple[datetime, datetime] | None:
    """The one window a question asks what it held ("What happened on 8 May 2023?"), as UTC
    bounds, cut at ``before_ts``; None for any other question (one about a person or a thing is
    searched)."""
    if not _PERIOD_QUESTION.match(plan.question) or len(plan.windows) != 1:
        return None
    w = plan.windows[0]
    end = w.end_ts + 1e-3 if before_ts is None else min(w.end_ts + 1e-3, before_ts)
    if w.end_ts - w.start_ts > PERIOD_MAX_DAYS * 86400 or end <= w.start_ts:
        return None
    return datetime.fromtimestamp(w.start_ts, UTC), datetime.fromtimestamp(end, UTC)
