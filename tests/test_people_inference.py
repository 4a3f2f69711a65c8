"""People from speech: one person per voice across clips, names from being addressed, resolved when read."""

from __future__ import annotations

import pytest

from factories import FACES, VOICES, memorize, memorize_talk, speech_clip, unit
from factories import VOICE_A as A
from factories import VOICE_B as B
from graph.resolve_people import PeopleOp
from graph.rows import Edge
from memorize.identity import EntityMatcher, MatchPolicy
from memorize.memorizer import Memorizer
from memorize.naming import Naming
from memorize.speech_facts import addressed_in
from perception.records import ClipObservations, SpeechTurn


@pytest.mark.parametrize(
    "text, names",
    [
        ("Hey Caroline! Good to see you!", ["Caroline"]),
        ("Thanks, Melanie!", ["Melanie"]),
        ("That's awesome, Melanie. What did you paint?", ["Melanie"]),
        ("Congrats Caroline, you did it", ["Caroline"]),
        ("Bye Caroline!", ["Caroline"]),
        # someone talked about, not to; nobody; not a name
        ("I went with Caroline to the park.", []),
        ("Wow, Caroline is great", []),
        ("Hey, I'm Sheila.", []),
        ("Hey everyone!", []),
        ("Yes, Gina's store is open", []),
        ("Yep, that was fun.", []),
        ("Hi Jon and Gina", []),
    ],
)
def test_names_the_listener_is_called_by(text, names):
    assert addressed_in(text) == names


def _edges(*rows) -> list[Edge]:
    return [
        Edge(kind, voice, f"name:{name}", float(n), "c", tuple(f"clip:c{i}" for i in range(n)))
        for kind, voice, name, n in rows
    ]


def _named(people: dict[str, set[str]], *rows) -> dict[str, str]:
    """The names ``Naming`` gives ``people`` (character -> voices) on the edges of ``rows``."""
    return Naming(_edges(*rows)).decide(people)


def test_a_name_needs_agreeing_evidence_and_nothing_against_it():
    people = {"character_1": {"voice_1"}, "character_2": {"voice_2"}}
    assert _named(people, ("addressed_as", "voice_1", "Ann", 1)) == {"character_1": ""}
    assert _named(people, ("addressed_as", "voice_1", "Ann", 2)) == {"character_1": "Ann"}
    assert _named(people, ("introduced_as", "voice_1", "Ann", 1)) == {"character_1": "Ann"}
    # two names heard about equally: none
    assert _named(
        people, ("addressed_as", "voice_1", "Ann", 2), ("addressed_as", "voice_1", "Bea", 2)
    ) == {"character_1": ""}
    # a name twice as supported as all others together wins over misheard ones; less does not
    assert _named(
        people,
        ("addressed_as", "voice_1", "Ann", 7),
        ("addressed_as", "voice_1", "Mary", 1),
        ("addressed_as", "voice_1", "Bea", 2),
    ) == {"character_1": "Ann"}
    assert _named(
        people, ("addressed_as", "voice_1", "Ann", 3), ("addressed_as", "voice_1", "Bea", 2)
    ) == {"character_1": ""}
    # the voice itself calls someone else Ann as often: not Ann
    assert _named(
        people, ("addressed_as", "voice_1", "Ann", 2), ("says_name", "voice_1", "Ann", 2)
    ) == {"character_1": ""}
    # a short form counts for the full name
    assert _named(
        people, ("addressed_as", "voice_1", "Mel", 1), ("addressed_as", "voice_1", "Melanie", 1)
    ) == {"character_1": "Melanie"}
    # one name for two people: only a clear winner keeps it
    both = Naming(
        _edges(("addressed_as", "voice_1", "Ann", 2), ("addressed_as", "voice_2", "Ann", 2))
    )
    assert both.decide(people) == {"character_1": "", "character_2": ""}
    clear = Naming(
        _edges(("addressed_as", "voice_1", "Ann", 5), ("addressed_as", "voice_2", "Ann", 2))
    )
    assert (
        clear.decide(people)["character_1"] == "Ann" and clear.decide(people)["character_2"] == ""
    )


