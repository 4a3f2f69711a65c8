"""A small synchronous client for ``POST {base_url}/chat/completions``.

Transient failures (timeouts, refused connections, HTTP 408/409/425/429 and 5xx) are retried by
``tenacity``, at most ``max_retries`` times: after the server's ``Retry-After`` when it sends one
(seconds or an HTTP date, at most ``max_wait_s``), else with exponential backoff and jitter. Other
HTTP errors fail at once with the server's message.

``chat_json`` asks for JSON that fits a JSON schema through ``response_format`` (``json_schema``:
vLLM, llama.cpp server, Ollama and OpenAI constrain decoding to it); an endpoint that rejects the
field is asked again without it, once per client. It also retries a reply that is not the JSON the
caller's validator accepts (models sometimes wrap JSON in prose or refuse), then raises
``LLMError`` so the caller can fall back.

The API key is sent only to https endpoints or to this machine (loopback), unless the caller says
``allow_plain_http_key``: a config file in an untrusted folder must not be able to send the key in
the clear to a host it names. Prompts and replies hold transcripts and screen text, so they are
logged (at DEBUG) only with ``log_content``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")
_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class LLMError(RuntimeError):
    """The endpoint could not give a usable reply; the message says why and what to check."""


class LLMRejected(LLMError):
    """The endpoint refused the request (HTTP 4xx other than the transient ones); not retried."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class _Transient(Exception):
    """A failure worth another try; ``retry_after`` is the server's ``Retry-After`` in seconds."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def retry_after_s(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date); None when absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def extract_json(text: str) -> Any:
    """The JSON object in a reply, also when wrapped in a ```json fence or a sentence."""
    text = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fence:
        text = fence.group(1).strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if 0 <= start < end:
            return json.loads(text[start : end + 1])
        raise


def _without_input(error: Exception) -> str:
    """What was wrong with a reply, quoting none of it: pydantic's message carries the values it
    refused, and this message goes into logs and into the note stored with a clip."""
    errors = getattr(error, "errors", None)
    if callable(errors):
        try:
            return "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'reply'}: {e['msg']}"
                for e in errors(include_input=False, include_url=False)
            )
        except TypeError:  # an ``errors`` that is not pydantic's
            pass
    return str(error)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def key_allowed(url: str) -> bool:
    """Whether a bearer key may go to ``url`` without an explicit opt-in: https, or this machine."""
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname or ""))


class JsonChat(Protocol):
    """What asks a model for validated JSON: a ``ChatClient``, or a stand-in with a fixed reply."""

    model: str

    def chat_json(
        self,
        messages: list[dict],
        validate: Callable[[Any], T],
        schema: dict | None = None,
        **kwargs: Any,
    ) -> T: ...


class ChatClient:
    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        allow_plain_http_key: bool = False,
        log_content: bool = False,
        key_name: str = "the API key",
        max_wait_s: float = 60.0,
    ) -> None:
        if not base_url:
            raise LLMError(
                "no LLM endpoint configured: set [llm] base_url in mnemo.toml or "
                "MNEMO_LLM__BASE_URL (e.g. http://localhost:8000/v1)"
            )
        if not model:
            raise LLMError("no LLM model configured: set [llm] model or MNEMO_LLM__MODEL")
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise LLMError(
                f"[llm] base_url {base_url!r} is not an http(s) URL; write e.g. http://localhost:8000/v1"
            )
        self.url = base_url.rstrip("/") + "/chat/completions"
        if api_key and not key_allowed(self.url) and not allow_plain_http_key:
            raise LLMError(
                f"refusing to send {key_name} in the clear to {self.url}: keys go only to https or "
                "loopback endpoints. Use https, unset the key variable, or set [llm] "
                "allow_plain_http_key = true if this network is yours"
            )
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        self.log_content = log_content
        self.json_schema_supported = True  # until the endpoint rejects response_format json_schema
        self.tokens = {
            "prompt_tokens": 0,
            "completion_tokens": 0,
        }  # as the endpoint reports them, summed
        self._http: httpx.Client | None = None
        log.info(
            "LLM endpoint %s, model %s, %s",
            self.url,
            model,
            f"authenticated with {key_name}" if api_key else "no API key",
        )

    def _client(self):
        if self._http is None:
            import httpx

            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            self._http = httpx.Client(timeout=self.timeout_s, headers=headers)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def _wait(self, state) -> float:
        """Before the next try: the server's Retry-After (capped), else exponential backoff with jitter."""
        import random

        error = state.outcome.exception()
        asked = getattr(error, "retry_after", None)
        if asked is not None:
            if asked > self.max_wait_s:
                log.warning(
                    "%s asks to wait %.0f s (Retry-After); waiting %.0f s",
                    self.url,
                    asked,
                    self.max_wait_s,
                )
            return min(asked, self.max_wait_s)
        backoff = self.backoff_s * 2 ** (state.attempt_number - 1)
        return min(backoff * (1 + 0.25 * random.random()), self.max_wait_s)

    def _post(self, body: dict, on_text: Callable[[str], None] | None = None) -> str:
        import httpx

        try:
            if on_text is not None:
                return self._stream(body, on_text)
            resp = self._client().post(self.url, json=body)
        except httpx.TimeoutException as e:
            raise _Transient(f"no reply within {self.timeout_s:g} s") from e
        except httpx.TransportError as e:
            raise _Transient(f"cannot reach {self.url}: {e}") from e
        self._check_status(resp, resp.text)
        return self._content(resp)

    def _check_status(self, resp, text: str) -> None:
        if resp.status_code in _TRANSIENT_STATUS:
            raise _Transient(
                f"HTTP {resp.status_code}: {text[:200]}",
                retry_after_s(resp.headers.get("Retry-After")),
            )
        if resp.status_code >= 400:
            raise LLMRejected(
                f"{self.url} answered HTTP {resp.status_code}: {text[:300]}; "
                "check the model name, the API key and the request size",
                resp.status_code,
            )

    def _stream(self, body: dict, on_text: Callable[[str], None]) -> str:
        """The reply read as server-sent events, ``on_text`` called with the whole reply so far
        at each piece. A stream cut short after its first piece is not retried (what was shown
        would be shown twice): it fails."""
        import httpx

        body = {**body, "stream": True, "stream_options": {"include_usage": True}}
        text = ""
        with self._client().stream("POST", self.url, json=body) as resp:
            if resp.status_code >= 400:
                self._check_status(resp, resp.read().decode("utf-8", "replace"))
            try:
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        break
                    piece = self._piece(data)
                    if piece:
                        text += piece
                        on_text(text)
            except httpx.HTTPError as e:
                if not text:
                    raise
                raise LLMError(
                    f"{self.url}: the reply stopped after {len(text)} characters ({e})"
                ) from None
        if self.log_content:
            log.debug("LLM reply: %s", text[:2000])
        return text

    def _piece(self, data: str) -> str:
        """One event's new text; its token counts (the last event's ``usage``) added up."""
        try:
            event = json.loads(data)
            usage = event.get("usage") or {}
            for key in ("prompt_tokens", "completion_tokens"):
                if isinstance(usage.get(key), int):
                    self.tokens[key] += usage[key]
            choices = event.get("choices") or []
            return (choices[0].get("delta") or {}).get("content") or "" if choices else ""
        except (ValueError, AttributeError, IndexError, TypeError) as e:
            raise LLMError(
                f"{self.url} sent an event that is not an OpenAI chat completion chunk: {data[:200]!r}"
            ) from e

    def chat(
        self,
        messages: list[dict],
        temperature: float = 0.0,
        max_tokens: int | None = None,
        on_text: Callable[[str], None] | None = None,
        **extra: Any,
    ) -> str:
        """The assistant's reply text. Raises ``LLMError`` after the retries are spent.
        ``on_text``: the reply is streamed, and ``on_text`` called with all of it so far as each
        piece arrives."""
        import tenacity

        body = {"model": self.model, "messages": messages, "temperature": temperature, **extra}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.log_content:
            log.debug("LLM request to %s: %s", self.url, json.dumps(messages)[:2000])

        def warn(state) -> None:
            log.warning(
                "LLM call failed (attempt %d of %d): %s",
                state.attempt_number,
                self.max_retries + 1,
                state.outcome.exception(),
            )

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.max_retries + 1),
            wait=self._wait,
            retry=tenacity.retry_if_exception_type(_Transient),
            before_sleep=warn,
            reraise=True,
        )
        try:
            return retrying(self._post, body, on_text)
        except _Transient as e:
            raise LLMError(
                f"{self.url}: {e} (after {self.max_retries + 1} attempts); "
                "check that the server is running, or raise [llm] timeout_s"
            ) from None

    def _content(self, resp) -> str:
        try:
            body = resp.json()
            choice = body["choices"][0]
            content = choice["message"].get("content") or ""
            usage = body.get("usage") or {}
            for key in ("prompt_tokens", "completion_tokens"):
                if isinstance(usage.get(key), int):
                    self.tokens[key] += usage[key]
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise LLMError(
                f"{self.url} sent a reply that is not an OpenAI chat completion: "
                f"{resp.text[:200]!r}"
            ) from e
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if self.log_content:
            log.debug("LLM reply: %s", content[:2000])
        return content

    def chat_json(
        self,
        messages: list[dict],
        validate: Callable[[Any], T],
        schema: dict | None = None,
        **kwargs: Any,
    ) -> T:
        """Ask for JSON (fitting ``schema`` where the endpoint takes a JSON-schema response format)
        and return ``validate(parsed)``; a reply that does not parse or validate (or a refusal) is
        repaired, at most ``max_retries`` more times: the model is shown its reply and what was
        wrong with it."""
        problem = ""
        asked = list(messages)
        for attempt in range(self.max_retries + 1):
            reply = self.chat_structured(asked, schema, **kwargs)
            try:
                return validate(extract_json(reply))
            except (
                ValueError,
                TypeError,
                KeyError,
            ) as e:  # JSONDecodeError and pydantic errors are ValueErrors
                problem = f"{type(e).__name__}: {_without_input(e)[:200]}"
                log.warning(
                    "LLM reply not usable (attempt %d of %d): %s",
                    attempt + 1,
                    self.max_retries + 1,
                    problem,
                )
                # the next attempt is a repair: the model sees its reply and what was wrong with it
                asked = [
                    *messages,
                    {"role": "assistant", "content": reply[:4000]},
                    {
                        "role": "user",
                        "content": f"That reply was not usable ({problem}). Reply again with "
                        "only the JSON asked for.",
                    },
                ]
        raise LLMError(
            f"{self.url}: the model's reply was not the JSON asked for ({problem}) "
            f"after {self.max_retries + 1} attempts"
        )

    def chat_structured(self, messages: list[dict], schema: dict | None, **kwargs: Any) -> str:
        """The reply, held to ``schema`` where the endpoint takes a JSON-schema response format
        (an endpoint that rejects it is asked plainly from then on); the caller validates it."""
        if schema is None or not self.json_schema_supported:
            return self.chat(messages, **kwargs)
        response_format = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": schema},
        }
        try:
            return self.chat(messages, response_format=response_format, **kwargs)
        except LLMRejected as e:
            if e.status not in (400, 404, 415, 422):
                raise
            log.info(
                "%s rejected response_format json_schema (HTTP %d); asking for plain JSON from now on",
                self.url,
                e.status,
            )
            self.json_schema_supported = False
            return self.chat(messages, **kwargs)
