"""The M3-Bench and ScreenshotVQA runners end to end on the mini sets (real media, real models), on
the real M3-Bench annotation files, and with the LLM agent and the judge on the loopback fake."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import m3_file, require_x
from fake_openai import FakeOpenAI
from mnemo.cli import main


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp(
        "bench-stores"
    )  # shared: a video is ingested once for the module


@pytest.fixture(scope="module")
def m3_mini(pyannote_dir, opencv_dir) -> Path:
    from bench.mini_sets import build_m3_mini

    return build_m3_mini()


def _bench(capsys, *argv) -> tuple[int, dict, str]:
    code = main(["bench", *argv, "--json"])
    out = capsys.readouterr()
    return code, json.loads(out.out.strip().splitlines()[-1]), out.out + out.err


@pytest.mark.slow
@pytest.mark.cpu_kind
def test_m3_mini_offline_never_leaks_and_finds_the_answers(m3_mini, stores, capsys):
    code, f, text = _bench(capsys, "m3", "--mini", "--store", str(stores))
    assert code == 0, text
    assert f["questions"] == 16 and set(f["splits"]) == {"robot", "web"}
    assert f["leakage"] == 0.0, text
    assert f["out_of_reach_questions"] == 2 and f["not_found_ok"] == 2, (
        text
    )  # asked before their evidence
    assert f["answer_in_context@5"] >= 0.8, text  # the target on the mini sets
    assert f["accuracy"] is None and "not judged" in text
    assert (
        set(f["per_type"]) <= {"ME", "MH", "CM", "PU", "GK"}
        and f["per_type"]["PU"]["questions"] >= 5
    )
    assert f["store_mb"] > 0 and f["ms_per_query"] > 0


@pytest.mark.slow
def test_m3_mini_qa_scores_the_offline_and_the_reasoned_answers_side_by_side(
    m3_mini, stores, tmp_path, capsys
):
    """``bench m3 --mini --qa``: every question of both splits asked of the offline answer and of
    the packaged 0.5B (served here), each scored by LoCoMo's token F1; the reasoned answers are
    short, and every question and answer is in ``--details``."""
    details = tmp_path / "qa.json"
    code, f, text = _bench(
        capsys,
        "m3",
        "--mini",
        "--qa",
        "--answerers",
        "offline,0.5b",
        "--store",
        str(stores),
        "--details",
        str(details),
    )
    assert code == 0, text
    assert f["questions"] == 16 and set(f["qa"]) == {"offline", "0.5b"}, text
    for name in ("offline", "0.5b"):
        q = f["qa"][name]
        assert q["questions"] == 16 and 0 <= q["f1"] <= 1 and q["foreign_citations"] == 0, text
    assert f["qa"]["0.5b"]["prompt_tokens"] > 0 and f["qa"]["offline"]["prompt_tokens"] is None
    assert "M3-Bench mini (robot and web)" in text and "qwen2.5-coder-0.5b-instruct" in text
    rows = json.loads(details.read_text())
    assert len(rows) == 16 and all(set(r["answers"]) == {"offline", "0.5b"} for r in rows)
    reasoned = [r["answers"]["0.5b"]["answer"] for r in rows]
    assert all(len(a) <= 150 for a in reasoned)  # a short answer or "not in memory"


@pytest.mark.slow
def test_m3_on_the_real_annotations_reports_coverage_and_keeps_the_cutoffs(
    m3_mini, stores, tmp_path, capsys
):
    videos = tmp_path / "videos"
    (videos / "data" / "videos" / "robot").mkdir(parents=True)
    (videos / "data" / "videos" / "robot" / "living_room_06.mp4").symlink_to(
        m3_mini / "data" / "videos" / "robot" / "mini_robot_01.mp4"
    )  # one video present, under a real id
    m3 = ("m3", "--annotations", str(m3_file("robot.json")), "--videos", str(videos))
    code, f, text = _bench(capsys, *m3, "--store", str(stores))
    assert code == 0, text
    assert f["coverage"]["videos"] == 100 and f["coverage"]["videos_found"] == 1
    assert "1 of 100 videos found" in text
    assert f["questions"] == f["coverage"]["questions_covered"] > 0
    assert f["leakage"] == 0.0  # the release's own before_clip values, enforced in the store query
    code, again, text = _bench(capsys, *m3, "--store", str(stores), "--limit", "1")
    assert (
        code == 0 and "0 new clip(s), 4 already stored" in text
    )  # a later run reuses the video's store
    assert again["questions"] == f["questions"]

    code, f, text = _bench(
        capsys, "m3", "--annotations", str(m3_file("web.json")), "--videos", str(tmp_path / "none")
    )
    assert code == 1 and f["questions"] == 0
    assert "error: --videos" in text and "Traceback" not in text
    (tmp_path / "empty").mkdir()
    code, f, text = _bench(
        capsys, "m3", "--annotations", str(m3_file("web.json")), "--videos", str(tmp_path / "empty")
    )
    assert code == 1 and "none of the 920 videos named in" in text and "Efk3K4epEzg.mp4" in text


@pytest.mark.slow
def test_m3_with_the_llm_agent_and_judge_answers_within_the_cutoff(m3_mini, stores, tmp_path):
    from bench import m3
    from mnemo.bench_qa import build_judge, harness
    from mnemo.config import MnemoConfig

    annotations = tmp_path / "robot.json"
    annotations.write_text(
        json.dumps(
            {
                "mini": {
                    "video_path": "data/videos/robot/mini_robot_01.mp4",
                    "qa_list": [
                        {
                            "question": "Where is Sheila originally from?",
                            "answer": "Chicago.",
                            "question_id": "mini_Q1",
                            "timestamp": "01:10",
                            "before_clip": 1,
                            "type": ["Human Understanding"],
                        },
                        {
                            "question": "Where is Sheila originally from?",
                            "answer": "Chicago.",
                            "question_id": "mini_Q2",
                            "timestamp": "00:40",
                            "before_clip": 0,
                            "type": ["Human Understanding"],
                            "evidence": [{"start_s": 44.4, "end_s": 47.8}],
                        },
                    ],
                }
            }
        )
    )
    replies = [
        "[Search] Sheila originally from",
        "[Answer] Sheila is from Chicago [m1]",
        "Yes",
        "[Search] Sheila originally from",
        "[Answer] I don't know",
        "No",
    ]
    said = []
    with FakeOpenAI(replies) as fake:
        cfg = MnemoConfig(
            control={"agent": "llm"}, llm={"base_url": fake.base_url, "model": "local-model"}
        )
        judge = build_judge(cfg, said.append)
        f = m3.run(annotations, m3_mini, harness(cfg, stores, said.append), judge=judge)
    assert any("not the paper's gpt-4o-2024-11-20" in s for s in said)
    assert f["questions"] == 2 and f["leakage"] == 0.0
    assert (f["accuracy"], f["judged"], f["ci95"]) == (0.5, 2, [0.0945, 0.9055])
    assert (
        f["per_type"]["PU"]["accuracy"] == 0.5
    )  # "Human Understanding" counted as Person Understanding
    first, second = f["asked"]
    assert first.answer == "Sheila is from Chicago" and first.in_context()
    shown = [
        block
        for m in fake.requests[4]["messages"]
        if m["role"] == "user"
        for block in re.findall(r"<knowledge>\n(.*?)</knowledge>", m["content"], re.DOTALL)
    ]
    assert (
        shown and "Chicago" not in shown[0]
    )  # before clip 1 the call is out of reach, for the LLM too
    assert (
        "People in memory: none identified yet." in fake.requests[3]["messages"][1]["content"]
    )  # nobody known then
    assert second.leaked == 0 and f["not_found_ok"] == 1
    judged = fake.requests[2]["messages"][0]["content"]
    assert "ground_truth_answer: Chicago. agent_answer: Sheila is from Chicago" in judged


@pytest.mark.slow
@pytest.mark.cpu_kind
def test_screenshotvqa_mini_skips_compressed_files_and_finds_the_answers(stores, capsys):
    require_x()
    code, f, text = _bench(capsys, "screenshotvqa", "--mini", "--store", str(stores))
    assert code == 0, text
    assert f["questions"] == 9 and "6 screenshots (1 compressed skipped)" in text
    assert f["out_of_reach_questions"] == 1 and f["not_found_ok"] == 1, (
        text
    )  # only the skipped file had it
    assert f["answer_in_context@5"] >= 0.8, text
    assert f["leakage"] == 0.0 and f["accuracy"] is None
