"""Real media made by others, fetched from package registries and cached outside git.

- ``pyannote-audio`` wheel (read as a zip, never imported): ``sample.wav`` (30 s, two speakers,
  Diane and Sheila), ``sample.rttm`` (speaker turns), ``sample.stm`` (timed transcript).
- ``insightface`` (a dependency of mnemo): the group photo ``data/images/t1.jpg``.
- Debian ``opencv-doc`` (``apt-get download``, unpacked without root): ``Megamind.avi`` (two animated
  characters' faces) and real application screenshots from the HTML docs.

The cache is ``$MNEMO_CACHE`` or ``~/.cache/mnemo``.
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
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


OPENCV_DOC_FILES = (
    "usr/share/doc/opencv-doc/examples/data/Megamind.avi",
    "usr/share/doc/opencv-doc/opencv4/html/eclipse_cdt_cfg7.png",
    "usr/share/doc/opencv-doc/opencv4/html/qtgui.png",
)


def _apt_download(package: str, dest: str) -> subprocess.CompletedProcess:
    return subprocess.run(["apt-get", "download", package], cwd=dest, capture_output=True, text=True, check=False)


def opencv_doc() -> Path:
    """Folder holding ``Megamind.avi``, ``eclipse_cdt_cfg7.png`` and ``qtgui.png`` from Debian's
    opencv-doc package (fetched with ``apt-get download``; the package lists are refreshed once if
    they are missing)."""
    out = cache_dir() / "opencv-doc"
    names = [Path(f).name for f in OPENCV_DOC_FILES]
    if all((out / n).is_file() for n in names):
        return out
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise FixtureUnavailable("opencv-doc needs apt-get and dpkg-deb (Debian/Ubuntu) to be fetched")
    with tempfile.TemporaryDirectory() as tmp:
        log.info("fetching Debian package opencv-doc (about 95 MB) for Megamind.avi and screenshots")
        proc = _apt_download("opencv-doc", tmp)
        if proc.returncode != 0:  # no package lists yet: refresh them once (needs root)
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, check=False)
            proc = _apt_download("opencv-doc", tmp)
        debs = list(Path(tmp).glob("opencv-doc_*.deb"))
        if proc.returncode != 0 or not debs:
            raise FixtureUnavailable(f"could not fetch opencv-doc with apt-get: {(proc.stderr or proc.stdout).strip()[-300:]}")
        members = ["./" + f for f in OPENCV_DOC_FILES]
        tar = subprocess.run(f"dpkg-deb --fsys-tarfile {shlex.quote(str(debs[0]))} | tar -x -C {shlex.quote(tmp)} "
                             + " ".join(shlex.quote(m) for m in members),
                             shell=True, capture_output=True, text=True, check=False)
        if tar.returncode != 0:
            raise FixtureUnavailable(f"could not unpack opencv-doc: {tar.stderr.strip()[-300:]}")
        out.mkdir(parents=True, exist_ok=True)
        for f in OPENCV_DOC_FILES:
            part = out / (Path(f).name + ".part")
            shutil.copyfile(Path(tmp) / f, part)
            part.replace(out / Path(f).name)
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
