"""``bench locomo --spoken``: the pure parts on hand-made cases (time overlap, attribution, naming,
selection), the espeak-ng rendering, and a small run of the whole bench on the dev file."""

from __future__ import annotations

import json
import os
import wave
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.datasets.locomo import Conversation, Question, Session, Turn
from bench.locomo_spoken import select
from bench.locomo_spoken_recall import (
    empty_scores,
    ranked_turns_by_time,
    recall_table,
    turns_of_memory,
)
from bench.locomo_spoken_speakers import attribution, names_heard, naming

DEV = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
T0 = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)


def dev_file() -> Path:
    from bench.fixtures import FixtureUnavailable
    from conftest import _fetched

    def fetch():
        if not DEV.is_file():
            raise FixtureUnavailable(
                f"{DEV} not present (the shared evaluation data beside the repository)"
            )
        return DEV

    return _fetched(fetch, "LoCoMo dev file")


def _spoken_bench(capsys, bench: str, *options: str) -> tuple[dict, str, str]:
    """``mnemo bench BENCH --spoken OPTIONS --json`` on the first session of the dev file's first
    conversation, which must succeed: its JSON line, stdout and stderr."""
    from conftest import run_cli

    code, out, err = run_cli(
        capsys,
        "bench",
        bench,
        "--spoken",
        "--data",
        str(dev_file()),
        "--sessions",
        "1",
        "--conversations",
        "1",
        *options,
        "--json",
    )
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1]), out, err


@pytest.fixture(scope="module")
def speech_tools() -> str:
    from bench.speech_synth import require_tools
    from conftest import _fetched

    return _fetched(require_tools, "espeak-ng and sox (sudo apt-get install espeak-ng sox)")


# ---- pure parts ----------------------------------------------------------------------------------

TURNS = [("D1:1", 100.0, 104.0), ("D1:2", 105.0, 109.0), ("D1:3", 110.0, 130.0)]


def test_a_memory_maps_to_the_turn_it_overlaps_most_first_then_to_those_it_overlaps_substantially():
    assert turns_of_memory(101.0, 103.0, TURNS) == ["D1:1"]  # inside one turn
    assert turns_of_memory(102.5, 108.0, TURNS) == [
        "D1:2",
        "D1:1",
    ]  # 3 s of D1:2, then 1.5 s: 37 % of D1:1
    assert turns_of_memory(103.5, 108.0, TURNS) == [
        "D1:2"
    ]  # 0.5 s of D1:1: 11 % of the memory, 12.5 % of the turn
    assert turns_of_memory(100.0, 130.0, TURNS) == [
        "D1:3",
        "D1:1",
        "D1:2",
    ]  # a long memory: every turn it covers
    assert turns_of_memory(115.0, 115.0, TURNS) == ["D1:3"]  # an instant: the turn around it
    assert turns_of_memory(104.2, 104.8, TURNS) == []  # in the pause between two turns
    assert turns_of_memory(200.0, 230.0, TURNS) == []


def test_ranked_memories_map_to_turns_of_their_own_recording_only():
    from graph.rows import Memory

    def memory(path: str, a: float, b: float) -> Memory:
        return Memory(f"m{path}{a}", "episodic", "x", "clip", path, a, b)

    by_path = {"/conv-a/s1.wav": TURNS}
    ranked = [
        memory("/conv-b/s1.wav", 101, 103),  # same time, another conversation's recording: a miss
        memory("/conv-a/s1.wav", 111, 112),
        memory("/conv-a/s1.wav", 101, 103),
        memory("/conv-a/s1.wav", 112, 113),
    ]
    assert ranked_turns_by_time(ranked, by_path) == ["D1:3", "D1:1"]


def test_attribution_maps_speakers_to_persons_one_to_one_and_counts_heard_time():
    reference = [("Ann", 0, 4), ("Bo", 5, 9), ("Ann", 10, 14), ("Bo", 15, 19)]
    predicted = [
        ("p1", 0, 4),  # Ann, right
        ("p2", 5, 7),
        ("p1", 7, 9),  # Bo: half right, half given to Ann's person
        (None, 10, 12),
        ("p1", 12, 14),  # Ann: 2 s heard from nobody known (wrong), 2 s right
        ("p1", 14.5, 15.5),
        ("p1", 15.5, 16),
    ]  # Bo: 1 s given to Ann's person; 15.5-16 counted once
    result = attribution(reference, predicted)
    assert result.mapping == {"Ann": "p1", "Bo": "p2"}
    # heard: 4 + 4 + 4 + 1 = 13 s of 16; right: Ann 4 + 2, Bo 2
    assert result.heard_s == pytest.approx(13.0) and result.total_s == pytest.approx(16.0)
    assert result.share == pytest.approx(8 / 13) and result.coverage == pytest.approx(13 / 16)
    assert result.overlap_s[("Bo", "p1")] == pytest.approx(3.0)
    # one person for both speakers: only one of them can be mapped to it
    merged = attribution(reference, [("p1", 0, 17)])  # Ann 8 s, Bo 6 s
    assert merged.mapping == {"Ann": "p1"} and merged.share == pytest.approx(8 / 14)
    assert merged.coverage == pytest.approx(14 / 16)
    assert attribution(reference, []).share == 0.0 and attribution(reference, []).coverage == 0.0


