"""``control.reason`` without a model: dates resolved before the model reads them, the memories shown
within their budget, and the checks that turn an unsupported answer into "not in memory"; LoCoMo's
answer metric (``bench.locomo_f1``) and the stratified sample of ``bench locomo --qa``."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bench.datasets.locomo import Question
from bench.locomo_f1 import score, token_f1
from bench.locomo_qa import stratified
from control.grounding import ABSTAIN, in_person, plain_dates, unsupported
from control.reason import (
    Reasoner,
    Streamed,
    _Reply,
    answer_so_far,
    shown_memories,
)
from control.when import resolve_dates
from graph.rows import Memory

SAID_AT = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("I went to a support group yesterday.", "yesterday [7 May 2023]"),
        ("I painted that lake sunrise last year!", "last year [2022]"),
        ("Here's one I did last week.", "last week [the week of 1 May 2023]"),
        ("We met last Friday, two days ago too", "last Friday [5 May 2023]"),
        ("and two days ago too", "two days ago [6 May 2023]"),
        ("I'm going camping next month.", "next month [June 2023]"),
        ("The studio opens tomorrow!", "tomorrow [9 May 2023]"),
    ],
)
def test_relative_times_are_followed_by_their_date(text, shown):
    assert shown in resolve_dates(text, SAID_AT)


def test_times_that_name_their_year_are_left_as_they_are():
    assert resolve_dates("In May 2022 I moved.", SAID_AT) == "In May 2022 I moved."


def test_a_copied_relative_time_is_answered_as_its_date():
    assert plain_dates("tomorrow [20 June 2023]") == "20 June 2023"
    assert plain_dates("last year [2022]") == "2022"
    assert plain_dates("in [May 2023]") == "in May 2023"
    assert plain_dates("on 2023-05-07") == "on 7 May 2023"  # as the memories write dates
    assert plain_dates("2023-13-07, v2023-05-07") == "2023-13-07, v2023-05-07"  # no date


def _memory(i: int, text: str, day: int) -> Memory:
    ts = datetime(2023, 5, day, 12, tzinfo=UTC).timestamp()
    return Memory(f"m{i}", "episodic", text, f"clip{i}", "rec.mp4", ts, ts + 5, ("voice_1",))


def test_the_best_memories_that_fit_the_budget_are_shown_in_time_order_once_each():
    ranked = [
        _memory(1, '<voice_1> said: "We adopted a beagle called Rex."', 20),
        _memory(2, '<voice_1> said: "We adopted a beagle called Rex."', 21),  # the same words
        _memory(3, '<voice_1> said: "I went to the support group yesterday."', 9),
        _memory(4, "x " * 400, 2),  # does not fit what is left
        _memory(5, '<voice_1> said: "Short."', 3),
    ]
    shown = shown_memories(ranked, {"voice_1": "Caroline"}, budget_tokens=60)
    assert [m.memory_id for m, _ in shown] == [
        "m5",
        "m3",
        "m1",
    ]  # by time, m2 a duplicate, m4 too long
    assert shown[1][1] == (
        '9 May 2023: Caroline said: "I went to the support group yesterday [8 May 2023]."'
    )


def test_what_an_answer_names_must_be_in_the_memories_it_cites():
    line = '8 May 2023: Caroline said: "I went to a support group yesterday [7 May 2023]."'
    people = frozenset({"Caroline", "Melanie"})
    assert unsupported("7 May 2023", [line], people) == set()
    assert unsupported("6 May 2023", [line], people) == {"6 may 2023"}
    assert unsupported("Melanie's group", [line], people) == set()  # a known person's name
    assert unsupported("Caroline's support groups", [line], people) == set()
    assert unsupported("Likely yes", [line], people) == set()
    assert unsupported("Support group", [line], people) == set()  # a capital at the start
    assert unsupported("in June", [line], people) == {"june"}
    assert unsupported("Paris", [line], people) == {"paris"}
    # a date is said as a whole: a 7 in one place and May 2023 in another is not 7 May 2023
    cats = '8 May 2023: Caroline said: "I have 7 cats."'
    assert unsupported("7 May 2023", [cats], people) == {"7 may 2023"}
    # a name written in lower case is still a name where the memories shown write it capitalised
    paris = '9 May 2023: Melanie said: "We flew to Paris."'
    assert unsupported("paris", [line], people, [line, paris]) == {"paris"}
    assert unsupported("paris", [paris], people, [line, paris]) == set()


class _Store:
    def clip_offset(self, clip_id):
        return 0.0


class _Tools:
    store = _Store()


class _Planner:
    tools = _Tools()
    k = 10


NAMES = {"voice_1": "Caroline", "voice_2": "Melanie"}


def _checked(reply: _Reply, question: str):
    shown = [
        (
            _memory(1, '<voice_1> said: "I went to a support group yesterday."', 8),
            '8 May 2023: Caroline said: "I went to a support group yesterday [7 May 2023]."',
        ),
        (
            _memory(2, '<voice_1> said: "My grandma gave me this necklace."', 9),
            '9 May 2023: Caroline said: "My grandma gave me this necklace."',
        ),
        (
            _memory(3, '<voice_1> said: "Thanks, Melanie! I love the necklace."', 10),
            '10 May 2023: Caroline said: "Thanks, Melanie! I love the necklace."',
        ),
    ]
    reasoner = Reasoner(_Planner(), client=None)  # type: ignore[arg-type]
    return reasoner._checked(question, reply, shown, (), [], NAMES)


def test_a_grounded_answer_cites_its_memories_clips():
    answer = _checked(_Reply((1,), "7 May 2023"), "When did Caroline go to the support group?")
    assert answer.answer == "7 May 2023"
    assert [c.clip_id for c in answer.citations] == ["clip1"]


@pytest.mark.parametrize(
    ("reply", "question", "why"),
    [
        (_Reply((1,), "5 May 2023"), "When did Caroline go to the group?", "do not say"),
        (_Reply((), "7 May 2023"), "When did Caroline go to the group?", "cited no memory"),
        (_Reply((7,), "7 May 2023"), "When did Caroline go to the group?", "cited no memory"),
        # the adversarial kind: the memory is Caroline's, the question asks about Melanie
        (_Reply((2,), "necklace"), "What was grandma's gift to Melanie?", "about Melanie"),
        # a line that names her is not hers: Caroline thanking Melanie
        (_Reply((3,), "a necklace"), "What did Melanie give?", "none of the memories"),
        (_Reply((1,), "Not in memory."), "What is Caroline's job?", "found no answer"),
        # the name asked in lower case is still the person asked about
        (_Reply((2,), "a necklace"), "what did grandma give melanie?", "about Melanie"),
        # citing one of hers does not let another's line answer
        (_Reply((1, 3), "a necklace"), "What did Melanie love?", "none of the memories"),
    ],
)
def test_an_answer_its_memories_do_not_support_is_not_given(reply, question, why):
    answer = _checked(reply, question)
    assert answer.answer == ABSTAIN and answer.citations == ()
    assert why in answer.steps[-1]


def test_locomo_answer_metric_as_locomo_scores_it():
    assert token_f1("The clarinet and the violin!", "clarinet, violin") == 1.0  # normalised
    assert token_f1("paintings", "painting") == 1.0  # Porter stems
    assert token_f1("7 May 2023", "7 May, 2023") == 1.0
    precision, recall = 2 / 5, 2 / 3  # "7" and "may" of five words said, of three wanted
    assert token_f1("she went on 7 May", "7 May 2023") == pytest.approx(
        2 * precision * recall / (precision + recall)
    )
    # multi-hop: each gold part's best match, averaged
    assert score("clarinet", "clarinet, violin", 1) == 0.5
    assert score("violin, clarinet", "clarinet, violin", 1) == 1.0
    # open-domain: the gold answer's part before ";"
    assert score("likely no", "Likely no; she prefers the city", 3) == 1.0
    # adversarial: only an abstention scores
    assert score("not in memory", "necklace", 5) == 1.0
    assert score("necklace", "necklace", 5) == 0.0
    assert score("No information available.", None, 5) == 1.0


def test_a_limited_run_samples_each_category_in_proportion():
    qs = [Question(f"q{i}", "a", (), 4) for i in range(60)]
    qs += [Question(f"t{i}", "a", (), 2) for i in range(30)]
    qs += [Question(f"a{i}", "a", (), 5) for i in range(9)]
    qs += [Question("m0", "a", (), 1)]
    picked = stratified(qs, 10, "conv")
    cats = sorted(q.category for q in picked)
    assert len(picked) == 10 and cats.count(4) >= 5 and cats.count(2) >= 2
    assert {1, 2, 4, 5} <= set(cats)  # every category, the rare one too
    assert picked == stratified(qs, 10, "conv")  # the same sample each run
    assert stratified(qs, None, "conv") == qs
    # a rare category raised to one question gets no second one from the remainders
    few = [Question(f"{c}{i}", "a", (), c) for c in (1, 2, 4) for i in range(10)]
    few += [Question(f"5{i}", "a", (), 5) for i in range(3)]
    assert sorted(q.category for q in stratified(few, 8, "conv")).count(5) == 1
    with pytest.raises(ValueError, match="at least 1"):
        stratified(qs, -1, "conv")


def _store_check(reply: _Reply, question: str):
    """Jon's lines about Gina's store, Gina's about her own (LoCoMo conv-30, shortened)."""
    names = {"voice_1": "Jon", "voice_2": "Gina"}
    said = [
        ("voice_1", "Whoa, your store looks great! All your hard work really paid off.", 1),
        ("voice_1", "What made you pick out the furniture and decor?", 2),
        ("voice_2", "I chose furniture that looks great and is comfy too.", 3),
        ("voice_1", "I'm on the hunt for the ideal spot for my dance studio in Paris.", 4),
        ("voice_2", "Way to go, Jon! Congrats on your win in the tournament!", 5),
    ]
    shown = [
        (
            _memory(n, f'<{who}> said: "{text}"', n),
            f'{n} May 2023: {names[who]} said: "{text}"',
        )
        for who, text, n in said
    ]
    reasoner = Reasoner(_Planner(), client=None)  # type: ignore[arg-type]
    return reasoner._checked(question, reply, shown, (), [], names)


