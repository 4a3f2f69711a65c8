"""Encryption at rest of captured screenshots: Fernet (AES-128-CBC with HMAC-SHA256, from the
``cryptography`` package). The key comes from ``MNEMO_CAPTURE_KEY`` or from a key file readable by
the user alone (``[capture] key_file``, else ``~/.config/mnemo/capture.key``; ``mnemo`` passes the
configured one to every command and child through ``MNEMO_CAPTURE__KEY_FILE``, so capture, ingest
and serve use one key); ``mnemo capture keygen`` writes one. Encrypted images end in ``.jpg.enc``;
their sidecars (time, app, window title) and the heartbeat lines are encrypted with the same key.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

KEY_ENV = "MNEMO_CAPTURE_KEY"
ENCRYPTED_SUFFIX = ".enc"


class CaptureKeyError(RuntimeError):
    """No usable key, with what to do."""


KEY_FILE_ENV = (
    "MNEMO_CAPTURE__KEY_FILE"  # [capture] key_file, as mnemo's config reads it from the environment
)


def default_key_file() -> Path:
    if os.environ.get(KEY_FILE_ENV):
        return Path(os.environ[KEY_FILE_ENV]).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "mnemo" / "capture.key"


def generate_key(path: Path) -> Path:
    from cryptography.fernet import Fernet

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if path.exists():
        raise CaptureKeyError(
            f"{path} exists; remove it first (images encrypted with it become unreadable)"
        )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(Fernet.generate_key())
    return path


def load_cipher(key_file: str | Path | None = None):
    """The Fernet cipher from ``MNEMO_CAPTURE_KEY``, else the key file (default
    ``~/.config/mnemo/capture.key``)."""
    from cryptography.fernet import Fernet

    raw = os.environ.get(KEY_ENV, "").strip().encode()
    where = KEY_ENV
    if not raw:
        path = Path(key_file).expanduser() if key_file else default_key_file()
        if not path.is_file():
            raise CaptureKeyError(
                f"no capture key: set {KEY_ENV} or create the key file {path} with "
                "`mnemo capture keygen`"
            )
        if path.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
            raise CaptureKeyError(f"the key file {path} is readable by others; chmod 600 {path}")
        raw, where = path.read_bytes().strip(), str(path)
    try:
        return Fernet(raw)
    except ValueError as e:
        raise CaptureKeyError(
            f"the capture key in {where} is not a Fernet key (32 url-safe base64 bytes): {e}"
        ) from e


def decrypt_file(path: Path, key_file: str | Path | None = None) -> bytes:
    """An encrypted file's bytes; raises ``CaptureKeyError`` or ``ValueError`` saying why it cannot be read."""
    from cryptography.fernet import InvalidToken

    try:
        return load_cipher(key_file).decrypt(path.read_bytes().strip())
    except InvalidToken as e:
        raise ValueError(
            "it does not decrypt with this key (another key, or the file is damaged)"
        ) from e
