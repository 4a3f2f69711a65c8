"""The evaluation runners' parts: the M3-Bench and ScreenshotVQA loaders, the scoring functions, the
judge against the loopback fake server."""

from __future__ import annotations

import json
import math

import pytest

from bench.datasets import m3bench, screenshotvqa
from bench.judge import PROMPT, Judge, Verdict, read_reply
from bench.metrics import contains_answer, is_yes_no, normalize_answer, token_f1, wilson_interval
from bench.qa import Asked, summarise
from conftest import m3_file
from fake_openai import FakeOpenAI
from llm.client import ChatClient


def test_the_real_robot_annotations_load_with_normalised_types_and_cutoffs():
    split, videos = m3bench.load(m3_file("robot.json"))
    assert split == "robot" and len(videos) == 100
    questions = [q for v in videos for q in v.questions]
    assert len(questions) == 1276
    assert {t for q in questions for t in q.types} == set(
        m3bench.TYPES
    )  # "Multi-Detail Reasoning" is gone
    assert (
        sum("Multi-Evidence Reasoning" in q.types for q in questions) == 842
    )  # the released file's MD count
    # before_clip is the release's own; it is the clip before the one the question is asked in
    assert all(q.before_clip == math.floor(q.timestamp_s / 30) - 1 for q in questions)
    first = videos[0]
    assert (
        first.video_id == "living_room_06"
        and first.video_path == "data/videos/robot/living_room_06.mp4"
    )


def test_the_real_web_annotations_have_no_cutoff():
    split, videos = m3bench.load(m3_file("web.json"))
    assert split == "web" and len(videos) == 920
    questions = [q for v in videos for q in v.questions]
    assert len(questions) == 3214 and all(q.before_clip is None for q in questions)
    assert all(q.types and set(q.types) <= set(m3bench.TYPES) for q in questions)


def test_types_timestamps_and_paths(tmp_path):
    assert m3bench.normalise_type("Human  Understanding") == "Person Understanding"
    assert m3bench.normalise_type("Multi-Detail Reasoning") == "Multi-Evidence Reasoning"
    with pytest.raises(ValueError, match="unknown M3-Bench question type 'Vibes'"):
        m3bench.normalise_type("Vibes")
    assert m3bench.parse_timestamp("16:10") == 970.0
    assert m3bench.parse_timestamp("1:02:03") == 3723.0
    with pytest.raises(ValueError, match="not MM:SS"):
        m3bench.parse_timestamp("ten past")
    video = m3bench.Video("v1", "data/videos/robot/v1.mp4", ())
    assert m3bench.resolve(video, tmp_path, "robot") is None
    (tmp_path / "robot").mkdir()
    (tmp_path / "robot" / "v1.mp4").write_bytes(b"x")
    assert m3bench.resolve(video, tmp_path, "robot") == tmp_path / "robot" / "v1.mp4"
    (tmp_path / "data" / "videos" / "robot").mkdir(parents=True)
    (tmp_path / "data" / "videos" / "robot" / "v1.mp4").write_bytes(
        b"x"
    )  # the annotation's own path wins
    assert (
        m3bench.resolve(video, tmp_path, "robot")
        == tmp_path / "data" / "videos" / "robot" / "v1.mp4"
    )


def test_a_question_without_before_clip_gets_it_from_its_timestamp_and_bad_files_are_named(
    tmp_path,
):
    f = tmp_path / "mine.json"
    f.write_text(
        json.dumps(
            {
                "v": {
                    "video_path": "v.mp4",
                    "qa_list": [
                        {
                            "question": "q?",
                            "answer": "a",
                            "question_id": "v_Q1",
                            "timestamp": "01:10",
                            "type": ["Human Understanding"],
                            "evidence": [{"start_s": 75, "end_s": 80}],
                        }
                    ],
                }
            }
        )
    )
    split, videos = m3bench.load(f, "robot")
    q = videos[0].questions[0]
    assert (q.before_clip, q.types, q.evidence_is_later) == (1, ("Person Understanding",), True)
    f.write_text("{not json")
    with pytest.raises(ValueError, match="mine.json is not JSON"):
        m3bench.load(f)
    f.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="not in the M3-Bench format"):
        m3bench.load(f)


def test_screenshotvqa_layout_skips_compressed_files_and_orders_by_name_time(tmp_path):
    user = tmp_path / "student1"
    user.mkdir()
    for name in (
        "20250516_101500.png",
        "20250516_091500.png",
        "20250516_093000_compressed.png",
        "notes.txt",
    ):
        (user / name).write_bytes(b"x")
    (tmp_path / "qa_pairs.json").write_text(
        json.dumps(
            [
                {
                    "student": "student1",
                    "qa_pairs": [{"question": "q?", "answer": "a", "expect_not_found": True}],
                }
            ]
        )
    )
    [u] = screenshotvqa.load(tmp_path)
    assert [p.name for p in u.screenshots] == ["20250516_091500.png", "20250516_101500.png"]
    assert [p.name for p in u.skipped] == ["20250516_093000_compressed.png"]
    assert u.questions[0].expects_not_found
    (tmp_path / "qa_pairs.json").write_text(json.dumps([{"student": "student9", "qa_pairs": []}]))
    with pytest.raises(ValueError, match="student9.*is not a folder"):
        screenshotvqa.load(tmp_path)
    with pytest.raises(ValueError, match="qa_pairs.json is missing"):
        screenshotvqa.load(tmp_path / "student1")


