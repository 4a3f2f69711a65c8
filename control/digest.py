"""Days and weeks: what the clips of a period hold, as a digest a person reads at a glance, each
moment citing its clip.

A digest is read from the store when it is asked for, never stored: it is a function of the clips,
memories and people as they are at that moment. A forgotten clip therefore leaves nothing in any
digest, and a renamed or merged person shows under their new name at once (names are resolved when
read, as everywhere). Offline a digest is extractive:

- **when**: the first and last activity (clip starts and ends), how many clips, from which recordings;
- **with whom**: the people whose face or voice is in the period's memories, by the number of clips
  they are in, the owner apart ("I", ``mnemo people me``);
- **in front**: the application windows of captured screens, by the time each was in front;
- **places**: where the owner was: the places of the period's photos (their GPS) and of its GPS
  tracks' stays and moves, named offline, in the order first seen, with the time stayed there;
- **moments**: the most salient memories of the period, in time order, each citing its clip.
  Salience is centroid-based extractive summarisation: each memory's stored vector against the
  mean of the period's, plus ``INFO_WEIGHT`` times the log of its content words (a long turn tells
  more than "Thanks, you too!") and ``EVENT_WEIGHT`` when someone tells what they did ("I went",
  "we adopted": ``REPORTED_EVENT``, English); picked greedily with maximal marginal relevance
  (``MMR_LAMBDA``) so that one topic does not take every line, and one nearly the same as a moment
  picked (``DUPLICATE``) not while anything else is left. On the LoCoMo dev days (``mnemo bench
  digest``) centroid alone stated fewer of the dataset's events than the day's first turns; these
  two terms were chosen there, and the bench prints the words each way uses beside its recall. Memories that only say someone was visible, which window was
  in front or what a scene showed feed the sections above instead; a sentence of fewer than
  ``MIN_WORDS`` content words ("Hi! How are you?") is no moment.

The bounds of a day are midnight to midnight in the zone it is asked in (the user's local zone on
the command line); a week runs Monday to Monday (ISO).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo

import numpy as np

from control.citations import Citation, cite, known_names, render
from graph.resolve_people import Person, owner_of
from graph.rows import Memory
from graph.store import Store
from memorize.places import MOVE, STAY, begins_as, is_place_memory, places_in

MMR_LAMBDA = 0.7  # weight of salience against novelty when picking the next moment
INFO_WEIGHT = 0.1  # salience added per log(1 + content words)
EVENT_WEIGHT = 0.2  # salience added to a memory that tells what someone did
REPORTED_EVENT = re.compile(
    r"\b(?:I|[Ww]e)(?:'ve| have| just| finally| recently)? (?:\w+ed|went|took|got|made|saw|"
    r"met|ran|began|started|joined|bought|found|had|did|gave|won|lost|left|told|wrote|"
    r"read|built|drew|sang|flew|drove|came|became|felt|kept)\b"
)
DUPLICATE = (
    0.9  # a memory this similar to a moment already picked says the same again: never picked
)
MIN_WORDS = 4  # content words a memory needs to be a moment
DAY_MOMENTS = 12  # at most this many moments in a day; a week keeps WEEK_MOMENTS
WEEK_MOMENTS = 20
# the offline writer's memories that feed the sections rather than the moments (memorize.writer_offline)
_PRESENCE = re.compile(r"^<(?:face|voice|character)_\d+> is visible from ")
_APP = re.compile(r"^Using (.+) from \d{1,2}:\d{2}(?::\d{2})? to ")
_SCENE = re.compile(r"^The scene shows: ")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+|\d+")
STOPWORDS = frozenset(
    """a an and are as at be been but by did do does for from had has have he her hers him his how i
