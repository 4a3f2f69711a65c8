"""Errors perception raises about input media."""

from __future__ import annotations


class MediaError(Exception):
    """A file cannot be used as a recording. The message names the file and what to do."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