def test_answer_scoring_known_cases():
    assert normalize_answer("The Pirate Ship Float.") == "pirate ship float"
    assert token_f1("Pirate Ship Float", "the pirate ship") == pytest.approx(0.8)
    assert token_f1("Chicago.", "New Jersey") == 0.0
    assert contains_answer("New Jersey.", 'Diane said: "This is Diane in New Jersey."')
    assert not contains_answer("bay 4", "level 3 bay 42")  # whole words only
    assert contains_answer("CV_GUI_NORMAL", "Window created with the CV GUI NORMAL flag.")
    assert is_yes_no("Yes.") and is_yes_no("No, she doesn't.") and not is_yes_no("Nobody.")
    lo, hi = wilson_interval(8, 10)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_summary_counts_yes_no_and_out_of_reach_questions_apart():
    yes, no = Verdict(True, "Yes"), Verdict(False, "No")
    timed_out, unclear = Verdict(None, "timeout"), Verdict(False, "hmm", unclear=True)
    questions = [  # gold, answer, types, the one memory read, memories read, of them leaked, verdict
        ("Chicago.", "from Chicago", ("PU",), "Sheila is from Chicago.", 4, 0, yes),
        ("Texas", "x", ("PU", "ME"), "nothing here", 2, 1, no),
        ("Yes.", "yes", ("ME",), "yes", 1, 0, timed_out),
        ("A Yankee.", "?", ("CM",), "they call me a Yankee", 3, 0, unclear),
    ]
    asked = [  # question 4's evidence is out of reach by design
        Asked(str(n), "q", gold, answer, types, (memory,), n == 4, read, leaked, verdict=verdict)
        for n, (gold, answer, types, memory, read, leaked, verdict) in enumerate(questions, 1)
    ]
    f = summarise(asked, judged=True)
    assert f["answer_in_context@5"] == 0.5 and f["in_context_questions"] == 2
    assert (f["yes_no_questions"], f["out_of_reach_questions"], f["not_found_ok"]) == (1, 1, 0)
    assert f["leakage"] == pytest.approx(1 / 10)
    assert (f["accuracy"], f["judged"], f["judge_failed"], f["judge_unclear"]) == (0.3333, 3, 1, 1)
    assert f["per_type"]["PU"]["questions"] == 2 and f["per_type"]["PU"]["accuracy"] == 0.5
    assert summarise(asked, judged=False)["accuracy"] is None


def test_the_judges_reply_must_open_with_yes_or_no():
    """Strict reading: the first word after whitespace, punctuation and markdown, in any case."""
    for reply in (
        "Yes",
        "yes.",
        "YES",
        "**Yes**",
        "`yes`",
        '"Yes," it follows.',
        "> yes",
        "Yes, the agent says so",
    ):
        assert read_reply(reply) is True, reply
    for reply in ("No", "no.", "**No.**", "  No, it does not", "# No"):
        assert read_reply(reply) is False, reply
    for reply in (
        "I think yes",
        "Yesterday",
        "The answer: yes",
        "Eyes",
        "Nope",
        "Not sure",
        "",
        "?",
        "Sí",
    ):
        assert read_reply(reply) is None, reply


def test_the_judge_sends_the_paper_prompt_and_reads_yes_no_unclear_and_failures():
    fake = FakeOpenAI(
        [
            "Yes",
            "No.",
            "I cannot tell",
            "I would not say yes",
            "**Yes**",
            500,
            500,
            ("sleep", 1.5, "Yes"),
            ("sleep", 1.5, "Yes"),
        ]
    )
    with fake:
        judge = Judge(
            ChatClient(
                fake.base_url, "gpt-4o-2024-11-20", timeout_s=1.0, max_retries=1, backoff_s=0.01
            )
        )
        assert judge.is_paper_model
        assert judge.judge("Where?", "Chicago", "She is from Chicago") == Verdict(True, "Yes")
        assert judge.judge("Where?", "Chicago", "Texas").correct is False
        unclear = judge.judge("Where?", "Chicago", "?")
        assert unclear.correct is False and unclear.unclear
        hedged = judge.judge(
            "Where?", "Chicago", "near Chicago"
        )  # holds "yes", does not say it first
        assert hedged.correct is False and hedged.unclear
        assert judge.judge("Where?", "Chicago", "Chicago") == Verdict(True, "**Yes**")
        assert judge.judge("Where?", "Chicago", "x").correct is None  # HTTP 500 twice: not judged
        assert judge.judge("Where?", "Chicago", "x").correct is None  # no reply within the timeout
    body = fake.requests[0]
    assert body["temperature"] == 0 and body["model"] == "gpt-4o-2024-11-20"
    assert body["messages"][0]["content"] == PROMPT.format(
        question="Where?", ground_truth_answer="Chicago", agent_answer="She is from Chicago"
    )
    assert 'return "Yes". If it cannot, return "No"' in body["messages"][0]["content"]