if in into is it its just me my of oh on or our ours she so that the their them then there they this to too us was we
were what when where which who why will with would you your yours yeah yes no not ok okay hey hi hello well really
said says say get got can could should about all any some very much more most than also been being am""".split()
)


def stem(word: str) -> str:
    """A crude stem: "painting", "painted", "paints" -> "paint" (a suffix off, three letters left)."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def content_words(text: str) -> list[str]:
    """Lower-case words of ``text`` that are not stopwords (``<voice_1>`` and the like left out)."""
    return [
        w
        for w in (m.group(0).lower() for m in _WORD.finditer(re.sub(r"<[^>]+>", " ", text)))
        if w not in STOPWORDS
    ]


@dataclass(frozen=True)
class Moment:
    at_ts: float
    text: str  # the memory, with names
    citation: Citation
    memory: Memory


@dataclass(frozen=True)
class PlaceSeen:
    """A named place of the period: photos taken there, time stayed there (GPS tracks), and the
    first memory that put the owner there."""

    name: str
    photos: int
    stayed_s: float
    citation: Citation

    @property
    def summary(self) -> str:
        said = ([f"stayed {_minutes(self.stayed_s)}"] if self.stayed_s else []) + (
            [f"{self.photos} photo(s)"] if self.photos else []
        )
        return f"{self.name} ({', '.join(said) or 'passed through'})"


@dataclass(frozen=True)
class DaySummary:
    """One day of a week: when it began and ended, how many clips, with whom."""

    day: date
    clips: int
    first_ts: float
    last_ts: float
    people: tuple[str, ...]


@dataclass(frozen=True)
class Digest:
    period: str  # "day", "week", or "period" (any other window a question names)
    start: datetime  # inclusive, zone-aware
    end: datetime  # exclusive
    clips: int = 0
    sources: tuple[str, ...] = ()
    first_ts: float | None = None
    last_ts: float | None = None
    owner: str = ""  # the owner's name or id, "" while nobody is marked
    people: tuple[
        tuple[str, int], ...
    ] = ()  # (name or id, clips together), most first; the owner apart
    apps: tuple[
        tuple[str, float], ...
    ] = ()  # (application and window, seconds in front), longest first
    places: tuple[PlaceSeen, ...] = ()  # in the order first seen
    moments: tuple[Moment, ...] = ()
    days: tuple[DaySummary, ...] = ()  # a week: its days that hold anything
    span: tuple[float, float] | None = (
        None  # what the whole store holds, to say so when this is empty
    )

    @property
    def empty(self) -> bool:
        return (
            self.clips == 0 and not self.places
        )  # a day spent in a stay that began the day before is not empty

    @property
    def title(self) -> str:
        if self.period == "day":
            return f"{self.start:%A %d %B %Y}"
        if self.period == "week":
            return f"the week of {self.start:%A %d %B %Y}"
        return f"{self.start:%d %B %Y} to {(self.end - timedelta(seconds=1)):%d %B %Y}"

    def _clock(self, ts: float) -> str:
        at = datetime.fromtimestamp(ts, self.start.tzinfo)
        return f"{at:%H:%M}" if self.period == "day" else f"{at:%a %d %b %H:%M}"

    def lines(self) -> list[str]:
        """The digest as a person reads it."""
        zone = self.start.strftime("%Z") or self.start.strftime("%z")
        out = [f"{self.title} ({zone})"]
        if self.empty:
            held = ""
            if self.span is not None:
                tz = self.start.tzinfo
                held = (
                    f"; the store holds clips from {datetime.fromtimestamp(self.span[0], tz):%d %B %Y} to "
                    f"{datetime.fromtimestamp(self.span[1], tz):%d %B %Y}"
                )
            return out + [f"  nothing in memory for {self.title}{held}"]
        if self.clips and self.first_ts is not None and self.last_ts is not None:
            out.append(
                f"  {self.clips} clip(s) from {self._clock(self.first_ts)} to {self._clock(self.last_ts)}, "
                f"from {len(self.sources)} recording(s): "
                + ", ".join(self.sources[:3])
                + (f" and {len(self.sources) - 3} more" if len(self.sources) > 3 else "")
            )
        if self.owner:
            out.append(f"  you are {self.owner}")
        if self.people:
            out.append("  with: " + ", ".join(f"{name} ({n} clip(s))" for name, n in self.people))
        if self.apps:
            out.append("  in front: " + ", ".join(f"{name} {_minutes(s)}" for name, s in self.apps))
        if self.places:
            out.append("  places: " + ", ".join(p.summary for p in self.places))
        for d in self.days:
            at = lambda ts: f"{datetime.fromtimestamp(ts, self.start.tzinfo):%H:%M}"  # noqa: E731
            out.append(
                f"  {d.day:%a %d %b}: {d.clips} clip(s), {at(d.first_ts)} to {at(d.last_ts)}"
                + (" with " + ", ".join(d.people) if d.people else "")
            )
        if self.moments:
            out.append("  moments:")
            out += [
                f"    {self._clock(m.at_ts)}  {shorter(m.text)}  [clip {m.citation.clip_id}]"
                for m in self.moments
            ]
        return out

    def to_json(self) -> dict:
        def iso(ts: float | None) -> str | None:
            return None if ts is None else datetime.fromtimestamp(ts, self.start.tzinfo).isoformat()

        return {
            "period": self.period,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "clips": self.clips,
            "sources": list(self.sources),
            "first": iso(self.first_ts),
            "last": iso(self.last_ts),
            "owner": self.owner or None,
            "people": [{"name": n, "clips": c} for n, c in self.people],
            "apps": [{"name": n, "seconds": round(s, 1)} for n, s in self.apps],
            "places": [
                {
                    "name": p.name,
                    "photos": p.photos,
                    "stayed_s": round(p.stayed_s, 1),
                    "clip_id": p.citation.clip_id,
                }
                for p in self.places
            ],
            "days": [
                {
                    "date": d.day.isoformat(),
                    "clips": d.clips,
                    "first": iso(d.first_ts),
                    "last": iso(d.last_ts),
                    "people": list(d.people),
                }
                for d in self.days
            ],
            "moments": [
                {
                    "at": iso(m.at_ts),
                    "text": m.text,
                    "clip_id": m.citation.clip_id,
                    "source": m.citation.source,
                    "start_s": round(m.citation.start_s, 2),
                    "end_s": round(m.citation.end_s, 2),
                }
                for m in self.moments
            ],
        }


