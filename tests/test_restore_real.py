"""Restore on a real-sized store: one whole LoCoMo conversation (conv-26, 19
sessions, 157 clips) memorized as ``bench locomo`` memorizes it, two changes to its people made,
then ``mnemo export`` and ``mnemo import`` into a new store, and ``mnemo backup`` with the backup
opened where it lies and then copied back in place of the lost store. Each gives the same rows and
counts, the same people and people history, and the same answers with the same citations to real
questions of that conversation. The three commands run as a user runs them, each its own process;
their seconds are printed (``pytest -s``) and quoted in docs/privacy.md."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import LOCOMO, built_once, run_cli, store_copy, unavailable

QUESTIONS_PER_CATEGORY = 2  # the first of each answerable category (1-4) in the file's order
LOGS = ("people_log", "forget_log")


@pytest.fixture
def conversation_store(tmp_path_factory, tmp_path, policies, monkeypatch):
    """LoCoMo's first dev conversation, every session, memorized with hash embeddings once per test
    run (``built_once``); a copy of its own for the test, which changes it."""
    from bench.datasets.locomo import load
    from bench.locomo import ingest_conversation
    from embeddings.base import build_text_embedder
    from graph.store import Store

    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")  # what the commands open it with
    if not LOCOMO.is_file():
        unavailable(f"{LOCOMO} not present (the shared evaluation data beside the repository)")

    def build(folder: Path) -> None:
        ingest_conversation(load(LOCOMO)[0], Store(folder, build_text_embedder("hash")), policies)

    built = built_once(tmp_path_factory, "locomo-conversation", build)
    return store_copy(built, tmp_path / "store", "hash")


def mnemo(*argv: str) -> tuple[dict, float]:
    """``mnemo ARGV --json`` as its own process: the JSON of its last line and its wall seconds."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mnemo", *argv, "--json"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=600,
    )
    seconds = time.perf_counter() - start
    assert done.returncode == 0, f"mnemo {' '.join(argv)}: {done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1]), seconds


def cli_json(capsys, *argv: str):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out.strip().splitlines()[-1])


def held(capsys, folder: Path, questions: list[str]) -> dict:
    """What the store at ``folder`` holds, as its commands show it."""
    from embeddings.base import build_text_embedder
    from graph.compare import table_rows
    from graph.store import Store

    store = Store(folder, build_text_embedder("hash"))
    where = ("--store", str(folder))
    return {
        "counts": store.count() | {name: getattr(store, name).count_rows() for name in LOGS},
        "rows": table_rows(store),  # clips, memories, entities, edges, less vectors and write times
        "people": cli_json(capsys, "people", *where),
        "history": cli_json(capsys, "people", "history", *where),
        # what a person reads: the answer and its citations (the search steps' counts can differ
        # between two runs on one store under load, their cause not yet found)
        "answers": {
            q: {k: a[k] for k in ("answer", "citations")}
            for q in questions
            for a in [cli_json(capsys, "ask", q, *where)]
        },
    }


def assert_same(got: dict, want: dict, what: str) -> None:
    assert got["counts"] == want["counts"], what
    for table, rows in want["rows"].items():
        missing, extra = set(rows) - set(got["rows"][table]), set(got["rows"][table]) - set(rows)
        assert not missing and not extra and len(rows) == len(got["rows"][table]), (
            f"{what}: {table}: {len(missing)} rows missing, {len(extra)} not in the original"
        )
    assert got["people"] == want["people"], what
    assert got["history"] == want["history"], what
    for question, answer in want["answers"].items():
        assert got["answers"][question] == answer, f"{what}: {question}"


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


@pytest.mark.slow  # a whole LoCoMo conversation memorized once per run
def test_export_import_and_backup_restore_a_whole_conversation(
    tmp_path, capsys, conversation_store
):
    from bench.datasets.locomo import load

    conv = load(LOCOMO)[0]
    questions = [
        q.question
        for category in (1, 2, 3, 4)
        for q in [q for q in conv.questions if q.category == category][:QUESTIONS_PER_CATEGORY]
    ]
    store = Path(conversation_store.uri)
    people = {p["name"]: p["id"] for p in cli_json(capsys, "people", "--store", str(store))}
    assert set(people) == set(conv.speakers)  # ("Caroline", "Melanie"), enrolled by name
    # two changes to people, so that the people log a restore must carry is not empty
    for change in (("me", people["Caroline"]), ("name", people["Melanie"], "Mel")):
        assert run_cli(capsys, "people", *change, "--store", str(store))[0] == 0

    want = held(capsys, store, questions)
    assert want["counts"]["clips"] == 157 and want["counts"]["memories"] > 500
    assert want["counts"]["people_log"] == 2
    assert {(p["name"], p["owner"]) for p in want["people"]} == {("Caroline", True), ("Mel", False)}
    assert all(a["citations"] for a in want["answers"].values()), "an answer cites nothing"
    size_mb = folder_mb(store)

    archive, imported = tmp_path / "export", tmp_path / "imported"
    manifest, export_s = mnemo("export", str(archive), "--store", str(store))
    assert {name: t["rows"] for name, t in manifest["tables"].items()} == want["counts"]
    counts, import_s = mnemo("import", str(archive), "--store", str(imported))
    assert counts == want["counts"]
    assert_same(held(capsys, imported, questions), want, "the imported store")

    copy = tmp_path / "backup"
    counts, backup_s = mnemo("backup", str(copy), "--store", str(store))
    assert {name: counts[name] for name in ("clips", "memories", "entities", "edges")} == {
        name: want["counts"][name] for name in ("clips", "memories", "entities", "edges")
    }
    assert_same(held(capsys, copy, questions), want, "the backup, opened where it lies")
    # the store lost, the backup copied back in its place (`cp -a ~/mnemo-backup mnemo-data`)
    shutil.rmtree(store)
    shutil.copytree(copy, store, symlinks=True)
    assert_same(held(capsys, store, questions), want, "the backup copied back in place")

    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "mnemo", "--version"], check=True, capture_output=True)
    startup_s = time.perf_counter() - start
    print(
        f"\nrestore on a real-sized store: LoCoMo {conv.sample_id}, {want['counts']['clips']} clips, "
        f"{want['counts']['memories']} memories, {want['counts']['entities']} entities, "
        f"{want['counts']['edges']} edges; store {size_mb:.1f} MB, export {folder_mb(archive):.1f} MB, "
        f"backup {folder_mb(copy):.1f} MB\n"
        f"mnemo export {export_s:.1f} s, mnemo import {import_s:.1f} s, mnemo backup {backup_s:.1f} s "
        f"(each a process; `mnemo --version` alone {startup_s:.1f} s); {len(questions)} questions"
    )
