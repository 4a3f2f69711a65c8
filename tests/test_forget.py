"""`mnemo forget`: what it selects, that the bytes are gone from every file of the store, what
stays, and bad filters refused with nothing deleted."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import files_holding, forget_cli
from factories import FACES, memorize, speech_clip, unit
from factories import VOICE_A as A
from factories import VOICE_B as B
from graph.forget_store import forgotten_clip_ids, history
from memorize.identity import MatchPolicy
from mnemo.cli import main
from perception.records import ClipObservations, SourceInfo

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SOURCE = SourceInfo("/recordings/day.wav", "2" * 64, 300.0, True, False, T0, "option")
SECRET = "Zanzibarquix"  # in one clip only
BY_PROFILE = MatchPolicy(0.84, by_profile=True, merge_min_samples=1)  # voices, matched by profile


def _clip(k: int, turns) -> ClipObservations:
    """``speech_clip`` of this file's recording, a turn every 5 s."""
    return speech_clip(k, turns, SOURCE, every_s=5.0, lasts_s=4.0)


CLIPS = [
    _clip(0, [("s0", "I live in Boston, by the river.", A), ("s1", "The tram was late again.", B)]),
    _clip(
        1,
        [
            ("s0", f"My bank password is {SECRET} and nobody knows.", A),
            ("s1", "Hey Dana, keep it safe.", B),
        ],
    ),
    _clip(
        2, [("s0", "I live in Boston, still.", A), ("s1", "We planted tomatoes in the garden.", B)]
    ),
]


