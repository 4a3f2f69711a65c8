"""What memory holds about one person: a profile read from the store when it is asked for, each
line citing its clips.

Like a digest (``control.digest``), a profile is never stored: it is a function of the memories
and people as they are at that moment, so a forgotten clip leaves nothing in it and a renamed or
merged person shows under their new name at once. It holds:

- **who**: name (and where it came from), voices and faces, first and last seen, in how many clips;
  for anyone but the owner, how many clips they share with the owner and when they were last
  together;
- **facts**: the semantic memories about them (where they are from and live, their name, what an
  LLM writer stated), each with the clips that stated it, when it was last confirmed, and the
  values it superseded (kept in the store with their validity, shown as "before");
- **in their own words**: the most salient things they said about themselves, sorted into topics
  (family, home and work, likes, plans, habits, what they did, other) by English cue words
  (``TOPICS``). Candidates are the sentences of their speech that speak in the first person and
  carry at least ``MIN_WORDS`` content words; the turns holding them are picked as digest moments
  are (``control.digest.select_moments``: centroid salience, maximal marginal relevance), about
  2·√n of n, at most ``STATEMENTS``. Offline a profile is extractive: it quotes, it does not
  paraphrase.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from control.citations import Citation, cite, known_names, render
from control.digest import MIN_WORDS, content_words, select_moments, shorter
from control.people import SAID
from graph import sql
from graph.resolve_people import Person, find_person, owner_of
from graph.rows import Memory
from graph.store import Store
from memorize.speech_facts import statements

STATEMENTS = 40  # at most this many things said, however much was said
# the speaker speaks of themself (or of "we": their family, their group)
_FIRST_PERSON = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|we've|our|us)\b", re.IGNORECASE
)
_FAMILY = (
    r"kids?|children|son|daughter|husband|wife|partner|mom|mum|mother|dad|father|parents?|brother|sister|"
    r"family|grandma|grandmother|grandpa|grandfather|grandkids?|baby|boyfriend|girlfriend|fianc[eé]e?|"
    r"cousin|aunt|uncle|niece|nephew|dogs?|cats?|pets?|puppy"
)
TOPICS = (
    (
        "family",
        re.compile(
            rf"\b(?:my|our) (?:\w+ )?(?:{_FAMILY})\b|\b(?:married|divorced|pregnant|adopt\w*)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "home and work",
        re.compile(
            r"\bI (?:live|work|moved|study|teach|run|own)\b|\bmy (?:job|work|career|boss|office|"
            r"company|business|school|class|degree|home|house|apartment|place|team|shop|store)\b|"
            r"\bI'm (?:a|an) \w+",
            re.IGNORECASE,
        ),
    ),
    (
        "likes",
        re.compile(
            r"\bI (?:really |just |absolutely )?(?:love|like|enjoy|adore|prefer)\b|\bmy favou?rite\b|"
            r"\bI'm (?:really |so )?(?:into|passionate about|a (?:big )?fan of)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "plans",
        re.compile(
            r"\bI(?:'m| am) (?:going to|planning|thinking (?:of|about)|hoping|looking forward)\b|"
            r"\bI (?:plan|want|hope|intend|will)\b|\bI'll\b|\bnext (?:week|month|year|summer)\b|"
            r"\bsomeday\b",
            re.IGNORECASE,
        ),
    ),
    (
        "habits",
        re.compile(
            r"\bI (?:usually|always|often|regularly|normally|sometimes)\b|"
            r"\bevery (?:day|morning|evening|night|week|weekend|month|year)\b|\bI've been \w+ing\b",
            re.IGNORECASE,
        ),
    ),
    (
        "what they did",
        re.compile(
            r"\b(?:I|[Ww]e)(?:'ve| have| just| finally| recently)? (?:\w+ed|went|took|got|made|"
            r"saw|met|ran|began|bought|built|found|wrote|gave|won|lost|left|read|taught|"
            r"drove|flew|grew|sold|spent|told|brought|started)\b"
        ),
    ),
)
OTHER = "other"
NAME_FROM = {
    "user": "named by you",
    "enrolled": "enrolled by name",
    "introduced": "introduced themself by this name",
    "addressed": "called by this name by others",
}


@dataclass(frozen=True)
class Fact:
    """A semantic memory about the person."""

    text: str  # with names
    relation: str
    value: str
    citations: tuple[Citation, ...]  # the clips that stated it, newest first
    since_ts: float
    confirmed_ts: float  # the newest clip that stated it
    before: tuple[tuple[str, float], ...] = ()  # (value, until) it superseded, newest first


@dataclass(frozen=True)
class Statement:
    topic: str
    text: str  # their first-person sentences of one turn, with names
    at_ts: float
    citation: Citation


@dataclass(frozen=True)
class Profile:
    person: Person
    is_owner: bool
    clips: int
    with_owner: int  # clips shared with the owner (0 for the owner, or with no owner marked)
    last_with_owner_ts: float | None
    facts: tuple[Fact, ...]
    statements: tuple[Statement, ...]
    candidates: int  # first-person turns the statements were picked from

    @property
    def label(self) -> str:
        return self.person.label

    def sentences(self) -> list[str]:
        """Every line the profile states (``bench profile`` scores these)."""
        return [f.text for f in self.facts] + [s.text for s in self.statements]

    def lines(self) -> list[str]:
        p = self.person
        day = lambda ts: datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")  # noqa: E731
        head = (
            p.label
            + (" (you)" if self.is_owner else "")
            + ": "
            + (NAME_FROM.get(p.name_source, p.name_source) if p.name else "no name yet")
        )
        out = [
            head,
            f"  ids: {', '.join(p.ids)}; seen {day(p.first_seen_ts)} to {day(p.last_seen_ts)}, in {self.clips} clip(s)",
        ]
        if self.with_owner and self.last_with_owner_ts is not None:
            out.append(
                f"  with you in {self.with_owner} clip(s), last on {day(self.last_with_owner_ts)}"
            )
        if self.facts:
            out.append("  facts:")
            for f in self.facts:
                out.append(
                    f"    {f.text}  (since {day(f.since_ts)}, last confirmed {day(f.confirmed_ts)}, "
                    f"{len(f.citations)} clip(s): {', '.join(c.clip_id for c in f.citations[:3])})"
                )
                out += [f"      before: {v} (until {day(t)})" for v, t in f.before]
        if self.statements:
            out.append("  in their own words:")
            for topic in [t for t, _ in TOPICS] + [OTHER]:
                said = [s for s in self.statements if s.topic == topic]
                if said:
                    out.append(f"    {topic}:")
                    out += [
                        f"      {day(s.at_ts)}  {shorter(s.text)}  [clip {s.citation.clip_id}]"
                        for s in said
                    ]
        if not self.facts and not self.statements:
            out.append("  nothing known about them yet beyond when they were seen")
        return out

    def to_json(self) -> dict:
        def iso(ts: float | None) -> str | None:
            return None if ts is None else datetime.fromtimestamp(ts, UTC).isoformat()

        p = self.person
        return {
            "id": p.person_id,
            "name": p.name or None,
            "name_source": p.name_source or None,
            "owner": self.is_owner,
            "voices": list(p.voices),
            "faces": list(p.faces),
            "first_seen": iso(p.first_seen_ts),
            "last_seen": iso(p.last_seen_ts),
            "clips": self.clips,
            "clips_with_owner": self.with_owner,
            "last_with_owner": iso(self.last_with_owner_ts),
            "facts": [
                {
                    "text": f.text,
                    "relation": f.relation,
                    "value": f.value,
                    "since": iso(f.since_ts),
                    "confirmed": iso(f.confirmed_ts),
                    "citations": [c.to_json() for c in f.citations],
                    "before": [{"value": v, "until": iso(t)} for v, t in f.before],
                }
                for f in self.facts
            ],
            "statements": [
                {"topic": s.topic, "text": s.text, "at": iso(s.at_ts), **s.citation.to_json()}
                for s in self.statements
            ],
        }


def topic_of(text: str) -> str:
    return next((name for name, cue in TOPICS if cue.search(text)), OTHER)


def about_themself(quote: str) -> str:
    """The sentences of ``quote`` in which the speaker speaks of themself, and that say something:
    not questions, at least ``MIN_WORDS`` content words between them ("" when none)."""
    kept = [s.strip() for s in statements(quote) if _FIRST_PERSON.search(s)]
    text = " ".join(kept)
    return text if len(content_words(text)) >= MIN_WORDS else ""


def statements_for(n: int, limit: int = STATEMENTS) -> int:
    return min(n, limit, max(3, round(2 * math.sqrt(n))))


def build(
    store: Store, who: str | None = None, me: str = "", limit: int = STATEMENTS, select=None
) -> Profile:
    """The profile of ``who`` (an id, a member id or a name; None: the owner, ``me`` when the store
    marks nobody). ``PeopleError`` names who exists when nobody matches; ``select(vectors, texts,
    limit)`` picks the statements (default: ``select_moments`` with ``statements_for``)."""
    from graph.resolve_people import PeopleError

    store.catch_up()
    people = store.people()
    owner = owner_of(people, me)
    if who is None:
        if owner is None:
            raise PeopleError(
                "nobody is marked as you: give a person's id or name, or mark yourself with "
                "`mnemo people me ID`"
            )
        person = owner
    else:
        person = find_person(people, who)
    ids = set(person.ids)
    names = known_names(people)
    if owner is not None and not owner.name:
        names |= {e: "me" for e in owner.ids}
    memories, vectors = store.memories_with_vectors(sql.involves(sorted(ids)))

    clips = {m.clip_id for m in memories}
    with_owner, last_together = 0, None
    if owner is not None and owner.person_id != person.person_id:
        shared = {
            m.clip_id: m.end_ts
            for m in store.about(list(owner.ids), limit=None)
            if m.clip_id in clips
        }
        with_owner, last_together = len(shared), (max(shared.values()) if shared else None)

    facts = _facts(store, [m for m in memories if m.kind == "semantic"], ids, names)
    candidates: list[tuple[int, str]] = []  # (memory index, what they said of themself)
    for i, m in enumerate(memories):
        said = SAID.search(m.text)
        if (
            m.kind == "episodic"
            and said
            and said.group(1) in ids
            and (text := about_themself(said.group(2)))
        ):
            candidates.append((i, text))
    statements = []
    if candidates:
        rows = vectors[[i for i, _ in candidates]]
        texts = [t for _, t in candidates]
        picked = (
            select or (lambda v, t, k: select_moments(v, t, k, want=statements_for(len(t), k)))
        )(rows, texts, limit)
        for j in sorted(picked, key=lambda j: memories[candidates[j][0]].start_ts):
            m, text = memories[candidates[j][0]], render(candidates[j][1], names)
            if (citation := cite(store, m)) is not None:
                statements.append(Statement(topic_of(text), text, m.start_ts, citation))
    return Profile(
        person,
        owner is not None and owner.person_id == person.person_id,
        len(clips),
        with_owner,
        last_together,
        tuple(facts),
        tuple(statements),
        len(candidates),
    )


def _facts(
    store: Store, semantic: list[Memory], ids: set[str], names: dict[str, str]
) -> list[Fact]:
    """The current semantic memories whose subject is one of ``ids``, most confirmed first, each with
    the values it superseded."""
    about = [m for m in semantic if m.fact and m.fact.split("|", 1)[0] in ids]
    current = [m for m in about if m.valid_to_ts is None]
    old = sorted(
        ((m, m.valid_to_ts) for m in about if m.valid_to_ts is not None), key=lambda pair: -pair[1]
    )
    clip_ids = {
        p.removeprefix("clip:") for m in about for p in m.provenance if p.startswith("clip:")
    } | {m.clip_id for m in about}
    clip_rows = {r["clip_id"]: r for r in store.get_clips(sorted(clip_ids))}
    out = []
    for m in current:
        _, relation, value = m.fact.split("|", 2)
        stated = [
            c
            for c in dict.fromkeys(
                [m.clip_id]
                + [p.removeprefix("clip:") for p in m.provenance if p.startswith("clip:")]
            )
            if c in clip_rows
        ]
        if not stated:  # its clips are gone (forgotten) or not committed yet
            continue
        stated.sort(key=lambda c: -clip_rows[c]["start_ts"])
        citations = tuple(
            Citation(
                c,
                clip_rows[c]["source_path"],
                clip_rows[c]["offset_s"],
                clip_rows[c]["offset_s"] + clip_rows[c]["duration_s"],
            )
            for c in stated
        )
        before = tuple(
            (o.fact.split("|", 2)[2], ended)
            for o, ended in old
            if o.fact.split("|", 2)[:2] == m.fact.split("|", 2)[:2]
        )
        out.append(
            Fact(
                render(m.text, names),
                relation,
                value,
                citations,
                m.valid_from_ts if m.valid_from_ts is not None else m.start_ts,
                clip_rows[stated[0]]["start_ts"],
                before,
            )
        )
    return sorted(out, key=lambda f: (-len(f.citations), -f.confirmed_ts, f.text))
