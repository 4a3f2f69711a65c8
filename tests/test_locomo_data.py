"""LoCoMo records: only the turns are read, evidence ids are normalised, recall@k is exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.datasets.locomo import load, normalize_evidence, parse_session_time
from bench.metrics import recall_at_k
from factories import locomo_file, locomo_question

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"


def test_malformed_evidence_ids_are_normalised_and_unknown_ones_dropped():
    known = {"D8:6", "D9:17", "D11:26", "D30:5"}
    assert normalize_evidence(["D8:6; D9:17"], known) == ("D8:6", "D9:17")
    assert normalize_evidence(["D:11:26", "D30:05", "D8:6"], known) == ("D11:26", "D30:5", "D8:6")
    assert normalize_evidence(["D", "D99:1", ""], known) == ()


def test_session_times_and_a_small_file(tmp_path):
    assert parse_session_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    with pytest.raises(ValueError, match="not like"):
        parse_session_time("yesterday")
    data = [
        {
            "sample_id": "c1",
            "qa": [{"question": "Q?", "answer": 3, "evidence": ["D1:2; D1:9"], "category": 2}],
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bo",
                "session_1_date_time": "9:00 am on 1 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                    {"speaker": "Bo", "dia_id": "D1:2", "text": "look", "blip_caption": "a dog"},
                ],
            },
            "observation": {"must": "not be read"},
            "session_summary": {},
            "event_summary": {},
        }
    ]
    (tmp_path / "l.json").write_text(json.dumps(data))
    (conv,) = load(tmp_path / "l.json")
    assert conv.speakers == ("Ann", "Bo") and conv.sessions[0].turns[1].image_caption == "a dog"
    assert conv.questions[0].evidence == ("D1:2",) and conv.questions[0].answer == "3"
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ValueError, match="bad.json"):
        load(tmp_path / "bad.json")


def test_recall_at_k_counts_first_occurrences():
    assert recall_at_k(["D1:1", "D1:1", "D1:2", "D1:3"], ["D1:2", "D1:3"], 2) == 0.5
    assert recall_at_k(["D1:1", "D1:2"], ["D1:2"], 10) == 1.0


def test_the_dev_file_loads_with_every_category():
    from bench.fixtures import FixtureUnavailable
    from conftest import _fetched

    def dev_file():
        if not DEV.is_file():
            raise FixtureUnavailable(
                f"{DEV} not present (the shared evaluation data beside the repository)"
            )
        return DEV

    conversations = load(_fetched(dev_file, "LoCoMo dev file"))
    assert len(conversations) == 6
    questions = [q for c in conversations for q in c.questions]
    assert {q.category for q in questions} == {1, 2, 3, 4, 5}
    for c in conversations:
        assert all(set(q.evidence) <= c.turn_ids for q in c.questions)
        starts = [s.started_at for s in c.sessions]
        assert starts == sorted(starts)


# filler turns on other topics, so that the evidence has to be ranked, not just be there
FILLER = [
    "The weather in the mountains was cold and wet.",
    "My brother fixed the old bicycle in the garage.",
    "We watched a documentary about whales on Friday.",
    "The bakery on the corner sells rye bread.",
    "Traffic on the highway was terrible this morning.",
    "I finished reading a novel about sailors.",
    "Our neighbours painted their fence bright yellow.",
    "The train to the city was delayed again.",
    "She bought new running shoes for the marathon.",
    "The garden tomatoes are finally ripe.",
    "He is learning to play the violin slowly.",
    "We booked a cabin by the lake for August.",
]


@pytest.mark.slow  # the real text embedders (minilm, mpnet) rank a LoCoMo conversation
def test_bench_locomo_ranks_the_evidence_first_among_other_turns(tmp_path, capsys):
    from conftest import run_cli

    turns = [("Ann", "I adopted a puppy called Rex last week.")]
    turns += [("Bo" if i % 2 else "Ann", t) for i, t in enumerate(FILLER)]
    turns += [
        ("Ann", "Rex is a beagle, and he loves the park."),
        ("Bo", "I started pottery classes on Monday."),
    ]
    turns += [("Ann" if i % 2 else "Bo", t) for i, t in enumerate(FILLER)]
    beagle, pottery = len(FILLER) + 2, len(FILLER) + 3
    qa = [
        locomo_question("What breed is Ann's dog?", "beagle", f"D1:{beagle}"),
        locomo_question("What class did Bo start?", "pottery", f"D:1:{pottery}"),
    ]
    (tmp_path / "work").mkdir()
    # an id that is no safe path or table name: it must not choose where the store is written
    locomo_file(tmp_path / "work" / "tiny.json", turns, qa, sample_id="../../escape me")
    code, out, _ = run_cli(
        capsys,
        "bench",
        "locomo",
        "--data",
        str(tmp_path / "work" / "tiny.json"),
        "--baselines",
        "--json",
    )
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["work"]  # nothing written beside it
    figures = json.loads(out.strip().splitlines()[-1])
    assert figures["questions"] == 2 and figures["recall@5"] == 1.0  # among 28 turns
    assert set(figures["per_category"]) == {"1", "2", "3", "4", "5"} and "ms_per_query" in figures
    assert set(figures["baselines"]) == {"bm25", "dense", "fusion"}
    assert "perfect identities" in out


def test_a_conversation_key_is_its_id_only_when_safe_as_a_path():
    from bench.datasets.locomo import Conversation

    assert Conversation("conv-26", ("a", "b"), (), ()).key == "conv-26"
    for unsafe in ("../../etc", "a/b", "", "x" * 65, "c:\\d"):
        key = Conversation(unsafe, ("a", "b"), (), ()).key
        assert key.startswith("conv-") and len(key) == 21 and "/" not in key and "." not in key


def test_baseline_rankings_rank_bm25_and_dense_and_rerun_in_the_same_folder(tmp_path):
    from bench.locomo import baseline_rankings
    from embeddings.base import build_text_embedder

    turns = [
        ("Ann", "I adopted a beagle called Rex."),
        ("Bo", "I started pottery classes on Monday."),
        ("Ann", "The weather was grey all week."),
    ]
    qa = [locomo_question("Which pottery classes did Bo start?", "pottery", "D1:2")]
    locomo_file(tmp_path / "l.json", turns, qa)
    (conv,) = load(tmp_path / "l.json")
    embedder = build_text_embedder("hash")
    first = baseline_rankings(conv, embedder, tmp_path / "work")
    assert first["bm25"][0][0] == "D1:2"  # the only turn sharing the question's words
    assert set(first["dense"][0]) == {"D1:1", "D1:2", "D1:3"} and first["fusion"][0][0] == "D1:2"
    assert (
        baseline_rankings(conv, embedder, tmp_path / "work") == first
    )  # the table is replaced, not added to
