"""Forgetting as the user asks for it (CLI, REST, MCP): the store's part (``graph.forget_store``) and the
captured screenshots of the forgotten clips, which are mnemo's to delete.

Only a capture folder mnemo marked (``perception/capture/owned.py``) loses files, and there only the
daemon's frames (and their sidecars) in the forgotten clips' spans. A folder of the user's that was
ingested (photos, screenshots saved by hand) keeps every file: the store forgets the clips, and
``mnemo ingest`` skips them when it meets them again.

The page's pictures of the forgotten clips, cached in the store (``mnemo.serve.thumbs``), go too.

The clips whose screenshots a forget will delete are noted in the store (``<store>/.forget-media/``)
before the store forgets them, and the note goes once the files are gone: a forget killed in
between has them deleted by ``finish_unfinished``, which every forget runs first (the clip rows
that say where the screenshots lie are gone from the store by then)."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from graph import forget_store as forget_steps
from graph.forget_store import Filter, ForgetPlan, forget, forgotten_clip_ids, plan

log = logging.getLogger(__name__)

PENDING = ".forget-media"  # in a store: the clips whose screenshots a forget is deleting


def forget_all(store, selected: ForgetPlan, f: Filter, now: float | None = None) -> dict:
    """Forget ``selected`` from the store, then delete its screenshots; the counts removed. (Call
    ``finish_unfinished`` first, before planning.)"""
    noted = _note_screenshots(store, selected.clips)
    counts = forget(store, selected, f, now)
    forget_steps.step("files")
    counts["screenshots_deleted"] = forget_screenshots(selected.clips)
    if noted is not None:
        store.side.delete(noted)  # (or a finisher running meanwhile took it)
    from mnemo.serve.thumbs import drop_forgotten  # the page's pictures, cached in the store

    drop_forgotten(store)
    return counts


def finish_unfinished(store) -> int:
    """Finish forgets a kill interrupted: the store's part (``graph.forget_store.finish_unfinished``), then
    the screenshots of forgotten clips that were not deleted yet. How many forgets it finished."""
    finished = forget_steps.finish_unfinished(store)
    notes = [n for n in store.side.names(PENDING) if n.endswith(".json")]
    if not notes:
        return finished
    gone = forgotten_clip_ids(store)
    completed = 0
    for note in notes:
        clips = json.loads(store.side.read(note) or b"[]")
        forget_screenshots([c for c in clips if c["clip_id"] in gone])
        # clips not in the forget log: that forget was killed before it began, or runs now
        if all(c["clip_id"] in gone for c in clips):
            store.side.delete(note)
            completed += 1
    if completed:
        log.info("%s: deleted the screenshots of %d interrupted forget(s)", store.uri, completed)
    return max(finished, completed)


def _note_screenshots(store, clips: list[dict]) -> str | None:
    """Note ``clips`` (their ids, sources and spans) as having screenshots to delete; the note's name
    in the store's side files."""
    if not screenshots_to_delete(clips):
        return None
    note = f"{PENDING}/{time.time_ns()}-{os.getpid()}.json"
    keep = [{k: c[k] for k in ("clip_id", "source_path", "start_ts", "end_ts")} for c in clips]
    store.side.write(note, json.dumps(keep).encode())  # whole or not at all
    return note


def screenshots_to_delete(clips: list[dict]) -> list[Path]:
    """The files forgetting ``clips`` (rows with ``source_path``, ``start_ts``, ``end_ts``) deletes:
    for each clip whose source is a day folder of a marked capture folder, the daemon's frames
    captured within the clip's span ``[start_ts, end_ts)`` and the sound of the slots starting in
    it (the time their names carry), and their sidecars. Nothing of any other folder. For
    previews: ``forget_screenshots`` deletes exactly this list."""
    from perception.capture.owned import audio_of, capture_root_of, frame_time, sidecar_of

    spans: dict[Path, list[tuple[float, float]]] = {}
    for c in clips:
        folder = Path(c["source_path"])
        if folder.is_dir() and capture_root_of(folder) is not None:
            spans.setdefault(folder, []).append((c["start_ts"], c["end_ts"]))
    out = []
    for folder, windows in sorted(spans.items()):
        for path in sorted(folder.iterdir()):
            if path.is_symlink() or not path.is_file():
                continue
            sound = audio_of(path.name)
            taken = frame_time(path.name) or (sound[0] if sound else None)
            if taken is None:  # neither a frame nor a sound of the daemon's
                continue
            t = taken.timestamp()
            if any(start <= t < end for start, end in windows):
                out.append(path)
                if sidecar_of(path).is_file() and not sidecar_of(path).is_symlink():
                    out.append(sidecar_of(path))
    return out


