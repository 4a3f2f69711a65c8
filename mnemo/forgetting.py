"""Forgetting as the user asks for it (CLI, REST, MCP): the store's part (``graph.forget``) and the
captured screenshots of the forgotten clips, which are mnemo's to delete."""

from __future__ import annotations

from pathlib import Path

from graph.forget import Filter, Plan, forget


def forget_all(store, selected: Plan, f: Filter) -> dict:
    """Forget ``selected`` from the store, then delete its screenshots; the counts removed."""
    counts = forget(store, selected, f)
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
            if any(c["start_ts"] <= t <= c["end_ts"] for c in spans):
                for path in (shot.path, shot.path.with_name(shot.path.name + ".json")):
                    path.unlink(missing_ok=True)
                removed += 1
    return removed
