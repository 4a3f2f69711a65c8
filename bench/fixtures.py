"""Real media made by others, fetched from package registries and cached outside git.

- ``pyannote-audio`` wheel (read as a zip, never imported): ``sample.wav`` (30 s, two speakers,
  Diane and Sheila), ``sample.rttm`` (speaker turns), ``sample.stm`` (timed transcript).
- ``insightface`` wheel (read as a zip, never imported): the group photo ``data/images/t1.jpg``.
- Debian ``opencv-doc`` (``apt-get download``, unpacked without root): ``Megamind.avi`` (two animated
  characters' faces) and real application screenshots from the HTML docs.
- ``pillow`` sdist (read as a tar, never built): photos from its tests with their cameras' EXIF: a
  Canon PowerShot S40's ``flower.jpg``, a Xiaomi phone's sideways ``empty_gps_ifd.jpg``, a Google
  Pixel 6's ``ultrahdr.jpg`` (time with offset and GPS; its pixels are cut short), ``exif_gps.jpg``
  (a clock never set and a broken GPS tag), ``hopper.jpg`` with ``hopper_orientation_6.jpg`` (the
  same picture stored sideways) and ``hopper.heif``.

The cache is ``$MNEMO_CACHE`` or ``~/.cache/mnemo``. Every fetched file is checked against its
pinned SHA-256 when it is fetched and each time it is used from the cache; a cached file that no
longer matches is fetched again, and a fetched one that does not match is an error (the package
changed upstream: pin the new hash only after checking the new file). The packages come through
their own clients (pip, apt-get, which checks the .deb against the signed package list), not by
URL, which is why no URL downloader (pooch) is used.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from perception.weights import sha256_file as sha256_of

log = logging.getLogger(__name__)

PYANNOTE_WHEEL = "pyannote-audio==4.0.7"
PYANNOTE_FILES = ("sample.wav", "sample.rttm", "sample.stm")
INSIGHTFACE_WHEEL = "insightface==2.1"

# file name -> SHA-256 of the file as shipped in its package
FIXTURE_SHA256 = {
    "sample.wav": "c319b4abca767b124e41432d364fd7df006cb26bb79d09326c487d606a134e6e",
    "sample.rttm": "d78fe62c69d8e6dcbb42c26adfce83faccb374c5a1e6d987fe37f85f1c173c87",
    "sample.stm": "f861f3004927e1c4429199f9695bfd252def75d7d5e4bdf735d3d85fd4a667f7",
    "Megamind.avi": "0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5",
    "eclipse_cdt_cfg7.png": "c405c8319d01860610db35bd284bca73157ecfcc3cc0e24e70ac31a74edaf469",
    "qtgui.png": "f7f05242a706c97ae07d9beb5e44b2a2c1bfb54c0982834218faf3235b248d01",
    "t1.jpg": "47f682e945b659f93a9e490b9c9c4a2a864abe64dace9e1a2893845ddfd69489",  # insightface's group photo
    # Pillow's test photos
    "flower.jpg": "8a9d04b92d0de5836c59ede8ae421235488e4031e893e07b1fe7e4b78f6a9901",
    "empty_gps_ifd.jpg": "2cd3312aaff7d7c89c657887aa6494d9007a138eab272a078b06c0c6e77d305c",
    "ultrahdr.jpg": "50f8cdfc216b5b760b07f99a5a8cb17a2960a7e4bd1b4f9eeb2cc84e9a16a693",
    "exif_gps.jpg": "360eb3ce66533146584aa66576130c5ab98c763b7c7f51898892e7eaa7dcab49",
    "hopper.jpg": "ffe89a0ab0e94114e10777e7313d7fa83d634e34ebc2ea7479085cffa504c920",
    "hopper_orientation_6.jpg": "2e78bb18895fa23eddbb2afa1228950700d97e4ef9d7bfae6935604d01eb1b61",
    "hopper.heif": "825853d55a81247b9b3b2cef57b3c1a59b172be2a86b2715de47a489e6a8db06",
    # gpxpy's test tracks
    "korita-zbevnica.gpx": "14125bf02a5144dd65c2f7c230fdcd92ed8418242376a4284697f5d1965cb84d",
    "cerknicko-jezero.gpx": "8bad699d4c32633dd65d98c0c8ae6372da5ed01c24f7e3afd9f6b642a9976671",
    "cerknicko-without-times.gpx": "de901607a7b0e02b2a1a644bfca19ec4c08efd5f3113d6be58192e00ee05e6f0",
    "Mojstrovka.gpx": "ed9fe789e69b47349fda26001a68f5eddec878cd0d48b3c241811c2bfa2c7f7d",
    "route.gpx": "140b474f34e2e40be8909c6a60e349e62c6e83ee3315b944e48a2731cdc5c295",
}
PILLOW_SDIST = "pillow==11.3.0"
PILLOW_PHOTOS = {
    name: f"Tests/images/{name}"
    for name in (
        "flower.jpg",
        "empty_gps_ifd.jpg",
        "ultrahdr.jpg",
        "exif_gps.jpg",
        "hopper.jpg",
        "hopper_orientation_6.jpg",
    )
}
PILLOW_PHOTOS["hopper.heif"] = "Tests/images/avif/hopper.heif"
GPXPY_SDIST = "gpxpy==1.6.2"
GPX_TRACKS = {
    name: f"test_files/{name}"
    for name in (
        "korita-zbevnica.gpx",
        "cerknicko-jezero.gpx",
        "cerknicko-without-times.gpx",
        "Mojstrovka.gpx",
        "route.gpx",
    )
}


class FixtureUnavailable(RuntimeError):
    """A fixture could not be fetched (no registry, package gone); the message says which."""


class FixtureMismatch(RuntimeError):
    """A fetched fixture is not the file its SHA-256 pins."""


def _cached(folder: Path, names: list[str]) -> bool:
    """Whether every file is in ``folder`` with its pinned SHA-256 (a stale or damaged one is removed)."""
    ok = True
    for name in names:
        path = folder / name
        if not path.is_file():
            ok = False
        elif sha256_of(path) != FIXTURE_SHA256[name]:
            log.warning("%s does not match its pinned SHA-256; fetching it again", path)
            path.unlink()
            ok = False
    return ok


def _place(data_path: Path, out: Path, origin: str) -> None:
    """Check a fetched file against its pin, then move it into the cache atomically."""
    got = sha256_of(data_path)
    if got != FIXTURE_SHA256[out.name]:
        raise FixtureMismatch(
            f"{out.name} from {origin} has SHA-256 {got}, pinned {FIXTURE_SHA256[out.name]}; "
            "the package changed: check the new file, then update FIXTURE_SHA256 in bench/fixtures.py"
        )
    part = out.with_name(f"{out.name}.{os.getpid()}.part")  # one per process: two may fetch at once
    shutil.copyfile(data_path, part)
    part.replace(out)  # atomic: a killed fetch leaves no half file


def cache_dir() -> Path:
    root = Path(os.environ.get("MNEMO_CACHE") or Path.home() / ".cache" / "mnemo")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _pip_download(requirement: str, into: str, pattern: str, *options: str) -> list[Path]:
    """``pip download`` of ``requirement`` alone (no dependencies) into the folder ``into``, with
    ``options``; the files there that match ``pattern`` (``FixtureUnavailable`` for none)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            *options,
            "--quiet",
            "--disable-pip-version-check",
            "-d",
            into,
            requirement,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = list(Path(into).glob(pattern))
    if proc.returncode != 0 or not found:
        raise FixtureUnavailable(
            f"could not download {requirement} from the package index: "
            f"{(proc.stderr or proc.stdout).strip()[-300:]}"
        )
    return found