@pytest.mark.parametrize(
    ("reply", "question", "why"),
    [
        # the words are Jon's, but he says them of Gina's store (LoCoMo's adversarial kind)
        (_Reply((1,), "looks great"), "How is Jon's store doing?", "of someone else"),
        (_Reply((2,), "furniture and decor"), "What did Jon pick for his store?", "ask it"),
        # a word the memories do not say: not an answer from them
        (_Reply((1,), "good"), "How is Jon's store doing?", "not in the memories"),
        # the question's own name (a place) is in no memory the answer cites
        (_Reply((4,), "Paris"), "Why did Jon go to Barcelona?", "barcelona"),
        # Gina names Jon, whose win it was: her line holds nothing of her own (LoCoMo conv-42)
        (
            _Reply((5,), "Congrats to Jon on the win in the tournament"),
            "How did Gina celebrate her win in the tournament?",
            "of someone else",
        ),
        # his line to Gina, copied: it speaks to "you", not of him
        (_Reply((1,), "your store looks great"), "How is Jon's store doing?", "speaks as I"),
        # his own line, copied whole: it speaks as "I", it does not answer about him
        (
            _Reply((4,), "I'm on the hunt for the ideal spot for my dance studio"),
            "Why did Jon visit the dance studio?",
            "speaks as I",
        ),
    ],
)
def test_an_answer_resting_on_what_was_said_of_another_is_not_given(reply, question, why):
    answer = _store_check(reply, question)
    assert answer.answer == ABSTAIN and answer.citations == (), answer
    assert why in answer.steps[-1]