def test_a_word_no_name_list_holds_needs_more_evidence_to_name_someone():
    """Speech recognition turns names into words ("Wow Joanna" heard as "Wild Atlanta"): a word
    that is no listed first name names nobody on a few hearings, but a rare name heard often still does."""
    from memorize.given_names import is_given_name

    assert all(is_given_name(n) for n in ("Joanna", "gina", "Tim", "Jon", "Caroline", "Mel", "Bea"))
    assert not any(is_given_name(w) for w in ("Atlanta", "Swamp", "Pottery", "Xq"))
    people = {"character_1": {"voice_1"}}
    assert _named(people, ("addressed_as", "voice_1", "Joanna", 2)) == {"character_1": "Joanna"}
    assert _named(people, ("addressed_as", "voice_1", "Atlanta", 3)) == {"character_1": ""}
    assert _named(people, ("introduced_as", "voice_1", "Swamp", 1)) == {"character_1": ""}
    assert _named(people, ("addressed_as", "voice_1", "Atlanta", 4)) == {"character_1": "Atlanta"}
    assert _named(people, ("introduced_as", "voice_1", "Swamp", 2)) == {"character_1": "Swamp"}


def test_a_name_said_to_one_of_several_voices_counts_once_they_are_one_person():
    among = _edges(("addressed_as", "voice_2,voice_3", "Mel", 2))
    assert Naming(among).decide({"character_2": {"voice_2"}, "character_3": {"voice_3"}}) == {}
    assert Naming(among).decide({"character_2": {"voice_2", "voice_3"}}) == {"character_2": "Mel"}
    # a clip that names two voices of one person counts once
    twice = _edges(("addressed_as", "voice_2", "Mel", 1), ("addressed_as", "voice_3", "Mel", 1))
    assert Naming(twice).decide({"character_2": {"voice_2", "voice_3"}}) == {"character_2": ""}


def test_a_voice_split_in_two_inside_a_clip_stays_one_entity():
    m = EntityMatcher("voice", VOICES)
    (a,) = m.match_distinct([unit([1, 0, 0, 0])], 0.0)
    (b,) = m.match_distinct([unit([0, 0, 1, 0])], 0.0)
    # the clip's clustering gave voice A twice: the spare part joins A (0.99 alike, far from B)
    x, y, z = m.match_distinct(
        [unit([1, 0.05, 0, 0]), unit([1, 0.1, 0.05, 0]), unit([0, 0, 1, 0.1])], 30.0
    )
    assert (x.entity_id, y.entity_id, z.entity_id) == (a.entity_id, a.entity_id, b.entity_id)
    # a new voice heard too briefly founds nobody; heard long enough, it does
    assert m.match_distinct([unit([0, 1, 0, 0])], 60.0, may_found=[False]) == [None]
    assert m.match_distinct([unit([0, 1, 0, 0])], 60.0, may_found=[True])[0].entity_id == "voice_3"


def test_a_fragment_heard_once_joins_its_voice_when_profiles_are_matched(hash_store):
    # as `mnemo ingest` matches voices: by profile, and a voice part heard in one clip only may merge
    profile = MatchPolicy(
        0.84,
        same_similarity=0.86,
        merge_similarity=0.93,
        min_found_s=2.5,
        by_profile=True,
        merge_min_samples=1,
    )
    near_a = unit([1, 0.12, 0.02, 0])
    memorize(
        hash_store,
        [speech_clip(0, [("s0", "one two three", A), ("s1", "four five six", near_a)])],
        voices=profile,
    )
    assert [p.voices for p in hash_store.people()] == [("voice_1", "voice_2")]
    memorize(
        hash_store,
        [speech_clip(1, [("s0", "seven eight nine", near_a), ("s1", "ten eleven", B)])],
        voices=profile,
    )
    assert sorted(p.voices for p in hash_store.people()) == [("voice_1", "voice_2"), ("voice_3",)]
    assert hash_store.memories_where("clip_id = 'clip1'")[0].entity_ids == ("voice_1",)


def test_two_people_who_call_each_other_by_name_are_named_and_never_swapped(hash_store):
    clips = [
        speech_clip(
            0, [("s0", "Hey Caroline, how are you?", A), ("s1", "Good, thanks, Melanie!", B)]
        ),
        speech_clip(
            1, [("s0", "I painted a lake.", A), ("s1", "Wow, that is lovely, Melanie.", B)]
        ),
        speech_clip(
            2, [("s1", "I went to a support group.", B), ("s0", "That's brave, Caroline!", A)]
        ),
    ]
    memorize(hash_store, clips)
    people = {p.name: p for p in hash_store.people()}
    assert sorted(people) == ["Caroline", "Melanie"]
    assert people["Melanie"].voices == ("voice_1",) and people["Caroline"].voices == ("voice_2",)
    assert people["Melanie"].name_source == people["Caroline"].name_source == "addressed"
    # memories keep the ids; names are resolved when read
    said = [m.text for m in hash_store.memories_where("kind = 'episodic'")]
    assert said[0] == '<voice_1> said: "Hey Caroline, how are you?"'
    assert not any(t.startswith(("Melanie", "Caroline")) for t in said)


