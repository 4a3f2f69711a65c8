"""Forget takes what it derived (issue 42): a name heard only in forgotten clips, the times a person
was seen there and the links only they supported go with them; a name the user gave, and one heard
again elsewhere, stay. Through ``mnemo people --json``, as the user who found it looked."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from conftest import files_holding, forget_cli, people_cli, run_cli
from factories import TALK as SOURCE
from factories import VOICE_A as A
from factories import VOICE_B as B
from factories import memorize, memorize_talk, speech_clip, unit
from graph.forget_store import Filter, finish_unfinished, forget, plan
from perception.records import FaceObservation

C = unit([0, 1, 0, 0.1])
T0 = SOURCE.recorded_at.timestamp()


def _iso(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts, UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture(autouse=True)
def hash_embedder(monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")


def _introduced(store, *, sheila_again: bool = False):
    """Sheila (voice_1) and Diane (voice_2) name themselves in clip0 only (Marta, voice_3, is heard
    there alone); clip1 and clip2 hear the first two again, and Sheila names herself in clip2 too
    when ``sheila_again``."""
    memorize_talk(
        store,
        [
            ("s0", "Hi, I'm Sheila.", A),
            ("s1", "Nice to meet you, I'm Diane.", B),
            ("s2", "And I'm Marta, hello both.", C),
        ],
        [("s0", "The tram was late again this morning.", A), ("s1", "We planted tomatoes.", B)],
        [
            ("s0", "I'm Sheila, by the way." if sheila_again else "The river was high.", A),
            ("s1", "The garden needs rain.", B),
        ],
    )
    return store


def _people(capsys, store) -> dict[str, dict]:
    code, people, err = people_cli(capsys, store)
    assert code == 0, err
    return {p["voices"][0]: p for p in cast(list[dict], people)}


def test_a_name_heard_only_in_a_forgotten_clip_goes_and_the_person_stays_unnamed(
    capsys, hash_store
):
    store = _introduced(hash_store)
    before = _people(capsys, store)
    assert [
        (before[v]["name"], before[v]["name_source"]) for v in ("voice_1", "voice_2", "voice_3")
    ] == [("Sheila", "introduced"), ("Diane", "introduced"), ("Marta", "introduced")]
    assert before["voice_1"]["first_seen"] == _iso(T0)  # clip0

    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    after = _people(capsys, store)
    assert sorted(after) == ["voice_1", "voice_2"]  # Marta was only ever heard there: she goes
    for voice, first_words in (("voice_1", T0 + 30), ("voice_2", T0 + 34)):
        person = after[voice]
        assert (person["id"], person["name"], person["name_source"]) == (
            before[voice]["id"],
            "",
            "",
        )
        # first seen at their first words in clip1 now; last seen in clip2 as before
        assert (
            person["first_seen"] == _iso(first_words)
            and person["last_seen"] == before[voice]["last_seen"]
        )
        assert person["clips"] == 2
    # the evidence edges and the names themselves are in no row and no file of the store
    assert [
        e for k in ("introduced_as", "addressed_as", "says_name") for e in store.all_edges(k)
    ] == []
    assert [e.name for e in store.load_entities("character", samples=False)] == ["", ""]
    for name in ("Sheila", "Diane", "Marta"):
        assert files_holding(Path(store.uri), name) == [], name


def test_a_name_heard_again_in_a_remaining_clip_stays(capsys, hash_store):
    store = _introduced(hash_store, sheila_again=True)
    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    after = _people(capsys, store)
    assert (after["voice_1"]["name"], after["voice_1"]["name_source"]) == ("Sheila", "introduced")
    assert after["voice_2"]["name"] == ""
    (edge,) = store.all_edges("introduced_as")
    assert edge.dst_id == "name:Sheila" and edge.evidence[0] == "clip:clip2" and edge.weight == 1.0


def test_a_namesake_s_evidence_keeps_no_one_else_s_name(capsys, hash_store):
    """Two Sheilas of two recordings (they never met): forgetting where the first named herself
    takes her name, whatever the other's evidence says."""
    from dataclasses import replace

    other = replace(SOURCE, path="/other.wav", sha256="3" * 64)
    elsewhere = speech_clip(1, [("s0", "Hello, I'm Sheila.", B), ("s1", "Hi Sheila, I'm Tom.", C)])
    memorize(
        hash_store,
        [
            speech_clip(0, [("s0", "Hi, I'm Sheila.", A), ("s0", "The tram was late.", A)]),
            replace(elsewhere, clip=replace(elsewhere.clip, source=other)),
            speech_clip(2, [("s0", "The river was high.", A)]),
        ],
    )
    assert sorted(p["name"] for p in _people(capsys, hash_store).values()) == [
        "Sheila",
        "Sheila",
        "Tom",
    ]
    assert forget_cli(hash_store, "--clip", "clip0", "--yes")[0] == 0
    after = _people(capsys, hash_store)
    assert (after["voice_1"]["name"], after["voice_2"]["name"]) == ("", "Sheila")