def _from_wheel(requirement: str, members: dict[str, str], out: Path, why: str) -> None:
    """Download one wheel with pip (no dependencies: it is read as a zip, never installed) and place
    ``members`` ({file name: path in the wheel}) in ``out``, each checked against its pin."""
    with tempfile.TemporaryDirectory() as tmp:
        log.info("fetching %s (wheel, no dependencies) for %s", requirement, why)
        wheels = _pip_download(requirement, tmp, "*.whl", "--only-binary=:all:")
        out.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheels[0]) as zf:
            for name, inside in members.items():
                member = Path(tmp) / name
                try:
                    member.write_bytes(zf.read(inside))
                except KeyError as e:
                    raise FixtureUnavailable(f"{wheels[0].name} has no {inside}") from e
                _place(member, out / name, requirement)


def pyannote_sample() -> Path:
    """Folder holding sample.wav, sample.rttm and sample.stm from the pyannote-audio wheel."""
    out = cache_dir() / "pyannote-sample"
    if not _cached(out, list(PYANNOTE_FILES)):
        _from_wheel(
            PYANNOTE_WHEEL,
            {name: f"pyannote/audio/sample/{name}" for name in PYANNOTE_FILES},
            out,
            "its sample recording",
        )
    return out


OPENCV_DOC_FILES = (
    "usr/share/doc/opencv-doc/examples/data/Megamind.avi",
    "usr/share/doc/opencv-doc/opencv4/html/eclipse_cdt_cfg7.png",
    "usr/share/doc/opencv-doc/opencv4/html/qtgui.png",
)


def _apt_download(package: str, dest: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["apt-get", "download", package], cwd=dest, capture_output=True, text=True, check=False
    )