def drop_ingested_sound(store, folders: list[Path]) -> int:
    """``[capture] keep_audio = 0``: delete the capture daemon's sound files (their sidecars first)
    in ``folders`` whose clip ``store`` has committed: the transcript stays, the raw sound goes. A
    sound whose clip failed or is not ingested yet stays. Only a marked capture folder's own
    sound files are touched; returns how many went. (A running daemon still counts their bytes in
    its budget until it restarts: it deletes them with ``missing_ok``.)"""
    from perception.capture.owned import audio_of, capture_root_of, sidecar_of

    gone = 0
    for folder in folders:
        if not folder.is_dir() or capture_root_of(folder) is None:
            continue
        sounds = [
            (p, heard[0].timestamp())
            for p in sorted(folder.iterdir())
            if (heard := audio_of(p.name)) is not None and p.is_file() and not p.is_symlink()
        ]
        if not sounds:
            continue
        here = str(folder.resolve())
        rows = store.clips_in_range(min(t for _, t in sounds), max(t for _, t in sounds), None)
        slots = {round(r["start_ts"], 3) for r in rows if r["source_path"] == here}
        for path, start in sounds:
            if round(start, 3) in slots:
                sidecar_of(path).unlink(missing_ok=True)
                path.unlink(missing_ok=True)
                gone += 1
    return gone


def capture_folders(paths: list[Path]) -> list[str]:
    """The capture folders (marked roots) that ``paths`` (from ``screenshots_to_delete``) lie in."""
    from perception.capture.owned import capture_root_of

    return sorted({str(capture_root_of(p.parent)) for p in paths})


def forget_screenshots(clips: list[dict]) -> int:
    """Delete ``screenshots_to_delete(clips)``, the sidecars first as the capture budget does (a crash
    between leaves files without sidecars, which the next capture start removes); returns how many
    images and sounds went."""
    from perception.capture.owned import is_media_name

    paths = screenshots_to_delete(clips)
    for path in sorted(paths, key=lambda p: not p.name.endswith(".json")):
        if not path.name.endswith(".json"):
            forget_steps.step("images")  # the sidecars are gone, the images not yet
        path.unlink(missing_ok=True)
    return sum(1 for p in paths if is_media_name(p.name))


def apply_retention(
    store,
    retention_days: float = 0.0,
    max_store_gb: float = 0.0,
    now: float | None = None,
    max_rounds: int = 50,
) -> dict:
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
        size = sum(store.side.sizes().values())
        clips = sorted(
            store.clips.search().select(["start_ts", "end_ts"]).limit(None).to_list(),
            key=lambda c: c["start_ts"],
        )
        if size <= cap or not clips:
            break
        # the oldest clips, about as many as the excess is of the store (one at least)
        n = max(1, min(len(clips), int(len(clips) * (size - cap) / size) + 1))
        f = Filter(start_ts=clips[0]["start_ts"], end_ts=max(c["end_ts"] for c in clips[:n]))
        out["budget_clips"] += forget_all(store, plan(store, f, now), f, now)["clips"]
    if any(out.values()):
        log.info(
            "retention: forgot %d clip(s) older than %g days and %d to keep the store within %g GB",
            out["expired_clips"],
            retention_days,
            out["budget_clips"],
            max_store_gb,
        )
    return out