def test_a_name_the_user_gave_stays_and_the_inferred_one_under_it_goes(capsys, hash_store):
    store = _introduced(hash_store)
    code, _out, err = run_cli(capsys, "people", "--store", store.uri, "name", "voice_2", "Didi")
    assert code == 0, err
    store.catch_up()
    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    after = _people(capsys, store)
    assert (after["voice_2"]["name"], after["voice_2"]["name_source"]) == ("Didi", "user")
    assert after["voice_2"]["first_seen"] == _iso(T0 + 34)  # their first words in clip1
    # the user's log holds ids and the name typed, nothing heard in a clip
    (op,) = store.people_ops()
    assert (op.op, op.person, op.args) == ("name", "character_2", {"name": "Didi"})
    assert files_holding(Path(store.uri), "Diane") == []
    assert [c.name for c in store.load_entities("character", samples=False)] == ["", ""]


def test_an_enrolled_name_is_given_not_inferred_and_stays(capsys, hash_store):
    from factories import FACES, VOICES
    from memorize.memorizer import Memorizer, clip_row

    memorizer = Memorizer(hash_store, FACES, VOICES)
    memorizer.enrol("Grace", A, T0)
    for obs in (
        speech_clip(0, [("s0", "I rode the tram.", A)]),
        speech_clip(1, [("s0", "The river was high.", A)]),
    ):
        w = memorizer.memorize(obs)
        hash_store.commit_clip(clip_row(obs), w.memories, w.entities, w.edges, w.updated)
    assert forget_cli(hash_store, "--clip", "clip0", "--yes")[0] == 0
    person = _people(capsys, hash_store)["voice_1"]
    assert (person["name"], person["name_source"]) == ("Grace", "enrolled")
    assert person["first_seen"] == _iso(T0 + 30)


def _face_clip(k: int, turns, face_frames: list[float]):
    """``speech_clip`` with one face, the same one each time, seen alone at these seconds of the clip."""
    from dataclasses import replace

    emb = unit([0.3, 0.2, 0.9, 0.1])
    obs = speech_clip(k, turns)
    faces = tuple(
        FaceObservation(f"clip{k}:f{i}", t, (0, 0, 10, 10), 0.99, emb, 100.0, "p0")
        for i, t in enumerate(face_frames)
    )
    return replace(obs, faces=faces)


def test_a_face_linked_only_in_a_forgotten_clip_is_no_ones_and_one_seen_again_with_its_voice_stays(
    capsys, hash_store
):
    store = hash_store
    # clip0: the face is seen while voice_1 speaks (linked there); clip1: seen again, alone, with
    # nobody speaking; clip2: voice_1 speaks, no face
    memorize(
        store,
        [
            _face_clip(0, [("s0", "Here is the plan for the week.", A)], [0.5, 1.5, 2.5, 3.0]),
            _face_clip(1, [], [5.0]),
            speech_clip(2, [("s0", "The river was high.", A)]),
        ],
    )
    (link,) = [e for e in store.all_edges("same_person") if e.src_id == "face_1"]
    assert link.dst_id == "character_1" and link.evidence == ("clip0",)
    assert _people(capsys, store)["voice_1"]["faces"] == ["face_1"]
    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    assert [e for e in store.all_edges("same_person") if e.src_id == "face_1"] == []
    assert _people(capsys, store)["voice_1"]["faces"] == []


