"""A small synchronous client for ``POST {base_url}/chat/completions``.

Transient failures (timeouts, refused connections, HTTP 429 and 5xx) are retried with exponential
backoff, at most ``max_retries`` times; other HTTP errors fail at once with the server's message.
``chat_json`` also retries a reply that is not the JSON the caller's validator accepts (models
sometimes wrap JSON in prose or refuse), then raises ``LLMError`` so the caller can fall back.

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
from typing import Any, TypeVar
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

T = TypeVar("T")
_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class LLMError(RuntimeError):
    """The endpoint could not give a usable reply; the message says why and what to check."""


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
            return json.loads(text[start:end + 1])
        raise


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


class ChatClient:
    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 60.0,
                 max_retries: int = 2, backoff_s: float = 0.5, allow_plain_http_key: bool = False,
                 log_content: bool = False, key_name: str = "the API key") -> None:
        if not base_url:
            raise LLMError("no LLM endpoint configured: set [llm] base_url in mnemo.toml or "
                           "MNEMO_LLM__BASE_URL (e.g. http://localhost:8000/v1)")
        if not model:
            raise LLMError("no LLM model configured: set [llm] model or MNEMO_LLM__MODEL")
        if urlsplit(base_url).scheme not in ("http", "https"):
            raise LLMError(f"[llm] base_url {base_url!r} is not an http(s) URL; write e.g. http://localhost:8000/v1")
        self.url = base_url.rstrip("/") + "/chat/completions"
        if api_key and not key_allowed(self.url) and not allow_plain_http_key:
            raise LLMError(f"refusing to send {key_name} in the clear to {self.url}: keys go only to https or "
                           "loopback endpoints. Use https, unset the key variable, or set [llm] "
                           "allow_plain_http_key = true if this network is yours")
        self.model = model
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.log_content = log_content
        self._http = None
        log.info("LLM endpoint %s, model %s, %s", self.url, model,
                 f"authenticated with {key_name}" if api_key else "no API key")

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

    def chat(self, messages: list[dict], temperature: float = 0.0, max_tokens: int | None = None,
             **extra: Any) -> str:
        """The assistant's reply text. Raises ``LLMError`` after the retries are spent."""
        import httpx

        body = {"model": self.model, "messages": messages, "temperature": temperature, **extra}
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if self.log_content:
            log.debug("LLM request to %s: %s", self.url, json.dumps(messages)[:2000])
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._client().post(self.url, json=body)
            except httpx.TimeoutException:
                last = f"no reply within {self.timeout_s:g} s"
            except httpx.TransportError as e:
                last = f"cannot reach {self.url}: {e}"
            else:
                if resp.status_code in _TRANSIENT_STATUS:
                    last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                elif resp.status_code >= 400:
                    raise LLMError(f"{self.url} answered HTTP {resp.status_code}: {resp.text[:300]}; "
                                   "check the model name, the API key and the request size")
                else:
                    return self._content(resp)
            log.warning("LLM call failed (attempt %d of %d): %s", attempt + 1, self.max_retries + 1, last)
        raise LLMError(f"{self.url}: {last} (after {self.max_retries + 1} attempts); "
                       "check that the server is running, or raise [llm] timeout_s")

    def _content(self, resp) -> str:
        try:
            choice = resp.json()["choices"][0]
            content = choice["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise LLMError(f"{self.url} sent a reply that is not an OpenAI chat completion: "
                           f"{resp.text[:200]!r}") from e
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        if self.log_content:
            log.debug("LLM reply: %s", content[:2000])
        return content

    def chat_json(self, messages: list[dict], validate: Callable[[Any], T], **kwargs: Any) -> T:
        """Ask for JSON and return ``validate(parsed)``; a reply that does not parse or validate
        (or a refusal) is asked again, at most ``max_retries`` more times."""
        problem = ""
        for attempt in range(self.max_retries + 1):
            reply = self.chat(messages, **kwargs)
            try:
                return validate(extract_json(reply))
            except (ValueError, TypeError, KeyError) as e:  # JSONDecodeError and pydantic errors are ValueErrors
                problem = f"{type(e).__name__}: {str(e)[:200]}"
                log.warning("LLM reply not usable (attempt %d of %d): %s", attempt + 1, self.max_retries + 1, problem)
        raise LLMError(f"{self.url}: the model's reply was not the JSON asked for ({problem}) "
                       f"after {self.max_retries + 1} attempts")