def test_a_listener_heard_as_two_voices_is_named_once_the_voices_merge(hash_store):
    near_b = unit([0, 0.12, 1, 0.02])
    # the first clip founds three voices (nothing is known yet): whom "Melanie" was said to is open
    memorize_talk(
        hash_store,
        [("s0", "Hey Melanie!", A), ("s1", "one two three", B), ("s2", "four five six", near_b)],
        [("s0", "Thanks, Melanie.", A), ("s1", "seven eight", B), ("s2", "nine", near_b)],
    )
    people = {p.name: p for p in hash_store.people()}
    assert sorted(people) == ["", "Melanie"]
    assert (
        people["Melanie"].voices == ("voice_2", "voice_3")
        and people["Melanie"].name_source == "addressed"
    )
    assert people[""].voices == ("voice_1",)


def test_a_voice_found_twice_becomes_one_person_and_a_user_split_keeps_them_apart(hash_store):
    near_a = unit([1, 0.12, 0.02, 0])
    # clustering split A in two in the first clips, both parts founding voices (nothing known yet);
    # once each part has samples from two clips, their likeness is evidence enough
    memorize(
        hash_store,
        [
            speech_clip(0, [("s0", "one two three", A), ("s1", "four five six", near_a)]),
            speech_clip(1, [("s0", "seven eight nine", A), ("s1", "ten", near_a)]),
        ],
    )
    people = hash_store.people()
    assert len(people) == 1 and people[0].voices == ("voice_1", "voice_2")
    merge = next(e for e in hash_store.all_edges("same_person") if e.src_id == "character_2")
    assert merge.dst_id == "character_1" and any(
        x.startswith("similarity:") for x in merge.evidence
    )
    hash_store.append_people_op(
        PeopleOp(1, "split", "character_1", {"members": ["character_2", "voice_2"]})
    )
    assert sorted(p.voices for p in hash_store.people()) == [("voice_1",), ("voice_2",)]
    assert hash_store.people()[0].voices == ("voice_1",)
    # voice_2 was matched no more once merged (its speech went to voice_1); split off, it is again
    memorize(hash_store, [speech_clip(2, [("s0", "eleven twelve", near_a)])])
    assert sorted(p.voices for p in hash_store.people()) == [("voice_1",), ("voice_2",)]
    said = hash_store.memories_where("clip_id = 'clip2'")
    assert said[0].entity_ids == ("voice_2",)


def test_the_users_name_wins_over_what_is_heard_later(hash_store):
    clips = [
        speech_clip(0, [("s0", "Hey Caroline!", A), ("s1", "Hi!", B)]),
        speech_clip(1, [("s0", "Bye Caroline!", A), ("s1", "Bye!", B)]),
    ]
    memorize(hash_store, clips[:1])
    hash_store.append_people_op(PeopleOp(1, "name", "voice_2", {"name": "Carol"}))
    memorize(hash_store, clips[1:])
    carol = next(p for p in hash_store.people() if "voice_2" in p.voices)
    assert (carol.name, carol.name_source) == ("Carol", "user")
    assert (
        hash_store.load_entities("character")[1].name == "Caroline"
    )  # inference kept its own view apart


def test_a_long_lived_planner_sees_a_rename_at_the_next_question(hash_store):
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools

    memorize(
        hash_store, [speech_clip(0, [("s0", "I painted a lake at dawn.", A), ("s1", "Lovely!", B)])]
    )
    planner = OfflinePlanner(MemoryTools(hash_store))  # as mnemo serve keeps one
    assert planner.retrieve("What did Carol paint?").plan.people == ()
    hash_store.append_people_op(PeopleOp(1, "name", "voice_1", {"name": "Carol"}))
    found = planner.retrieve("What did Carol paint?")
    assert [p.name for p in found.plan.people] == ["Carol"]
    assert (
        found.memories[0].text == '<voice_1> said: "I painted a lake at dawn."'
    )  # her own words first


