"""A line typed across a 30 s clip cut is read half in one clip and whole in the next; the answer
comes from the later, whole reading (``control.screens``). The two memories' texts are those a real
run wrote (``mnemo capture --ingest`` on Xvfb, typing begun 0.4 s before a cut): before the change
``mnemo ask "where is the parking spot?"`` answered with the half line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from control.answer import OfflineAnswerer
from control.candidates import Candidate
from control.screens import CONTINUED_S, continues, latest_screens
from graph.rows import ClipRow, Memory, content_id

T0 = 1_800_000_000.0
PROMPT = "root@vm:/work/main/tests#"
HALF = ("notes", "口口", f"{PROMPT} echo the parking spot is level 3 bay")
WHOLE = (
    "notes",
    "口口",
    f"{PROMPT} echo the parking spot is level 3 bay 42",
    "the parking spot is level 3 bay 42",
    PROMPT,
)
SOURCE = "/home/me/screens/2027/01/15"


def _screen(index: int, at: float, lines: tuple[str, ...], source: str = SOURCE) -> Memory:
    clip = f"screen-{source}-{index}"
    text = f"On screen at {at:.0f}: " + " | ".join(lines)  # the clock's form does not matter here
    return Memory(content_id(clip, "screen", text), "resource", text, clip, source, at, at)


def _commit(store, memories: list[Memory]) -> None:
    for m in memories:
        start = T0 + 30 * ((m.start_ts - T0) // 30)
        clip = ClipRow(m.clip_id, m.source_path, "sha", 0, 0.0, 30.0, start, start + 30, "")
        store.commit_clip(clip, [m], [])


def test_a_reading_continues_another_when_every_line_is_there_as_it_was_or_further_along():
    assert continues(WHOLE, HALF)
    assert not continues(HALF, WHOLE)
    assert not continues(HALF, HALF)  # the same screen again adds nothing
    assert not continues(WHOLE[:2] + WHOLE[3:], HALF)  # the typed line is gone: another screen
    assert not continues(("notes", f"{PROMPT} echo the parking spot"), HALF)  # a line edited back
    assert not continues(("a b c",), ("a b", "a b c"))  # one line cannot stand for two
    assert not continues(("a b c", "x"), ("x", "a b"))  # nor lines in another order


def test_the_earlier_reading_gives_way_with_the_better_score_and_only_to_one_close_after_it():
    half, whole = _screen(1, T0 + 29.6, HALF), _screen(2, T0 + 30.0, WHOLE)
    elsewhere = _screen(3, T0 + 31.0, WHOLE, source="/other/screens")
    later = _screen(4, T0 + 29.6 + CONTINUED_S + 1, WHOLE + ("more",))
    cands = [Candidate(half, score=0.9), Candidate(whole, score=0.5)]
    kept = latest_screens(cands)
    assert [c.memory for c in kept] == [whole] and kept[0].score == 0.9
    assert [c.memory for c in latest_screens([Candidate(half), Candidate(elsewhere)])] == [
        half,
        elsewhere,
    ]
    assert [c.memory for c in latest_screens([Candidate(half), Candidate(later)])] == [half, later]
    spoken = Memory("m", "episodic", 'On screen at 1: <voice_1> said: "notes"', "c", SOURCE, T0, T0)
    assert len(latest_screens([Candidate(spoken), Candidate(whole)])) == 2  # screen memories only


def test_a_text_shown_again_after_the_longer_one_is_not_folded_into_it():
    """ "bay 4", then "bay 42", then backspaced to "bay 4" again in one clip: the "bay 4" memory
    spans both of its frames, and the later "bay 42" began before it was last seen."""
    short = _screen(1, T0 + 2, ("spot is bay 4",))
    short = replace(short, end_ts=T0 + 10)
    longer = _screen(1, T0 + 4, ("spot is bay 42",))
    assert [c.memory for c in latest_screens([Candidate(short), Candidate(longer)])] == [
        short,
        longer,
    ]


def test_a_reading_stays_when_what_continues_it_is_more_than_two_minutes_on():
    """Each reading continues the one before, 100 s apart: the middle one gives way to the last,
    the first stays (nothing kept within two minutes of it continues it)."""
    a = _screen(1, T0, ("log", "one"))
    b = _screen(2, T0 + 100, ("log", "one", "two"))
    c = _screen(3, T0 + 200, ("log", "one", "two", "three"))
    kept = latest_screens([Candidate(a, score=1), Candidate(b, score=5), Candidate(c, score=2)])
    assert [(k.memory, k.score) for k in kept] == [(a, 1), (c, 5)]


def test_three_readings_of_one_line_leave_the_last_with_the_best_score():
    first = _screen(1, T0 + 1, ("notes", "echo the par"))
    second = _screen(2, T0 + 30, ("notes", "echo the parking spot is"))
    third = _screen(3, T0 + 60, ("notes", "echo the parking spot is level 3 bay 42"))
    kept = latest_screens([Candidate(first, score=3), Candidate(second, score=2), Candidate(third)])
    assert [(c.memory, c.score) for c in kept] == [(third, 3)]


@pytest.mark.slow  # the packaged text embedder, as `mnemo ask` runs it
def test_the_question_is_answered_from_the_whole_line_and_before_it_from_the_half(tmp_path):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    store = Store(tmp_path / "store", build_text_embedder("mpnet"))
    half, whole = _screen(1, T0 + 29.6, HALF), _screen(2, T0 + 30.0, WHOLE)
    _commit(store, [half, whole])
    answer = OfflineAnswerer(store).ask("where is the parking spot?")
    assert "level 3 bay 42" in answer.answer and answer.citations[0].clip_id == whole.clip_id
    # as known before the whole line was read: the half is all there is
    before = OfflineAnswerer(store).ask("where is the parking spot?", before_ts=T0 + 29.9)
    assert before.citations[0].clip_id == half.clip_id