def test_a_face_seen_again_with_its_voice_keeps_its_link_on_that_evidence(capsys, hash_store):
    store = hash_store
    frames = [0.5, 1.5, 2.5, 3.0]
    memorize(
        store,
        [
            _face_clip(0, [("s0", "Here is the plan for the week.", A)], frames),
            _face_clip(1, [("s0", "And the plan for the weekend.", A)], frames),
        ],
    )
    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    (link,) = [e for e in store.all_edges("same_person") if e.src_id == "face_1"]
    assert link.evidence == ("clip1",) and link.clip_id == "clip1"
    assert _people(capsys, store)["voice_1"]["faces"] == ["face_1"]


def test_a_forget_killed_before_it_took_back_what_it_derived_is_finished_the_same(
    capsys, tmp_path, monkeypatch
):
    """Killed after the clip rows went, before the names did: the next forget (``finish_unfinished``)
    takes them back as an uninterrupted forget does."""
    from embeddings.base import build_text_embedder
    from graph import forget_store as forget_module
    from graph.store import Store

    clean = _introduced(Store(tmp_path / "clean", build_text_embedder("hash")))
    killed = _introduced(Store(tmp_path / "killed", build_text_embedder("hash")))
    assert forget_cli(clean, "--clip", "clip0", "--yes")[0] == 0

    def killed_here(store, erase):
        raise KeyboardInterrupt  # as a kill between step 4 and step 5

    f = Filter(clip_id="clip0")
    with monkeypatch.context() as m:
        m.setattr(forget_module, "retract_derived", killed_here)
        with pytest.raises(KeyboardInterrupt):
            forget(killed, plan(killed, f), f)
    killed.catch_up()
    assert not killed.has_clip("clip0")
    assert _people(capsys, killed)["voice_1"]["name"] == "Sheila"  # the state the kill left
    assert finish_unfinished(killed) == 1
    killed.catch_up()
    assert _people(capsys, killed) == _people(capsys, clean)
    assert files_holding(Path(killed.uri), "Sheila") == []
    assert finish_unfinished(killed) == 0


def test_forgetting_a_clip_that_named_nobody_changes_no_one(capsys, hash_store):
    store = _introduced(hash_store, sheila_again=True)
    before = _people(capsys, store)
    assert forget_cli(store, "--clip", "clip1", "--yes")[0] == 0
    after = _people(capsys, store)
    assert {v: (p["name"], p["first_seen"]) for v, p in after.items()} == {
        v: (p["name"], p["first_seen"]) for v, p in before.items()
    }
    assert np.isclose(
        sum(e.weight for e in store.all_edges("introduced_as")), 4.0
    )  # 2 Sheila, Diane, Marta


def test_a_link_a_model_stated_of_a_forgotten_clip_rests_on_what_remains(people_store):
    """``llm:CLIP`` (what an LLM writer said of that clip) is evidence in that clip: forgotten with it."""
    import pyarrow as pa

    from graph.rows import Edge
    from graph.schema import edge_row, edge_schema

    said = Edge(
        "same_person", "face_1", "character_1", 1.0, "people-clip-1", ("llm:people-clip-1",)
    )
    people_store.edges.merge_insert("edge_id").when_matched_update_all().execute(
        pa.Table.from_pylist([edge_row(said, said.clip_id, 0.0)], schema=edge_schema())
    )
    assert forget_cli(people_store, "--clip", "people-clip-1", "--yes")[0] == 0
    (link,) = [e for e in people_store.all_edges("same_person") if e.src_id == "face_1"]
    assert link.evidence == ("people-clip-0",)  # face_1 and voice_1 are seen together there


def test_a_face_link_written_without_evidence_survives_forgetting_another_clip(people_store):
    """A writer may link a face with no evidence items (an LLM's fact that named none) but with its
    clip: forgetting some other clip takes nothing of it."""
    import pyarrow as pa

    from graph.rows import Edge
    from graph.schema import edge_row, edge_schema

    bare = Edge("same_person", "face_1", "character_1", 1.0, "people-clip-0", ())
    people_store.edges.merge_insert("edge_id").when_matched_update_all().execute(
        pa.Table.from_pylist([edge_row(bare, bare.clip_id, 0.0)], schema=edge_schema())
    )
    people_store.memories.delete(
        "entity_ids IS NOT NULL AND array_has(entity_ids, 'face_1')"
    )  # never seen with a voice
    assert forget_cli(people_store, "--clip", "people-clip-1", "--yes")[0] == 0
    (link,) = [e for e in people_store.all_edges("same_person") if e.src_id == "face_1"]
    assert (link.clip_id, link.evidence) == ("people-clip-0", ())
