import numpy as np

from factories import unit
from graph.rows import Entity
from memorize.identity import EntityMatcher, MatchPolicy
from perception.records import SpeechTurn, Word
from perception.speech.stage import split_turns


def test_close_embeddings_join_one_entity_and_far_ones_start_another():
    m = EntityMatcher("face", MatchPolicy(threshold=0.9))
    a = m.match(unit([1, 0, 0]), 10.0)
    b = m.match(unit([1, 0.1, 0]), 12.0)
    c = m.match(unit([0, 1, 0]), 13.0)
    assert a is b and a.entity_id == "face_1" and c.entity_id == "face_2"
    assert (a.first_seen_ts, a.last_seen_ts, a.observations) == (10.0, 12.0, 2)
    assert {e.entity_id for e in m.take_touched()} == {"face_1", "face_2"}
    assert m.take_touched() == []


def test_samples_stay_bounded_and_ids_continue_after_reload():
    m = EntityMatcher("voice", MatchPolicy(threshold=0.5, max_samples=3))
    rng = np.random.default_rng(0)
    base = unit(rng.normal(size=16))
    for i in range(10):
        m.match(unit(base + 0.1 * rng.normal(size=16)), float(i))
    assert len(m.entities) == 1 and len(m.entities[0].samples) == 3
    again = EntityMatcher("voice", MatchPolicy(threshold=0.99), m.entities)
    assert again.match(unit(-base), 20.0).entity_id == "voice_2"


def test_split_turns_at_sentence_ends_and_pauses():
    words = (
        Word("Hello.", 0.0, 0.4, 1),
        Word("This", 0.5, 0.7, 1),
        Word("is", 0.7, 0.8, 1),
        Word("Diane", 0.8, 1.2, 1),
        Word("then", 2.5, 2.8, 1),
        Word("later", 2.8, 3.1, 1),
    )
    turns = split_turns(
        [SpeechTurn("seg0", "Hello. This is Diane then later", 0.0, 3.1, "en", words)], 0.6
    )
    assert [t.text for t in turns] == ["Hello.", "This is Diane", "then later"]
    assert [(t.start_s, t.end_s) for t in turns] == [(0.0, 0.4), (0.5, 1.2), (2.5, 3.1)]
    assert [t.segment_id for t in turns] == ["seg0.0", "seg0.1", "seg0.2"]


def test_people_known_to_differ_never_share_an_entity():
    m = EntityMatcher("face", MatchPolicy(threshold=0.5))
    (only,) = m.match_distinct([unit([1, 0, 0])], 1.0)
    a, b = m.match_distinct([unit([1, 0.2, 0]), unit([1, 0.1, 0])], 2.0)  # both close to face_1
    assert b is only  # the closer one keeps the known entity
    assert a is not only and a.entity_id == "face_2"


def test_a_voice_is_matched_by_the_mean_of_what_was_heard_not_by_an_odd_sample():
    rng = np.random.default_rng(1)
    a, b = unit(rng.normal(size=32)), unit(rng.normal(size=32))
    # five clips of one voice (0.97 alike) and one whose clustering took in much of another voice
    heard = [unit(a + 0.03 * rng.normal(size=32)) for _ in range(5)] + [unit(a + b)]
    stranger = unit(
        b + 0.6 * a
    )  # that other voice: 0.96 like the odd sample, 0.49 like voice_1's mean
    for policy, joins in ((MatchPolicy(0.84), True), (MatchPolicy(0.84, by_profile=True), False)):
        m = EntityMatcher(
            "voice", policy, [Entity("voice_1", "voice", 1.0, 1.0, list(heard), len(heard))]
        )
        assert (m.match(stranger, 2.0).entity_id == "voice_1") is joins
