"""``mnemo doctor``: a run on this machine, and each bad input it must name with its fix (a store
open to others, models missing or damaged, a Python out of range, an extra not installed)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

from conftest import unavailable
from mnemo import doctor
from perception.model_files import MANIFEST, find, location, models_root, present

ROOT = Path(__file__).resolve().parent.parent


def _doctor(*argv: str, env: dict | None = None) -> tuple[int, dict, str]:
    """``mnemo doctor --json ARGV`` in its own process: its exit code, its JSON, its text."""
    run = subprocess.run(
        [sys.executable, "-m", "mnemo.cli", "doctor", "--json", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})},
    )
    assert run.stdout.strip(), run.stderr
    return run.returncode, json.loads(run.stdout.strip().splitlines()[-1]), run.stdout


def _by_name(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def _private_store(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    store.chmod(0o700)
    (store / "clips.lance").mkdir(mode=0o700)
    (store / "clips.lance").chmod(0o700)
    data = store / "clips.lance" / "0.lance"
    data.write_bytes(b"rows")
    data.chmod(0o600)
    return store


def test_a_run_here_passes_and_lists_each_check(tmp_path):
    missing = [d.name for d in MANIFEST if not d.optional and not present(d)]
    if missing:
        unavailable(f"models not fetched ({', '.join(missing)}): run `mnemo models fetch`")
    store = _private_store(tmp_path)
    code, report, text = _doctor("--store", str(store))
    checks = _by_name(report)
    failed = {n: c for n, c in checks.items() if c["status"] == "fail"}
    assert code == 0 and report["ok"] is True and not failed, failed
    want = {
        "python",
        "mnemo",
        "config",
        "packages",
        "ffmpeg",
        "display",
        "cpu",
        "store",
        "store files",
        "disk: store",
        "disk: models",
        "model cache",
        "capture folder",
        "serve tokens",
        *(f"extra {e}" for e in doctor.EXTRAS),
        *(f"model {d.name}" for d in MANIFEST),
    }
    assert want <= set(checks), want - set(checks)
    assert any(
        n.startswith("model rapidocr/") for n in checks
    )  # the classifier inside rapidocr's package
    for c in report["checks"]:
        assert c["status"] in ("ok", "warn", "fail") and c["detail"]
        assert bool(c["fix"]) == (c["status"] != "ok"), (
            c
        )  # every line that is not ok says what to do
        assert f"{c['status']:<4}  {c['name']}" in text  # the text lists it too
    assert checks["store"]["detail"].startswith(str(store)) and "700" in checks["store"]["detail"]
    assert "2 entries" in checks["store files"]["detail"]
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in checks["python"]["detail"]
    assert "ffmpeg version" in checks["ffmpeg"]["detail"]


@pytest.mark.serial  # a time limit: another test beside it would add to the time
def test_it_imports_no_model_library_and_is_quick():
    """No torch, no ONNX Runtime, no CTranslate2, no LanceDB: doctor finds them, never loads them."""
    code = (
        "import sys, time; from mnemo.doctor import run_checks; t = time.monotonic(); run_checks(); "
        "print(time.monotonic() - t); print(' '.join(m for m in ('torch', 'onnxruntime', 'ctranslate2', "
        "'lancedb', 'cv2', 'rapidocr', 'faster_whisper', 'open_clip', 'insightface', 'ray') if m in sys.modules))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert run.returncode == 0, run.stderr
    seconds, loaded = (run.stdout.splitlines() + [""])[:2]
    assert loaded == "", f"doctor imported {loaded}"
    assert float(seconds) < 5, f"doctor took {seconds} s (target: under 3 s without --hashes)"


def test_a_store_open_to_others_is_named_with_the_chmod_that_closes_it(tmp_path):
    store = _private_store(tmp_path)
    checks = _by_name(
        {"checks": [c.__dict__ for c in doctor.store_checks(str(store), explicit=True)]}
    )
    assert checks["store"]["status"] == "ok" and checks["store files"]["status"] == "ok"

    store.chmod(0o755)
    (store / "clips.lance" / "0.lance").chmod(0o644)
    code, report, text = _doctor("--store", str(store))
    checks = _by_name(report)
    assert code == 1 and report["ok"] is False
    assert checks["store"]["status"] == "fail" and "755" in checks["store"]["detail"]
    assert checks["store"]["fix"] == f"chmod 700 {store}"
    files = checks["store files"]
    assert (
        files["status"] == "fail"
        and "1 of 2 entries" in files["detail"]
        and "0.lance" in files["detail"]
    )
    assert files["fix"] == f"chmod -R go-rwx {store}"
    assert f"fix: chmod 700 {store}" in text

    # open to the group only is open too
    store.chmod(0o750)
    (store / "clips.lance" / "0.lance").chmod(0o640)
    checks = _by_name(
        {"checks": [c.__dict__ for c in doctor.store_checks(str(store), explicit=True)]}
    )
    assert checks["store"]["status"] == "fail" and "750" in checks["store"]["detail"]
    assert (
        checks["store files"]["status"] == "fail" and "mode 640" in checks["store files"]["detail"]
    )

    # closed folder, one file still 644: nobody else can reach it, but it is one chmod from a leak
    store.chmod(0o700)
    (store / "clips.lance" / "0.lance").chmod(0o644)
    checks = _by_name(
        {"checks": [c.__dict__ for c in doctor.store_checks(str(store), explicit=True)]}
    )
    assert checks["store"]["status"] == "ok"
    assert (
        checks["store files"]["status"] == "warn"
        and checks["store files"]["fix"] == f"chmod -R go-rwx {store}"
    )


def test_models_missing_from_the_models_root_fail_naming_mnemo_models_fetch(tmp_path):
    empty = tmp_path / "models"
    empty.mkdir()
    code, report, text = _doctor(
        "--store", str(_private_store(tmp_path)), env={"MNEMO_MODELS": str(empty)}
    )
    checks = _by_name(report)
    assert code == 1 and report["ok"] is False
    for d in MANIFEST:
        c = checks[f"model {d.name}"]
        if d.optional:  # reported, not required
            assert c["status"] == "ok" and "not fetched (optional" in c["detail"], c
        else:
            assert c["status"] == "fail" and str(empty) in c["detail"], c
            assert c["fix"].startswith(f"mnemo models fetch {d.name}"), c
    assert checks["model cache"]["status"] == "ok"
    assert "fix: mnemo models fetch" in text


def test_a_damaged_model_file_is_caught_by_hashes(tmp_path, monkeypatch):
    d = find("resemblyzer")
    if not present(d):
        unavailable("resemblyzer's model not fetched: run `mnemo models fetch resemblyzer`")
    root = tmp_path / "models"
    shutil.copytree(location(d, models_root()), location(d, root))
    monkeypatch.setenv("MNEMO_MODELS", str(root))

    def resemblyzer(hashes: bool) -> dict:
        return next(
            c.__dict__ for c in doctor.model_checks(hashes) if c.name == "model resemblyzer"
        )

    assert resemblyzer(True)["status"] == "ok" and "SHA-256 verified" in resemblyzer(True)["detail"]
    weights = location(d, root) / d.package / d.files[0].path
    with weights.open("r+b") as f:  # one byte flipped: the size stays, only the hash sees it
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    assert resemblyzer(False)["status"] == "ok"  # sizes only
    damaged = resemblyzer(True)
    assert damaged["status"] == "fail" and "SHA-256 does not match" in damaged["detail"]
    assert "pretrained.pt" in damaged["detail"]
    assert damaged["fix"] == "mnemo models fetch --force resemblyzer"

    code, report, _ = _doctor(
        "--hashes", "--store", str(_private_store(tmp_path)), env={"MNEMO_MODELS": str(root)}
    )
    assert code == 1 and _by_name(report)["model resemblyzer"]["status"] == "fail"

    weights.write_bytes(b"short")  # a truncated file: sizes alone catch it
    short = resemblyzer(False)
    assert short["status"] == "fail" and "5 bytes, expected" in short["detail"]


def test_a_python_outside_the_supported_range_is_named_with_the_fix():
    for v in ((3, 10, 14), (3, 14, 0), (2, 7, 18)):
        c = doctor.python_check(v, "/usr/bin/python3")
        assert (
            c.status == "fail" and ".".join(map(str, v)) in c.detail and "3.11 to 3.13" in c.detail
        ), c
        assert "python3.13 -m venv" in c.fix and "make PYTHON=python3.13" in c.fix
    for v in ((3, 11, 0), (3, 12, 3), (3, 13, 9)):
        assert doctor.python_check(v, "/usr/bin/python3").status == "ok"


def test_the_supported_range_and_extras_are_pyprojects():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (lo, hi) = doctor.SUPPORTED_PYTHON
    assert project["requires-python"] == f">={lo[0]}.{lo[1]},<{hi[0]}.{hi[1] + 1}"
    # test, docs and lint are the developer's extras (`make test`, `make docs`, `make lint`),
    # not features doctor reports
    assert set(doctor.EXTRAS) == set(project["optional-dependencies"]) - {
        "test",
        "docs",
        "lint",
    }


def test_a_missing_extra_is_named_with_its_pip_command():
    absent = ("mnemo_no_such_module_x", "mnemo_no_such_pkg.sub")
    c = doctor.extra_check("torch", absent, "models in torch")
    assert (
        c.status == "ok" and "not installed (optional)" in c.detail and "pip install" in c.detail
    )  # optional
    c = doctor.extra_check("torch", ("json", *absent), "models in torch")  # installed in part
    assert c.status == "warn" and "mnemo_no_such_module_x" in c.detail and "json" not in c.detail
    assert "-m pip install" in c.fix and "[torch]" in c.fix
    c = doctor.extra_check(
        "insightface", absent[:1], "faces", needed_by='[perception] faces_backend = "insightface"'
    )
    assert (
        c.status == "fail"
        and "needs mnemo[insightface]" in c.detail
        and "mnemo_no_such_module_x" in c.detail
    )
    assert c.fix.startswith(f"{sys.executable} -m pip install") and "[insightface]" in c.fix
    assert "faces_backend" in c.fix
    assert doctor.extra_check("stdlib", ("json", "xml.dom"), "x").status == "ok"


def test_a_setting_that_needs_an_extra_fails_the_run_without_it(tmp_path):
    from mnemo.config import load_config

    cfg = load_config(perception={"faces_backend": "insightface", "model_runtime": "torch"})
    assert doctor.extras_needed(cfg) == {
        "torch": '[perception] model_runtime = "torch"',
        "insightface": '[perception] faces_backend = "insightface"',
    }
    assert doctor.extras_needed(load_config()) == {}
    # through the run: a config that does not load is a failed check, not a crash
    code, report, _ = _doctor(
        "--store",
        str(_private_store(tmp_path)),
        env={"MNEMO_PERCEPTION__FACES_BACKEND": "no-such-backend"},
    )
    c = _by_name(report)["config"]
    assert code == 1 and c["status"] == "fail" and "faces_backend" in c["detail"] and c["fix"]


@pytest.mark.slow  # starts an X server (Xvfb)
def test_the_display_server_for_capture():
    assert doctor.display_check({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}).status == "warn"
    gnome = doctor.display_check({"XDG_SESSION_TYPE": "wayland", "XDG_CURRENT_DESKTOP": "GNOME"})
    assert "X11 sessions and sway" in gnome.detail and "X11 session" in gnome.fix
    gone_sway = doctor.display_check({"SWAYSOCK": "/nonexistent/sway-ipc.sock"})
    assert gone_sway.status == "warn" and "cannot be read" in gone_sway.detail
    none = doctor.display_check({})
    assert none.status == "warn" and "ingest" in none.detail and "DISPLAY" in none.fix
    gone = doctor.display_check({"DISPLAY": ":93"})  # a display nobody serves
    assert gone.status == "warn" and "cannot be reached" in gone.detail
    if shutil.which("Xvfb") is None:
        unavailable(
            "Xvfb is not installed (make xtools installs it): the reachable-X11 case not run"
        )
    server = subprocess.Popen(
        ["Xvfb", ":93", "-nolisten", "tcp", "-screen", "0", "640x480x24"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not Path("/tmp/.X11-unix/X93").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        here = doctor.display_check({"DISPLAY": ":93"})
        assert here.status == "ok" and "X11 at DISPLAY=:93" in here.detail, here
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_missing_or_old_dependency_is_named():
    assert doctor.packages_check().status == "ok"  # this environment, from mnemo's metadata
    c = doctor.packages_check(
        [
            "numpy>=1",
            "mnemo-no-such-dist>=1.0",
            "numpy>=999",
            'mnemo-no-such-extra-dist>=1; extra == "torch"',
        ]
    )
    assert c.status == "fail" and "2 of 3 dependencies" in c.detail, c
    assert (
        "missing: mnemo-no-such-dist>=1.0" in c.detail
        and "numpy" in c.detail
        and ">=999" in c.detail
    )
    assert "extra-dist" not in c.detail and "-m pip install" in c.fix
