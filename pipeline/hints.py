"""The names each clip's speech may hold, told to the recogniser (``perception.speech.hints``).

Most wanted first: names the user gave (``mnemo people name``), the contact list's, names already
established from what was said, then given names read on screen the same day (a chat window, a
calendar invite). The user's and the contact list's spellings win over a same-sounding one. Names
learnt during an ingest count for its later clips: a name heard right once is heard right after.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime, timedelta

from graph.store import Store
from memorize.given_names import is_given_name
from memorize.memorizer import ClipWrite
from perception.records import Clip, ClipObservations
from perception.speech.hints import SpeechHints
from pipeline.jobs import ClipJob

MAX_SCREEN_NAMES = 20  # a day's most frequent; screens show many capitalised words
_CAPITALISED = re.compile(r"\b[A-Z][a-z]{2,}\b")
# words screens are full of that some name lists hold
_SCREEN_WORDS = frozenset(
    "file edit view help tools window new open save close home page print search settings "
    "options about format insert table data share send reply forward delete archive today "
    "monday tuesday wednesday thursday friday saturday sunday january february march april may "
    "june july august september october november december summer autumn winter spring "
    "chat call meeting invite calendar event contacts inbox mail message messages video "
    "music photo photos news terminal desktop downloads documents pictures".split()
)


def screen_names(texts: Iterable[str]) -> Counter[str]:
    """Given names written on screen (capitalised, listed as a first name, not a UI word), counted."""
    found: Counter[str] = Counter()
    for text in texts:
        for word in _CAPITALISED.findall(text or ""):
            if word.casefold() not in _SCREEN_WORDS and is_given_name(word):
                found[word] += 1
    return found


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts).date().isoformat()


class HintBook:
    def __init__(self, store: Store, contacts: Iterable[str] = ()) -> None:
        self.store = store
        self.contacts = tuple(contacts)
        self.user: list[str] = []
        self.established: list[str] = []
        for person in store.people():
            if person.name and person.name_source == "user":
                self.user.append(person.name)
            elif person.name:
                self.established.append(person.name)
        self._screens: dict[str, Counter[str]] = {}  # day -> names read on screen that day

    def _screen_day(self, day: str) -> Counter[str]:
        if day not in self._screens:
            start = datetime.fromisoformat(day).timestamp()
            end = (datetime.fromisoformat(day) + timedelta(days=1)).timestamp()
            rows = self.store.clips_in_range(start, end, limit=None)
            self._screens[day] = screen_names(r.get("screen_text", "") for r in rows)
        return self._screens[day]

    def for_clip(self, clip: Clip) -> SpeechHints:
        """The hints for this clip's speech (names of the day it was recorded on)."""
        screen = self._screen_day(_day(clip.start_ts))
        on_screen = [n for n, _ in screen.most_common(MAX_SCREEN_NAMES)]
        names = _unique([*self.user, *self.contacts, *self.established, *on_screen])
        spellings = _unique([*self.user, *self.contacts])
        return SpeechHints(tuple(names), tuple(spellings))

    def hinted(self, job: ClipJob) -> ClipJob:
        """The job with its hints: only a recording's clips have speech to hint (a screenshot
        clip or a GPS stretch is left as it is, and costs no look at the store)."""
        if job.screens is not None or job.track is not None:
            return job
        return replace(job, hints=self.for_clip(job.clip))

    def learn(self, obs: ClipObservations, written: ClipWrite) -> None:
        """What a clip just memorized adds: names established for people, names on its screens."""
        for e in written.entities:
            if e.kind == "character" and e.name and e.name not in self.established:
                self.established.append(e.name)
        texts = [obs.screen_text] if obs.screen_text else []
        if texts:
            day = _day(obs.clip.start_ts)
            self._screen_day(day).update(screen_names(texts))


def _unique(names: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for n in names:
        if n and n.casefold() not in seen:
            seen.add(n.casefold())
            out.append(n)
    return out
