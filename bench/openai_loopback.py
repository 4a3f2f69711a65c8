"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, for the tests and benches that try
what an LLM server does to its client (``mnemo bench faults``, the LLM path's tests).

``reply(body)`` decides each answer from the request body: a string is the assistant's content, an
int that HTTP status with an error body, ``("status", code, headers)`` a status with headers
(``Retry-After``), ``("sleep", seconds, reply)`` answers late (a hang past the client's timeout),
``("raw", status, bytes)`` sends a body as it is (not a chat completion). Every request's body,
headers, path and arrival time are kept for the caller to check.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = str | int | tuple


class LoopbackOpenAI:
    def __init__(self, reply: Callable[[dict], Reply]) -> None:
        self.reply = reply
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        self.times: list[float] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # a bench or test prints its own lines
                pass

            def do_POST(self):
                try:
                    body = json.loads(
                        self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}"
                    )
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    server.paths.append(self.path)
                    server.times.append(time.monotonic())
                    answer = server.reply(body)
                while isinstance(answer, tuple) and answer[0] == "sleep":
                    time.sleep(answer[1])
                    answer = answer[2]
                if isinstance(answer, int):
                    answer = ("status", answer, {})
                if isinstance(answer, tuple) and answer[0] == "status":
                    self._send(
                        answer[1],
                        json.dumps({"error": {"message": f"server error {answer[1]}"}}).encode(),
                        answer[2],
                    )
                elif isinstance(answer, tuple) and answer[0] == "raw":
                    self._send(answer[1], answer[2])
                else:
                    self._send(
                        200,
                        json.dumps(
                            {
                                "id": "loopback",
                                "object": "chat.completion",
                                "model": body.get("model"),
                                "choices": [
                                    {
                                        "index": 0,
                                        "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": answer},
                                    }
                                ],
                            }
                        ).encode(),
                    )

            def _send(self, status: int, data: bytes, headers: dict | None = None) -> None:
                try:
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> LoopbackOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