def opencv_doc() -> Path:
    """Folder holding ``Megamind.avi``, ``eclipse_cdt_cfg7.png`` and ``qtgui.png`` from Debian's
    opencv-doc package (fetched with ``apt-get download``; the package lists are refreshed once if
    they are missing)."""
    out = cache_dir() / "opencv-doc"
    if _cached(out, [Path(f).name for f in OPENCV_DOC_FILES]):
        return out
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise FixtureUnavailable(
            "opencv-doc needs apt-get and dpkg-deb (Debian/Ubuntu) to be fetched"
        )
    with tempfile.TemporaryDirectory() as tmp:
        log.info(
            "fetching Debian package opencv-doc (about 95 MB) for Megamind.avi and screenshots"
        )
        proc = _apt_download("opencv-doc", tmp)
        if proc.returncode != 0:  # no package lists yet: refresh them once (needs root)
            subprocess.run(
                ["apt-get", "update", "-qq"], capture_output=True, text=True, check=False
            )
            proc = _apt_download("opencv-doc", tmp)
        debs = list(Path(tmp).glob("opencv-doc_*.deb"))
        if proc.returncode != 0 or not debs:
            raise FixtureUnavailable(
                f"could not fetch opencv-doc with apt-get: {(proc.stderr or proc.stdout).strip()[-300:]}"
            )
        out.mkdir(parents=True, exist_ok=True)
        for name, data in _deb_members(debs[0], OPENCV_DOC_FILES, Path(tmp)).items():
            _place(data, out / name, debs[0].name)
    return out


def _deb_members(deb: Path, members: tuple[str, ...], dest: Path) -> dict[str, Path]:
    """Extract ``members`` (paths inside the package) of a .deb into ``dest``: ``dpkg-deb`` streams
    the data tar, read here member by member (no shell, nothing else written)."""
    wanted = {"./" + m: Path(m).name for m in members}
    found: dict[str, Path] = {}
    with subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None  # both piped
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                for info in tar:
                    name = wanted.get(info.name)
                    if name and info.isfile():
                        target = dest / name
                        src = tar.extractfile(info)
                        assert src is not None  # a regular file's contents
                        with src, target.open("wb") as dst:
                            shutil.copyfileobj(src, dst, 1 << 20)
                        found[name] = target
        except tarfile.TarError as e:
            raise FixtureUnavailable(f"could not unpack {deb.name}: {e}") from e
        finally:
            proc.stdout.close()
            stderr = proc.stderr.read().decode(errors="replace")
    if proc.returncode not in (0, None) and len(found) < len(wanted):
        raise FixtureUnavailable(f"dpkg-deb could not read {deb.name}: {stderr.strip()[-300:]}")
    missing = sorted(set(wanted.values()) - set(found))
    if missing:
        raise FixtureUnavailable(f"{deb.name} does not contain {', '.join(missing)}")
    return found


def pillow_photos() -> Path:
    """Folder holding Pillow's test photos (``PILLOW_PHOTOS``), from its sdist."""
    return _from_sdist(
        PILLOW_SDIST, PILLOW_PHOTOS, cache_dir() / "pillow-photos", "its test photos (about 47 MB)"
    )


def gpx_tracks() -> Path:
    """Folder holding gpxpy's test tracks (``GPX_TRACKS``): real GPS recordings of walks in
    Slovenia and Croatia, and the odd files (no times, a clock never set, a planned route)."""
    return _from_sdist(
        GPXPY_SDIST, GPX_TRACKS, cache_dir() / "gpx-tracks", "its test tracks (about 110 kB)"
    )


def _from_sdist(requirement: str, members: dict[str, str], out: Path, what: str) -> Path:
    """``members`` ({file name: path in the sdist}) of a source distribution, placed in ``out`` and
    checked against their pins: pip downloads the sdist without building it, and only these files
    are read out of the tar."""
    if _cached(out, list(members)):
        return out
    project = requirement.split("==")[0]
    with tempfile.TemporaryDirectory() as tmp:
        log.info("fetching %s (sdist) for %s", requirement, what)
        sdists = _pip_download(
            requirement, tmp, f"{project}-*.tar.gz", f"--no-binary={project}", "--no-cache-dir"
        )
        top = sdists[0].name.removesuffix(".tar.gz")
        out.mkdir(parents=True, exist_ok=True)
        try:
            with tarfile.open(sdists[0]) as tar:
                for name, inside in members.items():
                    src = tar.extractfile(f"{top}/{inside}")
                    if src is None:
                        raise KeyError(inside)
                    (Path(tmp) / name).write_bytes(src.read())
                    _place(Path(tmp) / name, out / name, sdists[0].name)
        except (KeyError, tarfile.TarError) as e:
            raise FixtureUnavailable(f"{sdists[0].name} has no {e}") from e
    return out


def group_photo() -> Path:
    """insightface's sample group photo (six people at a card table), from its wheel: mnemo does
    not install insightface (an extra), so the photo is fetched like pyannote's recording."""
    out = cache_dir() / "insightface-sample"
    if not _cached(out, ["t1.jpg"]):
        _from_wheel(
            INSIGHTFACE_WHEEL, {"t1.jpg": "insightface/data/images/t1.jpg"}, out, "its group photo"
        )
    return out / "t1.jpg"


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
