"""Names and facts from speech, face–voice linking, and consolidation of semantic memories."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np
import pytest

from embeddings.base import build_text_embedder
from graph.rows import ClipRow, Memory, content_id
from graph.store import Store, StoreError
from memorize.characters import ClipChanges, People
from memorize.consolidate import Consolidator, clip_evidence
from memorize.speech_facts import facts_in, names_in
from perception.records import Clip, ClipObservations, FaceObservation, SourceInfo, SpeechTurn


@pytest.mark.parametrize(
    "text, names, facts",
    [
        ("This is Diane in New Jersey.", ["Diane"], [("lives in", "New Jersey")]),
        (
            "And I'm Sheila in Texas, originally from Chicago.",
            ["Sheila"],
            [("is from", "Chicago"), ("lives in", "Texas")],
        ),
        (
            "Hi, my name is Bob and I live in San Francisco.",
            ["Bob"],
            [("lives in", "San Francisco")],
        ),
        ("Okay, I'm fine. I'm Going home.", [], []),
        ("They all call me a Yankee down here.", [], []),
        # facts and names are the speaker's own, stated, and lasting
        ("My son was born in Boston.", [], []),
        ("Are you originally from Chicago?", [], []),
        ("I told her she grew up in Denver.", [], []),
        ("This is Paris in April.", [], []),
        ("I'm in Denver this week.", [], []),
        (
            "I'm Tom here in Denver this week, but I grew up in Ohio.",
            ["Tom"],
            [("is from", "Ohio")],
        ),
        ("Is this Anna? I was born in Lisbon.", [], [("is from", "Lisbon")]),
        ("Hi, this is Diane in New Jersey.", ["Diane"], [("lives in", "New Jersey")]),
        ("Oh hi, it's Sheila.", ["Sheila"], []),
    ],
)
def test_names_and_facts_from_first_person_speech(text, names, facts):
    assert names_in(text) == names
    assert sorted(facts_in(text)) == sorted(facts)


def _obs(
    faces_at: dict[float, list[str]], turns: list[tuple[str, float, float]]
) -> ClipObservations:
    source = SourceInfo(
        "/r.mp4", "0" * 64, 30.0, True, True, datetime(2026, 1, 1, tzinfo=UTC), "option"
    )
    clip = Clip("c1", source, 0, 0.0, 30.0)
    faces = tuple(
        FaceObservation(f"f{t}{p}", t, (0, 0, 50, 50), 1.0, np.ones(4, np.float32), 100.0, p)
        for t, persons in faces_at.items()
        for p in persons
    )
    speech = tuple(
        SpeechTurn(f"s{i}", "hi", a, b, "en", speaker=spk) for i, (spk, a, b) in enumerate(turns)
    )
    return ClipObservations(clip, speech, faces)


def test_a_voice_links_to_the_face_seen_alone_while_it_speaks_one_to_one():
    # the camera stays on A for a while after B starts: A's face gets votes from B's turn too
    faces = (
        {float(t): ["pA"] for t in range(0, 8)}
        | {float(t): ["pB"] for t in range(8, 12)}
        | {12.0: ["pA", "pB"]}
    )
    obs = _obs(faces, [("s0", 0.0, 5.0), ("s1", 5.2, 12.0)])
    people, changes = People(), ClipChanges("c1")
    linked = people.link_faces_and_voices(
        obs, {"s0": "voice_1", "s1": "voice_2"}, {"pA": "face_1", "pB": "face_2"}, changes
    )
    assert sorted(linked) == [("voice_1", "face_1"), ("voice_2", "face_2")]
    assert people.character_of("voice_1") is people.character_of("face_1")
    assert people.character_of("voice_2") is people.character_of("face_2")
    assert people.character_of("voice_1") is not people.character_of("voice_2")
    edges = changes.edges
    assert {e.kind for e in edges} == {"same_person"} and all(e.evidence == ("c1",) for e in edges)


def test_too_little_evidence_links_nothing():
    obs = _obs({1.0: ["pA"], 2.0: ["pA"]}, [("s0", 0.0, 3.0)])  # two frames: below min_frames
    people = People()
    assert (
        people.link_faces_and_voices(obs, {"s0": "voice_1"}, {"pA": "face_1"}, ClipChanges("c1"))
        == []
    )


def _fact(clip_id: str, start: float, value: str, subject: str = "character_1") -> Memory:
    fact = f"{subject}|is from|{value}"
    return Memory(
        content_id(clip_id, fact),
        "semantic",
        f"Sheila (<{subject}>) is from {value}.",
        clip_id,
        "/r.mp4",
        start,
        start + 2,
        (subject,),
        (f"{clip_id}:seg0", clip_evidence(clip_id)),
        fact=fact,
    )


def _write(
    store: Store, consolidator: Consolidator, clip_id: str, start: float, value: str
) -> None:
    stored, changed, edges = consolidator.add(_fact(clip_id, start, value))
    store.commit_clip(
        ClipRow(clip_id, "/r.mp4", "sha", 0, 0.0, 30.0, start, start + 30, ""),
        [stored] if stored else [],
        [],
        edges,
        [changed] if changed else [],
    )


def test_a_repeat_reinforces_and_a_contradiction_supersedes(hash_store):
    _write(hash_store, Consolidator(hash_store), "c1", 1000.0, "Chicago")
    _write(hash_store, Consolidator(hash_store), "c2", 2000.0, "Chicago")
    _write(
        hash_store, Consolidator(hash_store), "c2", 2000.0, "Chicago"
    )  # the clip re-run after a crash
    (only,) = hash_store.memories_where("kind = 'semantic'")
    assert only.weight == 2.0 and only.clip_id == "c1"  # one memory, two clips of evidence
    assert {"c1:seg0", "c2:seg0"} <= set(only.provenance)

    _write(
        hash_store, Consolidator(hash_store), "c3", 3000.0, "Boston"
    )  # a fresh process: state from the store
    hash_store.refresh_indexes()
    old, new = hash_store.memories_where("kind = 'semantic'")
    assert old.fact.endswith("Chicago") and old.valid_to_ts == 3000.0  # kept, no longer valid
    assert new.fact.endswith("Boston") and new.valid_to_ts is None
    assert [e.dst_id for e in hash_store.edges_of(new.memory_id, "supersedes")] == [old.memory_id]
    assert [h.memory.fact for h in hash_store.search("where is Sheila from", kind="semantic")] == [
        new.fact
    ]
    known_then = hash_store.search("where is Sheila from", kind="semantic", before_ts=2500.0)
    assert [h.memory.fact for h in known_then] == [old.fact]  # what was known at that time


def test_search_filters_by_entity_time_range_and_kind(hash_store):
    def mem(text, start, entity, kind="episodic"):
        return Memory(
            content_id(text), kind, text, "c1", "/r.mp4", start, start + 1, (entity,), ("seg",)
        )

    mems = [
        mem("coffee with Anna", 100.0, "voice_1"),
        mem("coffee with Ben", 200.0, "voice_2"),
        mem("Anna likes coffee", 150.0, "character_1", "semantic"),
    ]
    hash_store.commit_clip(ClipRow("c1", "/r.mp4", "sha", 0, 0.0, 300.0, 0.0, 300.0, ""), mems, [])
    hash_store.refresh_indexes()
    texts = lambda hits: sorted(h.memory.text for h in hits)  # noqa: E731
    assert texts(hash_store.search("coffee", entity_ids=["voice_2"])) == ["coffee with Ben"]
    assert texts(hash_store.search("coffee", start_ts=120.0, end_ts=180.0)) == ["Anna likes coffee"]
    assert texts(hash_store.search("coffee", kind=("semantic",))) == ["Anna likes coffee"]
    near = hash_store.neighbour_hits(
        [mems[0]], hash_store.embedder.embed(["coffee"])[0], window_s=60.0
    )
    assert [h.memory.text for h in near] == ["Anna likes coffee"]
    with pytest.raises(ValueError, match="choose from"):
        hash_store.search("coffee", kind="diary")


def test_a_store_from_an_older_schema_is_refused_with_what_to_do(tmp_path):
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(tmp_path / "old")
    schema = pa.schema(
        [("memory_id", pa.string()), ("vector", pa.list_(pa.float32(), 384))],
        metadata={"schema_version": "1"},
    )
    db.create_table("memories", schema=schema)
    with pytest.raises(StoreError, match="ingest again into a new --store"):
        Store(tmp_path / "old", build_text_embedder("hash"))


def test_a_resumed_memorizer_continues_the_time_chain_from_the_store(hash_store):
    """A new Memorizer (an ingest restarted after a crash) links its first event to the last event
    the store holds for that recording, as one run over both clips would."""
    from dataclasses import replace

    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer, clip_row

    voice = np.ones(8, np.float32) / np.sqrt(8)
    first = _obs({}, [])
    first = replace(
        first,
        speech=(
            SpeechTurn("c1:s0", "We start here.", 1.0, 2.0, "en", (), voice, "s0"),
            SpeechTurn("c1:s1", "Then this.", 5.0, 6.0, "en", (), voice, "s0"),
        ),
    )
    second = replace(
        first,
        clip=replace(first.clip, clip_id="c2", index=1, offset_s=30.0),
        speech=(SpeechTurn("c2:s0", "And now this.", 1.0, 2.0, "en", (), voice, "s0"),),
    )

    def chain(memorizers: list[Memorizer]) -> set[tuple[str, str]]:
        edges = set()
        for memorizer, obs in zip(memorizers, (first, second)):
            w = memorizer.memorize(obs)
            hash_store.commit_clip(clip_row(obs), w.memories, w.entities, w.edges, w.updated)
            edges |= {(e.src_id, e.dst_id) for e in w.edges if e.kind == "next_in_time"}
        texts = {m.memory_id: m.text for m in hash_store.memories_where("kind = 'episodic'")}
        return {(texts[a], texts[b]) for a, b in edges}

    policy = MatchPolicy(0.9)
    resumed = chain([Memorizer(hash_store, policy, policy), Memorizer(hash_store, policy, policy)])
    assert ('<voice_1> said: "Then this."', '<voice_1> said: "And now this."') in resumed
    assert len(resumed) == 2