def shorter(text: str, most: int = 300) -> str:
    """A memory as a line: a whole screen of text cut short (the JSON keeps all of it)."""
    return text if len(text) <= most else text[: most - 1].rstrip() + "…"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _midnight(day: date, tz: tzinfo | None) -> datetime:
    # no zone: this machine's, with the offset in force on that day (summer time or not)
    return (
        datetime.combine(day, time(), tz)
        if tz is not None
        else datetime.combine(day, time()).astimezone()
    )


def day_bounds(day: date, tz: tzinfo | None = None) -> tuple[datetime, datetime]:
    return _midnight(day, tz), _midnight(day + timedelta(days=1), tz)


def week_bounds(day: date, tz: tzinfo | None = None) -> tuple[datetime, datetime]:
    monday = day - timedelta(days=day.weekday())
    return _midnight(monday, tz), _midnight(monday + timedelta(days=7), tz)


def parse_day(text: str, now: datetime) -> date:
    """A date as a person types it: ``2023-05-08``, ``today``, ``yesterday``, ``last Tuesday``,
    ``8 May 2023``, ``May 8`` (the latest at or before ``now``, read on ``now``'s calendar);
    ``ValueError`` saying what is read otherwise."""
    from control.when import time_windows

    text = text.strip()
    try:
        return date.fromisoformat(text)
    except ValueError:
        pass
    # control.when reads on a UTC calendar: give it the local wall clock as if it were UTC
    wall = now.replace(tzinfo=UTC)
    windows = time_windows(text, wall)
    if len(windows) == 1 and windows[0].end_ts - windows[0].start_ts < 86400:
        return datetime.fromtimestamp(windows[0].start_ts, UTC).date()
    raise ValueError(
        f"{text!r} is not a day mnemo reads; write e.g. 2023-05-08, today, yesterday, last Tuesday "
        "or 8 May 2023"
    )


