"""A loopback fake of an OpenAI-compatible chat endpoint, for tests of everything that talks to an LLM.

Scripted: each request takes the next reply from ``replies``. A reply is a string (the assistant's
content), an int (that HTTP status with an error body), ``("status", code, headers)`` for a status
with headers (``Retry-After``), or ``("sleep", seconds, content)`` to answer late. With
``reject_response_format`` a request carrying ``response_format`` gets HTTP 400, as from servers
without structured output. Every request body, its headers and its arrival time are kept for the
test to check.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI:
    def __init__(self, replies: list | None = None, reject_response_format: bool = False) -> None:
        self.replies = list(replies or [])
        self.reject_response_format = reject_response_format
        self.requests: list[dict] = []
        self.times: list[float] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                fake.requests.append(body)
                fake.headers.append(dict(self.headers))
                fake.paths.append(self.path)
                fake.times.append(time.monotonic())
                if fake.reject_response_format and "response_format" in body:
                    self._send(400, {"error": {"message": "response_format json_schema is not supported"}})
                    return
                reply = fake.replies.pop(0) if fake.replies else "ok"
                if isinstance(reply, tuple) and reply[0] == "sleep":
                    time.sleep(reply[1])
                    reply = reply[2]
                if isinstance(reply, int):
                    reply = ("status", reply, {})
                if isinstance(reply, tuple) and reply[0] == "status":
                    self._send(reply[1], {"error": {"message": f"scripted status {reply[1]}"}}, reply[2])
                    return
                self._send(200, {"id": "x", "object": "chat.completion", "model": body.get("model"),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": reply}}]})

            def _send(self, status, payload, headers=None):
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
