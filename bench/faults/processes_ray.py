"""``killed_ray_worker``: ``mnemo ingest --ray`` against a local Ray (one ``ray start`` for all tries,
127.0.0.1 only) of a real call (pyannote's sample.wav, two 15 s clips); a perception worker is
SIGKILLed from outside mid-ingest. The ingest must finish with every clip stored once and the store
equal to a sequential ingest; once this run's Ray processes are stopped as ``ray stop`` does
(SIGTERM, SIGKILL after 16 s; never ``ray stop`` itself, which ends every Ray of the user's) none
may be left. Not run without the ``[ray]`` extra.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import psutil

from bench.faults import Context, Tally, mnemo_argv, needs
from bench.faults.processes_kit import (
    child_env,
    describe_pid,
    finished,
    kill_pids,
    missing_in_ci,
    signal_pids,
    wait_gone,
)

# ------------------------------------------------------------------------------------------------
# killed_ray_worker


RAY_CLIP_S = 15.0


@needs("ray")
def killed_ray_worker(ctx: Context, tally: Tally, *, prelude: str = "", seed: int = 42) -> None:
    from bench.fixtures import cache_dir, pyannote_sample
    from embeddings.base import build_text_embedder
    from graph.compare import differences
    from graph.store import Store

    ray_bin = Path(sys.executable).parent / "ray"
    if not ray_bin.exists():  # the ray package is there (faults.run checks the extra)
        tally.run(
            ok=False,
            note=missing_in_ci(
                f"no `ray` command beside {sys.executable}: pip install 'mnemo[ray]'"
            ),
        )
        return
    recording = (
        pyannote_sample() / "sample.wav"
    )  # a real 30 s call, two clips of RAY_CLIP_S: audio only, cheap
    token = (
        uuid.uuid4().hex
    )  # every process of this Ray carries it in its environment: how orphans are found
    ray_tmp = Path(
        tempfile.mkdtemp(prefix="mf", dir="/tmp")
    )  # Ray's socket paths must stay under 108 bytes
    # Ray keeps a node on 127.0.0.1 only with its single-machine switch off (ray_jobs.ingest.loopback_only);
    # a HOME of its own keeps another Ray's ~/.ray out
    env = {
        k: v for k, v in child_env().items() if not k.startswith("RAY_")
    }  # not another Ray's address
    env |= {
        "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_TMPDIR": str(ray_tmp),
        "HOME": str(ray_tmp),
        "MNEMO_CACHE": str(cache_dir()),
        "MNEMO_FAULTS_RUN": token,
        "MNEMO_PERCEPTION__CLIP_S": f"{RAY_CLIP_S:g}",
    }
    sequential = ctx.workdir / "sequential"
    run = finished(
        mnemo_argv(["ingest", str(recording), "--store", str(sequential)]), env, ctx.workdir, 600
    )
    if run.returncode != 0:
        raise RuntimeError(f"the sequential ingest of {recording} failed: {run.stderr[-800:]}")
    results: list[dict] = []
    port = _free_port()
    try:
        t0 = time.monotonic()
        head = finished(
            [
                str(ray_bin),
                "start",
                "--head",
                "--node-ip-address=127.0.0.1",
                f"--port={port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--disable-usage-stats",
            ],
            env,
            ctx.workdir,
            180,
        )
        if head.returncode != 0:
            raise RuntimeError(f"`ray start --head` failed: {head.stderr[-800:]}")
        ctx.progress(
            f"faults: killed_ray_worker: Ray up on 127.0.0.1:{port} in {time.monotonic() - t0:.0f} s"
        )
        rng = random.Random(seed)
        for i in range(ctx.runs):
            results.append(
                _ray_try(
                    ctx.workdir / f"try{i}",
                    recording,
                    f"127.0.0.1:{port}",
                    env,
                    prelude,
                    rng.uniform(0.5, 3.0),
                    token,
                    ctx.progress,
                )
            )
            store = Store(ctx.workdir / f"try{i}" / "store", build_text_embedder("hash"))
            seq = Store(sequential, build_text_embedder("hash"))
            rows = store.clips.search().select(["clip_id"]).limit(None).to_list()
            ids = [r["clip_id"] for r in rows]
            expected = {
                r["clip_id"] for r in seq.clips.search().select(["clip_id"]).limit(None).to_list()
            }
            r = results[-1]
            r["lost"] = len(expected - set(ids))
            r["doubles"] = len(ids) - len(set(ids))
            r["diff"] = differences(store, seq) if not r["lost"] and not r["doubles"] else []
    finally:
        # this run's Ray only: `ray stop` ends every Ray process of the user's (another cluster, or
        # another bench's), found by name
        signal_pids(_carrying(token), signal.SIGTERM)
        kill_pids(
            wait_gone(_carrying(token), 16.0)
        )  # as `ray stop` does: SIGKILL after a grace period
        left = wait_gone(_carrying(token), 15.0)
        kill_pids(left)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    for i, r in enumerate(results):
        orphans = len(left) if i == len(results) - 1 else 0
        notes = [r["note"]] if r["note"] else []
        if r["lost"]:
            notes.append(f"{r['lost']} clip(s) of the sequential store missing")
        if r["doubles"]:
            notes.append(f"{r['doubles']} clip(s) stored twice")
        if r["diff"]:
            notes.append(f"the store differs from a sequential ingest: {r['diff'][:3]}")
        if orphans:
            notes.append(
                f"{orphans} Ray process(es) still running after SIGTERM and SIGKILL: "
                + ", ".join(describe_pid(p) for p in left[:4])
            )
        tally.run(
            lost=r["lost"],
            orphans=orphans + r["doubles"],
            ok=r["ok"] and not r["diff"],
            note="; ".join(notes),
        )


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _carrying(token: str) -> list[int]:
    """The processes whose environment holds this run's token (all of its Ray's)."""
    out = []
    for p in psutil.process_iter(["pid"]):
        try:
            if p.environ().get("MNEMO_FAULTS_RUN") == token and p.pid != os.getpid():
                out.append(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return out


def _perception_workers(token: str) -> list[psutil.Process]:
    """This run's Ray perception actors: Ray names their processes after the actor class
    (``ray::MapWorker(MapBatches(Perceive))``)."""
    out = []
    for pid in _carrying(token):
        try:
            p = psutil.Process(pid)
            if "Perceive" in " ".join(p.cmdline()):
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


def _ray_try(
    folder: Path,
    recording: Path,
    address: str,
    env: dict,
    prelude: str,
    kill_after_s: float,
    token: str,
    progress: Callable[[str], None],
) -> dict:
    folder.mkdir(parents=True)
    cmd = mnemo_argv(
        [
            "ingest",
            str(recording),
            "--store",
            str(folder / "store"),
            "--ray",
            "--address",
            address,
            "--workers",
            "1",
        ],
        prelude,
    )
    with open(folder / "ingest.log", "w") as log_file:
        ingest = subprocess.Popen(
            cmd, env=env, cwd=folder, stdout=log_file, stderr=subprocess.STDOUT
        )
    killed = None
    try:
        deadline = time.monotonic() + 180
        seen_at = None
        while ingest.poll() is None and time.monotonic() < deadline:
            workers = _perception_workers(token)
            if workers and seen_at is None:
                seen_at = time.monotonic()
            if seen_at is not None and time.monotonic() - seen_at >= kill_after_s:
                killed = workers[0]
                killed.send_signal(signal.SIGKILL)
                progress(
                    f"faults: killed_ray_worker: SIGKILLed perception worker pid {killed.pid} "
                    f"{kill_after_s:.1f} s after it started"
                )
                break
            time.sleep(0.1)
        code = ingest.wait(timeout=600)
    finally:
        if ingest.poll() is None:
            ingest.kill()
            ingest.wait()
    text = (folder / "ingest.log").read_text(errors="replace")
    if killed is None:
        return {
            "ok": False,
            "note": f"no perception worker was running to kill (ingest exit {code}): {text[-400:]}",
        }
    if code != 0:
        return {
            "ok": False,
            "note": f"the ingest failed after its worker was killed (exit {code}): {text[-400:]}",
        }
    return {"ok": True, "note": ""}
