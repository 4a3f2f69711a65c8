"""A store on ``s3://``, against an S3-compatible server started on loopback (moto's server mode):
the commands give what they give on a local folder, and the side files (``graph.sidefiles``:
locks, the commit journal, forget notes) work there too."""

from __future__ import annotations

import json
import signal
import time

import pytest

from conftest import run_cli, s3_server

pytestmark = pytest.mark.slow  # an S3 server (moto) in a child process; killed writers on it

BUCKET = "life"


@pytest.fixture(scope="module")
def s3():
    """The server, its environment set in this process, and the bucket ``life``."""
    import boto3

    from mnemo.bench_serve import free_port

    with s3_server(free_port()) as env, pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        boto3.client("s3").create_bucket(Bucket=BUCKET)
        yield env


@pytest.fixture
def cli_env(monkeypatch, tmp_path):
    """The models the shared fixtures use, and no ./mnemo.toml of the repository."""
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "minilm")
    monkeypatch.setenv("MNEMO_PERCEPTION__FACES_BACKEND", "dlib")
    monkeypatch.chdir(tmp_path)


def _json(capsys, *argv: str):
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _answers(capsys, store: str) -> list[dict]:
    from mnemo.demo import QUESTIONS

    out = []
    for question in QUESTIONS:
        reply = _json(capsys, "ask", question, "--store", store)
        out.append({k: reply[k] for k in ("answer", "citations")})
    return out


def test_the_cli_on_an_s3_store_gives_what_it_gives_on_a_folder(
    s3, cli_env, capsys, tmp_path, demo_recording
):
    """ingest, ask, people changes, forget, status and export, each on both stores: the same rows,
    answers, people and archives."""
    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store

    remote, local = f"s3://{BUCKET}/chain", str(tmp_path / "local")
    stores = (remote, local)
    for store in stores:
        code, _, err = run_cli(capsys, "ingest", str(demo_recording), "--store", store)
        assert code == 0, err[-3000:]
    embedder = build_text_embedder("minilm")
    assert differences(Store(remote, embedder), Store(local, embedder)) == []
    answers = _answers(capsys, remote)
    assert answers == _answers(capsys, local)
    assert "Chicago" in answers[0]["answer"] and answers[0]["citations"]

    people = [_json(capsys, "people", "--store", s) for s in stores]
    assert people[0] == people[1] and people[0], people
    first = people[0][0]["id"]
    for store in stores:
        _json(capsys, "people", "name", first, "Sheila", "--store", store)
    assert _json(capsys, "people", "--store", remote) == _json(capsys, "people", "--store", local)

    forgot = [_json(capsys, "forget", "--query", "Yankee", "--yes", "--store", s) for s in stores]
    assert forgot[0]["clips"] == forgot[1]["clips"] >= 1, forgot
    assert differences(Store(remote, embedder), Store(local, embedder)) == []
    assert _answers(capsys, remote) == _answers(capsys, local)
    assert not any("Yankee" in a["answer"] for a in _answers(capsys, remote))

    status = [_json(capsys, "status", "--store", s) for s in stores]
    assert {k: status[0][k] for k in ("clips", "memories", "people")} == {
        k: status[1][k] for k in ("clips", "memories", "people")
    }
    assert status[0]["bytes_by_part"].keys() == status[1]["bytes_by_part"].keys()
    assert status[0]["bytes"] > 0

    for store, name in zip(stores, ("from-s3", "from-folder")):
        _json(capsys, "export", str(tmp_path / name), "--store", store)
        _json(capsys, "import", str(tmp_path / name), "--store", str(tmp_path / f"{name}-store"))
    a, b = (Store(tmp_path / f"{n}-store", embedder) for n in ("from-s3", "from-folder"))
    assert differences(a, b) == [] and differences(a, Store(local, embedder)) == []
    assert [p.name for p in a.people()] == [p.name for p in b.people()]

    # what object storage cannot take is refused, saying what to do instead
    code, _, err = run_cli(capsys, "backup", str(tmp_path / "bk"), "--store", remote)
    assert code != 0 and "mnemo export" in err and not (tmp_path / "bk").exists()
    code, _, err = run_cli(
        capsys, "import", str(tmp_path / "from-s3"), "--store", f"s3://{BUCKET}/imported"
    )
    assert code != 0 and "local store" in err


def test_a_store_in_a_missing_bucket_or_without_http_allowed_is_refused_clearly(
    s3, monkeypatch, tmp_path
):
    from embeddings.base import build_text_embedder
    from graph.store import Store, StoreError

    with pytest.raises(StoreError, match="the bucket nowhere does not exist: create it first"):
        Store("s3://nowhere/store", build_text_embedder("hash"))
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    with pytest.raises(StoreError, match="AWS_ALLOW_HTTP=true"):
        Store(f"s3://{BUCKET}/plain", build_text_embedder("hash"))
    with pytest.raises(StoreError, match="gs:// is not supported"):
        Store("gs://life/store", build_text_embedder("hash"))
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    from mnemo.doctor import store_checks

    [check] = store_checks("s3://nowhere/store", explicit=True)
    assert check.status == "fail" and "nowhere does not exist" in check.detail, check


def _store(name: str):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    return Store(f"s3://{BUCKET}/{name}", build_text_embedder("hash"))


