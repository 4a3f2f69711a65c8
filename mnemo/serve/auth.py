"""Who may read memory through ``mnemo serve``: its token, kept in a file only the user can read so
their own commands find it, the signed session cookie the page gets instead of the token, and a
limit on wrong guesses.

The server always has a token: ``$MNEMO_SERVE_TOKEN`` when set, otherwise a random one made at
start. Any process on the machine can connect to a loopback port, so loopback alone is no
credential (another account could read the whole memory with curl).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import stat
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

TOKEN_ENV = "MNEMO_SERVE_TOKEN"
SESSION_COOKIE = "mnemo_session"
SESSION_LIFETIME_S = 12 * 3600
MAX_FAILURES, FAILURE_WINDOW_S = 5, 60.0


class UnsafeTokenFile(PermissionError):
    """The token file, or its folder, could be read or replaced by someone else."""


# what a token set by hand must have at least: as many characters as the 256-bit one made at start
# (43), less a margin; and more than a handful of different characters ("aaaa…", "12341234…")
MIN_TOKEN_CHARS = 32
MIN_TOKEN_SYMBOLS = 10


def new_token() -> str:
    return secrets.token_urlsafe(32)


def weak_token(token: str) -> str:
    """Why ``token`` (``$MNEMO_SERVE_TOKEN``) is too easy to guess, or "": wrong guesses are only
    slowed (never locked out, so that the owner never is), so its length is what defeats them."""
    if len(token) < MIN_TOKEN_CHARS:
        return f"it is {len(token)} characters long; it needs at least {MIN_TOKEN_CHARS}"
    if len(set(token)) < MIN_TOKEN_SYMBOLS:
        return (
            f"it uses only {len(set(token))} different characters; it needs at least "
            f"{MIN_TOKEN_SYMBOLS}"
        )
    return ""


def runtime_dir() -> Path:
    """Where servers keep their tokens: ``$XDG_RUNTIME_DIR/mnemo`` (a tmpfs only the user can
    enter, emptied at logout), else ``~/.cache/mnemo/run`` (``$XDG_CACHE_HOME`` honoured)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").strip()
    if runtime:
        return Path(runtime) / "mnemo"
    cache = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(cache) / "mnemo" / "run"


def token_path(port: int) -> Path:
    return runtime_dir() / f"serve-{port}.token"


def _private(path: Path, what: str) -> bool:
    """Whether ``path`` exists; ``UnsafeTokenFile`` when it is a link, another user's, or open to others."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    fix = (
        f"remove it (rm -r {path}) or set XDG_RUNTIME_DIR to a folder only you can enter; "
        "mnemo serve changed nothing"
    )
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeTokenFile(f"the token {what} {path} is a symbolic link: {fix}")
    if st.st_uid != os.geteuid():
        raise UnsafeTokenFile(
            f"the token {what} {path} belongs to user id {st.st_uid}, not to you: {fix}"
        )
    if st.st_mode & 0o077:
        raise UnsafeTokenFile(
            f"the token {what} {path} is open to other users (mode {stat.S_IMODE(st.st_mode):o}, "
            f"needs {'600' if what == 'file' else '700'}): {fix}"
        )
    return True


def check_token_file(port: int) -> Path:
    """The token file's path for ``port``, after checking that what already exists there is the
    user's alone; writes nothing."""
    path = token_path(port)
    if _private(path.parent, "folder"):
        _private(path, "file")
    return path


def write_token_file(port: int, token: str) -> Path:
    """``token`` in the port's token file (0600, in a 0700 folder), replacing a stale one of the
    user's (a server that was killed); ``UnsafeTokenFile`` when what is there is not theirs alone."""
    return write_private(check_token_file(port), token + "\n")


def write_private(path: Path, text: str) -> Path:
    """``text`` in ``path`` (0600, in a 0700 folder of the runtime dir), replacing a stale file of
    the user's; ``UnsafeTokenFile`` when what is there is not theirs alone."""
    if _private(path.parent, "folder"):
        _private(path, "file")
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(path.parent, "folder")  # made by someone else between the check and mkdir
    temporary = path.parent / f".{path.name}.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(temporary, path)
    return path


def is_private(path: Path) -> bool:
    """Whether ``path`` and its folder exist and are the user's alone (``UnsafeTokenFile`` when
    they exist and are not)."""
    return _private(path.parent, "folder") and _private(path, "file")


def remove_token_file(path: Path, token: str) -> None:
    """Removes the token file if it still holds ``token`` (another server may have replaced it)."""
    try:
        if path.read_text().strip() == token:
            path.unlink()
    except FileNotFoundError:
        pass


def read_token(port: int) -> str:
    """The token of the ``mnemo serve`` on ``port``, from its token file."""
    path = check_token_file(port)
    try:
        return path.read_text().strip()
    except FileNotFoundError as e:
        raise FileNotFoundError(
            f"no token file {path}: is `mnemo serve --port {port}` running as you? "
            f"(a server started with ${TOKEN_ENV} takes that token)"
        ) from e


@dataclass
class Credentials:
    """The token and what it grants: sessions (a cookie signed with a key derived from the token,
    holding its expiry, checked here) and a limit on wrong tokens per client address."""

    token: str
    clock: Callable[[], float] = time.time
    session_lifetime_s: float = SESSION_LIFETIME_S
    max_failures: int = MAX_FAILURES
    failure_window_s: float = FAILURE_WINDOW_S
    _failures: dict[str, deque] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.token:
            raise ValueError("the serve token must not be empty")
        self._key = hmac.new(self.token.encode(), b"mnemo serve session", hashlib.sha256).digest()

    def __repr__(self) -> str:  # never the token, in a log or a traceback
        return "Credentials(<token>)"

    def is_token(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self.token.encode())

    def new_session(self) -> str:
        """A cookie value: expiry, a random nonce and their signature; not the token, and useless
        after its expiry or once the token changes (a restart without ``$MNEMO_SERVE_TOKEN``)."""
        payload = f"{int(self.clock() + self.session_lifetime_s)}.{secrets.token_urlsafe(18)}"
        return f"{payload}.{self._sign(payload)}"

    def session_ok(self, value: str) -> bool:
        expires, _, rest = value.partition(".")
        nonce, _, signature = rest.partition(".")
        if not (value.isascii() and expires.isdigit() and nonce and signature):
            return False  # compare_digest refuses non-ASCII text: a cookie anyone can send must not raise
        return (
            hmac.compare_digest(signature, self._sign(f"{expires}.{nonce}"))
            and int(expires) > self.clock()
        )

    def _sign(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def retry_after(self, who: str) -> int | None:
        """Seconds until a wrong token from ``who`` is answered 401 again instead of 429; None
        while under the limit. The right token is never held up (see ``Guard._try_token``)."""
        now = self.clock()
        tries = self._failures.get(who)
        while tries and tries[0] <= now - self.failure_window_s:
            tries.popleft()
        if not tries:
            self._failures.pop(who, None)
            return None
        if len(tries) < self.max_failures:
            return None
        return max(1, int(tries[0] + self.failure_window_s - now + 0.999))

    def failed(self, who: str) -> None:
        if len(self._failures) > 10_000:  # many addresses: keep only those failing now
            for address in list(self._failures):
                self.retry_after(address)
        self._failures.setdefault(who, deque()).append(self.clock())
        log.warning("a wrong serve token from %s", who)
