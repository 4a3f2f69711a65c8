"""What the media scenarios share (``media_files``, ``media_llm``, ``media_secrets``,
``media_archive``): the real ``mnemo`` command in a child process, a folder's hashes before and
after, and readers of the store's tables and raw bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

MNEMO = (sys.executable, "-m", "mnemo")
INGEST_TIMEOUT_S = 600
HINTS = ("re-export", "re-copy", "check", "fix", "remove", "supported", "export it", "as folders")
MARKER = re.compile(r"\[(secret|card|iban|password|email|phone)\]")


# ---- shared -----------------------------------------------------------------------------------


def code_root() -> Path:
    """The folder this ``mnemo`` is imported from: a child runs the same code."""
    import mnemo

    return Path(mnemo.__file__).resolve().parents[1]


def child_env(**settings: str) -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", MNEMO_GRAPH__TEXT_EMBEDDER="hash", **settings)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(code_root()), *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    return env


def run_mnemo(
    cmd: Sequence[str],
    argv: list[str],
    cwd: Path,
    env: dict[str, str],
    timeout_s: float = INGEST_TIMEOUT_S,
) -> subprocess.CompletedProcess:
    """``mnemo ARGV`` in a child process; what it printed is also kept in ``cwd/mnemo-N.log``."""
    done = subprocess.run(
        [*cmd, *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s
    )
    n = len(list(cwd.glob("mnemo-*.log")))
    (cwd / f"mnemo-{n}.log").write_text(
        f"$ mnemo {' '.join(argv)}\nexit {done.returncode}\n{done.stdout}{done.stderr}"
    )
    return done


def snapshot(folder: Path) -> dict[str, tuple[str, str]]:
    """Every entry under ``folder``: a file's SHA-256 and mtime, a link's target, a folder."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir", "")
        else:
            out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), str(p.stat().st_mtime_ns))
    return out


def changed(before: dict, after: dict) -> list[str]:
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def record_try(
    ctx, tally, n: int, lost: int, orphans: int, notes: list[str], said: str = ""
) -> None:
    """Try ``n`` of ``tally``'s scenario told (``said`` first) and recorded: it survived when
    ``notes`` holds no problem."""
    ctx.progress(f"{tally.scenario} try {n}: {said}{len(notes)} problem(s)")
    tally.run(lost=lost, orphans=orphans, ok=not notes, note=f"try {n}: " + "; ".join(notes))


def open_store(path: Path):
    from embeddings.base import build_text_embedder
    from graph.store import Store

    return Store(path, build_text_embedder("hash"))


def table_rows(store_dir: Path, name: str) -> list[dict]:
    import lancedb

    return lancedb.connect(str(store_dir)).open_table(name).to_arrow().to_pylist()


def consistency(store_dir: Path) -> list[str]:
    """What a reader would find wrong: duplicated ids, memories of clips the store lacks."""
    clips = [r["clip_id"] for r in table_rows(store_dir, "clips")]
    memories = table_rows(store_dir, "memories")
    problems = []
    if len(set(clips)) != len(clips):
        problems.append(f"{len(clips) - len(set(clips))} clip row(s) doubled")
    ids = [m["memory_id"] for m in memories]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} memory row(s) doubled")
    homeless = [m["memory_id"] for m in memories if m["clip_id"] not in set(clips)]
    if homeless:
        problems.append(f"{len(homeless)} memories of clips not in the store")
    return problems


# the names LanceDB gives its files and versions, which its bookkeeping files repeat: random hex in
# which a secret's six digits were once found ("…ffc1899928.lance")
_LANCE_NAMES = re.compile(
    rb"[01]{16,}[0-9a-f]{16,}\.lance|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
)


def store_bytes(folder: Path) -> bytes:
    """Every byte of every file under ``folder``, lowercased (a full-text index keeps tokens so);
    in LanceDB's manifests and transaction records, less the names of its own files."""

    def read(p: Path) -> bytes:
        data = p.read_bytes().lower()
        return (
            _LANCE_NAMES.sub(b"#", data)
            if p.parent.name in ("_versions", "_transactions")
            else data
        )

    return b"\n".join(
        read(p) for p in sorted(folder.rglob("*")) if p.is_file() and not p.is_symlink()
    )


def squeeze(data: bytes) -> bytes:
    return re.sub(rb"\s+", b"", data)


def secret_parts(secret: bytes, n: int = 0) -> set[bytes]:
    from bench.redact import MIN_PART

    n = min(n or MIN_PART, len(secret))
    return {secret[i : i + n] for i in range(len(secret) - n + 1)}
