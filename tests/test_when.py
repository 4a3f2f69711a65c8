"""Time expressions in questions: 30 phrasings with the window each must give, and questions that
name no time and must give none. The same set measured dateparser (see control/when.py)."""

from datetime import UTC, datetime

import pytest

from control.when import time_windows

NOW = datetime(2023, 8, 15, 12, tzinfo=UTC)  # a Tuesday


def D(y: int, m: int, d: int) -> datetime:
    return datetime(y, m, d, tzinfo=UTC)


# question -> the span it names (the window must hold it and be at most about three times as wide)
NAMED = [
    ("What did I buy in June?", (D(2023, 6, 1), D(2023, 7, 1))),
    (
        "What did I buy in September?",
        (D(2022, 9, 1), D(2022, 10, 1)),
    ),  # no year: the latest September
    ("What happened in May 2023?", (D(2023, 5, 1), D(2023, 6, 1))),
    ("Who did I meet on 8 May 2023?", (D(2023, 5, 8), D(2023, 5, 9))),
    ("Who did I meet on May 8, 2023?", (D(2023, 5, 8), D(2023, 5, 9))),
    ("What was said on 2023-05-08?", (D(2023, 5, 8), D(2023, 5, 9))),
    ("What did we talk about last week?", (D(2023, 8, 7), D(2023, 8, 14))),
    ("What did I eat yesterday?", (D(2023, 8, 14), D(2023, 8, 15))),
    ("What did I do today?", (D(2023, 8, 15), D(2023, 8, 16))),
    ("Where did I go last month?", (D(2023, 7, 1), D(2023, 8, 1))),
    ("What did I read last year?", (D(2022, 1, 1), D(2023, 1, 1))),
    ("What did I watch in 2022?", (D(2022, 1, 1), D(2023, 1, 1))),
    ("What did I do this week?", (D(2023, 8, 14), D(2023, 8, 16))),
    ("Who called me two weeks ago?", (D(2023, 7, 31), D(2023, 8, 2))),
    ("What did Anna say 3 days ago?", (D(2023, 8, 12), D(2023, 8, 13))),
    ("Where was I last Friday?", (D(2023, 8, 11), D(2023, 8, 12))),
    ("What did I cook on Sunday?", (D(2023, 8, 13), D(2023, 8, 14))),
    ("What did I do the day before yesterday?", (D(2023, 8, 13), D(2023, 8, 14))),
    ("What did we discuss a month ago?", (D(2023, 7, 10), D(2023, 7, 20))),
    ("Who visited on May 8th?", (D(2023, 5, 8), D(2023, 5, 9))),
    ("What happened on the 8th of May?", (D(2023, 5, 8), D(2023, 5, 9))),
    ("What did I plan in early June?", (D(2023, 6, 1), D(2023, 6, 11))),
    ("What did I plan in late February 2023?", (D(2023, 2, 21), D(2023, 3, 1))),
    ("Where did we travel in the summer of 2022?", (D(2022, 6, 1), D(2022, 9, 1))),
    ("Where did we go last winter?", (D(2022, 12, 1), D(2023, 3, 1))),
    ("What did I do in March last year?", (D(2022, 3, 1), D(2022, 4, 1))),
]
NONE = [
    "May I see what Caroline said about adoption?",
    "What might Melanie do second after painting?",
    "What does Caroline think now about the support group?",
    "Which march did Jon join?",
    "How many times did Jon say he may open a studio?",
    "What is the summer camp called?",
    "What was on my screen on 08/05/2023?",  # day/month order is not knowable: no window rather than a wrong one
]


@pytest.mark.parametrize("question, span", NAMED)
def test_a_named_time_gives_a_window_around_it(question, span):
    windows = time_windows(question, NOW)
    start, end = span[0].timestamp(), span[1].timestamp()
    assert windows, question
    assert any(
        w.start_ts <= start
        and w.end_ts >= end - 1
        and w.end_ts - w.start_ts <= 3 * (end - start) + 3 * 86400
        for w in windows
    ), [
        (
            datetime.fromtimestamp(w.start_ts, UTC).date(),
            datetime.fromtimestamp(w.end_ts, UTC).date(),
        )
        for w in windows
    ]


def test_march_last_year_is_one_window_not_two():
    assert len(time_windows("What did I do in March last year?", NOW)) == 1


@pytest.mark.parametrize("question", NONE)
def test_no_window_where_no_time_is_named(question):
    assert time_windows(question, NOW) == []
