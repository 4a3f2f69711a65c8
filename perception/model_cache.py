"""The model cache's primitives: where model files are kept, how a file is checked, and the error
that says a model file is missing or wrong.

``model_files`` (what is fetched, and where it lies), ``model_fetch`` (fetching it) and ``weights``
(a model's files, checked, fetched on first use) all stand on these; ``weights`` hands them on to
the models that read their files.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class WeightsError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file, read a MiB at a time."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def cache_root() -> Path:
    """Where models joined from packaged parts live: ``$MNEMO_CACHE`` or ``~/.cache/mnemo``."""
    return Path(os.environ.get("MNEMO_CACHE") or Path.home() / ".cache" / "mnemo")