@pytest.fixture
def store(hash_store, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    memorize(hash_store, CLIPS, FACES, BY_PROFILE)
    hash_store.refresh_indexes()  # a full-text index holding every word, as after an ingest
    return hash_store


def test_a_forgotten_text_is_in_no_file_and_no_search_and_the_rest_answers_as_before(store):
    root = Path(store.uri)
    assert files_holding(root, SECRET)  # the check can see it while it is there
    before = {m.memory_id for m in store.memories_where("clip_id = 'clip2'")}

    rc, preview = forget_cli(store, "--query", SECRET.lower())
    assert rc == 0 and preview["forgotten"] is False and preview["clips"] == 1
    assert files_holding(root, SECRET)  # a preview changes nothing

    rc, done = forget_cli(store, "--query", SECRET, "--yes")
    assert rc == 0 and done["forgotten"] and done["clips"] == 1 and done["memories"] >= 2
    assert files_holding(root, SECRET) == []
    assert not store.has_clip("clip1") and store.memories_where("clip_id = 'clip1'") == []
    assert not any(SECRET in h.memory.text for h in store.search(SECRET, k=20))
    assert {m.memory_id for m in store.memories_where("clip_id = 'clip2'")} == before
    assert any("tomatoes" in h.memory.text for h in store.search("tomatoes garden", k=5))
    # no memory or edge points at the forgotten clip
    assert not any(
        x.startswith(("clip:clip1", "clip1:"))
        for m in store.memories_where("true")
        for x in m.provenance
    )
    assert "clip1" in forgotten_clip_ids(store)
    # the audit log says what kind of thing went, how much and when, not what it was
    (entry,) = history(store)
    assert entry["filters"] == ["query"] and entry["counts"]["clips"] == 1
    assert SECRET not in json.dumps(entry)


def test_a_fact_keeps_the_evidence_left_and_goes_with_the_last_of_it(store):
    def boston():
        return [m for m in store.memories_where("kind = 'semantic'") if "Boston" in m.text]

    (fact,) = boston()
    assert {"clip:clip0", "clip:clip2"} <= set(fact.provenance)
    assert forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    (fact,) = boston()
    assert "clip:clip0" not in fact.provenance and "clip:clip2" in fact.provenance
    assert (
        fact.clip_id == "clip2" and fact.start_ts == T0.timestamp() + 60
    )  # no longer the forgotten clip's time
    assert forget_cli(store, "--clip", "clip2", "--yes")[0] == 0
    assert boston() == []


def test_a_time_range_forgets_the_clips_it_touches(store):
    start = T0.timestamp()
    rc, done = forget_cli(
        store,
        "--from",
        datetime.fromtimestamp(start + 40, UTC).isoformat(),
        "--to",
        datetime.fromtimestamp(start + 65, UTC).isoformat(),
        "--yes",
    )
    assert rc == 0 and done["clips"] == 2
    assert [store.has_clip(c) for c in ("clip0", "clip1", "clip2")] == [True, False, False]


def test_forgetting_a_person_takes_their_words_ids_and_the_names_given_to_them(store):
    assert main(["people", "--store", store.uri, "name", "voice_1", "Quillon"]) == 0
    store.catch_up()
    rc, done = forget_cli(store, "--person", "Quillon", "--yes")
    assert rc == 0 and done["people_changes"] == 1
    assert files_holding(Path(store.uri), "Quillon") == []
    assert files_holding(Path(store.uri), "Boston") == []  # only voice_1 said it
    assert [p.voices for p in store.people()] == [("voice_2",)]
    assert any("tomatoes" in m.text for m in store.memories_where("true"))


@pytest.mark.parametrize("named", [True, False])
def test_a_newcomer_never_takes_a_forgotten_persons_id_nor_the_name_given_to_it(store, named):
    """Forget every clip of the highest-numbered person: the user's name for them stays in the
    people log, and the next new voice must not get their id and with it that name (``named``
    False: the forget's log row alone keeps the numbers)."""
    if named:
        assert main(["people", "--store", store.uri, "name", "voice_2", "Quillon"]) == 0
    store.catch_up()
    gone = store.people()
    end = datetime.fromtimestamp(T0.timestamp() + 90, UTC)
    assert forget_cli(store, "--from", T0.isoformat(), "--to", end.isoformat(), "--yes")[0] == 0
    assert store.people() == [] and store.load_entities() == []
    c, d = unit([0, 1, 0, 0.2]), unit([0.2, 0, 0, 1])
    memorize(
        store,
        [
            _clip(
                5,
                [("s0", "We moved to Lisbon last spring.", c), ("s1", "The ferry is at noon.", d)],
            )
        ],
        FACES,
        BY_PROFILE,
    )
    store.catch_up()
    people = store.people()
    assert len(people) == 2 and all(p.name == "" for p in people)  # nobody is Quillon
    assert not {i for p in people for i in p.ids} & {i for p in gone for i in p.ids}
    # and an ingest after that one goes on from there, not from the numbers it holds
    memorize(
        store, [_clip(6, [("s0", "Ferries again today.", unit([1, 1, 1, 1]))])], FACES, BY_PROFILE
    )
    store.catch_up()
    assert "voice_5" in {i for p in store.people() for i in p.ids}


def test_forgetting_a_person_takes_a_name_said_to_them_or_someone_beside_them(store):
    memorize(
        store,
        [
            _clip(
                3,
                [
                    ("s0", "The plan stands.", A),
                    ("s1", "Hey Zed, ready?", B),
                    ("s2", "Ready.", unit([0, 1, 0, 0])),
                ],
            )
        ],
        FACES,
        BY_PROFILE,
    )
    (said,) = [e for e in store.all_edges("addressed_as") if e.dst_id == "name:Zed"]
    assert said.src_id == "voice_1,voice_3"  # whom of the two is not known yet
    assert forget_cli(store, "--person", "voice_1", "--yes")[0] == 0
    assert not [e for e in store.all_edges("addressed_as") if "voice_1" in e.src_id.split(",")]


@pytest.mark.parametrize(
    "args, why",
    [
        ((), "say what to forget"),
        (("--from", "2026-03-02T10:00", "--to", "2026-03-02T09:00"), "inverted"),
        (("--from", "2026-03-02T10:00"), "needs both"),
        (("--clip", "nope"), "no clip 'nope'"),
        (("--person", "voice_99"), "no person"),
        (("--person", "voice_1", "--query", "x"), "takes no other filter"),
        (("--query", " "), "empty"),
        (("--from", "yesterday", "--to", "today"), "ISO 8601"),
    ],
)
def test_a_filter_that_cannot_be_meant_is_refused_and_nothing_is_deleted(store, args, why, capsys):
    counts = store.count()
    assert main(["forget", "--store", store.uri, *args, "--yes"]) == 2
    assert why in capsys.readouterr().err
    assert store.count() == counts and history(store) == []


@pytest.mark.slow  # real audio (the pyannote call) probed and planned
def test_ingest_does_not_bring_back_a_forgotten_clip(hash_store, sample_wav, monkeypatch):
    from dataclasses import replace

    from memorize.memorizer import clip_row
    from perception.records import ClipObservations
    from pipeline.ingest import IngestReport, plan

    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    (job,) = plan([str(sample_wav)], hash_store, progress=lambda _m: None).jobs
    row = replace(clip_row(ClipObservations(job.clip, (), ())), transcript="hello")
    hash_store.commit_clip(row, [], [])
    assert forget_cli(hash_store, "--source", str(sample_wav), "--yes")[0] == 0
    assert sample_wav.is_file()  # the user's recording stays
    report = IngestReport()
    assert plan([str(sample_wav)], hash_store, progress=lambda _m: None, report=report).jobs == []
    assert report.clips_skipped == 1


def test_screenshots_of_forgotten_clips_are_deleted_with_their_sidecars(tmp_path):
    """In a capture folder the daemon made; the user's files in folders it did not mark stay
    (tests/test_own_files.py)."""
    from mnemo.forget_with_media import forget_screenshots, screenshots_to_delete
    from perception.capture.storage import CaptureStore

    capture = CaptureStore(tmp_path / "screens")
    for minute in (0, 1, 5):
        at = datetime(2026, 3, 2, 9, minute, tzinfo=UTC)
        shots = capture.write(
            b"\xff\xd8\xff\xe0 not decoded here", {"app": "Firefox", "window": "Bank"}, at, 0
        ).image.parent
    start = datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp()
    clip = {"source_path": str(shots), "start_ts": start, "end_ts": start + 90}
    assert len(screenshots_to_delete([clip])) == 4 and forget_screenshots([clip]) == 2
    assert sorted(p.name for p in shots.iterdir()) == [
        "20260302T090500.000Z_m0.jpg",
        "20260302T090500.000Z_m0.jpg.json",
    ]


def test_rest_forget_previews_then_forgets_and_refuses_a_filter_that_cannot_be_meant(store):
    from conftest import api_client
    from control.answer import OfflineAnswerer
    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    client = api_client(create_app(MemoryService(store, OfflineAnswerer(store))))
    preview = client.post("/forget", json={"query": SECRET})
    assert (
        preview.status_code == 200
        and preview.json()["forgotten"] is False
        and preview.json()["clips"] == 1
    )
    assert any(SECRET in m["text"] for m in client.get("/search", params={"q": SECRET}).json())
    bad = client.post(
        "/forget",
        json={"from": "2026-03-02T10:00:00Z", "to": "2026-03-02T09:00:00Z", "confirm": True},
    )
    assert bad.status_code == 422 and "inverted" in bad.json()["error"]
    assert client.post("/forget", json={"confirm": True}).status_code == 422
    done = client.post("/forget", json={"query": SECRET, "nonce": preview.json()["nonce"]})
    assert done.status_code == 200 and done.json()["forgotten"] is True
    assert not any(SECRET in m["text"] for m in client.get("/search", params={"q": SECRET}).json())
    assert (
        client.get("/clips/clip1").status_code == 404
        and client.get("/clips/clip2").status_code == 200
    )
    assert files_holding(Path(store.uri), SECRET) == []


@pytest.mark.slow
def test_mcp_forget_over_stdio(store, tmp_path):
    import asyncio
    import os
    import sys

    from mcp import Client, StdioServerParameters

    env = {
        "MNEMO_GRAPH__TEXT_EMBEDDER": "hash",
        "HF_HUB_OFFLINE": "1",
        "HOME": os.environ.get("HOME", "/root"),
        **{k: os.environ[k] for k in ("PYTHONPATH",) if k in os.environ},
    }  # this checkout's code
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mnemo", "mcp", "--store", store.uri, "--allow-forget"],
        env=env,
        cwd=str(tmp_path),
    )

    async def session():
        async with Client(params, read_timeout_seconds=120) as client:
            preview = await client.call_tool("forget", {"request": {"query": SECRET}})
            nonce = preview.structured_content["nonce"]
            done = await client.call_tool("forget", {"request": {"query": SECRET, "nonce": nonce}})
            bad = await client.call_tool(
                "forget", {"request": {"clip": "no-such-clip", "confirm": True}}
            )
            return preview, done, bad

    preview, done, bad = asyncio.run(asyncio.wait_for(session(), 300))
    assert (
        preview.structured_content["forgotten"] is False
        and preview.structured_content["clips"] == 1
    )
    assert done.structured_content["forgotten"] is True
    assert bad.is_error and "no clip" in bad.content[0].text
    assert files_holding(Path(store.uri), SECRET) == []


