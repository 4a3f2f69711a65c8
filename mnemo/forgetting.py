"""Forgetting as the user asks for it (CLI, REST, MCP): the store's part (``graph.forget``) and the
captured screenshots of the forgotten clips, which are mnemo's to delete."""

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


def forget_screenshots(clips: list[dict]) -> int:
    """Delete the captured images (and sidecars) of forgotten screen clips: a clip's folder is its
    source, its images those captured within its span. Returns how many images went."""
    from perception.sources.screenshots import scan

    removed = 0
    by_folder: dict[str, list[dict]] = {}
    for c in clips:
        if Path(c["source_path"]).is_dir():
            by_folder.setdefault(c["source_path"], []).append(c)
    for folder, spans in by_folder.items():
        for shot in scan(Path(folder)):
            t = shot.captured_at.timestamp()
            if any(c["start_ts"] <= t < c["end_ts"] for c in spans):  # a clip is [start, end)
                for path in (shot.path, shot.path.with_name(shot.path.name + ".json")):
                    path.unlink(missing_ok=True)
                removed += 1
    return removed


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