def test_one_person_heard_in_two_conversations_is_attributed_to_one_speaker_only():
    from bench.locomo_spoken_speakers import attribute

    rows = [
        {"overlap_s": {("c1/Ann", "p1"): 6.0, ("c1/Bo", "p2"): 4.0}, "heard_s": 10.0},
        {
            "overlap_s": {("c2/Cy", "p2"): 8.0, ("c2/Dee", "p3"): 2.0, ("c2/Dee", "p2"): 1.0},
            "heard_s": 12.0,
        },
    ]
    attribute(rows)
    # p2 is Bo's voice in c1 and Cy's in c2: it goes to Cy (8 s > 4 s), Bo gets no one
    assert rows[0]["mapping"] == {"Ann": "p1"} and rows[0]["attribution"] == pytest.approx(0.6)
    assert rows[1]["mapping"] == {"Cy": "p2", "Dee": "p3"} and rows[1][
        "attribution"
    ] == pytest.approx(10 / 12)
    assert "overlap_s" not in rows[0]


def test_naming_takes_the_person_of_the_voice_heard_most_and_judges_the_name():
    from graph.resolve_people import Person

    people = [
        Person("character_1", "ann", "addressed", ("voice_1", "voice_3")),
        Person("character_2", "Ann", "introduced", ("voice_2",)),
        Person("character_4", "", "", ("voice_4",)),
    ]
    overlap = {
        ("Ann", "voice_3"): 5.0,
        ("Ann", "voice_2"): 1.0,
        ("Bo", "voice_2"): 7.0,
        ("Bo", "voice_3"): 2.0,
        ("Cy", "voice_4"): 3.0,
    }
    named = naming(["Ann", "Bo", "Cy", "Dee"], overlap, people)
    assert named["Ann"] == {
        "voice": "voice_3",
        "person": "character_1",
        "name": "ann",
        "verdict": "named",
    }
    assert named["Bo"]["verdict"] == "wrong" and named["Bo"]["person"] == "character_2"
    assert named["Cy"]["verdict"] == "unnamed" and named["Dee"] == {
        "voice": None,
        "person": None,
        "name": "",
        "verdict": "unnamed",
    }


def test_a_name_counts_as_heard_where_a_speech_memory_over_the_turn_writes_it_so():
    from bench.speech_synth import SpokenSession, TurnSpan
    from graph.rows import Memory

    wav = Path("/rec/s1.wav")
    session = SpokenSession(
        "c1",
        1,
        wav,
        1000.0,
        60.0,
        (
            TurnSpan("D1:1", "Ann", "Hey Melanie, how are you?", 0.3, 3.0),
            TurnSpan("D1:2", "Mel", "Great, Ann! You?", 3.7, 6.0),
            TurnSpan("D1:3", "Ann", "Thanks, Melanie.", 6.7, 8.0),
            TurnSpan("D1:4", "Mel", "Nothing about names.", 8.7, 10.0),
        ),
    )

    def said(text, a, b, path=str(wav)):
        return "voice_1", Memory(
            text, "episodic", f'<voice_1> said: "{text}"', "k", path, 1000 + a, 1000 + b
        )

    speech = [
        said("Hey Melanie, how are you?", 0.2, 3.1),
        said("Great, and you?", 3.6, 6.1),
        said("Thanks, Melody.", 6.6, 8.1),
        said("Melanie", 8.7, 10.0, path="/rec/other.wav"),
    ]
    assert names_heard(["Melanie", "Ann"], [session], speech) == {"Melanie": (2, 1), "Ann": (1, 0)}


def _conversation() -> Conversation:
    sessions = tuple(
        Session(
            n,
            T0.replace(day=8 + n),
            (
                Turn(f"D{n}:1", "Ann", f"Hello Bo, session {n}."),
                Turn(f"D{n}:2", "Bo", "Hi Ann! 🎉 Nice to hear you.", image_caption="a cake"),
            ),
        )
        for n in (1, 2)
    )
    questions = (
        Question("q1", "a", ("D1:2",), 4),
        Question("q2", "a", ("D1:1", "D2:1"), 1),
        Question("q3", "a", ("D2:2",), 2),
        Question("q4", "a", (), 5),
    )
    return Conversation("c1", ("Ann", "Bo"), sessions, questions)


