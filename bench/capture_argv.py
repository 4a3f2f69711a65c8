"""``mnemo capture``'s command line as the benches and the tests run it."""

from __future__ import annotations

from pathlib import Path


def capture_and_ingest(out: Path, store: Path, duration: str) -> list[str]:
    """``mnemo capture``'s arguments (those after ``mnemo``) for a capture that writes a frame to
    ``out`` every second and ingests each clip into ``store`` once it closes, for ``duration``
    (``"150s"``)."""
    frames = ["capture", "--out", str(out), "--interval", "1s"]
    return [*frames, "--ingest", "--store", str(store), "--duration", duration]
