"""The agent's tools over the memory graph: search, a person's memories, a time range, a clip, people.

Thin, typed reads over ``graph.Store`` that both the offline planner and the LLM loop call. A
person is a character with the face and voice entities linked to it; asking about a person by name
or by any of their ids finds memories that involve any of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from graph.resolve_people import PeopleError, Person, find_person, owner_of
from graph.rows import Hit, Memory
from graph.store import Store


@dataclass(frozen=True)
class ClipView:
    clip_id: str
    source: str
    media_location: str
    start_ts: float
    end_ts: float
    transcript: str
    screen_text: str
    caption: str


class MemoryTools:
    def __init__(self, store: Store, me: str = "") -> None:
        """``me``: who the owner is when the store marks nobody (``[people] me``: an id or a name)."""
        self.store = store
        self.me = me

    def list_people(self) -> list[Person]:
        """Everyone in memory, resolved now: names, merges and splits as the user left them."""
        return self.store.people()

    def owner(self, people: list[Person] | None = None) -> Person | None:
        """Whose memory this is ("I" in a question): as marked, else as configured, else None."""
        return owner_of(self.list_people() if people is None else people, self.me)

    def person(self, who: str, people: list[Person] | None = None) -> Person:
        """A person by name (case-insensitive) or by any of their entity ids (``character_2``,
        ``<voice_1>``), among ``people`` (default: ``list_people()``); ``ValueError`` naming the
        known people otherwise."""
        try:
            return find_person(self.list_people() if people is None else people, who)
        except PeopleError as e:
            raise ValueError(str(e)) from None

    def search(self, query: str, k: int = 10, **filters) -> list[Hit]:
        return self.store.search(query, k=k, **filters)

    def about_person(self, who: str, limit: int = 50) -> list[Memory]:
        p = self.person(who)
        return self.store.about(list(p.ids), limit)

    def in_time_range(self, start_ts: float, end_ts: float, limit: int = 100) -> list[Memory]:
        if end_ts < start_ts:
            raise ValueError(f"the time range ends ({end_ts}) before it starts ({start_ts})")
        return self.store.in_time_range(start_ts, end_ts, limit)

    def read_clip(self, clip_id: str) -> ClipView:
        row = self.store.get_clip(clip_id)
        if row is None:
            raise ValueError(f"no committed clip {clip_id!r} in {self.store.uri}")
        return ClipView(
            row["clip_id"],
            row["source_path"],
            row["media_location"],
            row["start_ts"],
            row["end_ts"],
            row["transcript"],
            row["screen_text"],
            row["caption"],
        )
