"""mnemo's runtime without torch: `demo`, `ingest`, `ask`, `serve`, `mcp`, `capture` and `watch` on real media
in a child process that cannot import torch or the packages that bring it, on both kinds of CPU
(AVX2, and native bfloat16 as ``MNEMO_CPU_BF16=1`` says); and a setting that needs torch names the
extra that brings it.

The child's imports are blocked by wrapping every finder of ``sys.meta_path`` before mnemo is
imported: for torch and the packages that exist only with it, ``importlib.util.find_spec`` finds
nothing and ``import`` raises ModuleNotFoundError, as when they are not installed (the speaker
model's weights are a fetched file, not resemblyzer's installed folder). (The demo recording is
built in this process, from insightface's group photo.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# the torch extra's, the insightface and bench extras' (scipy too: clustering runs in NumPy), and
# sympy (ONNX Runtime's symbolic shapes)
BLOCKED = (
    "torch",
    "torchvision",
    "open_clip",
    "sentence_transformers",
    "transformers",
    "efficientnet_lite_pytorch",
    "insightface",
    "resemblyzer",
    "pyannote",
    "scipy",
    "sympy",
)
RESULT = "NO-TORCH-RESULT "  # the child's last line of stdout: this, then its results as JSON

# Run as `python -c BOOTSTRAP BLOCKED JOB ARGS...`: blocks the imports, then runs JOB.
BOOTSTRAP = r"""
import json, sys

absent = set(json.loads(sys.argv[1]))
job, sys.argv = sys.argv[2], ["no-torch-job", *sys.argv[3:]]
early = sorted(absent & set(sys.modules))
assert not early, f"imported before the block, at start-up: {early}"


class Hiding:
    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        top = name.partition(".")[0]
        if top in absent:
            return None
        return self.inner.find_spec(name, path, target)

    def __getattr__(self, attr):  # find_distributions, invalidate_caches
        return getattr(self.inner, attr)


sys.meta_path[:] = [Hiding(f) for f in sys.meta_path]
exec(compile(job, "<no-torch job>", "exec"), {"__name__": "__main__"})
"""

# The work: the CLI's commands as `main` runs them, the REST app and the MCP server on the store.
JOB = r"""
import asyncio, contextlib, io, json, sys
import importlib.metadata

store, screens, ingest = sys.argv[1:4]
out = {}


def cli(*argv):
    from mnemo.cli import main

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        try:
            code = main(list(argv))
        except SystemExit as e:  # --help
            code = e.code
    return {"code": code, "out": stdout.getvalue()}


if ingest == "1":
    out["demo"] = cli("demo", "--store", store)  # the demo recording (built beforehand): ingested, asked
    out["ingest"] = cli("ingest", screens, "--store", store)
out["ask"] = cli("ask", "Where is Sheila from?", "--store", store, "--json")

from fastapi.testclient import TestClient
from mnemo.config import load_config
from mnemo.serve.api import create_app
from mnemo.serve.cli import open_service
from mnemo.serve.mcp_server import build_server

service = open_service(load_config(), store)
app = create_app(service)
client = TestClient(app, base_url="http://127.0.0.1", headers={"Authorization": f"Bearer {app.state.token}"})
reply = client.post("/ask", json={"question": "Where does Diane live?"})
out["rest"] = {"status": reply.status_code, "body": reply.json()}
out["rest_search"] = client.get("/search", params={"q": "Build Finished console"}).json()
mcp = build_server(service)
out["mcp_tools"] = sorted(t.name for t in asyncio.run(mcp.list_tools()))
out["mcp_forget_offered"] = mcp.forget_on(None)  # to a client that cannot ask its user

out["capture_help"] = cli("capture", "--help")["code"]
out["watch_help"] = cli("watch", "--help")["code"]
import mnemo.capture_cli, mnemo.supervise, mnemo.watch, watchfiles  # what `capture` and `watch` run
import perception.capture.control, perception.capture.crypto, perception.capture.daemon
import perception.capture.owned, perception.capture.storage, perception.capture.x11
import perception.capture.session, perception.capture.wayland, perception.capture.windows

