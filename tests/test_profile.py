"""What memory holds about one person (``control.profile``, ``mnemo people show``, REST, MCP): read
from the store as it is now, so a rename shows and a forgotten clip leaves nothing; on real LoCoMo
dialogue, and on a made conversation whose facts change."""

from __future__ import annotations

import json

import pytest

from conftest import api_client, run_cli
from control.profile import OTHER, TOPICS, about_themself, build, statements_for, topic_of
from factories import locomo_file
from graph import edit_people
from graph.resolve_people import PeopleError

TOPIC_NAMES = {name for name, _ in TOPICS} | {OTHER}


def _conversation(tmp_path, sessions: list[tuple[str, list[tuple[str, str]]]]):
    """A LoCoMo-format file of Ann and Bo's ``sessions`` ((when, [(speaker, text)])), loaded."""
    from bench.datasets.locomo import load

    conv: dict[str, str | list[dict[str, str]]] = {"speaker_a": "Ann", "speaker_b": "Bo"}
    for i, (when, turns) in enumerate(sessions, 1):
        conv[f"session_{i}_date_time"] = when
        conv[f"session_{i}"] = [
            {"speaker": s, "dia_id": f"D{i}:{j + 1}", "text": t} for j, (s, t) in enumerate(turns)
        ]
    (tmp_path / "talk.json").write_text(
        json.dumps([{"sample_id": "ann-bo", "conversation": conv, "qa": []}])
    )
    return load(tmp_path / "talk.json")[0]


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_a_profile_quotes_what_the_person_said_of_themself_each_citing_its_clip(talk_store):
    p = build(talk_store, "Caroline")
    assert p.person.name == "Caroline" and not p.is_owner and p.clips >= 3
    assert 3 <= len(p.statements) == statements_for(p.candidates) < p.candidates
    clip_ids = {m.clip_id for m in talk_store.about(list(p.person.ids), limit=None)}
    for s in p.statements:
        assert s.topic in TOPIC_NAMES and s.citation.clip_id in clip_ids
        assert "<voice_" not in s.text and "<character_" not in s.text and "?" not in s.text
        # what Caroline said, not what Melanie said to her
        said = [
            m
            for m in talk_store.memories_of_clips([s.citation.clip_id])
            if s.text.split(". ")[0] in m.text
        ]
        assert said and all(
            m.text.startswith(("<voice_1> said:", "<character_1> said:")) for m in said
        )
    assert [s.at_ts for s in p.statements] == sorted(s.at_ts for s in p.statements)
    text = "\n".join(p.lines())
    assert (
        text.startswith("Caroline: called by this name")
        and "in their own words:" in text
        and "[clip " in text
    )
    assert p.to_json()["statements"][0]["clip_id"] == p.statements[0].citation.clip_id


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_the_owner_comes_first_and_others_say_how_much_they_share_with_the_owner(talk_store):
    with pytest.raises(PeopleError, match="mnemo people me"):
        build(talk_store)
    edit_people.me(talk_store, "Caroline")
    mine = build(talk_store)
    assert mine.person.name == "Caroline" and mine.is_owner and mine.with_owner == 0
    melanie = build(talk_store, "Melanie")
    assert 0 < melanie.with_owner <= melanie.clips and melanie.last_with_owner_ts is not None
    assert "with you in" in "\n".join(melanie.lines())
    with pytest.raises(PeopleError, match="no person 'Zed'"):
        build(talk_store, "Zed")


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_a_rename_shows_at_once_and_a_forgotten_clip_leaves_nothing(talk_store, capsys):
    edit_people.name(talk_store, "Melanie", "Mel Smith")
    p = build(talk_store, "Mel Smith")
    assert p.label == "Mel Smith" and "\n".join(p.lines()).startswith("Mel Smith: named by you")
    gone = p.statements[0]
    words = gone.text[:60]
    code, out, err = run_cli(
        capsys, "forget", "--store", talk_store.uri, "--clip", gone.citation.clip_id, "--yes"
    )
    assert code == 0, out + err
    talk_store.catch_up()
    after = build(talk_store, "Mel Smith")
    assert gone.citation.clip_id not in {s.citation.clip_id for s in after.statements}
    assert words not in json.dumps(after.to_json()) and words not in "\n".join(after.lines())


