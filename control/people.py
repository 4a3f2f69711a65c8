"""People as the user sees them: who, by what name and from where, heard and seen when, in how
many clips, and something they said. ``mnemo people``, ``GET /people`` and the MCP ``list_people``
tool all show this one listing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from control.citations import known_names, render
from graph.resolve_people import Person
from graph.store import Store

QUOTE_CHARS = 160  # a sample quote is a reminder of who this is, not the transcript
# a speech memory: `<voice_2> said: "…"` (older stores: `Name (<voice_2>) said: "…"`); the id
# before "said" is the speaker, any other id in the text is someone spoken about
SAID = re.compile(r'<((?:voice|face|character)_\d+)>\)? said: "(.*)"\s*$', re.DOTALL)


@dataclass(frozen=True)
class PersonSummary:
    person: Person
    clips: int  # clips holding a memory that involves any of the person's entities
    quote: str  # the longest thing they were heard saying, names resolved ("" when none)
    quote_clip_id: str = ""


def summarize_people(
    store: Store, people: list[Person] | None = None, names: dict[str, str] | None = None
) -> list[PersonSummary]:
    """Everyone in memory (``people``, default: ``store.people()``) with their clip count and a
    sample quote, from one memory query over all their entities, whatever the number of people.
    ``names``: how to name people the quotes speak of (default: ``people``'s names)."""
    people = store.people() if people is None else people
    owner = {e: p.person_id for p in people for e in p.ids}
    clips: dict[str, set[str]] = {p.person_id: set() for p in people}
    best: dict[str, tuple[str, str]] = {}  # person -> (quote, clip id)
    for m in store.about(list(owner), limit=None):
        for pid in {owner[e] for e in m.entity_ids if e in owner}:
            clips[pid].add(m.clip_id)
        said = SAID.search(m.text)
        if said and said.group(1) in owner:
            pid, quote = owner[said.group(1)], said.group(2).strip()
            if len(quote) > len(best.get(pid, ("", ""))[0]):
                best[pid] = (quote, m.clip_id)
    names = known_names(people) if names is None else names
    out = []
    for p in people:
        quote, clip_id = best.get(p.person_id, ("", ""))
        quote = render(quote, names)
        if len(quote) > QUOTE_CHARS:
            quote = quote[: QUOTE_CHARS - 1].rstrip() + "…"
        out.append(PersonSummary(p, len(clips[p.person_id]), quote, clip_id))
    return out


@dataclass(frozen=True)
class OwnerProposal:
    """Whom mnemo would propose as the owner, and why: the person whose voice is heard on the most
    days, then in the most recordings and clips; ``runner_up`` the next, for comparison."""

    person: Person
    days: int
    recordings: int
    clips: int
    of_days: int
    of_recordings: int
    runner_up: tuple[Person, int, int] | None = None  # (person, days, recordings)


def propose_owner(store: Store, people: list[Person] | None = None) -> OwnerProposal | None:
    """The voice heard across most days and recordings (the one who carries the recorder is in
    nearly all of them), as a proposal for the user to confirm; None when nobody was heard, or
    when two are heard equally (no evidence tells them apart)."""
    people = [p for p in (store.people() if people is None else people) if p.voices]
    owner = {v: p.person_id for p in people for v in p.voices}
    seen: dict[str, tuple[set, set, set]] = {p.person_id: (set(), set(), set()) for p in people}
    all_days, all_sources = set(), set()
    for m in store.about(list(owner), limit=None):
        said = SAID.search(m.text)
        if not said or said.group(1) not in owner:  # heard speaking, not spoken about
            continue
        day = datetime.fromtimestamp(m.start_ts).date()  # the user's days, in local time
        days, sources, clips = seen[owner[said.group(1)]]
        days.add(day)
        sources.add(m.source_path)
        clips.add(m.clip_id)
    for row in store.clips.search().select(["source_path", "start_ts"]).limit(None).to_list():
        all_days.add(datetime.fromtimestamp(row["start_ts"]).date())
        all_sources.add(row["source_path"])
    counts = {
        pid: tuple(len(x) for x in sets) for pid, sets in seen.items()
    }  # (days, recordings, clips)
    ranked = sorted(
        (p for p in people if counts[p.person_id][2]),
        key=lambda p: tuple(-n for n in counts[p.person_id]) + (p.person_id,),
    )
    if not ranked or (
        len(ranked) > 1 and counts[ranked[0].person_id] == counts[ranked[1].person_id]
    ):
        return None
    best = ranked[0]
    n_days, n_sources, n_clips = counts[best.person_id]
    second = ranked[1] if len(ranked) > 1 else None
    runner = (
        (second, counts[second.person_id][0], counts[second.person_id][1])
        if second is not None
        else None
    )
    return OwnerProposal(best, n_days, n_sources, n_clips, len(all_days), len(all_sources), runner)
