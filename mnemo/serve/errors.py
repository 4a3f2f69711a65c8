"""The service's errors, which the REST and MCP front ends turn into 400 and 404."""

from __future__ import annotations


class BadRequest(ValueError):
    """A parameter the caller must change; the message says which and why."""


class NotFound(LookupError):
    """An id or a name the store does not hold; the message says what exists."""