def test_select_keeps_the_first_sessions_and_only_questions_answerable_from_them():
    conv = _conversation()
    (one,) = select([conv, conv], sessions=1, count=1)
    assert [s.index for s in one.sessions] == [1] and [q.question for q in one.questions] == ["q1"]
    (both,) = select([conv], None, None)[:1]
    assert [q.question for q in both.questions] == [
        "q1",
        "q2",
        "q3",
    ]  # no evidence: nothing to score
    with pytest.raises(ValueError, match="--sessions must be at least 1"):
        select([conv], sessions=0)


def test_recall_table_pools_categories_1_to_4_and_says_none_where_nothing_was_asked():
    scores = empty_scores()
    scores[1][10] += [0.0, 1.0]
    scores[4][10] += [1.0]
    scores[5][10] += [0.0]
    for k in (5, 20):
        scores[1][k] += [0.0, 0.0]
        scores[4][k] += [1.0]
        scores[5][k] += [0.0]
    table = recall_table(scores)
    assert table["questions"] == 3 and table["recall@10"] == round(2 / 3, 4)
    assert (
        table["per_category"]["2"]["recall@10"] is None
        and table["per_category"]["5"]["questions"] == 1
    )


def test_spoken_text_leaves_out_what_is_not_said():
    from bench.speech_synth import spoken_text

    assert spoken_text("Hi Ann! 🎉  Nice 🧘\u200d♀️ to   hear you.") == "Hi Ann! Nice to hear you."


# ---- rendering -----------------------------------------------------------------------------------


def _wav_seconds(path: Path) -> tuple[float, int, int]:
    with wave.open(str(path), "rb") as w:
        return w.getnframes() / w.getframerate(), w.getframerate(), w.getnchannels()


def check_rendered(session, spoken) -> None:
    """A session's WAV: 16 kHz mono, mtime its start plus its length, turns in order inside it."""
    from perception.sources.media import probe

    length_s, rate, channels = _wav_seconds(spoken.path)
    assert (rate, channels) == (16000, 1) and length_s == pytest.approx(spoken.duration_s)
    assert os.stat(spoken.path).st_mtime == pytest.approx(
        session.started_at.timestamp() + length_s, abs=1e-6
    )
    assert probe(spoken.path).recorded_at.timestamp() == pytest.approx(
        session.started_at.timestamp(), abs=1e-3
    )
    assert [t.dia_id for t in spoken.turns] == [t.dia_id for t in session.turns if t.text.strip()]
    ends = [0.0] + [x for t in spoken.turns for x in (t.start_s, t.end_s)] + [length_s]
    assert all(a < b for a, b in zip(ends, ends[1:])), (
        "turn spans must increase and lie inside the WAV"
    )
    record = json.loads(spoken.path.with_suffix(".json").read_text())
    assert [t["end_s"] for t in record["turns"]] == [t.end_s for t in spoken.turns]


def test_a_session_renders_with_a_voice_per_speaker_once_and_the_same_each_time(
    tmp_path, speech_tools
) -> None:
    from bench.fixtures import sha256_of
    from bench.speech_synth import render_conversation

    conv = select([_conversation()], sessions=1)[0]
    said: list[str] = []
    voices, (spoken,) = render_conversation(conv, 1, tmp_path / "a", said.append)
    from bench.speech_synth import VOICE_PAIRS

    assert voices["Ann"] != voices["Bo"] and (voices["Ann"], voices["Bo"]) == VOICE_PAIRS[1]
    check_rendered(conv.sessions[0], spoken)
    assert spoken.turns[1].text == "Hi Ann! Nice to hear you."  # the image's caption is not spoken
    assert spoken.path.parent == (tmp_path / "a" / "c1").resolve() and said[0].startswith(
        "rendering c1 session 1"
    )
    os.utime(spoken.path, (0, 0))  # moved by a copy: set again on use, not rendered again
    _, (again,) = render_conversation(conv, 1, tmp_path / "a", said.append)
    assert again == spoken and "cached" in said[-1]
    check_rendered(conv.sessions[0], again)
    _, (elsewhere,) = render_conversation(conv, 1, tmp_path / "b")
    assert sha256_of(elsewhere.path) == sha256_of(
        spoken.path
    )  # deterministic: the same clip ids on every run


def test_an_unknown_espeak_variant_is_refused_with_the_choices(speech_tools):
    from bench.speech_synth import Voice, check_voices

    with pytest.raises(ValueError, match="no variant 'nosuch'.*f3"):
        check_voices([Voice("en-us+f3", 50, 160), Voice("en+nosuch", 50, 160)])