def test_facts_cite_their_clips_and_show_what_they_superseded(hash_store, policies, tmp_path):
    from bench.locomo import ingest_conversation

    conv = _conversation(
        tmp_path,
        [
            (
                "9:00 am on 1 May, 2023",
                [
                    (
                        "Ann",
                        "Hi Bo! I'm Ann and I live in Boston with my husband and our two kids.",
                    ),
                    ("Bo", "Nice to meet you, Ann. I grew up in Dallas."),
                ],
            ),
            (
                "9:00 am on 1 June, 2023",
                [
                    ("Ann", "Big news: I moved to Denver last week, we love the mountains."),
                    ("Bo", "I live in Dallas, as ever."),
                ],
            ),
            (
                "9:00 am on 1 July, 2023",
                [
                    ("Ann", "I live in Denver now and I love hiking there every weekend."),
                    ("Bo", "Sounds great."),
                ],
            ),
        ],
    )
    ingest_conversation(conv, hash_store, policies)
    ann = build(hash_store, "Ann")
    lives = [f for f in ann.facts if f.relation == "lives in"]
    assert [f.value for f in lives] == ["Denver"]
    denver = lives[0]
    assert len(denver.citations) == 2  # stated in June, confirmed in July
    assert denver.confirmed_ts > denver.since_ts
    assert [v for v, _ in denver.before] == ["Boston"]
    text = "\n".join(ann.lines())
    assert "before: Boston (until 2023-06-01)" in text and "last confirmed 2023-07-01" in text
    assert {s.topic for s in ann.statements} >= {"family"}
    bo = build(hash_store, "Bo")
    assert {(f.relation, f.value) for f in bo.facts} >= {
        ("is from", "Dallas"),
        ("lives in", "Dallas"),
    }
    assert all("Denver" not in f.text for f in bo.facts)  # Ann's facts are not Bo's


def test_what_counts_as_said_of_oneself_and_its_topic():
    assert (
        about_themself("How are you? I adopted a beagle puppy last week. It is cute.")
        == "I adopted a beagle puppy last week."
    )
    assert about_themself("Do you like my new painting?") == ""  # a question
    assert about_themself("Thanks, me too!") == ""  # too little said
    assert (
        about_themself("The weather was grey all week here and the trains were late.") == ""
    )  # not of themself
    assert topic_of("My daughter starts school in May.") == "family"
    assert topic_of("I work at the hospital as a nurse.") == "home and work"
    assert topic_of("I really love pottery and painting.") == "likes"
    assert topic_of("I'm planning a trip to Spain next summer.") == "plans"
    assert topic_of("I usually run every morning before work.") == "habits"
    assert topic_of("We went camping at the lake.") == "what they did"
    assert topic_of("Life feels calm right now for me.") == OTHER


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_mnemo_people_show_prints_the_profile(talk_store, capsys):
    code, out, _ = run_cli(
        capsys, "people", "show", "Caroline", "--store", talk_store.uri, "--json"
    )
    assert code == 0 and out.startswith("Caroline: called by this name")
    body = json.loads(out.strip().splitlines()[-1])
    assert body["name"] == "Caroline" and body["statements"] and body["owner"] is False
    code, _, err = run_cli(capsys, "people", "show", "--store", talk_store.uri)
    assert code == 2 and "nobody is marked as you" in err
    code, _, err = run_cli(capsys, "people", "show", "Zed", "--store", talk_store.uri)
    assert code == 2 and "no person 'Zed'" in err


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_rest_gives_a_profile_and_says_who_exists_when_nobody_matches(talk_store):
    from control.answer import OfflineAnswerer
    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    client = api_client(create_app(MemoryService(talk_store, OfflineAnswerer(talk_store))))
    reply = client.get("/people/Caroline/profile")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["name"] == "Caroline" and body["text"].startswith("Caroline")
    assert [s["clip_id"] for s in body["statements"]] == [
        s.citation.clip_id for s in build(talk_store, "Caroline").statements
    ]
    missing = client.get("/people/me/profile")
    assert missing.status_code == 404 and "nobody is marked as you" in missing.json()["error"]
    edit_people.me(talk_store, "Melanie")
    assert client.get("/people/me/profile").json()["name"] == "Melanie"
    nobody = client.get("/people/Zed/profile")
    assert nobody.status_code == 404 and "known: " in nobody.json()["error"]