def build(
    store: Store,
    start: datetime,
    end: datetime,
    period: str = "day",
    me: str = "",
    max_moments: int | None = None,
    select=None,
) -> Digest:
    """The digest of the clips that begin in ``[start, end)`` (zone-aware bounds); ``me``: the
    owner when the store marks nobody (``[people] me``); ``select(vectors, texts, limit)``: which of the
    candidate moments to keep (default ``select_moments``; ``bench digest`` compares others)."""
    if start.tzinfo is None or end.tzinfo is None:
        raise ValueError("a digest's bounds need a time zone")
    a, b = start.timestamp(), end.timestamp()
    where = f"start_ts >= {a!r} AND start_ts < {b!r}"
    store.catch_up()
    clips = sorted(
        store.clips.search()
        .where(where)
        .select(["clip_id", "source_path", "start_ts", "end_ts"])
        .limit(None)
        .to_list(),
        key=lambda r: (r["start_ts"], r["clip_id"]),
    )
    # a stay or a move that began before the period and reaches into it: the owner was there too
    earlier = [
        m
        for m in store.memories_where(
            f"start_ts < {a!r} AND end_ts > {a!r} AND {begins_as(STAY, MOVE)}"
        )
        if is_place_memory(m.text)
    ]
    if not clips:
        return Digest(period, start, end, places=_places(store, earlier, a, b), span=_span(store))
    in_period = {r["clip_id"] for r in clips}
    memories, vectors = store.memories_with_vectors(where)
    keep = [i for i, m in enumerate(memories) if m.clip_id in in_period and m.valid_to_ts is None]
    memories, vectors = [memories[i] for i in keep], vectors[keep]
    people = store.people()
    owner = owner_of(people, me)
    names = known_names(people)
    if owner is not None and not owner.name:
        names |= {e: "me" for e in owner.ids}
    person_of = {e: p for p in people for e in p.ids}

    together: dict[str, set[str]] = defaultdict(set)  # person id -> clips
    in_front: Counter[str] = Counter()
    candidates: list[int] = []
    for i, m in enumerate(memories):
        for e in m.entity_ids:
            if (p := person_of.get(e)) is not None:
                together[p.person_id].add(m.clip_id)
        if app := _APP.match(m.text):
            # seconds in front: Counter holds any number, though typeshed types its counts as int
            in_front[app.group(1)] += max(m.end_ts - m.start_ts, 1.0)  # type: ignore[assignment]
        elif is_place_memory(m.text):
            earlier.append(m)
        elif (
            not (_PRESENCE.match(m.text) or _SCENE.match(m.text))
            and len(content_words(m.text)) >= MIN_WORDS
        ):
            candidates.append(i)
    by_id = {p.person_id: p for p in people}
    with_whom = tuple(
        (by_id[pid].label, len(cs))
        for pid, cs in sorted(together.items(), key=lambda kv: (-len(kv[1]), by_id[kv[0]].label))
        if owner is None or pid != owner.person_id
    )
    limit = (
        max_moments
        if max_moments is not None
        else (WEEK_MOMENTS if period != "day" else DAY_MOMENTS)
    )
    picked = (
        (select or select_moments)(
            vectors[candidates], [memories[i].text for i in candidates], limit
        )
        if candidates
        else []
    )
    moments = []
    for j in sorted(
        picked, key=lambda j: (memories[candidates[j]].start_ts, memories[candidates[j]].memory_id)
    ):
        m = memories[candidates[j]]
        if (citation := cite(store, m)) is not None:
            moments.append(Moment(m.start_ts, render(m.text, names), citation, m))
    return Digest(
        period,
        start,
        end,
        len(clips),
        tuple(dict.fromkeys(r["source_path"] for r in clips)),
        clips[0]["start_ts"],
        max(r["end_ts"] for r in clips),
        owner.label if owner is not None and owner.name else ("me" if owner is not None else ""),
        with_whom,
        tuple(in_front.most_common(5)),
        _places(store, earlier, a, b),
        tuple(moments),
        _days(clips, memories, person_of, owner, start.tzinfo) if period == "week" else (),
    )