def test_a_voice_s_consecutive_sentences_are_one_memory_another_voice_or_a_pause_starts_the_next(
    hash_store,
):
    clip = speech_clip(0, [])
    speech = (
        SpeechTurn("clip0:a", "I went to a support group.", 0.0, 2.0, "en", (), A, "s0"),
        SpeechTurn("clip0:b", "It was powerful.", 2.5, 4.0, "en", (), A, "s0"),
        SpeechTurn("clip0:c", "Wow, tell me more!", 4.3, 6.0, "en", (), B, "s1"),
        SpeechTurn("clip0:d", "Well, everyone shared.", 6.5, 8.0, "en", (), A, "s0"),
        SpeechTurn("clip0:e", "Much later.", 12.0, 13.0, "en", (), A, "s0"),
    )
    w = Memorizer(hash_store, FACES, VOICES).memorize(ClipObservations(clip.clip, speech, ()))
    said = [(m.text, m.provenance) for m in w.memories if " said: " in m.text]
    assert said == [
        ('<voice_1> said: "I went to a support group. It was powerful."', ("clip0:a", "clip0:b")),
        ('<voice_2> said: "Wow, tell me more!"', ("clip0:c",)),
        ('<voice_1> said: "Well, everyone shared."', ("clip0:d",)),
        ('<voice_1> said: "Much later."', ("clip0:e",)),
    ]


def test_two_people_of_different_recordings_may_share_a_name_but_not_two_of_one_exchange():
    people = {"character_1": {"voice_1"}, "character_2": {"voice_2"}}
    naming = Naming(
        _edges(("addressed_as", "voice_1", "John", 6), ("addressed_as", "voice_2", "John", 2))
    )
    apart = naming.decide(people, heard_together=lambda a, b: False)
    assert apart == {"character_1": "John", "character_2": "John"}
    together = Naming(
        _edges(("addressed_as", "voice_1", "John", 3), ("addressed_as", "voice_2", "John", 2))
    )
    assert together.decide(people, heard_together=lambda a, b: True) == {
        "character_1": "",
        "character_2": "",
    }


def test_a_split_keeps_each_side_whole():
    """Splitting a merged-in character off leaves its voice and face with the person, as the
    split's check says (they hung on the character's links, which the split cut)."""
    from graph.resolve_people import resolve
    from graph.rows import Entity

    ids = ["character_1", "voice_1", "character_3", "voice_3", "face_2"]
    entities = [Entity(i, i.split("_")[0], 0.0, 1.0) for i in ids]
    links = [
        Edge("same_person", "voice_1", "character_1", 1.0, "c", ()),
        Edge("same_person", "voice_3", "character_3", 1.0, "c", ()),
        Edge("same_person", "face_2", "character_3", 1.0, "c", ()),
        Edge("same_person", "character_3", "character_1", 0.95, "c", ()),
    ]
    split = PeopleOp(1, "split", "character_1", {"members": ["character_3"]})
    people = {p.person_id: set(p.ids) for p in resolve(entities, links, [split])}
    assert people == {
        "character_1": {"character_1", "voice_1", "face_2", "voice_3"},
        "character_3": {"character_3"},
    }


def test_voices_alike_never_merge_two_people_the_user_named_apart(hash_store):
    near_a = unit([1, 0.12, 0.02, 0])
    memorize(
        hash_store, [speech_clip(0, [("s0", "one two three", A), ("s1", "four five six", near_a)])]
    )
    assert len(hash_store.people()) == 2  # one clip each: not yet evidence enough to merge
    hash_store.append_people_op(PeopleOp(1, "name", "voice_1", {"name": "Carol"}))
    hash_store.append_people_op(PeopleOp(2, "name", "voice_2", {"name": "Dave"}))
    memorize(hash_store, [speech_clip(1, [("s0", "seven eight nine", A), ("s1", "ten", near_a)])])
    assert sorted(p.name for p in hash_store.people()) == ["Carol", "Dave"]


def test_a_name_the_user_gave_is_not_inferred_for_someone_else(hash_store):
    clips = [
        speech_clip(0, [("s0", "Hello there!", A), ("s1", "Hi!", B)]),
        speech_clip(1, [("s0", "Hey Carol!", A), ("s1", "Hi!", B)]),
        speech_clip(2, [("s0", "Bye Carol!", A), ("s1", "Bye!", B)]),
    ]
    memorize(hash_store, clips[:1])
    hash_store.append_people_op(
        PeopleOp(1, "name", "voice_1", {"name": "Carol"})
    )  # the user says A is Carol
    memorize(hash_store, clips[1:])
    people = {p.person_id: p for p in hash_store.people()}
    assert [(p.name, p.name_source) for p in people.values()] == [("Carol", "user"), ("", "")]
