"""Single-use confirmation nonces for what destroys data over REST and MCP (``forget``).

A preview issues a nonce bound to exactly what it previewed: its scope (a canonical string of the
store and the filter) and its selection (a digest of what the filter selected then). The
confirming request must carry that nonce and the same filter, within ``NONCE_LIFETIME_S``, and the
filter must still select the same things. So a lone request, such as an instruction an
agent read in a recorded page, cannot destroy anything: there is first a preview whose counts a
person is meant to see. Nonces live in this process's memory only: a restart voids them all.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

NONCE_LIFETIME_S = 300.0  # long enough for a person to read a preview, short enough to go stale
MAX_OUTSTANDING = 64  # previews nobody confirmed; the oldest is dropped beyond this


class NonceRefused(ValueError):
    """The nonce is missing, unknown, used, expired or for another request; the message says what
    to do."""


@dataclass
class _Pending:
    nonce: str
    scope: str
    selection: str
    expires: float


class Confirmations:
    """Outstanding nonces of one process, thread-safe (FastAPI runs routes on a thread pool)."""

    def __init__(
        self, lifetime_s: float = NONCE_LIFETIME_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.lifetime_s = lifetime_s
        self.clock = clock
        self._pending: list[_Pending] = []
        self._lock = threading.Lock()

    def issue(self, scope: str, selection: str = "") -> str:
        """A new nonce for ``scope`` and ``selection``; good once, for ``lifetime_s`` seconds."""
        nonce = secrets.token_urlsafe(24)
        with self._lock:
            now = self.clock()
            # an expired nonce is kept one more lifetime so that using it says "expired", not "unknown"
            self._pending = [p for p in self._pending if p.expires + self.lifetime_s > now]
            self._pending.append(_Pending(nonce, scope, selection, now + self.lifetime_s))
            del self._pending[:-MAX_OUTSTANDING]
        return nonce

    def redeem(self, nonce: str, scope: str, selection: str, retry: str) -> None:
        """Use up ``nonce`` for ``scope`` and ``selection``, or raise ``NonceRefused`` ending with
        ``retry`` (what the caller does instead). A nonce presented is spent whether or not it fits:
        one guess each."""
        with self._lock:
            found = None
            for p in (
                self._pending
            ):  # compare every one, in constant time each: no early exit on a prefix
                if hmac.compare_digest(p.nonce.encode(), nonce.encode()):
                    found = p
            if found is not None:
                self._pending.remove(found)
            now = self.clock()
        if found is None:
            raise NonceRefused(
                f"the nonce is unknown or already used (each is good once, and only in the process "
                f"that issued it): {retry}"
            )
        if now > found.expires:
            raise NonceRefused(
                f"the nonce expired ({self.lifetime_s:.0f} s after its preview): {retry}"
            )
        if not hmac.compare_digest(found.scope.encode(), scope.encode()):
            raise NonceRefused(
                f"the nonce was issued for another request (a different filter or store) and is spent "
                f"now: {retry}"
            )
        if not hmac.compare_digest(found.selection.encode(), selection.encode()):
            raise NonceRefused(
                f"what the filter selects changed since its preview (clips were added or forgotten); "
                f"the nonce is spent: {retry}"
            )