# ---- the whole bench, small ----------------------------------------------------------------------


@pytest.mark.slow
def test_bench_locomo_spoken_on_the_first_session_of_one_dev_conversation(capsys, speech_tools):
    """conv-26's first session (the shortest first session of the dev file: 18 turns, ~2 minutes
    spoken) through rendering, `mnemo ingest`'s path, the planner and the text path."""
    from bench.datasets.locomo import load
    from bench.speech_synth import render_conversation

    data = dev_file()
    owners, out, err = _spoken_bench(capsys, "locomo", "--first-person", "--contacts")
    # Caroline as the owner, marked on the person her voice became; her questions asked both ways
    assert owners["owners"]["conv-26"]["speaker"] == "Caroline" and owners["owner_missing"] == 0
    assert owners["owners"]["conv-26"]["person"] is not None
    assert owners["questions"] == owners["text_questions"] >= 1
    for key in (
        "first_person_recall@10",
        "third_person_recall@10",
        "text_first_person_recall@10",
        "text_third_person_recall@10",
    ):
        assert 0.0 <= owners[key] <= 1.0, key
    assert "their questions asked as they would ask them" in out
    figures = owners["all_questions"]
    for key in (
        "questions",
        "recall@10",
        "text_recall@10",
        "multi_hop_recall@10",
        "speakers_total",
        "speakers_named",
        "speakers_wrong",
        "voice_entities",
        "voice_entities_total",
        "attribution",
        "asr_wer",
        "ms_per_query",
        "ingest_x_realtime",
    ):
        assert key in figures, key
    assert figures["questions"] >= 1 and figures["speakers_total"] == 2
    for key in (
        "recall@5",
        "recall@10",
        "recall@20",
        "text_recall@10",
        "attribution",
        "speech_coverage",
    ):
        assert 0.0 <= figures[key] <= 1.0, key
    assert (
        figures["text_recall@10"] >= 0.5
    )  # the text path finds its evidence: the questions are answerable
    assert figures["recall@5"] <= figures["recall@10"] <= figures["recall@20"]
    assert 0 <= figures["speakers_named"] + figures["speakers_wrong"] <= 2
    assert (
        figures["voice_entities_total"] >= 1
        and figures["voice_entities"] == figures["voice_entities_total"] / 2
    )
    people = figures["per_conversation"]["conv-26"][
        "voice_people_total"
    ]  # the voices, merged into people
    assert 1 <= people <= figures["voice_entities_total"] and figures["voice_people"] == people / 2
    assert 0.0 <= figures["asr_wer"] < 0.5  # tiny.en on espeak-ng: measured 0.075
    assert figures["ms_per_query"] > 0 and figures["ingest_x_realtime"] > 0
    # names: Caroline and Melanie are said in this session; one pass by default: nothing heard twice
    assert 0.0 <= figures["name_word_accuracy"] <= 1.0
    assert figures["second_pass_audio_share"] == 0.0
    # the same session again with the two speaker names as a contact list, beside
    with_contacts = figures["variants"]["contacts"]
    assert with_contacts["speakers_total"] == 2 and with_contacts["name_words"] >= 1
    assert with_contacts["speakers_wrong"] == 0
    assert with_contacts["name_word_accuracy"] >= figures["name_word_accuracy"]
    assert "ingesting the same 1 recording(s) again with the speakers' names" in err
    assert "as configured" in out and "contacts" in out
    assert set(figures["per_conversation"]) == {"conv-26"}
    assert "rendering conv-26 session 1" in err or "conv-26 session 1: cached" in err
    assert "ingesting 1 recording(s)" in err and "text path" in out
    conv = select(load(data), sessions=1, count=1)[0]
    _, (spoken,) = render_conversation(conv, 0)  # the bench's own file, from the cache
    check_rendered(conv.sessions[0], spoken)


@pytest.mark.slow
def test_bench_profile_spoken_on_the_first_session_of_one_dev_conversation(capsys, speech_tools):
    """Each speaker's profile from the spoken store against the observation facts of the session,
    beside the text path's."""

    figures, out, _ = _spoken_bench(capsys, "profile")
    assert figures["people"] == 2 and figures["facts"] >= 2 and figures["unmapped_people"] == 0
    assert 0.0 <= figures["fact_recall"] <= 1.0 and 0.0 < figures["text_fact_recall"] <= 1.0
    assert {p["speaker"] for p in figures["per_person"]} == {"Caroline", "Melanie"}
    assert "profiles against the observation facts of the spoken sessions" in out
