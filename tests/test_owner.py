"""The owner: ``mnemo people me``, ``[people] me``, the proposal mnemo makes (never a decision), and
first-person questions resolved to the owner by the planner. On the hand-written people store
(conftest ``build_people_store``): ``character_1`` speaks as ``voice_1``, ``character_2`` as ``voice_2``."""

from __future__ import annotations

import json
from datetime import UTC

import pytest

from conftest import PEOPLE_T0, run_cli
from factories import locomo_file, locomo_question


def _cli(capsys, store, *argv: str):
    code, out, err = run_cli(capsys, "people", *argv, "--store", store.uri, "--json")
    return code, (json.loads(out.strip().splitlines()[-1]) if code == 0 else None), out, err


@pytest.fixture
def hash_embedder(monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")


def test_marking_the_owner_moves_with_merges_and_is_undone(people_store, capsys, hash_embedder):
    from graph import edit_people
    from graph.resolve_people import PeopleError, owner_of

    assert owner_of(people_store.people()) is None
    code, change, out, _ = _cli(capsys, people_store, "me", "voice_1")
    assert code == 0 and change["change"]["description"] == "me character_1", change
    assert [p["id"] for p in change["people"] if p["owner"]] == ["character_1"]
    assert "(me)" in out
    assert owner_of(people_store.people()).person_id == "character_1"
    with pytest.raises(PeopleError, match="already marked as you"):
        edit_people.me(people_store, "character_1")
    # another mark moves it; both people are shown as touched
    moved = edit_people.me(people_store, "voice_2")
    assert {p.person_id: p.owner for p in moved.people} == {
        "character_1": False,
        "character_2": True,
    }
    edit_people.undo(people_store)
    assert owner_of(people_store.people()).person_id == "character_1"
    edit_people.merge(
        people_store, "character_2", "character_1"
    )  # the owner's group grows, the mark stays
    assert [p.person_id for p in people_store.people() if p.owner] == ["character_1"]
    code, _, _, err = _cli(capsys, people_store, "me", "voice_9")
    assert code == 2 and "no person 'voice_9'" in err


def test_config_names_the_owner_only_when_none_is_marked(people_store):
    from control.tools import MemoryTools
    from graph import edit_people

    assert MemoryTools(people_store, "character_2").owner().person_id == "character_2"
    assert MemoryTools(people_store, "nobody").owner() is None  # never a guess
    edit_people.name(people_store, "voice_2", "Sarah")
    assert MemoryTools(people_store, "sarah").owner().person_id == "character_2"
    edit_people.me(people_store, "voice_1")
    assert MemoryTools(people_store, "Sarah").owner().person_id == "character_1"  # the mark wins


def test_mnemo_proposes_the_voice_heard_on_most_days_and_decides_nothing(
    people_store, capsys, hash_embedder
):
    from bench.talk_store import write_talk

    # a second recording, a day later, where only voice_1 speaks
    write_talk(
        people_store,
        PEOPLE_T0 + 86400,
        1,
        lambda i: f"next-day-{i}",
        "/recordings/walk.wav",
        "sha-walk",
        lines=[(0, "voice_1", 2, "Remind me to call the bakery about the custard tarts.")],
        face_in=(),
    )
    code, out, text, _ = _cli(capsys, people_store, "me")
    assert code == 0 and out["owner"] is None
    assert out["proposal"] == {
        "id": "character_1",
        "name": "",
        "days": 2,
        "recordings": 2,
        "clips": 3,
    }
    assert (
        "heard on 2 of 2 days, in 2 of 2 recordings" in text
        and "mnemo people me character_1" in text
    )
    assert "next: character_2, heard on 1 days in 1 recordings" in text
    assert people_store.people_ops() == [] and not any(p.owner for p in people_store.people())


def test_no_proposal_when_two_voices_are_heard_alike(people_store, capsys, hash_embedder):
    code, out, text, _ = _cli(capsys, people_store, "me")
    assert code == 0 and out == {"owner": None, "proposal": None}
    assert "no voice stands out" in text


def test_first_person_questions_are_about_the_owner(people_store):
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph import edit_people

    planner = OfflinePlanner(MemoryTools(people_store))
    unowned = planner.plan("What did I say about Porto?")
    assert unowned.people == () and unowned.me is None  # no owner: "I" is a plain word

    edit_people.name(people_store, "voice_2", "Sarah")
    edit_people.me(people_store, "voice_1")
    planner = OfflinePlanner(
        MemoryTools(people_store)
    )  # (plan reads people as of the last retrieve)
    plan = planner.plan("What did I say about Porto?")
    assert plan.me.person_id == "character_1" and [p.person_id for p in plan.subjects] == [
        "character_1"
    ]
    told = planner.plan("What did Sarah tell me about the tram?")
    assert [p.person_id for p in told.people] == ["character_2", "character_1"]
    assert [p.person_id for p in told.subjects] == ["character_2"]
    both = planner.plan("What did Sarah and I talk about?")
    assert {p.person_id for p in both.subjects} == {"character_1", "character_2"}

    said = planner.retrieve("what did i say about next year?")
    assert said.rounds[0] == '"I" is <character_1>, the owner'
    assert said.memories[0].entity_ids == ("voice_1",) and "Porto" in said.memories[0].text
    tram = planner.retrieve("What did Sarah tell me about the tram?")
    assert tram.memories[0].entity_ids == ("voice_2",)  # what Sarah said leads
    assert any("tram 28" in m.text for m in tram.memories[:3])


@pytest.mark.parametrize(
    "third, first",
    [
        (
            "When did Caroline go to the LGBTQ support group?",
            "When did I go to the LGBTQ support group?",
        ),
        ("What is Caroline's identity?", "What is my identity?"),
        (
            "How long has Caroline had her current group of friends for?",
            "How long have I had my current group of friends for?",
        ),
        (
            "When is Caroline going to the transgender conference?",
            "When am I going to the transgender conference?",
        ),
        ("What kind of art does Caroline make?", "What kind of art do I make?"),
        (
            "Who supports Caroline when she has a negative experience?",
            "Who supports me when I have a negative experience?",
        ),
        (
            "What are some changes Caroline has faced during her transition?",
            "What are some changes I have faced during my transition?",
        ),
        (
            "When did Caroline and Melanie go to a pride festival together?",
            "When did Melanie and I go to a pride festival together?",
        ),
        ("What painting did Melanie show to Caroline?", "What painting did Melanie show to me?"),
        (
            "Did Melanie tell her about Caroline's plans?",
            "Did Melanie tell her about my plans?",
        ),  # "her": Melanie is named
    ],
)
def test_a_question_asked_in_the_first_person(third, first):
    from bench.first_person import to_first_person

    assert to_first_person(third, "Caroline", ("Melanie",)) == first


@pytest.mark.slow
def test_bench_locomo_first_person_asks_the_owners_questions_both_ways(tmp_path, capsys):
    filler = [
        ("Bo", "The weather was grey all week."),
        ("Ann", "I watched a film about bees."),
        ("Bo", "My cousin visits in June."),
        ("Ann", "We painted the fence on Sunday."),
    ] * 3
    turns = [
        ("Ann", "I adopted a puppy called Rex last week."),
        *filler,
        ("Ann", "Rex is a beagle, and he loves the park."),
        ("Bo", "I started pottery classes on Monday."),
        *filler,
    ]
    beagle, pottery = len(filler) + 2, len(filler) + 3
    qa = [
        locomo_question("What breed is Ann's dog?", "beagle", f"D1:{beagle}"),
        locomo_question("What class did Bo start?", "pottery", f"D1:{pottery}"),
    ]
    locomo_file(tmp_path / "tiny.json", turns, qa)
    code, out, _ = run_cli(
        capsys, "bench", "locomo", "--first-person", "--data", str(tmp_path / "tiny.json"), "--json"
    )
    assert code == 0
    figures = json.loads(out.strip().splitlines()[-1])
    # only Ann's question has a first-person form ("What breed is my dog?"), and both forms find it
    assert figures["questions"] == 1 and figures["all_questions"]["questions"] == 2
    assert figures["first_person_recall@10"] == figures["third_person_recall@10"] == 1.0
    assert "asked as they would ask it" in out


def _screen_clip(k: int, when: float, text: str, typed: bool):
    """A captured screen clip as perception leaves it: one frame of a notes window showing ``text``,
    kept while the user typed (``typed``) or not."""
    from datetime import datetime

    from perception.records import Clip, ClipObservations, FrameObservation, SourceInfo, TextLine

    source = SourceInfo(
        "/captures/2027-01-15",
        f"sha-screen-{k}",
        30.0,
        False,
        True,
        datetime.fromtimestamp(when, UTC),
        "sidecar",
    )
    frame = FrameObservation(
        1.0,
        text_lines=(TextLine(text, (0, 0, 400, 20), 0.98),),
        app="gedit",
        window="notes.txt",
        source_id=f"/captures/shot-{k}.jpg",
        input=typed,
    )
    return ClipObservations(Clip(f"screen-clip-{k}", source, 0, 0.0, 30.0), (), (), frames=(frame,))


def test_on_captured_screens_the_owner_is_the_one_typing(people_store, tmp_path):
    """A note on screen while the user typed is the owner's: a first-person question favours it over
    the same note merely shown; a question about someone else does not. The capture sidecar's
    ``input`` (or an older sidecar's reason "input") is what says so."""
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph import edit_people
    from graph.rows import BY_OWNER
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer, clip_row
    from perception.sources.screenshots import scan

    for name, side in (
        ("20270115-080100.png", {"input": True}),
        ("20270115-080200.png", {"reason": "input"}),
        ("20270115-080300.png", {"input": False, "reason": "change"}),
    ):
        (tmp_path / name).write_bytes(b"")
        (tmp_path / f"{name}.json").write_text(
            json.dumps({"captured_at": "2027-01-15T08:01:00+00:00", **side})
        )
    assert [s.input for s in scan(tmp_path)] == [True, True, False]

    memorizer = Memorizer(people_store, MatchPolicy(0.92), MatchPolicy(0.84, by_profile=True))
    note = "tram 28 tickets: buy two at Martim Moniz"
    for k, (when, typed) in enumerate([(PEOPLE_T0 + 600, False), (PEOPLE_T0 + 1200, True)]):
        obs = _screen_clip(k, when, note, typed)
        w = memorizer.memorize(obs)
        people_store.commit_clip(clip_row(obs), w.memories, w.entities, w.edges, w.updated)
        assert all((BY_OWNER in m.provenance) == typed for m in w.memories) and len(w.memories) == 2
    edit_people.name(people_store, "voice_2", "Sarah")
    edit_people.me(people_store, "voice_1")
    planner = OfflinePlanner(MemoryTools(people_store))
    mine = planner.retrieve("What did I note about the tram tickets?").memories
    mine = planner.retrieve("What did I note about Martim Moniz?").memories
    assert (
        mine[0].clip_id == "screen-clip-1" and mine[0].kind == "resource"
    )  # typed, though shown later
    notes = [m.clip_id for m in mine if m.kind == "resource"]
    assert notes == ["screen-clip-1", "screen-clip-0"]
    # about someone else, what the owner typed has no bonus: the two notes tie, the earlier first
    notes = [
        m.clip_id
        for m in planner.retrieve("What did Sarah note about Martim Moniz?").memories
        if m.kind == "resource"
    ]
    assert notes == ["screen-clip-0", "screen-clip-1"]
    theirs = planner.retrieve("What did Sarah say about the tram?").memories
    assert theirs[0].entity_ids == ("voice_2",)
