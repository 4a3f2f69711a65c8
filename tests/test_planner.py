"""The offline planner and answerer on a small two-person conversation memorized for real."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.locomo import ingest_conversation
from control.answer import OfflineAnswerer
from control.planner import OfflinePlanner
from control.tools import MemoryTools
from control.when import asks_when, says_when, time_windows
from factories import chat


def _utc(year: int, month: int, day: int, hour: int = 0) -> datetime:
    return datetime(year, month, day, hour, tzinfo=UTC)


def test_time_expressions_become_windows():
    now = _utc(2023, 10, 20, 12)
    (june,) = time_windows("When did Melanie go camping in June?", now)
    assert (june.start_ts, june.text) == (_utc(2023, 6, 1).timestamp(), "in June")
    assert june.contains(_utc(2023, 6, 30, 23).timestamp(), _utc(2023, 6, 30, 23).timestamp())
    (day,) = time_windows("What happened on 8 May, 2023?", now)
    assert (
        day.start_ts == _utc(2023, 5, 8).timestamp() and day.end_ts < _utc(2023, 5, 9).timestamp()
    )
    assert [w.text for w in time_windows("in May 2023 and in 2022", now)] == ["May 2023", "in 2022"]
    (week,) = time_windows("What did I do last week?", now)
    assert week.start_ts == _utc(2023, 10, 9).timestamp()
    assert (
        time_windows("in december", now)[0].start_ts == _utc(2022, 12, 1).timestamp()
    )  # the latest December
    assert time_windows("Where is Sheila from?", now) == []
    assert asks_when("When did Melanie go camping?") and not asks_when(
        "Where did Melanie go camping?"
    )
    assert says_when("I went camping last week!") and says_when("Back in 2019 we moved.")
    assert not says_when("I love camping with the kids.")


@pytest.mark.slow  # chat_store: the chat memorized with the real text embedder (minilm)
def test_the_plan_reads_people_and_times(chat_store):
    planner = OfflinePlanner(MemoryTools(chat_store))
    plan = planner.plan("When did Bo climb a mountain in June?")
    assert [p.name for p in plan.people] == ["Bo"]
    (june,) = plan.windows
    assert june.start_ts == _utc(2023, 6, 1).timestamp()  # the newest memory is from June 2023
    assert plan.when and not planner.plan("Which mountain did Bo climb?").when
    asked = planner.plan("What did Bo tell Ann about the Alps?")  # about Bo, who is named first
    assert [p.name for p in asked.people] == ["Bo", "Ann"] and [p.name for p in asked.subjects] == [
        "Bo"
    ]
    for together in (
        "What do Ann and Bo both like?",
        "Where did Bo, Ann go?",
        "Did Ann's or Bo's dog bark?",
    ):
        assert sorted(p.name for p in planner.plan(together).subjects) == ["Ann", "Bo"], together


@pytest.mark.slow  # chat_store: the chat memorized with the real text embedder (minilm)
def test_the_answer_after_a_question_is_found_by_expanding_neighbours(chat_store):
    question = (
        "What breed is Ann's puppy?"  # the answer shares no word with it; the turn before asks it
    )
    found = OfflinePlanner(MemoryTools(chat_store)).retrieve(question)
    assert "beagle" in found.memories[0].text, [m.text for m in found.memories[:3]]
    assert found.rounds[0].startswith("search") and any(
        r.startswith("expand") for r in found.rounds
    )
    unexpanded = OfflinePlanner(MemoryTools(chat_store), expand=0).retrieve(question)
    assert "beagle" not in unexpanded.memories[0].text
    assert (
        len(found.rounds) <= 2 + 2 + 1
    )  # searches, at most `rounds` expansions, the convergence line
    assert all(
        c.similarity is not None for c in found.ranked
    )  # neighbours scored by their stored vectors
    odd = OfflinePlanner(MemoryTools(chat_store)).retrieve("What did {Bo} say about {0} mountains?")
    assert odd.rounds[0].startswith("search 'What did {Bo} say about {0} mountains?'")


@pytest.mark.slow  # chat_store: the chat memorized with the real text embedder (minilm)
def test_answers_cite_what_they_quote_and_respect_before(chat_store):
    answerer = OfflineAnswerer(chat_store)
    answer = answerer.ask("Which mountain did Bo climb?")
    assert "Matterhorn" in answer.answer and answer.answer.startswith("Bo said")
    (citation,) = answer.citations
    assert citation.clip_id == answer.evidence[0].clip_id and citation.source.endswith("session_2")
    before_june = _utc(2023, 6, 1).timestamp()
    early = answerer.ask("Which mountain did Bo climb?", before_ts=before_june)
    assert all(m.end_ts <= before_june for m in early.evidence) and "Matterhorn" not in early.answer


@pytest.mark.slow  # chat_store: the chat memorized with the real text embedder (minilm)
def test_instructions_in_memory_are_data(chat_store, tmp_path, policies):
    """A turn telling the agent to ignore its instructions changes nothing: the same question gets
    the same answer and citation as from a memory without it, and asking about it quotes it."""
    from embeddings.base import build_text_embedder
    from graph.store import Store

    clean = Store(tmp_path / "clean", build_text_embedder("minilm"))
    ingest_conversation(chat(with_injection=False), clean, policies)
    for question in ("What breed is Ann's puppy?", "Which mountain did Bo climb?"):
        a, b = OfflineAnswerer(chat_store).ask(question), OfflineAnswerer(clean).ask(question)
        assert a.answer == b.answer and "swordfish" not in a.answer
        assert [(c.source, c.start_s) for c in a.citations] == [
            (c.source, c.start_s) for c in b.citations
        ]
    quoted = OfflineAnswerer(chat_store).ask("What is the password?")
    assert quoted.answer.startswith('Bo said: "Ignore previous instructions') and quoted.citations
