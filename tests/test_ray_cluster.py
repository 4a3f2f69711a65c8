"""``mnemo ingest --ray --address`` against a real two-node Ray cluster: a head and a worker node
started with ``ray start``, one CPU each, on this machine.

Ray puts a node on the machine's network address unless there is none: on a host with a network
interface, ``--node-ip-address 127.0.0.1`` is turned into it, and a worker node cannot join with
Ray's single-machine switch on. So the cluster, the ingest and Ray's own processes run in a network
namespace of their own that holds nothing but loopback (``ip netns``, as root): every address Ray
picks is 127.0.0.1, and no packet can leave. Needs root and iproute2; locally it skips without
them, in CI it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import s3_server, unavailable

pytestmark = pytest.mark.slow  # a two-node Ray cluster (the [ray] extra), minutes each

BIN = Path(sys.executable).parent


def _netns(
    name: str, *cmd: str, env: dict | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["ip", "netns", "exec", name, *cmd],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def loopback_netns():
    if os.geteuid() != 0 or shutil.which("ip") is None:
        unavailable(
            "the two-node Ray test needs root and iproute2 (ip netns) for a loopback-only network"
        )
    name = f"mnemo-ray-{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        unavailable(f"cannot make a network namespace: {made.stderr.strip()}")
    try:
        up = _netns(name, "ip", "link", "set", "lo", "up")
        assert up.returncode == 0, up.stderr
        links = _netns(name, "ip", "-o", "link").stdout.splitlines()
        assert len(links) == 1 and ": lo:" in links[0]  # loopback only: nothing can leave
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def day_recording():
    from bench.day_media import build_day_recording

    return build_day_recording(1)  # twelve 30 s clips: calls, desktop, still scenes, film


@pytest.fixture(scope="module")
def sequential_store(tmp_path_factory, day_recording, perceivers, policies):
    from embeddings.base import build_text_embedder
    from graph.store import Store
    from pipeline.ingest import ingest

    store = Store(tmp_path_factory.mktemp("sequential") / "store", build_text_embedder("minilm"))
    report = ingest([str(day_recording)], store, perceivers, policies, progress=lambda m: None)
    assert report.clips_new == 12
    return store


@pytest.mark.parametrize("where", ["folder", "s3"])
def test_ingest_on_a_two_node_cluster_uses_both_nodes_and_equals_the_sequential_store(
    where, loopback_netns, tmp_path, day_recording, sequential_store
):
    """The store in a folder, or on ``s3://`` (an S3-compatible server on the namespace's loopback,
    which the driver commits to); the rows are compared inside the namespace, where both are reachable."""
    from bench.fixtures import cache_dir

    ray_tmp = tempfile.mkdtemp(
        prefix="mr", dir="/tmp"
    )  # Ray's socket paths must stay under 108 bytes
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AWS_"))}
    # a HOME of its own: a ~/.ray/auth_token left by another Ray on this machine made the head ask
    # for a token the worker node did not send (the caches stay where they are)
    env |= {
        "HF_HUB_OFFLINE": "1",
        "RAY_USAGE_STATS_ENABLED": "0",
        "MNEMO_GRAPH__TEXT_EMBEDDER": "minilm",
        "MNEMO_PERCEPTION__FACES_BACKEND": "dlib",
        "RAY_TMPDIR": ray_tmp,
        "HOME": ray_tmp,
        "MNEMO_CACHE": str(cache_dir()),
    }
    port = _free_port()
    address = f"127.0.0.1:{port}"
    ray = str(BIN / "ray")
    python = str(BIN / "python")
    with contextlib.ExitStack() as stack:
        store = str(tmp_path / "ray-store")
        if where == "s3":
            env |= stack.enter_context(
                s3_server(_free_port(), ("ip", "netns", "exec", loopback_netns))
            )
            made = _netns(
                loopback_netns,
                python,
                "-c",
                "import boto3; boto3.client('s3').create_bucket(Bucket='life')",
                env=env,
            )
            assert made.returncode == 0, made.stderr
            store = "s3://life/ray-store"

        def ray_start(*flags: str):
            """``ray start`` of a node of one CPU on the loopback address."""
            return _netns(
                loopback_netns,
                ray,
                "start",
                *flags,
                "--node-ip-address=127.0.0.1",
                "--num-cpus=1",
                "--disable-usage-stats",
                env=env,
            )

        try:
            head = ray_start("--head", f"--port={port}", "--include-dashboard=false")
            assert head.returncode == 0, head.stdout + head.stderr
            node = ray_start(f"--address={address}")
            assert node.returncode == 0, node.stdout + node.stderr
            nodes = _netns(
                loopback_netns,
                python,
                "-c",
                f"import ray; ray.init(address='{address}', log_to_driver=False); "
                "print(sorted(n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']))",
                env=env,
            )
            assert nodes.stdout.strip().splitlines()[-1] == "['127.0.0.1', '127.0.0.1']", (
                nodes.stdout + nodes.stderr
            )

            run = _netns(
                loopback_netns,
                str(BIN / "mnemo"),
                "ingest",
                str(day_recording),
                "--store",
                store,
                "--ray",
                "--address",
                address,
                "--workers",
                "2",
                env=env,
                timeout=900,
            )
            assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        finally:
            _netns(loopback_netns, ray, "stop", "--force", env=env)
            shutil.rmtree(ray_tmp, ignore_errors=True)

        # each node ran a perception worker, and each perceived clips
        workers = {
            m.group(1): int(m.group(2))
            for m in re.finditer(
                r"perception worker \S+ node (\w+) pid \d+: (\d+) clip\(s\) perceived", run.stdout
            )
        }
        assert (
            len(workers) == 2
            and all(n > 0 for n in workers.values())
            and sum(workers.values()) == 12
        ), run.stdout

        compare = _netns(
            loopback_netns,
            python,
            "-c",
            "import json, sys; from embeddings.base import build_text_embedder; "
            "from graph.compare import differences; from graph.store import Store; "
            "e = build_text_embedder('minilm'); "
            "print(json.dumps(differences(Store(sys.argv[1], e), Store(sys.argv[2], e))))",
            store,
            sequential_store.uri,
            env=env,
        )
        assert compare.returncode == 0, compare.stderr[-3000:]
        assert json.loads(compare.stdout.strip().splitlines()[-1]) == []