def test_retention_forgets_what_is_past_its_days_and_the_oldest_beyond_the_size_cap(store):
    from graph.sidefiles import folder_bytes
    from mnemo.forget_with_media import apply_retention

    start = T0.timestamp()
    # 70 s after the first clip began, with a retention of 40 s: clips 0 and 1 (ended 30 and 60 s in) are past it
    assert apply_retention(store, retention_days=40 / 86400, now=start + 70) == {
        "expired_clips": 1,
        "budget_clips": 0,
    }
    assert [store.has_clip(c) for c in ("clip0", "clip1", "clip2")] == [False, True, True]
    size = folder_bytes(Path(store.uri))
    # a cap just under the size: the oldest clip left goes, the newest stays
    assert (
        apply_retention(store, max_store_gb=(size - 1) / 1e9, now=start + 70)["budget_clips"] == 1
    )
    assert [store.has_clip(c) for c in ("clip1", "clip2")] == [False, True]
    assert folder_bytes(Path(store.uri)) <= size - 1
    assert apply_retention(store) == {
        "expired_clips": 0,
        "budget_clips": 0,
    }  # both off: nothing happens


def test_status_reports_the_store_by_part_and_what_it_covers(store, capsys):
    assert main(["status", "--store", store.uri, "--json"]) == 0
    status = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert status["clips"] == 3 and status["memories"] == store.count()["memories"]
    assert status["span"] == [T0.timestamp(), T0.timestamp() + 90]
    assert set(status["bytes_by_part"]) >= {"memories", "clips", "entities", "edges"}
    assert status["bytes"] == sum(status["bytes_by_part"].values()) > 0
    assert status["people"] == 2 and status["capture"]["state"]


