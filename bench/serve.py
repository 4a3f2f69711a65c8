"""``mnemo bench serve``: latency of a running ``mnemo serve`` under concurrent clients.

Closed-loop load on loopback: each of C clients sends its requests one after another (a new one when
the last answered), C = 1, 4 and 16, for ``/ask`` (POST, a question per request) and ``/search``.
Every phase is bounded by a request count and a time limit, so the bench stops by itself. The
latency of a request is the time from sending it to having read the whole reply. An error is any
reply that is not 200 with the expected JSON, a time-out, or a refused connection. Each phase asks
texts the earlier phases did not (while they last), so a cache cannot flatter it. After the load, a
fixed set of questions is asked once more and their answers compared with a reference.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

LEVELS = (1, 4, 16)


@dataclass
class Phase:
    endpoint: str
    clients: int
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""
    wall_s: float = 0.0
    server_cpu_s: float | None = (
        None  # the server process's CPU seconds during the phase, when known
    )

    def figures(self) -> dict:
        ms = np.array(self.latencies_ms) if self.latencies_ms else np.array([np.nan])
        n = len(self.latencies_ms)
        out = {
            "requests": n,
            "errors": self.errors,
            "p50_ms": round(float(np.percentile(ms, 50)), 1),
            "p95_ms": round(float(np.percentile(ms, 95)), 1),
            "per_s": round(n / self.wall_s, 2) if self.wall_s else 0.0,
        }
        if self.server_cpu_s is not None and n and self.wall_s:
            # what a request costs the server, and how many of its cores were busy: with closed-loop
            # clients, latency is clients / rate, so the CPU a request takes bounds p95
            out["cpu_ms"] = round(self.server_cpu_s * 1000 / n, 1)
            out["cores"] = round(self.server_cpu_s / self.wall_s, 2)
        return out


def _request(endpoint: str, text: str) -> tuple[str, str, dict]:
    if endpoint == "ask":
        return "POST", "/ask", {"json": {"question": text}}
    return "GET", "/search", {"params": {"q": text, "limit": 10}}


def _ok(endpoint: str, reply) -> str:
    """Empty when the reply is what the endpoint promises, else what was wrong."""
    if reply.status_code != 200:
        return f"HTTP {reply.status_code}: {reply.text[:200]}"
    body = reply.json()
    if endpoint == "ask" and not isinstance(body.get("answer"), str):
        return f"no answer in {str(body)[:200]}"
    if endpoint == "search" and not isinstance(body, list):
        return f"not a list: {str(body)[:200]}"
    return ""


def load(
    url: str,
    endpoint: str,
    texts: list[str],
    clients: int,
    per_client: int,
    max_s: float = 120.0,
    token: str | None = None,
    timeout_s: float = 60.0,
) -> Phase:
    """``clients`` threads, each sending up to ``per_client`` requests (texts taken in turn, no two
    alike while they last) until ``max_s`` has passed."""
    import httpx

    phase = Phase(endpoint, clients)
    lock = threading.Lock()
    deadline = time.monotonic() + max_s
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def client(k: int) -> None:
        with httpx.Client(base_url=url, timeout=timeout_s, headers=headers) as http:
            for i in range(per_client):
                if time.monotonic() > deadline:
                    return
                method, path, kwargs = _request(endpoint, texts[(k * per_client + i) % len(texts)])
                t0 = time.perf_counter()
                try:
                    reply = http.request(method, path, **kwargs)
                    wrong = _ok(endpoint, reply)
                except httpx.HTTPError as e:
                    wrong = f"{type(e).__name__}: {e}"
                ms = (time.perf_counter() - t0) * 1000
                with lock:
                    if wrong:
                        phase.errors += 1
                        phase.first_error = phase.first_error or wrong
                    else:
                        phase.latencies_ms.append(ms)

    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(max_s + timeout_s + 5)
    phase.wall_s = time.perf_counter() - t0
    return phase


def run(
    url: str,
    questions: list[str],
    queries: list[str],
    requests: int = 96,
    levels: tuple[int, ...] = LEVELS,
    max_s: float = 120.0,
    token: str | None = None,
    progress: Callable[[str], None] = lambda m: None,
    server_cpu_s: Callable[[], float] | None = None,
) -> dict:
    """Both endpoints at each concurrency level; about ``requests`` requests per phase.
    ``server_cpu_s``: the server process's CPU seconds so far, read around each phase."""
    load(url, "ask", questions[-4:], 1, 4, max_s, token)  # warm: caches, index files, thread pool
    load(url, "search", queries[-4:], 1, 4, max_s, token)
    out: dict[str, dict] = {}
    for endpoint, texts in (("ask", questions), ("search", queries)):
        sent = 0
        for clients in levels:
            # each phase starts where the last one stopped: while the texts last, no phase asks what
            # an earlier one did, so no cache the server keeps flatters it
            start = sent % len(texts)
            per_client = max(3, requests // clients)
            cpu0 = server_cpu_s() if server_cpu_s else None
            phase = load(
                url, endpoint, texts[start:] + texts[:start], clients, per_client, max_s, token
            )
            if server_cpu_s is not None and cpu0 is not None:
                phase.server_cpu_s = server_cpu_s() - cpu0
            sent += clients * per_client
            f = phase.figures()
            progress(
                f"  /{endpoint} with {clients:>2} client(s): p50 {f['p50_ms']:.0f} ms, p95 {f['p95_ms']:.0f} ms, "
                f"{f['per_s']:.1f}/s, {f['errors']} error(s)"
                + (
                    f", server {f['cpu_ms']:.0f} CPU-ms a request on {f['cores']:.2f} cores"
                    if "cpu_ms" in f
                    else ""
                )
                + (f" (first: {phase.first_error})" if phase.errors else "")
            )
            out[f"{endpoint}_{clients}"] = f
    return out


def answers(
    url: str, questions: list[str], token: str | None = None, timeout_s: float = 120.0
) -> list[dict]:
    """Each question asked once, one at a time: its answer and citations, what no change made for
    speed may alter."""
    import httpx

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    out = []
    with httpx.Client(base_url=url, timeout=timeout_s, headers=headers) as http:
        for q in questions:
            reply = http.post("/ask", json={"question": q})
            wrong = _ok("ask", reply)
            if wrong:
                raise RuntimeError(f"/ask {q!r}: {wrong}")
            body = reply.json()
            out.append({"question": q, "answer": body["answer"], "citations": body["citations"]})
    return out


def changed(reference: list[dict], now: list[dict]) -> list[str]:
    """The questions of ``reference`` answered otherwise ``now`` (answer or citations), or not asked."""
    by_question = {a["question"]: a for a in now}
    return [r["question"] for r in reference if by_question.get(r["question"]) != r]


def format_report(figures: dict) -> str:
    top = summary(figures)
    lines = []
    for name, store in figures["stores"].items():
        lines.append(f"{name}: {store['memories']:,} memories")
        lines.append(
            f"  {'endpoint':<9}{'clients':>8}{'p50 ms':>10}{'p95 ms':>10}{'req/s':>8}{'errors':>8}"
            f"{'CPU ms':>8}{'cores':>7}"
        )
        for key, f in store["phases"].items():
            endpoint, clients = key.rsplit("_", 1)
            cpu = f"{f['cpu_ms']:>8.1f}{f['cores']:>7.2f}" if "cpu_ms" in f else f"{'-':>8}{'-':>7}"
            lines.append(
                f"  /{endpoint:<8}{clients:>8}{f['p50_ms']:>10.1f}{f['p95_ms']:>10.1f}{f['per_s']:>8.1f}"
                f"{f['errors']:>8}{cpu}"
            )
        if "answers" in store:
            a = store["answers"]
            lines.append(
                f"  answers: {a['checked'] - len(a['changed'])} of {a['checked']} fixed questions answered and "
                f"cited as {a['reference']}"
                + "".join(f"\n    changed: {q!r}" for q in a["changed"])
            )
    lines.append(
        f"targets: errors == 0 ({top['errors']}), answers changed == 0 ({top['answers_changed']}), /ask p95 "
        f"at 16 clients <= 1000 ms ({top['ask_p95_ms_16']:.0f} ms) and ask p50 <= 150 ms "
        f"({top['ask_p50_ms']:.0f} ms) on the largest store"
    )
    return "\n".join(lines)


def summary(figures: dict) -> dict:
    """The last line of ``--json``: the largest store's figures, errors over every phase."""
    largest = max(figures["stores"].values(), key=lambda s: s["memories"])["phases"]
    errors = sum(f["errors"] for s in figures["stores"].values() for f in s["phases"].values())
    answers_changed = sum(
        len(s["answers"]["changed"]) for s in figures["stores"].values() if "answers" in s
    )
    return {
        "ask_p50_ms": largest["ask_1"]["p50_ms"],
        "ask_p95_ms_16": largest["ask_16"]["p95_ms"],
        "search_p50_ms": largest["search_1"]["p50_ms"],
        "errors": errors,
        "answers_changed": answers_changed,
        "stores": {
            name: {"memories": s["memories"], **{k: v for k, v in s["phases"].items()}}
            for name, s in figures["stores"].items()
        },
    }


def add_arguments(parser) -> None:
    """``mnemo bench serve``'s own options: ``bench store``'s, for the large store."""
    from bench import store

    store.add_arguments(
        parser, "synthetic memories in the large store (default 1000000; 0: the demo store alone)"
    )
