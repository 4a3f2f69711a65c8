"""A local model served only while it is used: llama.cpp's server (``llm.local.LocalServer``) is
started by the first request, and stopped after ``idle_s`` seconds without one, so a long-running
``mnemo serve`` or ``mnemo mcp`` whose answers are reasoned holds the model's memory (about 1.5 GB
for the 1.5B) only while questions come. The next request starts it again (a few seconds to load).

It talks like ``ChatClient`` where the callers need it (``chat_json``, ``model``, ``tokens``);
requests are taken one at a time, as the server's one slot would anyway.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from llm.client import ChatClient

if TYPE_CHECKING:
    from llm.local import LocalServer

log = logging.getLogger(__name__)
T = TypeVar("T")

IDLE_S = 600.0


class OnDemandServer:
    def __init__(
        self,
        model: Path,
        threads: int | None = None,
        timeout_s: float = 300.0,
        idle_s: float = IDLE_S,
        progress: Callable[[str], None] = log.info,
    ) -> None:
        self.path = Path(model)
        self.model = self.path.stem  # the name LocalServer serves it as
        self.threads = threads
        self.timeout_s = timeout_s
        self.idle_s = idle_s
        self.progress = progress
        self.tokens = {"prompt_tokens": 0, "completion_tokens": 0}
        self.starts = 0  # how many times the server was started (for status and tests)
        self._lock = threading.Lock()
        self._server: LocalServer | None = None
        self._client: ChatClient | None = None
        self._last = 0.0
        self._timer: threading.Timer | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def chat_json(
        self, messages: list[dict], validate: Callable[[Any], T], schema=None, **kwargs: Any
    ) -> T:
        with self._lock:
            client = self._start()
            try:
                return client.chat_json(messages, validate, schema=schema, **kwargs)
            finally:
                for key in self.tokens:
                    self.tokens[key] = client.tokens[key]
                self._last = time.monotonic()
                self._arm(self.idle_s)

    def _start(self) -> ChatClient:
        if self._client is None:
            from llm.local import LocalServer

            server = LocalServer(self.path, threads=self.threads)
            self.progress(f"reasoning with {server.name}, served here at {server.base_url}")
            self._server, self.starts = server, self.starts + 1
            self._client = ChatClient(
                server.base_url, server.name, server.api_key, self.timeout_s, 1
            )
            self._client.tokens = dict(self.tokens)
        return self._client

    def _arm(self, after_s: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = threading.Timer(after_s, self._idle)
        self._timer.daemon = True
        self._timer.start()

    def _idle(self) -> None:
        with self._lock:
            if self._server is None:
                return
            left = self.idle_s - (time.monotonic() - self._last)
            if left > 0:  # a request came after this timer was set
                self._arm(left)
                return
            log.info("%s idle for %.0f s: stopping its server", self.model, self.idle_s)
            self._stop()

    def _stop(self) -> None:
        client, server = self._client, self._server
        self._client = self._server = None
        if client is not None:
            client.close()
        if server is not None:
            server.close()

    def close(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._stop()