def _places(store: Store, memories: list[Memory], a: float, b: float) -> tuple[PlaceSeen, ...]:
    """The named places of these memories (photos, stays, moves) in time order, with the photos
    taken and the time stayed there within ``[a, b)``."""
    places: dict[str, list] = {}  # name -> [photos, seconds stayed, citation]
    for m in sorted(memories, key=lambda m: (m.start_ts, m.memory_id)):
        for name in dict.fromkeys(places_in(m.text)):
            if name not in places and (citation := cite(store, m)) is not None:
                places[name] = [0, 0.0, citation]
            if name in places:
                places[name][0] += m.text.startswith("A photo")
                if m.text.startswith("Stayed "):
                    places[name][1] += max(0.0, min(m.end_ts, b) - max(m.start_ts, a))
    return tuple(PlaceSeen(n, *p) for n, p in places.items())


def moments_for(n: int, limit: int) -> int:
    """How many moments a period of ``n`` candidate memories gets: about 2·√n, 3 at least, ``limit`` at most."""
    return min(n, limit, max(3, round(2 * math.sqrt(n))))


def select_moments(
    vectors: np.ndarray, texts: list[str], limit: int, want: int | None = None
) -> list[int]:
    """Indexes of the salient ``texts`` (``vectors``: theirs, one row each), picked with maximal
    marginal relevance, ``want`` of them (default ``moments_for(len(texts), limit)``; see the module doc)."""
    n = len(vectors)
    want = moments_for(n, limit) if want is None else want
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    centroid = unit.mean(axis=0)
    salience = (
        unit @ (centroid / max(float(np.linalg.norm(centroid)), 1e-9))
        + INFO_WEIGHT * np.log1p([len(content_words(t)) for t in texts])
        + EVENT_WEIGHT
        * np.array([REPORTED_EVENT.search(t) is not None for t in texts], dtype=np.float32)
    )
    picked: list[int] = []
    closest = np.full(n, -np.inf)  # each row's similarity to the nearest picked one
    for _ in range(want):
        score = MMR_LAMBDA * salience - (1 - MMR_LAMBDA) * np.where(
            np.isfinite(closest), closest, 0.0
        )
        score[picked] = -np.inf
        if np.isfinite(score[closest < DUPLICATE]).any():
            score[closest >= DUPLICATE] = -np.inf
        best = int(np.argmax(score))
        if not np.isfinite(score[best]):
            break
        picked.append(best)
        closest = np.maximum(closest, unit @ unit[best])
    return picked


def _days(
    clips: list[dict],
    memories: list[Memory],
    person_of: dict[str, Person],
    owner: Person | None,
    tz: tzinfo,
) -> tuple[DaySummary, ...]:
    of_day: dict[date, list[dict]] = defaultdict(list)
    for r in clips:
        of_day[datetime.fromtimestamp(r["start_ts"], tz).date()].append(r)
    day_of_clip = {r["clip_id"]: d for d, rs in of_day.items() for r in rs}
    seen: dict[date, Counter[str]] = defaultdict(Counter)
    for m in memories:
        labels = {
            person_of[e].label
            for e in m.entity_ids
            if e in person_of and (owner is None or person_of[e].person_id != owner.person_id)
        }
        seen[day_of_clip[m.clip_id]].update(labels)
    return tuple(
        DaySummary(
            d,
            len(rs),
            rs[0]["start_ts"],
            max(r["end_ts"] for r in rs),
            tuple(name for name, _ in seen[d].most_common(3)),
        )
        for d, rs in sorted(of_day.items())
    )


def _span(store: Store) -> tuple[float, float] | None:
    """When the store's first clip starts and its last one ends (None when it holds none): one read."""
    rows = store.clips.search().select(["start_ts", "end_ts"]).limit(None).to_arrow()
    if not rows.num_rows:
        return None
    return float(min(rows["start_ts"].to_pylist())), float(max(rows["end_ts"].to_pylist()))
