"""A scripted OpenAI-compatible chat endpoint on 127.0.0.1, for benches that try what a bad LLM
server does to a client (``mnemo bench faults``).

``reply(body)`` decides each answer from the request body: a string is the assistant's content,
an int that HTTP status with an error body, ``("sleep", seconds, reply)`` answers late (a hang past
the client's timeout), ``("raw", status, bytes)`` sends a body as it is (not a chat completion).
Every request body is kept for the caller to check.
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
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # a bench prints its own lines
                pass

            def do_POST(self):
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                except ValueError:
                    body = {}
                with server._lock:
                    server.requests.append(body)
                answer = server.reply(body)
                while isinstance(answer, tuple) and answer[0] == "sleep":
                    time.sleep(answer[1])
                    answer = answer[2]
                if isinstance(answer, int):
                    self._send(answer, json.dumps({"error": {"message": f"server error {answer}"}}).encode())
                elif isinstance(answer, tuple) and answer[0] == "raw":
                    self._send(answer[1], answer[2])
                else:
                    self._send(200, json.dumps({
                        "id": "loopback", "object": "chat.completion", "model": body.get("model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": answer}}]}).encode())

            def _send(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
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
