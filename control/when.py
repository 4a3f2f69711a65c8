"""Time expressions in questions -> time windows ("in June", "May 2023", "last week", "2023-05-08",
"3 days ago", "last Friday", "early June", "the summer of 2022"), and whether a question asks when,
and a text says when.

Deterministic and small: it recognises dates and periods people ask about, not every phrasing.
Relative expressions ("yesterday", "last week") and dates without a year are resolved against
``now`` (the newest thing in memory when asking about the past); a month, a day of a month or a
weekday without a year is its most recent occurrence at or before ``now``. Seasons are the northern
meteorological ones (summer: June to August). Numeric dates such as 08/05/2023 are left alone: they
read differently in the US and in Europe.

Not dateparser's ``search_dates``: it finds dates in questions that name none ("May I see…",
"which march") and is slower, and a wrong window would steer the planner's searches and bonus to
the wrong memories. The phrasings ``tests/test_when.py`` holds are the ones this module must read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {
    m: i
    for i, m in enumerate(
        "january february march april may june july august september october november december".split(),
        start=1,
    )
}
MONTHS |= {m[:3]: i for m, i in list(MONTHS.items())} | {"sept": 9}
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_YEAR = r"((?:19|20)\d\d)"
_WHEN = re.compile(r"\bwhen\b", re.IGNORECASE)
_DATED = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|recently|ago|since|last|next|morning|evening|night|"
    r"week|weekend|month|years?|(?:mon|tues|wednes|thurs|fri|satur|sun)day|"
    r"january|february|march|april|may|june|july|august|september|october|november|december|"
    r"(?:19|20)\d\d)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class TimeWindow:
    start_ts: float
    end_ts: float
    text: str  # the expression it came from

    def contains(self, start_ts: float, end_ts: float) -> bool:
        return end_ts >= self.start_ts and start_ts <= self.end_ts


def _month_span(year: int, month: int) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start, end


def _window(start: datetime, end: datetime, text: str) -> TimeWindow:
    return TimeWindow(start.timestamp(), end.timestamp() - 1e-3, text)


def time_windows(question: str, now: datetime) -> list[TimeWindow]:
    """The time windows a question names, in the order they appear (empty when it names none)."""
    q = question.lower()
    found: list[tuple[int, TimeWindow]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, start: datetime, end: datetime) -> None:
        if any(a < m.end() and m.start() < b for a, b in taken):
            return  # part of an expression already read ("8 may 2023" is not also "may 2023")
        taken.append((m.start(), m.end()))
        found.append((m.start(), _window(start, end, question[m.start() : m.end()])))

    for m in re.finditer(r"\b(\d{4})-(\d{2})-(\d{2})\b", q):
        day = _day(int(m.group(1)), int(m.group(2)), int(m.group(3)))
        if day:
            add(m, day, day + timedelta(days=1))
    for m in re.finditer(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH},? {_YEAR}\b", q):
        day = _day(int(m.group(3)), _month(m.group(2)), int(m.group(1)))
        if day:
            add(m, day, day + timedelta(days=1))
    for m in re.finditer(rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?,? {_YEAR}\b", q):
        day = _day(int(m.group(3)), _month(m.group(1)), int(m.group(2)))
        if day:
            add(m, day, day + timedelta(days=1))
    for m in re.finditer(rf"\b(early|mid|late)[- ]{_MONTH}(?:,? {_YEAR})?\b", q):
        month = _month(m.group(2))
        year = int(m.group(3)) if m.group(3) else _latest_year(now, month, 1)
        first, after = _month_span(year, month)
        third = {"early": 0, "mid": 1, "late": 2}[m.group(1)]
        add(
            m,
            first + timedelta(days=10 * third),
            first + timedelta(days=10 * (third + 1)) if third < 2 else after,
        )
    for m in re.finditer(rf"\b{_MONTH} (?:of )?last year\b", q):
        add(m, *_month_span(now.year - 1, _month(m.group(1))))
    for m in re.finditer(
        rf"\b(?:the )?(spring|summer|autumn|fall|winter)(?: of)?(?: {_YEAR})?\b", q
    ):
        if m.group(2) or re.search(r"\b(?:in|during|last|this|over) (?:the )?$", q[: m.start()]):
            add(m, *_season(m.group(1), int(m.group(2)) if m.group(2) else None, now))
    for m in re.finditer(rf"\b{_MONTH},? {_YEAR}\b", q):
        add(m, *_month_span(int(m.group(2)), _month(m.group(1))))
    for m in re.finditer(
        rf"\b{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?\b(?!:)", q
    ):  # "May 8th", not "may 2 people"
        if m.group(2) and (day := _latest_day(now, _month(m.group(1)), int(m.group(2)))):
            add(m, day, day + timedelta(days=1))
    for m in re.finditer(rf"\b(?:the )?(\d{{1,2}})(?:st|nd|rd|th)? of {_MONTH}\b", q):
        if day := _latest_day(now, _month(m.group(2)), int(m.group(1))):
            add(m, day, day + timedelta(days=1))
    for m in re.finditer(rf"\b(?:in|during|of|since|by|last|this) {_MONTH}\b", q):
        month = _month(m.group(1))
        add(m, *_month_span(_latest_year(now, month, 1), month))
    for m in re.finditer(rf"\b(?:in|during|of) {_YEAR}\b", q):
        year = int(m.group(1))
        add(
            m,
            datetime(year, 1, 1, tzinfo=UTC),
            datetime(year + 1, 1, 1, tzinfo=UTC),
        )
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    relative = {
        "today": (today, today + timedelta(days=1)),
        "yesterday": (today - timedelta(days=1), today),
        "last week": (
            today - timedelta(days=today.weekday() + 7),
            today - timedelta(days=today.weekday()),
        ),
        "this week": (today - timedelta(days=today.weekday()), today + timedelta(days=1)),
        "last month": _month_span(today.year - (today.month == 1), (today.month - 2) % 12 + 1),
        "this month": (_month_span(today.year, today.month)[0], today + timedelta(days=1)),
        "last year": (
            datetime(today.year - 1, 1, 1, tzinfo=UTC),
            datetime(today.year, 1, 1, tzinfo=UTC),
        ),
    }
    for m in re.finditer(rf"\b({_COUNT}) (day|week|month|year)s? ago\b", q):
        add(m, *_ago(today, _count(m.group(1)), m.group(2)))
    for m in re.finditer(r"\bthe day before yesterday\b", q):
        add(m, today - timedelta(days=2), today - timedelta(days=1))
    for m in re.finditer(rf"\b(?:last|on|this past) {_WEEKDAY}\b", q):
        back = (
            today.weekday() - _WEEKDAYS.index(m.group(1))
        ) % 7 or 7  # the latest one before today
        add(m, today - timedelta(days=back), today - timedelta(days=back - 1))
    for phrase, (start, end) in relative.items():
        for m in re.finditer(rf"\b{phrase}\b", q):
            add(m, start, end)
    return [w for _, w in sorted(found, key=lambda item: item[0])]


def asks_when(question: str) -> bool:
    return bool(_WHEN.search(question))


def says_when(text: str) -> bool:
    """Whether a text places something in time ("last week", "yesterday", "in May", "2022").

    The answer to "when" is mostly a dated turn (read with the session's own date)."""
    return bool(_DATED.search(text))


_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAY = "(" + "|".join(_WEEKDAYS) + ")"
_NUMBERS = {
    w: i
    for i, w in enumerate(
        "one two three four five six seven eight nine ten eleven twelve".split(), 1
    )
}
_NUMBERS["a"] = _NUMBERS["an"] = 1
_COUNT = r"\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
_SEASONS = {
    "spring": 3,
    "summer": 6,
    "autumn": 9,
    "fall": 9,
    "winter": 12,
}  # first month; three months each


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBERS[word]


def _ago(today: datetime, n: int, unit: str) -> tuple[datetime, datetime]:
    """The day ``n`` days before ``today``; for weeks, months and years a window centred on the day
    that long ago, as wide as the unit ("two weeks ago" is about 14 days back, give or take 3)."""
    if unit == "day":
        day = today - timedelta(days=n)
        return day, day + timedelta(days=1)
    days = {"week": 7, "month": 30, "year": 365}[unit]
    centre = today - timedelta(days=n * days)
    return centre - timedelta(days=days // 2), centre + timedelta(days=days - days // 2)


def _latest_year(now: datetime, month: int, day: int) -> int:
    """The year of the latest ``month``/``day`` at or before ``now``."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _latest_day(now: datetime, month: int, day: int) -> datetime | None:
    return _day(_latest_year(now, month, day), month, day)


def _season(name: str, year: int | None, now: datetime) -> tuple[datetime, datetime]:
    """A season's three months; winter 2022 starts in December 2022. Without a year: the latest
    season of that name that has begun by ``now``."""
    first = _SEASONS[name]
    if year is None:
        year = now.year if now.month >= first else now.year - 1
    start = datetime(year, first, 1, tzinfo=UTC)
    index = year * 12 + first - 1 + 3
    return start, datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def _month(name: str) -> int:
    return MONTHS["sept" if name.startswith("sept") else name[:3]]


def _day(year: int, month: int, day: int) -> datetime | None:
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------------
# relative times in a text, given their dates


def _date_text(start: datetime, end: datetime) -> str | None:
    days = (end - start).total_seconds() / 86400
    if days <= 1.01:
        return f"{start.day} {start:%B %Y}"
    if 6.9 <= days <= 7.1:
        return f"the week of {start.day} {start:%B %Y}"
    if 27.9 <= days <= 31.1 and start.day == 1:
        return f"{start:%B %Y}"
    if 364.9 <= days <= 366.1 and start.month == 1 and start.day == 1:
        return f"{start.year}"
    return None


_ABSOLUTE = re.compile(r"\b(?:19|20)\d\d\b")
_AHEAD = re.compile(r"\b(?:tomorrow|next (?:week|month|year))\b", re.IGNORECASE)


def _ahead(text: str, at: datetime) -> list[tuple[int, int, str]]:
    """Where ``text`` speaks of the near future ("tomorrow", "next month"), with its date
    (``control.when`` reads only the past, which is what questions ask about)."""
    out = []
    for m in _AHEAD.finditer(text):
        what = m.group(0).lower()
        if what == "tomorrow":
            day = at + timedelta(days=1)
            date = f"{day.day} {day:%B %Y}"
        elif what == "next week":
            monday = at - timedelta(days=at.weekday()) + timedelta(days=7)
            date = f"the week of {monday.day} {monday:%B %Y}"
        elif what == "next month":
            date = f"{datetime(at.year + (at.month == 12), at.month % 12 + 1, 1):%B %Y}"
        else:
            date = str(at.year + 1)
        out.append((m.start(), m.end(), date))
    return out


def resolve_dates(text: str, at: datetime) -> str:
    """``text`` with each relative time it names followed by its date in square brackets, as of
    ``at`` (when it was said): "yesterday" on 8 May 2023 -> "yesterday [7 May 2023]". Times that
    name their year are left as they are."""
    spans: list[tuple[int, int, str]] = []
    last = 0
    for w in time_windows(text, at):
        date = _date_text(
            datetime.fromtimestamp(w.start_ts, UTC), datetime.fromtimestamp(w.end_ts + 1e-3, UTC)
        )
        pos = text.lower().find(w.text.lower(), last)
        if _ABSOLUTE.search(w.text) or date is None or pos < 0:
            continue
        last = pos + len(w.text)
        spans.append((pos, last, date))
    spans += [a for a in _ahead(text, at) if not any(a[0] < e and s < a[1] for s, e, _ in spans)]
    out, last = [], 0
    for _, end, date in sorted(spans):
        out.append(text[last:end] + f" [{date}]")
        last = end
    return "".join(out) + text[last:]
