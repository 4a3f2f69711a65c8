"""Errors perception raises about input media, and the errors a stage survives."""

from __future__ import annotations

import os
from functools import lru_cache


class MediaError(Exception):
    """A file cannot be used as a recording. The message names the file and what to do."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self):  # pickled whole (Ray workers send it back), not rebuilt from the message
        return MediaError, (self.path, self.reason)


@lru_cache(maxsize=1)
def stage_errors() -> tuple[type[BaseException], ...]:
    """What a model backend or an image operation raises on bad input: a stage that meets one
    leaves a note and an empty part of the clip's record instead of aborting the ingest.
    ``cv2.error`` derives from ``Exception`` only, so it is named here (cv2 is imported on first
    use, not when this module is)."""
    import cv2

    return (RuntimeError, ValueError, OSError, cv2.error)
