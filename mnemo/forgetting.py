"""Forgetting as the user asks for it (CLI, REST, MCP): the store's part (``graph.forget``) and the
captured screenshots of the forgotten clips, which are mnemo's to delete.

Only a capture folder mnemo marked (``perception/capture/owned.py``) loses files, and there only the
daemon's frames (and their sidecars) in the forgotten clips' spans. A folder of the user's that was
ingested (photos, screenshots saved by hand) keeps every file: the store forgets the clips, and
``mnemo ingest`` skips them when it meets them again."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from graph.forget import Filter, Plan, finish_unfinished, forget, plan

log = logging.getLogger(__name__)


def forget_all(store, selected: Plan, f: Filter, now: float | None = None) -> dict:
    """Forget ``selected`` from the store, then delete its screenshots; the counts removed. (Call
    ``graph.forget.finish_unfinished`` first, before planning.)"""
    counts = forget(store, selected, f, now)
    counts["screenshots_deleted"] = forget_screenshots(selected.clips)
    return counts


def screenshots_to_delete(clips: list[dict]) -> list[Path]:
    """The files forgetting ``clips`` (rows with ``source_path``, ``start_ts``, ``end_ts``) deletes:
    for each clip whose source is a day folder of a marked capture folder, the daemon's frames
    captured within the clip's span ``[start_ts, end_ts)`` (the time their names carry) and their
    sidecars. Nothing of any other folder. For previews: ``forget_screenshots`` deletes exactly
    this list."""
    from perception.capture.owned import capture_root_of, frame_time, is_frame_name, sidecar_of

    spans: dict[Path, list[tuple[float, float]]] = {}
    for c in clips:
        folder = Path(c["source_path"])
        if folder.is_dir() and capture_root_of(folder) is not None:
            spans.setdefault(folder, []).append((c["start_ts"], c["end_ts"]))
    out = []
    for folder, windows in sorted(spans.items()):
        for path in sorted(folder.iterdir()):
            if not is_frame_name(path.name) or path.is_symlink() or not path.is_file():
                continue
            t = frame_time(path.name).timestamp()
            if any(start <= t < end for start, end in windows):
                out.append(path)
                if sidecar_of(path).is_file() and not sidecar_of(path).is_symlink():
                    out.append(sidecar_of(path))
    return out


def capture_folders(paths: list[Path]) -> list[str]:
    """The capture folders (marked roots) that ``paths`` (from ``screenshots_to_delete``) lie in."""
    from perception.capture.owned import capture_root_of

    return sorted({str(capture_root_of(p.parent)) for p in paths})


def forget_screenshots(clips: list[dict]) -> int:
    """Delete ``screenshots_to_delete(clips)``, the sidecars first as the capture budget does (a crash
    between leaves images without sidecars, which the next capture start removes); returns how many
    images went."""
    from perception.capture.owned import is_frame_name

    paths = screenshots_to_delete(clips)
    for path in sorted(paths, key=lambda p: not p.name.endswith(".json")):
        path.unlink(missing_ok=True)
    return sum(1 for p in paths if is_frame_name(p.name))


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:  # removed while walking
                pass
    return total


def apply_retention(store, retention_days: float = 0.0, max_store_gb: float = 0.0, now: float | None = None,
                    max_rounds: int = 50) -> dict:
    """Forget clips older than ``retention_days``, then the oldest clips until the store is at most
    ``max_store_gb`` on disk (0 turns either off). Returns the clips forgotten for each reason."""
    now = time.time() if now is None else now
    out = {"expired_clips": 0, "budget_clips": 0}
    finish_unfinished(store)
    if retention_days > 0:
        f = Filter(older_than_days=retention_days)
        selected = plan(store, f, now)
        if not selected.empty:
            out["expired_clips"] = forget_all(store, selected, f, now)["clips"]
    cap = max_store_gb * 1e9
    for _ in range(max_rounds if cap > 0 else 0):
        size = folder_bytes(Path(store.uri))
        clips = sorted(store.clips.search().select(["start_ts", "end_ts"]).limit(None).to_list(),
                       key=lambda c: c["start_ts"])
        if size <= cap or not clips:
            break
        # the oldest clips, about as many as the excess is of the store (one at least)
        n = max(1, min(len(clips), int(len(clips) * (size - cap) / size) + 1))
        f = Filter(start_ts=clips[0]["start_ts"], end_ts=max(c["end_ts"] for c in clips[:n]))
        out["budget_clips"] += forget_all(store, plan(store, f, now), f, now)["clips"]
    if any(out.values()):
        log.info("retention: forgot %d clip(s) older than %g days and %d to keep the store within %g GB",
                 out["expired_clips"], retention_days, out["budget_clips"], max_store_gb)
    return out
