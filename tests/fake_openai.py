"""The loopback OpenAI-compatible endpoint (``bench.openai_loopback``) scripted as a list, for tests
of everything that talks to an LLM: each request takes the next reply from ``replies`` ("ok" once
they run out). With ``reject_response_format`` a request carrying ``response_format`` gets HTTP 400,
as from servers without structured output."""

from __future__ import annotations

from collections.abc import Sequence

from bench.openai_loopback import LoopbackOpenAI, Reply

REFUSED = ("raw", 400, b'{"error": {"message": "response_format json_schema is not supported"}}')


class FakeOpenAI(LoopbackOpenAI):
    def __init__(
        self, replies: Sequence[Reply] | None = None, reject_response_format: bool = False
    ) -> None:
        self.replies = list(replies or [])
        self.reject_response_format = reject_response_format
        super().__init__(self._next)

    def _next(self, body: dict) -> Reply:
        if self.reject_response_format and "response_format" in body:
            return REFUSED
        return self.replies.pop(0) if self.replies else "ok"