embedder = service.store.embedder
embedder = getattr(embedder, "inner", embedder)
out["text"] = [embedder.name, embedder.dtype, embedder.runtime]
dists = importlib.metadata.packages_distributions()
tops = sorted({m.partition(".")[0] for m in sys.modules} - set(sys.stdlib_module_names))
out["modules"] = {m: dists.get(m, []) for m in tops}
print("NO-TORCH-RESULT " + json.dumps(out))
"""


def run_blocked(
    job: str, cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> dict:
    """``job`` (Python source) in a child of this venv's python that cannot import torch & co.,
    run in ``cwd`` with ``args`` as its ``sys.argv[1:]``; its results (the last stdout line, JSON)."""
    child_env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    done = subprocess.run(
        [sys.executable, "-c", BOOTSTRAP, json.dumps(BLOCKED), job, *args],
        capture_output=True,
        text=True,
        env=child_env,
        cwd=cwd,
        timeout=timeout,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    assert done.returncode == 0 and lines, (
        f"child failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    return json.loads(lines[-1][len(RESULT) :]) | {"stderr": done.stderr}


def assert_torch_free(result: dict) -> None:
    loaded = sorted(set(result["modules"]) & set(BLOCKED))
    assert not loaded, f"the runtime imported {loaded}"
    torch_dists = {d for ds in result["modules"].values() for d in ds} & {
        "torch",
        "torchvision",
        "open-clip-torch",
        "sentence-transformers",
        "transformers",
        "resemblyzer",
        "efficientnet-lite-pytorch",
        "insightface",
    }
    assert not torch_dists, f"modules of {torch_dists} were imported: {result['modules']}"


@pytest.fixture(scope="module")
def screens(tmp_path_factory, opencv_dir) -> Path:
    """A real application screenshot with its capture sidecar (on-screen text to read)."""
    folder = tmp_path_factory.mktemp("screens")
    shutil.copyfile(opencv_dir / "eclipse_cdt_cfg7.png", folder / "eclipse_cdt_cfg7.png")
    (folder / "eclipse_cdt_cfg7.png.json").write_text(
        json.dumps(
            {
                "captured_at": "2026-11-20T09:00:05+00:00",
                "app": "Eclipse",
                "window": "jni_part.cpp - Eclipse SDK",
            }
        )
    )
    return folder


@pytest.fixture(scope="module")
def bf16_run(tmp_path_factory, demo_recording, screens) -> dict:
    """One ingest (`mnemo demo`: the demo recording, with speech, voices and faces; then `mnemo
    ingest` of a screenshot) and everything after it, torch-free, as a CPU with native bfloat16 runs
    them (where torch would pick bfloat16). ``demo_recording`` builds the recording here: the child
    has no insightface for its photo."""
    store = tmp_path_factory.mktemp("no-torch") / "store"
    env = {"MNEMO_CACHE": str(demo_recording.parent.parent), "MNEMO_CPU_BF16": "1"}
    result = run_blocked(JOB, store.parent, str(store), str(screens), "1", env=env)
    return result | {"store": str(store)}


def _assert_answers(result: dict) -> None:
    ask = result["ask"]
    assert ask["code"] == 0
    answer = json.loads(ask["out"].strip().splitlines()[-1])
    assert "Chicago" in answer["answer"] and answer["citations"]
    assert result["rest"]["status"] == 200 and "New Jersey" in result["rest"]["body"]["answer"]
    assert result["rest"]["body"]["citations"]
    assert result["rest_search"] and "Build Finished" in result["rest_search"][0]["text"]
    assert {"ask", "search", "list_people", "read_clip", "timeline"} <= set(result["mcp_tools"])
    assert result["mcp_forget_offered"] is False  # forget asks the user, or needs --allow-forget
    assert result["capture_help"] == 0 and result["watch_help"] == 0
    # without torch, "auto" runs mpnet in float32 in ONNX Runtime on either kind of CPU
    assert result["text"] == ["all-mpnet-base-v2", "float32", "onnx"]


def test_demo_ingest_ask_serve_mcp_capture_without_torch_on_a_bf16_cpu(bf16_run):
    demo, ingest = bf16_run["demo"], bf16_run["ingest"]
    assert demo["code"] == 0 and ingest["code"] == 0, bf16_run["stderr"][-4000:]
    assert "memory: 2 clips" in demo["out"]
    assert all(answer in demo["out"] for answer in ("Chicago", "New Jersey", "Yankee"))
    assert "ingested 1 file(s): 1 new clip(s)" in ingest["out"] and "0 failed" in ingest["out"]
    stderr = bf16_run["stderr"]
    assert (
        "2 speaker(s)" in stderr and "face(s) of 2 people" in stderr
    )  # voices and faces were embedded
    assert "text line(s)" in stderr
    _assert_answers(bf16_run)
    assert_torch_free(bf16_run)


def test_ask_serve_mcp_without_torch_on_an_avx2_cpu(bf16_run):
    """The same store, read where the CPU has no bfloat16 (the text model's choice differs)."""
    result = run_blocked(
        JOB, Path(bf16_run["store"]).parent, bf16_run["store"], "", "0", env={"MNEMO_CPU_BF16": "0"}
    )
    _assert_answers(result)
    assert_torch_free(result)


SETTINGS_JOB = r"""
import contextlib, io, json, os, sys

recording, store, pack_root = sys.argv[1:4]
from mnemo.cli import main
from mnemo.config import load_config
from mnemo.wiring import faces_backend_name

out = {}
for name, setting, command in json.loads(sys.argv[4]):
    os.environ.update(setting)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(command + ["--store", store])
    out[name] = {"code": code, "err": err.getvalue()}
    for key in setting:
        del os.environ[key]
os.environ["MNEMO_PERCEPTION__INSIGHTFACE_ROOT"] = pack_root
out["faces_auto"] = faces_backend_name(load_config().perception)
out["modules"] = sorted({m.partition(".")[0] for m in sys.modules})
print("NO-TORCH-RESULT " + json.dumps(out))
"""

TORCH_SETTINGS = {  # a setting that needs torch (or insightface) -> the extra its error must name
    "model_runtime": ({"MNEMO_PERCEPTION__MODEL_RUNTIME": "torch"}, "ingest", "torch"),
    "device": ({"MNEMO_PERCEPTION__DEVICE": "cuda"}, "ingest", "torch"),
    "open_clip": (
        {
            "MNEMO_PERCEPTION__IMAGE_BACKEND": "open-clip",
            "MNEMO_PERCEPTION__OPEN_CLIP_CHECKPOINT": "laion2b_s34b_b79k",
        },
        "ingest",
        "torch",
    ),
    "insightface": ({"MNEMO_PERCEPTION__FACES_BACKEND": "insightface"}, "ingest", "insightface"),
    "text_runtime": ({"MNEMO_GRAPH__TEXT_RUNTIME": "torch"}, "ask", "torch"),
    "text_dtype": ({"MNEMO_GRAPH__TEXT_DTYPE": "bfloat16"}, "ask", "torch"),
    "text_device": ({"MNEMO_GRAPH__TEXT_DEVICE": "cuda:0"}, "ask", "torch"),
}


def test_a_setting_that_needs_torch_names_its_extra(tmp_path, demo_recording):
    pack = tmp_path / "insightface" / "models" / "buffalo_l"
    pack.mkdir(parents=True)
    (pack / "det_10g.onnx").write_bytes(b"")  # a pack on disk, without the package to run it
    commands = {"ingest": ["ingest", str(demo_recording)], "ask": ["ask", "Where is Sheila from?"]}
    jobs = [
        [name, setting, commands[command]] for name, (setting, command, _) in TORCH_SETTINGS.items()
    ]
    result = run_blocked(
        SETTINGS_JOB,
        tmp_path,
        str(demo_recording),
        str(tmp_path / "store"),
        str(tmp_path / "insightface"),
        json.dumps(jobs),
        timeout=300,
    )
    for name, (_setting, _, extra) in TORCH_SETTINGS.items():
        got = result[name]
        assert got["code"] == 2, (name, got)
        assert f"mnemo[{extra}]" in got["err"] and f"pip install 'mnemo[{extra}]'" in got["err"], (
            name,
            got["err"],
        )
        assert f".venv/bin/pip install -e '.[{extra}]'" in got["err"], (name, got["err"])
        assert "Traceback" not in got["err"]
    assert 'model_runtime = "torch"' in result["model_runtime"]["err"]
    assert 'image_backend = "open-clip"' in result["open_clip"]["err"]
    assert 'text_dtype = "bfloat16"' in result["text_dtype"]["err"]
    assert result["faces_auto"] == "dlib"  # "auto" does not pick a backend it cannot run
    assert not set(result["modules"]) & set(BLOCKED)


def test_with_torch_installed_a_bf16_cpu_still_picks_bfloat16(monkeypatch):
    """The fast path stays where torch is installed (this process has it)."""
    from perception.weights import fast_dtype, installed

    assert installed("torch") and installed("sentence_transformers")
    monkeypatch.setenv("MNEMO_CPU_BF16", "1")
    assert fast_dtype("cpu") == "bfloat16"
    monkeypatch.setenv("MNEMO_CPU_BF16", "0")
    assert fast_dtype("cpu") == "float32"