def test_one_writer_at_a_time_on_s3_and_a_dead_holders_lease_is_taken_over(s3, monkeypatch) -> None:
    from graph import sidefiles
    from graph.store import StoreBusy

    a, b = _store("locks"), _store("locks")
    said: list[str] = []
    with a.writing("the first writer"):
        with pytest.raises(StoreBusy, match=r"being written by pid \d+ on .*\(the first writer\)"):
            with b.writing("the second", wait_s=1.0, say=said.append):
                pass
    assert said and "waiting for it to finish" in said[0]
    with b.writing("the second, after the first", wait_s=1.0):  # released: at once
        pass
    assert a.side.read(".writer.lock") is None  # and nothing left behind

    # a holder that died leaves its lease: after LEASE_S on the server's clock it is taken over
    a.side.write(
        ".writer.lock",
        json.dumps({"holder": "pid 1 on gone (mnemo ingest)", "token": "x"}).encode(),
    )
    monkeypatch.setattr(sidefiles, "LEASE_S", 2.0)
    with pytest.raises(StoreBusy, match="pid 1 on gone"):
        with b.writing("too soon", wait_s=0.5):
            pass
    time.sleep(3.2)
    said.clear()
    with b.writing("the next writer", wait_s=1.0, say=said.append):
        assert said == [
            f"s3://{BUCKET}/locks: took over the lock of pid 1 on gone (mnemo ingest), "
            f"not renewed for {said[0].rsplit('for ', 1)[1].split(' s')[0]} s"
        ]
        assert "the next writer" in b.side.read(".writer.lock").decode()


def test_a_writer_that_lost_its_lease_stops_before_the_next_commit(s3, monkeypatch):
    from bench.faults.store_kit import _clip, clip_id
    from graph import sidefiles

    monkeypatch.setattr(sidefiles, "RENEW_S", 0.3)
    store = _store("lost")
    with store.writing("a slow writer"):
        row, memories, entities, edges, updated = _clip(store, 0, "/r.mp4", 1_800_000_000.0)
        store.commit_clip(row, memories, entities, edges, updated)
        # another process took the lock over (as after a pause past the lease): the next renewal fails
        store.side.write(
            ".writer.lock", json.dumps({"holder": "pid 2 (another writer)", "token": "y"}).encode()
        )
        time.sleep(1.0)
        row, memories, entities, edges, updated = _clip(store, 1, "/r.mp4", 1_800_000_000.0)
        with pytest.raises(sidefiles.LockLost, match="another process took it over"):
            store.commit_clip(row, memories, entities, edges, updated)
    assert store.has_clip(clip_id(0)) and not store.has_clip(row.clip_id)
    assert (
        "another writer" in store.side.read(".writer.lock").decode()
    )  # the new holder's lease stays


def test_a_writer_killed_at_each_step_of_a_commit_on_s3_is_undone_by_the_next(
    s3, monkeypatch, tmp_path
):
    """As ``bench faults``' kill_commit, on a bucket: the child is SIGKILLed holding the lease and
    mid-journal; the next writer takes the lease over, undoes the commit, and the rerun completes."""
    import multiprocessing

    from bench.faults.store_kit import (
        COMMIT_STEPS,
        clip_id,
        finished,
        missing,
        raw_rows,
        write,
        write_clips,
    )
    from graph import commit, sidefiles

    monkeypatch.setattr(sidefiles, "LEASE_S", 1.0)
    monkeypatch.setattr(sidefiles, "RENEW_S", 0.3)
    clips, kill_clip = 3, 1
    for step in COMMIT_STEPS:
        uri = f"s3://{BUCKET}/killed-{step}"
        # a fresh interpreter with this environment (the S3 server's address): the fault bench's
        # forkserver may have started before it was set, and its children would look for AWS itself
        child = multiprocessing.get_context("spawn").Process(
            target=write,
            args=({"store": uri, "clips": clips, "kill_clip": kill_clip, "kill_step": step},),
        )
        child.start()
        child.join(300)
        assert child.exitcode == -signal.SIGKILL, step
        store = _store(f"killed-{step}")
        whole = (
            step == "end"
        )  # killed after the clip row: the commit is whole, only the journal is left
        assert store.side.read(commit.MARK) is not None, step
        time.sleep(2.1)  # the dead writer's lease runs out
        with store.writing("the next writer"):
            pass
        assert store.side.names(commit.JOURNAL) == [], step
        assert missing(store, list(range(kill_clip))) == []
        assert whole == store.has_clip(clip_id(kill_clip)), step
        assert whole or raw_rows(store, clip_id(kill_clip)) == 0, step
        write_clips(store, clips)
        assert finished(store, clips) == [], step


def test_changes_to_people_at_once_on_s3_all_land(s3):
    """The people lock is a lease on a bucket: eight changes at once each take their own number."""
    from conftest import build_people_store, renames_at_once
    from graph import edit_people

    store = build_people_store(_store("people"))
    errors = renames_at_once(store)
    assert not errors
    ops = store.people_ops()
    assert [o.seq for o in ops] == list(range(1, 9))
    assert sorted(o.args["name"] for o in ops) == [f"Name {i}" for i in range(8)]
    assert store.side.read(edit_people.LOCK_FILE) is None