@pytest.mark.parametrize(
    ("answer", "copied"),
    [
        ("When my dance crew took home first", True),
        ("Congratulations on your victory!", True),
        ("We’re fine", True),
        ("She moved to the US", False),
        ("a lobster roll in Portland, ME", False),
        ("her own style, to make customers feel cozy", False),
    ],
)
def test_an_answer_in_the_first_or_second_person_is_a_copied_line(answer, copied):
    assert in_person(answer) is copied


def test_what_a_person_says_of_their_own_answers_for_them():
    answer = _store_check(
        _Reply((3,), "furniture that is comfy"), "What furniture did Gina choose?"
    )
    assert answer.answer == "furniture that is comfy"
    answer = _store_check(_Reply((4,), "the ideal spot"), "What is Jon looking for in Paris?")
    assert answer.answer == "the ideal spot"


@pytest.mark.parametrize(
    ("reply", "so_far"),
    [
        ('{"memories": [1, 2], "ans', ""),
        ('{"memories": [1], "answer": "7 May', "7 May"),
        ('{"memories": [1], "answer": "a \\"big\\" caf\\u00e9", "x', 'a "big" café'),
        ('{"memories": [1], "answer": "caf\\u00', "caf"),  # an escape cut in half waits
    ],
)
def test_the_answer_is_read_from_a_reply_still_being_written(reply, so_far):
    assert answer_so_far(reply) == so_far


def test_a_streamed_answer_shows_each_new_piece_once_and_a_rewrite_on_a_new_line():
    pieces: list[str] = []
    stream = Streamed(pieces.append)
    for reply in (
        '{"answer": "7',
        '{"answer": "7 Ma',
        '{"answer": "7 May"}',
        '{"ans',
        '{"answer": "8',
    ):
        stream(reply)
    assert "".join(pieces) == "7 May\n8"


def test_an_answer_citing_the_wrong_number_rests_on_the_one_line_that_says_it():
    """A small model often picks the right words and cites the wrong memory: the one line that
    says every word of the answer and two of the question's is cited instead, and the steps say so."""
    answer = _store_check(_Reply((1,), "the ideal spot"), "What is Jon hunting for for his studio?")
    assert answer.answer == "the ideal spot" and [c.clip_id for c in answer.citations] == ["clip4"]
    assert "the reply cited memories 1; what it says is in memories 4" in answer.steps[-2]
    # a line sharing only one of the question's words does not take the answer
    answer = _store_check(_Reply((1,), "the ideal spot"), "What did Jon look for in Paris?")
    assert answer.answer == ABSTAIN


def test_an_answer_that_only_repeats_the_question_is_not_given():
    answer = _store_check(
        _Reply((4,), "a dance studio"), "What did Jon say about his dance studio?"
    )
    assert answer.answer == ABSTAIN and "repeats the question" in answer.steps[-1]