def tiny_locomo(path):
    """A LoCoMo file of one short conversation: Ann's puppy and Bo's pottery said in the first
    person, Ann's bees not said of herself (its observation facts say all three)."""
    filler = [
        ("Bo", "The weather was grey all week here."),
        ("Ann", "The film about bees was long."),
        ("Bo", "Trains were late again today."),
        ("Ann", "Sounds tiring, rest well."),
    ] * 3
    turns = [
        ("Ann", "I adopted a puppy called Rex last week, a beagle."),
        *filler,
        ("Bo", "I started pottery classes on Monday evening."),
    ]
    observation = {
        "session_1_observation": {
            "Ann": [
                ["Ann adopted a beagle puppy named Rex.", "D1:1"],
                ["Ann keeps bees.", "D1:3"],
            ],
            "Bo": [["Bo takes pottery classes.", "D1:14"]],
        }
    }
    return locomo_file(path, turns, observation=observation)


@pytest.mark.slow  # the configured text embedder
def test_bench_profile_scores_profiles_against_the_datasets_observations(tmp_path, capsys):
    tiny_locomo(tmp_path / "tiny.json")
    code, out, _ = run_cli(
        capsys, "bench", "profile", "--data", str(tmp_path / "tiny.json"), "--json"
    )
    assert code == 0
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["people"] == 2 and figures["facts"] == 3
    # the puppy and the pottery are said in the first person; the bees are not said of oneself at all
    assert figures["all_fact_recall"] == pytest.approx(2 / 3, abs=1e-3)
    assert figures["fact_recall"] == pytest.approx(
        2 / 3, abs=1e-3
    )  # few candidates: all of them are kept
    assert (
        "a fact counts as stated when one profile sentence holds half of its content words" in out
    )


@pytest.mark.slow  # talk_store: three LoCoMo sessions memorized for each test
def test_a_question_about_a_person_is_answered_by_their_profile(talk_store):
    from control.answer import OfflineAnswerer

    answerer = OfflineAnswerer(talk_store)
    profile = build(talk_store, "Caroline")
    answer = answerer.ask("What do I know about Caroline?")
    assert answer.answer.startswith("About Caroline: ")
    assert [c.clip_id for c in answer.citations] == [
        s.citation.clip_id for s in profile.statements[-5:]
    ]
    assert "the profile of Caroline" in answer.steps[-1]
    assert answerer.ask("Tell me about Melanie").answer.startswith("About Melanie: ")
    # nobody of that name, nobody marked as me, or a question about a thing: searched as before
    assert not answerer.ask("Tell me about Zed").answer.startswith("About")
    assert not answerer.ask("Tell me about myself").answer.startswith("About")
    assert not answerer.ask("Who is painting the lake?").answer.startswith("About")
    edit_people.me(talk_store, "Melanie")
    assert answerer.ask("Tell me about myself").answer.startswith("About you: ")
    # what was known before a time is searched: a profile is of now
    assert not answerer.ask(
        "Who is Caroline?", before_ts=profile.statements[-1].at_ts
    ).answer.startswith("About")
