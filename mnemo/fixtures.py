"""Real media made by others, fetched from package registries and cached outside git.

- ``pyannote-audio`` wheel (read as a zip, never imported): ``sample.wav`` (30 s, two speakers,
  Diane and Sheila), ``sample.rttm`` (speaker turns), ``sample.stm`` (timed transcript).
- ``insightface`` (a dependency of mnemo): the group photo ``data/images/t1.jpg``.

The cache is ``$MNEMO_CACHE`` or ``~/.cache/mnemo``.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

PYANNOTE_WHEEL = "pyannote-audio==4.0.7"
PYANNOTE_FILES = ("sample.wav", "sample.rttm", "sample.stm")


class FixtureUnavailable(RuntimeError):
    """A fixture could not be fetched (no registry, package gone); the message says which."""


def cache_dir() -> Path:
    root = Path(os.environ.get("MNEMO_CACHE") or Path.home() / ".cache" / "mnemo")
    root.mkdir(parents=True, exist_ok=True)
    return root


def pyannote_sample() -> Path:
    """Folder holding sample.wav, sample.rttm and sample.stm from the pyannote-audio wheel."""
    out = cache_dir() / "pyannote-sample"
    if all((out / f).is_file() for f in PYANNOTE_FILES):
        return out
    with tempfile.TemporaryDirectory() as tmp:
        log.info("fetching %s (wheel, no dependencies) for its sample recording", PYANNOTE_WHEEL)
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
             "-d", tmp, PYANNOTE_WHEEL],
            capture_output=True, text=True, check=False,
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or not wheels:
            raise FixtureUnavailable(
                f"could not download {PYANNOTE_WHEEL} from the package index: "
                f"{(proc.stderr or proc.stdout).strip()[-300:]}"
            )
        out.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as zf:
            for name in PYANNOTE_FILES:
                data = zf.read(f"pyannote/audio/sample/{name}")
                part = out / (name + ".part")
                part.write_bytes(data)
                part.replace(out / name)  # atomic: a killed fetch leaves no half file
    return out


def group_photo() -> Path:
    """insightface's sample group photo (six people at a card table)."""
    import importlib.util

    spec = importlib.util.find_spec("insightface")
    if spec is None or not spec.submodule_search_locations:
        raise FixtureUnavailable("insightface is not installed; run `make demo` to install mnemo")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "images" / "t1.jpg"
    if not path.is_file():
        raise FixtureUnavailable(f"{path} is missing from the installed insightface package")
    return path


@dataclass(frozen=True)
class SpeakerTurn:
    speaker: str
    start_s: float
    end_s: float


def read_rttm(path: Path) -> list[SpeakerTurn]:
    turns = []
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 8 and f[0] == "SPEAKER":
            start, dur = float(f[3]), float(f[4])
            turns.append(SpeakerTurn(f[7], start, start + dur))
    return turns


def read_stm(path: Path) -> list[tuple[str, float, float, str]]:
    """(speaker, start_s, end_s, text) per line of a NIST STM file."""
    rows = []
    for line in path.read_text().splitlines():
        f = line.split(maxsplit=5)
        if len(f) == 6 and not line.startswith(";;"):
            rows.append((f[2], float(f[3]), float(f[4]), f[5]))
    return rows