def test_a_store_is_private_to_its_user_whatever_the_umask(tmp_path, monkeypatch, capsys):
    import os
    import stat

    from embeddings.base import build_text_embedder
    from graph.store import Store

    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    old = os.umask(0o022)
    try:
        Store(tmp_path / "lib", build_text_embedder("hash"))
        assert stat.S_IMODE((tmp_path / "lib").stat().st_mode) == 0o700
        assert (
            main(["status", "--store", str(tmp_path / "cli")]) == 0
        )  # written by the command line
    finally:
        os.umask(old)
    root = tmp_path / "cli"
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in [root, *root.rglob("*")]}
    assert modes[root] == 0o700
    assert all(m & 0o077 == 0 for m in modes.values()), {
        str(p): oct(m) for p, m in modes.items() if m & 0o077
    }


@pytest.mark.slow
def test_a_forgotten_row_is_gone_from_the_data_files_of_a_store_where_it_was_a_small_part(
    hash_store, monkeypatch
):
    """Lance rewrites a data file on compaction only when a tenth of it is deleted: with one clip
    of 150 forgotten, the file that held it must be written anew all the same."""
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    texts = (
        f"My bank password is {SECRET} and nobody knows."
        if k == 75
        else f"Entry {k}: we walked to the harbour."
        for k in range(150)
    )
    memorize(
        hash_store,
        (
            _clip(k, [("s0", text, A), ("s1", f"Reply {k}, the weather held.", B)])
            for k, text in enumerate(texts)
        ),
        FACES,
        BY_PROFILE,
    )
    hash_store.refresh_indexes()  # compacted: one data file per table
    root = Path(hash_store.uri)
    assert files_holding(root, SECRET)
    before = hash_store.count()
    assert forget_cli(hash_store, "--clip", "clip75", "--yes")[0] == 0
    assert files_holding(root, SECRET) == []
    after = hash_store.count()
    assert after["clips"] == before["clips"] - 1 and after["memories"] < before["memories"]
    assert any("harbour" in h.memory.text for h in hash_store.search("harbour walk", k=3))


