"""``mnemo bench serve``: prepares the stores, starts ``mnemo serve`` on each, and loads it.

Two stores: the demo recording ingested (kept between runs, ingest skips what it holds), and a store
of N synthetic memories (default 1,000,000; ``bench.store``'s generator, built once with its
indexes and kept). The server is the real command in its own process, on a free loopback port, so
the load generator does not share its interpreter.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from bench.fixtures import cache_dir

# marks a finished build; the 2 is for stores whose synthetic memories have clip rows (reads keep
# only memories of committed clips, so an older build would answer nothing)
READY_FILE = ".complete-2"
ANSWERS_FILE = (
    "bench-answers.json"  # the fixed questions' answers, as the first run on the store gave them
)
FIXED_QUESTIONS = 20


def demo_store(cfg, root: Path, progress) -> Path:
    from mnemo.demo import ingest_demo
    from mnemo.wiring import open_store

    where = root / "demo" / cfg.graph.text_embedder
    store = open_store(cfg.graph, where)
    if store.count()["clips"] < 2:
        progress(f"ingesting the demo recording into {where} …")
        report = ingest_demo(cfg, store, progress=progress)
        if not report.ok:
            raise RuntimeError(f"the demo recording could not be ingested: {report.files_failed}")
    return where


def synthetic_store(cfg, root: Path, n: int, progress) -> Path:
    from bench.store import fill
    from mnemo.wiring import open_store

    where = root / f"synthetic-{n}" / cfg.graph.text_embedder
    if (where / READY_FILE).exists():
        return where
    import shutil

    shutil.rmtree(where, ignore_errors=True)  # a build that did not finish
    store = open_store(cfg.graph, where)
    progress(
        f"building a store of {n:,} synthetic memories in {where} (once; kept for later runs) …"
    )
    fill(store, n, progress=progress)
    progress("building its full-text, id and vector indexes …")
    store.refresh_indexes(vector_index=True)
    (where / READY_FILE).write_text("built by mnemo bench serve\n")
    return where


def check_answers(
    url: str, where: Path, questions: list[str], progress, token: str | None = None
) -> dict:
    """``questions`` asked once more, after the load: their answers and citations against those
    recorded beside the store (``ANSWERS_FILE``) by the first run on it, which writes them. A change
    made for speed must not change what the server answers."""
    import json
    from datetime import datetime

    from bench import serve

    now = serve.answers(url, questions, token)
    path = where / ANSWERS_FILE
    if path.exists():
        recorded = json.loads(path.read_text())
        reference = f"recorded in {path} on {recorded['when']}"
    else:
        recorded = {
            "when": datetime.now().astimezone().isoformat(timespec="seconds"),
            "answers": now,
        }
        path.write_text(json.dumps(recorded, indent=1))
        reference = f"recorded now in {path}, the reference of later runs"
    changed = serve.changed(recorded["answers"], now)
    progress(f"  answers: {len(now) - len(changed)} of {len(now)} as {reference}")
    return {"checked": len(now), "changed": changed, "reference": reference}


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(
    store: Path, log_path: Path, timeout_s: float = 300.0
) -> tuple[subprocess.Popen, str, str]:
    """``mnemo serve`` on ``store``: its process, URL and token (the random one it made, read from
    its token file as the user's own commands do)."""
    import httpx

    from mnemo.serve.auth import TOKEN_ENV, read_token

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop(TOKEN_ENV, None)
    with log_path.open("w") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen(
            [sys.executable, "-m", "mnemo", "serve", "--store", str(store), "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"mnemo serve exited with {proc.returncode}: {log_path.read_text()[-2000:]}"
            )
        try:
            token = read_token(
                port
            )  # read again each time: a killed server's stale file comes first
            if (
                httpx.get(
                    url + "/health", timeout=5, headers={"Authorization": f"Bearer {token}"}
                ).status_code
                == 200
            ):
                return proc, url, token
        except (httpx.HTTPError, FileNotFoundError):
            pass
        time.sleep(0.5)
    proc.kill()
    raise RuntimeError(f"mnemo serve did not answer on {url} within {timeout_s:.0f} s")


def run(cfg, memories: int, root: Path | None, progress) -> dict:
    from bench import serve
    from bench.store import queries
    from bench.tree_meter import TreeMeter
    from mnemo.demo import QUESTIONS
    from mnemo.wiring import text_embedder

    root = Path(root) if root else cache_dir() / "bench-stores" / "serve"
    dim = text_embedder(cfg.graph).dim
    stores = {
        "demo": (
            demo_store(cfg, root, progress),
            [*QUESTIONS, "Who lives in New Jersey?", "Who is from Chicago?"],
            ["Chicago", "New Jersey", "Yankee", "Texas", "hello", "down there"],
        )
    }
    if memories:
        texts = queries(dim, 400)  # three phases of 96 and the warm-up, none asking another's
        stores[f"synthetic {memories:,}"] = (
            synthetic_store(cfg, root, memories, progress),
            [f"What did I say about {t}?" for t in texts],
            texts,
        )
    figures: dict = {"stores": {}}
    for name, (where, questions, search_texts) in stores.items():
        progress(f"serving {name} ({where}) …")
        proc, url, token = _serve(where, root / "serve.log")
        try:
            import httpx

            count = httpx.get(
                url + "/health", timeout=30, headers={"Authorization": f"Bearer {token}"}
            ).json()["memories"]
            phases = serve.run(
                url,
                list(questions),
                list(search_texts),
                token=token,
                progress=progress,
                server_cpu_s=TreeMeter(proc.pid).root_cpu_s,
            )
            answers = check_answers(url, where, list(questions)[:FIXED_QUESTIONS], progress, token)
        finally:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        figures["stores"][name] = {"memories": count, "phases": phases, "answers": answers}
    return figures
