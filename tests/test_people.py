"""The user in charge of people: ``mnemo people`` (list, name, merge, split, undo, history), the same
changes over REST, names resolved when read, bad input refused with nothing changed, and two
commands at once both recorded. On a small store written by hand (conftest ``build_people_store``)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import (
    PEOPLE_T0,
    api_client,
    people_cli,
    renames_at_once,
    run_cli,
    third_people_clip,
)
from control.answer import OfflineAnswerer
from control.people import summarize_people
from graph import edit_people
from graph.resolve_people import PeopleError
from graph.rows import Edge, Entity
from mnemo.serve.api import create_app
from mnemo.serve.service import MemoryService

FIELDS = {
    "id",
    "name",
    "name_source",
    "voices",
    "faces",
    "clips",
    "first_seen",
    "last_seen",
    "quote",
}


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch):
    monkeypatch.setenv(
        "MNEMO_GRAPH__TEXT_EMBEDDER", "hash"
    )  # what the hand-made store was built with


def test_listing_has_everyone_with_details(capsys, people_store):
    code, people, _ = people_cli(capsys, people_store)
    assert code == 0 and [p["id"] for p in people] == ["character_1", "character_2"]
    first, second = people
    assert FIELDS <= set(first)
    assert first["voices"] == ["voice_1"] and first["faces"] == ["face_1"] and second["faces"] == []
    assert first["name"] == "" and first["name_source"] == "" and first["clips"] == 2
    assert (
        first["first_seen"] == "2027-01-15T08:00:00Z"
        and first["last_seen"] == "2027-01-15T08:01:00Z"
    )
    assert second["quote"].startswith("Lisbon was lovely")  # the longest thing voice_2 said
    assert first["quote"] == "Did you take the old tram up the hill?"

    code, out, _ = run_cli(capsys, "people", "--store", people_store.uri)
    assert code == 0 and "character_2" in out and 'said: "Lisbon was lovely' in out


def test_name_merge_split_undo(capsys, people_store):
    code, change, _ = people_cli(capsys, people_store, "name", "voice_2", "Carol")
    assert code == 0 and change["change"]["op"] == "name" and change["change"]["seq"] == 1
    assert [(p["id"], p["name"], p["name_source"]) for p in change["people"]] == [
        ("character_2", "Carol", "user")
    ]

    code, change, _ = people_cli(capsys, people_store, "merge", "Carol", "<voice_1>")
    assert code == 0 and len(change["people"]) == 1
    merged = change["people"][0]
    assert merged["id"] == "character_1" and merged["name"] == "Carol"
    assert merged["voices"] == ["voice_1", "voice_2"] and merged["clips"] == 2

    code, change, _ = people_cli(
        capsys, people_store, "split", "Carol", "voice_1", "character_1", "face_1"
    )
    assert code == 0
    assert {(p["id"], p["name"]) for p in change["people"]} == {
        ("character_1", ""),
        ("character_2", "Carol"),
    }

    code, change, _ = people_cli(capsys, people_store, "undo")
    assert (
        code == 0 and change["undid"]["op"] == "split" and change["change"]["args"] == {"target": 3}
    )
    assert [p["voices"] for p in change["people"]] == [["voice_1", "voice_2"]]

    code, history, _ = people_cli(capsys, people_store, "history")
    assert code == 0 and [(o["seq"], o["op"], o["undone"]) for o in history] == [
        (1, "name", False),
        (2, "merge", False),
        (3, "split", True),
        (4, "undo", False),
    ]
    for _ in range(2):  # the merge, then the name
        assert people_cli(capsys, people_store, "undo")[0] == 0
    assert [(p.person_id, p.name) for p in people_store.people()] == [
        ("character_1", ""),
        ("character_2", ""),
    ]


def test_a_name_shows_where_memories_are_read(capsys, people_store):
    assert people_cli(capsys, people_store, "name", "voice_2", "Carol")[0] == 0
    question = "What did Carol say about the custard tarts at the bakery in Lisbon?"
    code, out, _ = run_cli(capsys, "ask", question, "--store", people_store.uri, "--json")
    assert (
        code == 0
        and 'Carol said: "Lisbon was lovely' in json.loads(out.strip().splitlines()[-1])["answer"]
    )

    client = api_client(create_app(MemoryService(people_store, OfflineAnswerer(people_store))))
    hits = client.get("/search", params={"q": "tram", "person": "Carol"}).json()
    assert hits and all(h["people"] == ["Carol"] for h in hits)
    assert any(h["text"] == 'Carol said: "I rode tram 28 twice, it was packed."' for h in hits)
    clip = client.get("/clips/people-clip-0").json()
    assert any(m["text"].startswith('Carol said: "Lisbon') for m in clip["memories"])


def test_a_user_name_wins_over_a_later_inferred_one(people_store):
    edit_people.name(people_store, "voice_2", "Carol")
    # a later clip: inference calls character_2 "Bob", having heard voice_2 introduce itself so
    start = PEOPLE_T0 + 60
    clip = third_people_clip("I'm Bob.")
    renamed = Entity("character_2", "character", PEOPLE_T0, start + 30, [], 2, name="Bob")
    people_store.commit_clip(clip, [], [renamed], [Edge("introduced_as", "voice_2", "name:Bob")])
    assert [
        e.name for e in people_store.load_entities("character") if e.entity_id == "character_2"
    ] == ["Bob"]
    carol = edit_people._find(people_store.people(), "voice_2")
    assert (carol.name, carol.name_source) == ("Carol", "user")
    edit_people.undo(people_store)  # without the user's name, the inferred one shows
    bob = edit_people._find(people_store.people(), "voice_2")
    assert (bob.name, bob.name_source) == ("Bob", "introduced")


BAD = [
    (("name", "voice_9", "Zed"), "no person 'voice_9'"),
    (("name", "character_1", "   "), "empty"),
    (("name", "character_1", "x" * 81), "at most 80"),
    (("name", "character_1", "Carol\nBob"), "control"),
    (("name", "character_1", "Carol\u202eloraC"), "invisible"),
    (("name", "character_1", "<b>Carol</b>"), "< or >"),
    (("name", "character_1", "voice_2"), "is an id"),
    (("name", "character_1", "Alice"), "already called 'Alice'"),
    (("name", "character_2", "Alice"), "already called 'Alice'"),
    (("merge", "voice_1", "voice_1"), "same id"),
    (("merge", "voice_1", "character_1"), "ids of one person"),
    (("merge", "voice_1", "nobody"), "no person 'nobody'"),
    (("split", "character_1", "voice_2"), "voice_2 is not part of character_1"),
    (("split", "character_1", "character_1", "voice_1", "face_1"), "would leave nothing"),
    (("split", "character_1", "character_1", "voice_1"), "split face_1 off instead"),
    (("split", "ghost", "voice_1"), "no person 'ghost'"),
]


@pytest.mark.parametrize("argv, says", BAD, ids=[" ".join(a)[:40] for a, _ in BAD])
def test_bad_changes_exit_2_and_change_nothing(capsys, people_store, argv, says):
    edit_people.name(people_store, "voice_1", "Alice")
    before = people_store.people_ops()
    code, out, err = run_cli(capsys, "people", *argv, "--store", people_store.uri)
    assert code == 2 and err.startswith("error: ") and says in err, err
    assert people_store.people_ops() == before


def test_undo_with_no_history_and_after_everything_undone(capsys, people_store):
    code, _, err = run_cli(capsys, "people", "undo", "--store", people_store.uri)
    assert code == 2 and "nothing to undo" in err and people_store.people_ops() == []
    edit_people.name(people_store, "voice_1", "Alice")
    edit_people.undo(people_store)
    before = people_store.people_ops()
    with pytest.raises(PeopleError, match="nothing to undo"):
        edit_people.undo(people_store)
    assert people_store.people_ops() == before


def test_no_store_is_an_error_not_a_new_store(capsys, tmp_path):
    code, _, err = run_cli(capsys, "people", "--store", str(tmp_path / "missing"))
    assert code == 2 and "no store at" in err and not (tmp_path / "missing").exists()


def test_concurrent_changes_from_threads_all_land(people_store):
    """Each change reads the log, numbers itself and appends under the store's lock: without it two
    would take one number and one would be lost."""
    errors = renames_at_once(people_store)
    assert not errors
    ops = people_store.people_ops()
    assert [o.seq for o in ops] == list(range(1, 9))
    assert sorted(o.args["name"] for o in ops) == [f"Name {i}" for i in range(8)]


@pytest.mark.slow
def test_two_commands_at_once_both_land(people_store, tmp_path):
    env = {"MNEMO_GRAPH__TEXT_EMBEDDER": "hash", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mnemo",
                "people",
                "name",
                who,
                name,
                "--store",
                people_store.uri,
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for who, name in (("voice_1", "Alice"), ("voice_2", "Carol"))
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], results
    assert sorted(o.seq for o in people_store.people_ops()) == [1, 2]
    assert {p.name for p in people_store.people()} == {"Alice", "Carol"}


def test_people_are_read_again_only_after_a_change(people_store, monkeypatch):
    """A server answers many questions between two changes: people are resolved once per version of
    the tables they come from, and a rename through another handle (another process) shows at once."""
    from graph.store import Store

    reads = []
    real = people_store.load_entities
    monkeypatch.setattr(people_store, "load_entities", lambda **kw: reads.append(1) or real(**kw))
    first = people_store.people()
    assert people_store.people() == first and len(reads) == 1
    edit_people.name(Store(people_store.uri, people_store.embedder), "voice_2", "Carol")
    assert "Carol" in {p.name for p in people_store.people()} and len(reads) == 2


def test_summaries_take_one_memory_query(people_store, monkeypatch):
    calls = []
    real = people_store.about
    monkeypatch.setattr(
        people_store, "about", lambda ids, limit=50: calls.append(ids) or real(ids, limit)
    )
    summaries = summarize_people(people_store)
    assert len(summaries) == 2 and len(calls) == 1


# ---- REST ------------------------------------------------------------------------------------


@pytest.fixture
def client(people_store):
    return api_client(create_app(MemoryService(people_store, OfflineAnswerer(people_store))))


def test_rest_people_changes(client, people_store):
    people = client.get("/people").json()
    assert [p["id"] for p in people] == ["character_1", "character_2"]
    assert FIELDS | {"label", "members", "first_seen_ts"} <= set(people[0])

    reply = client.post("/people/voice_2/name", json={"name": "Carol"})
    assert reply.status_code == 200 and reply.json()["people"][0]["label"] == "Carol"
    reply = client.post("/people/merge", json={"a": "Carol", "b": "character_1"})
    assert reply.status_code == 200 and reply.json()["people"][0]["voices"] == [
        "voice_1",
        "voice_2",
    ]
    reply = client.post(
        "/people/Carol/split", json={"members": ["voice_1", "character_1", "face_1"]}
    )
    assert reply.status_code == 200 and len(reply.json()["people"]) == 2
    reply = client.post("/people/undo", json={})
    assert reply.status_code == 200 and reply.json()["undid"]["op"] == "split"
    history = client.get("/people/history").json()
    assert [(o["op"], o["undone"]) for o in history] == [
        ("name", False),
        ("merge", False),
        ("split", True),
        ("undo", False),
    ]
    assert [p["name"] for p in client.get("/people").json()] == ["Carol"]


@pytest.mark.parametrize(
    "path, body, status, says",
    [
        ("/people/voice_9/name", {"name": "Zed"}, 404, "no person 'voice_9'"),
        ("/people/merge", {"a": "voice_1", "b": "nobody"}, 404, "no person 'nobody'"),
        ("/people/ghost/split", {"members": ["voice_1"]}, 404, "no person 'ghost'"),
        ("/people/voice_1/name", {"name": "a\nb"}, 422, "control"),
        ("/people/voice_1/name", {"name": ""}, 422, "name"),
        ("/people/voice_1/name", {}, 422, "name"),
        ("/people/merge", {"a": "voice_1", "b": "character_1"}, 422, "ids of one person"),
        ("/people/character_1/split", {"members": ["voice_2"]}, 422, "not part of character_1"),
        ("/people/character_1/split", {"members": []}, 422, "members"),
        ("/people/undo", {}, 422, "nothing to undo"),
    ],
)
def test_rest_bad_changes(client, people_store, path, body, status, says):
    reply = client.post(path, json=body)
    assert reply.status_code == status and says in reply.json()["error"], reply.text
    assert people_store.people_ops() == []


def test_rest_changes_take_json_only(client, people_store):
    """A form posted by another site's page (no CORS preflight for it) cannot change people."""
    for path, data in (
        ("/people/voice_1/name", {"name": "Mallory"}),
        ("/people/undo", None),
        ("/people/merge", {"a": "voice_1", "b": "voice_2"}),
    ):
        reply = client.post(path, data=data)  # application/x-www-form-urlencoded, or no body
        assert reply.status_code == 415 and "application/json" in reply.json()["error"], path
        reply = client.post(
            path, content=json.dumps(data or {}), headers={"Content-Type": "text/plain"}
        )
        assert reply.status_code == 415, path
    assert people_store.people_ops() == []
    assert client.get("/people/voice_1/name").status_code == 405