def test_a_fact_superseded_by_a_forgotten_one_is_current_again(hash_store, monkeypatch):
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")
    memorize(
        hash_store,
        [_clip(0, [("s0", "I live in Boston.", A)]), _clip(1, [("s0", "I live in Paris now.", A)])],
        FACES,
        BY_PROFILE,
    )
    (boston,) = [m for m in hash_store.memories_where("kind = 'semantic'") if "Boston" in m.text]
    assert boston.valid_to_ts is not None  # superseded by Paris
    assert forget_cli(hash_store, "--clip", "clip1", "--yes")[0] == 0
    (boston,) = [m for m in hash_store.memories_where("kind = 'semantic'") if "lives in" in m.text]
    assert "Boston" in boston.text and boston.valid_to_ts is None


def test_a_forget_killed_part_way_is_finished_by_the_next_one(store):
    from graph import sql
    from graph.forget_store import Filter, _log, finish_unfinished, plan

    f = Filter(query=SECRET)
    selected = plan(store, f)
    _log(store, 1.0, f, selected)  # what forget writes first; then it died after the memories went
    store.memories.delete(sql.in_list("memory_id", selected.memory_ids))
    assert store.has_clip("clip1") and "clip1" in forgotten_clip_ids(
        store
    )  # ingest skips it already
    assert (
        store.memories_where("clip_id = 'clip1'") == []
    )  # no memory points to a missing clip, the clip waits
    rc, out = forget_cli(
        store, "--query", "tomatoes"
    )  # any forget, even a preview, finishes it first
    assert rc == 0 and not store.has_clip("clip1") and store.has_clip("clip2")
    assert files_holding(Path(store.uri), SECRET) == []
    assert finish_unfinished(store) == 0 and all(h["counts"] for h in history(store))


def test_people_stay_who_they_are_when_the_clip_that_first_heard_them_is_forgotten(store):
    before = sorted((p.person_id, p.voices) for p in store.people())
    assert len(before) == 2
    assert (
        forget_cli(store, "--clip", "clip0", "--yes")[0] == 0
    )  # where both voices were first heard
    assert sorted((p.person_id, p.voices) for p in store.people()) == before


def test_one_writer_a_store_at_a_time(hash_store, tmp_path):
    """A second writer (another process) waits for the first, told who holds the store; an ingest
    takes its turn as a forget does."""
    import subprocess
    import sys
    import time

    from graph.store import StoreBusy
    from pipeline.ingest import ingest

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys, time\n"
                f"fd = os.open({str(Path(hash_store.uri) / '.writer.lock')!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX); os.pwrite(fd, b'pid 1 (mnemo ingest)', 0)\n"
                "print('held', flush=True); time.sleep(2.5)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreBusy, match=r"being written by pid 1 \(mnemo ingest\)"):
            with hash_store.writing("test", wait_s=0.5):
                pass
        said, t0 = [], time.monotonic()
        ingest([], hash_store, None, (MatchPolicy(0.9), MatchPolicy(0.84)), progress=said.append)
        assert time.monotonic() - t0 > 1.0 and any("waiting for it to finish" in s for s in said)
    finally:
        holder.wait(10)
    with hash_store.writing("test", wait_s=0.5):  # free again
        pass


def test_a_second_process_forgets_after_the_first_purged_the_versions_it_had_open(store):
    """Two MCP servers, or a CLI forget beside `mnemo serve`: the other's forget purged the old
    versions this handle was on; this one's forget reads the newest instead of failing (bench faults
    mcp_one_call_forget saw 'LanceError(IO) … Not found' on a data file)."""
    from embeddings.base import build_text_embedder
    from graph.forget_store import Filter, forget, plan
    from graph.store import Store

    other = Store(Path(store.uri), build_text_embedder("hash"))  # opened before the first forget
    assert other.has_clip("clip0") and other.has_clip("clip2")
    f = Filter(clip_id="clip0")
    forget(store, plan(store, f), f)
    f = Filter(clip_id="clip2")
    done = forget(other, plan(other, f), f)
    assert done["clips"] == 1
    assert [store.has_clip(c) for c in ("clip0", "clip1", "clip2")] == [False, True, False]
