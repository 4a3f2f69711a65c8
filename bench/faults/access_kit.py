"""What the access fault scenarios (``bench.faults.access``: ``access_origins``,
``access_credentials``, ``access_mcp``, ``access_config``) share: a small store of people and
memories whose data a leak would carry, a reader that fingerprints it, and the real ``mnemo`` CLI
in a child (``mnemo serve`` on a free loopback port), with an optional ``prelude``: Python source
the child runs first, which tests use to break a guard inside the server they attack."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.faults import mnemo_argv

log = logging.getLogger(__name__)

T0 = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC: the store's clips start here
NAME = "Quillon Ashgrove"  # the user's name for voice_1: a leak when an answer carries it
CLIPS = ("fault-clip-0", "fault-clip-1")  # the first two clips' ids
SOURCE = "/recordings/fault-talk.wav"
LINES = [  # (clip, speaker, seconds into the clip, what was said)
    (0, "voice_1", 2, "Hi there, how was the trip to Lisbon?"),
    (0, "voice_2", 6, "Lisbon was lovely, the azulejo tiles and the custard tarts at the bakery."),
    (0, "voice_1", 12, "Did you take the old tram up the hill?"),
    (1, "voice_2", 3, "I rode tram 28 twice, it was packed."),
    (1, "voice_1", 9, "Next year I want to see Porto."),
]
MARKERS = (
    NAME,
    "Quillon",
    "Lisbon",
    "azulejo",
    "custard",
    "tram 28",
    "Porto",
    "fault-clip-",
    SOURCE,
)
EVERYTHING = {"from": "1970-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"}
WAIT_S = 120.0  # a server's start on a loaded 2-core machine


# ---- the store, and the children that serve it ----------------------------------------------------


def build_store(where: Path, clips: int = 2):
    """``clips`` clips of one recording (two at least), two voices with their characters and a face,
    voice_1 named by the user: every kind of data a leak could carry."""
    from bench.talk_store import write_talk
    from embeddings.base import build_text_embedder
    from graph import edit_people
    from graph.store import Store

    lines = LINES + [
        (k, "voice_2", 5, f"On day {k} we walked along the river again.") for k in range(2, clips)
    ]
    store = write_talk(
        Store(where, build_text_embedder("hash")),
        T0,
        max(clips, 2),
        clip_id,
        SOURCE,
        "sha-fault-talk",
        lines,
        face_in=(),
    )
    edit_people.name(store, "voice_1", NAME)
    return store


def clip_id(index: int) -> str:
    return f"fault-clip-{index}"


_built: dict[int, Path] = {}  # stores built in this process, by clip count: copied, not built again


def fresh_store(ctx, clips: int = 2) -> Path:
    """A store of ``clips`` clips in the scenario's folder, its own to change."""
    base = _built.get(clips)
    if base is None or not base.is_dir():
        base = ctx.workdir / f"pristine-{clips}"
        build_store(base, clips)
        _built[clips] = base
    where = ctx.workdir / f"store-{clips}"
    shutil.copytree(base, where)
    return where


class Fingerprint:
    """What the store holds now, as a reader in this process sees it: counts and the people's log."""

    def __init__(self, where: Path) -> None:
        from embeddings.base import build_text_embedder
        from graph.store import Store

        self.store = Store(where, build_text_embedder("hash"))

    def now(self) -> tuple:
        self.store.catch_up()
        counts = self.store.count()
        return (
            counts["clips"],
            counts["memories"],
            tuple((o.seq, o.op) for o in self.store.people_ops()),
        )

    def held(self) -> int:
        """Clips and memories held now."""
        clips, memories, _ = self.now()
        return clips + memories


def carries_data(text: str, store: Path | None = None) -> list[str]:
    found = [m for m in MARKERS if m in text]
    return found + ([str(store)] if store and str(store) in text else [])


def summary(what: str, items: list[str], shown: int = 3) -> list[str]:
    """One note line for many failures of one kind: how many, and the first few."""
    if not items:
        return []
    return [
        f"{len(items)} {what}: " + "; ".join(items[:shown]) + (" …" if len(items) > shown else "")
    ]


def note(run: int, wrong: list[str]) -> str:
    return f"try {run + 1}: " + "; ".join(wrong)


def child_env(workdir: Path, **extra: str) -> dict[str, str]:
    """The environment of a child: none of the user's ``MNEMO_…`` settings nor their own config (a
    user's LLM endpoint would answer instead of the offline agent), a private runtime folder for
    tokens, the store's embedder, no hub."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    run = workdir / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    (workdir / "config").mkdir(exist_ok=True)
    env.update(
        XDG_RUNTIME_DIR=str(run),
        XDG_CONFIG_HOME=str(workdir / "config"),
        HF_HUB_OFFLINE="1",
        MNEMO_GRAPH__TEXT_EMBEDDER="hash",
        **extra,
    )
    return env


@dataclass
class Server:
    proc: subprocess.Popen
    url: str
    port: int
    token: str
    token_file: Path
    log_path: Path
    store: Path

    @property
    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self) -> bool:
        """SIGTERM, as a user's Ctrl-C or a service manager; whether it exited by itself."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
            return True
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_serve(workdir: Path, store: Path, *options: str, prelude: str = "") -> Server:
    """``mnemo serve`` on a free loopback port, started with a loose umask (its token file must be
    private by itself); returns once it answers its own token."""
    import httpx

    port = free_port()
    env = child_env(workdir)
    log_path = workdir / f"serve-{port}.log"
    token_file = Path(env["XDG_RUNTIME_DIR"]) / "mnemo" / f"serve-{port}.token"
    with log_path.open("w") as err:
        proc = subprocess.Popen(
            mnemo_argv(["serve", "--store", str(store), "--port", str(port), *options], prelude),
            env=env,
            cwd=workdir,
            stdout=subprocess.DEVNULL,
            stderr=err,
            umask=0o022,
        )
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"mnemo serve exited with {proc.returncode}: {log_path.read_text()[-1500:]}"
            )
        try:
            token = token_file.read_text().strip()
            if (
                token
                and httpx.get(
                    url + "/health", headers={"Authorization": f"Bearer {token}"}, timeout=5
                ).status_code
                == 200
            ):
                return Server(proc, url, port, token, token_file, log_path, store)
        except (OSError, httpx.HTTPError):
            pass
        time.sleep(0.3)
    proc.kill()
    proc.wait()
    raise RuntimeError(
        f"mnemo serve did not answer on {url} within {WAIT_S:.0f} s: {log_path.read_text()[-1500:]}"
    )


def login(client, server: Server) -> str:
    """A session cookie, as the page gets by signing in."""
    reply = client.post(server.url + "/login", json={"token": server.token})
    if reply.status_code != 200 or "mnemo_session" not in reply.cookies:
        raise RuntimeError(
            f"signing in with the right token failed ({reply.status_code}): {reply.text[:200]}"
        )
    return reply.cookies["mnemo_session"]


def raw_get(port: int, head: str) -> str:
    """A request written by hand (two Host headers, which httpx will not send)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(head.encode("latin-1"))
        reply = b""
        while chunk := s.recv(65536):
            reply += chunk
    return reply.decode("latin-1")
