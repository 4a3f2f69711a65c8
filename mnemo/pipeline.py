"""Ingest: recordings and screenshot folders → clips → observations → memories → store, one clip at a time.

Per source, clips run in time order (identity depends on the past). Each clip commits on its
own, so a crash loses at most the clip in flight, and a rerun skips committed clips.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path

from graph.store import Store
from memorize.identity import MatchPolicy
from memorize.memorizer import Memorizer, clip_row
from memorize.writer_llm import LLMWriter
from perception.errors import MediaError
from perception.observe import Perceivers, observe_clip, observe_screen_clip
from perception.sources.screenshots import folders_with_screenshots, plan_screen_clips
from perception.sources.media import expand_paths, plan_clips, probe

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    files_ingested: list[str] = field(default_factory=list)
    files_failed: list[tuple[str, str]] = field(default_factory=list)
    clips_failed: list[tuple[str, str]] = field(default_factory=list)
    clips_new: int = 0
    clips_skipped: int = 0
    memories_new: int = 0

    @property
    def ok(self) -> bool:
        """False only when nothing could be ingested (already-stored files count as ingested)."""
        return bool(self.files_ingested) or not self.files_failed


def _stderr(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def ingest(paths: list[str], store: Store, perceivers: Perceivers, policies: tuple[MatchPolicy, MatchPolicy],
           clip_s: float = 30.0, start: datetime | None = None,
           progress: Callable[[str], None] = _stderr, llm_writer: LLMWriter | None = None) -> IngestReport:
    """Ingest recordings (files, or media files found in folders) and folders of screenshots."""
    report = IngestReport()
    memorizer = Memorizer(store, *policies, llm_writer=llm_writer)
    files = list(expand_paths(paths))
    folders = folders_with_screenshots(paths)
    total = len(files) + len(folders)
    try:
        for n, path in enumerate(files, start=1):
            _ingest_file(path, f"[{n}/{total}]", store, perceivers, memorizer, clip_s, start, progress, report)
        for n, folder in enumerate(folders, start=len(files) + 1):
            _ingest_screens(folder, f"[{n}/{total}]", store, perceivers, memorizer, clip_s, progress, report)
    finally:
        if report.clips_new:  # also after a failure: what was committed stays searchable by text
            store.refresh_indexes()
    return report


def _ingest_file(path: Path, counter: str, store: Store, perceivers: Perceivers, memorizer: Memorizer,
                 clip_s: float, start: datetime | None, progress: Callable[[str], None], report: IngestReport) -> None:
    try:
        source = probe(path, start=start)
    except MediaError as e:
        report.files_failed.append((str(path), e.reason))
        progress(f"{counter} skipped {e}")
        return
    clips = list(plan_clips(source, clip_s))
    progress(f"{counter} {path}: {source.duration_s:.1f} s, {len(clips)} clip(s), "
             f"start {source.recorded_at.isoformat()} (from {source.start_origin})")
    jobs = [(clip, f"  clip {clip.index + 1}/{len(clips)} [{clip.offset_s:.0f}-{clip.end_offset_s:.0f} s]",
             lambda clip=clip: observe_clip(clip, perceivers)) for clip in clips]
    _ingest_clips(path, jobs, store, memorizer, progress, report)


def _ingest_screens(folder: Path, counter: str, store: Store, perceivers: Perceivers, memorizer: Memorizer,
                    clip_s: float, progress: Callable[[str], None], report: IngestReport) -> None:
    clips = plan_screen_clips(folder, clip_s)
    shots = sum(len(c.shots) for c in clips)
    progress(f"{counter} {folder}: {shots} screenshot(s) in {len(clips)} clip(s) of {clip_s:g} s")
    jobs = [(sc.clip, f"  clip {k}/{len(clips)} [{sc.clip.source.recorded_at.isoformat()}, {len(sc.shots)} shot(s)]",
             lambda sc=sc: observe_screen_clip(sc, perceivers)) for k, sc in enumerate(clips, start=1)]
    _ingest_clips(folder, jobs, store, memorizer, progress, report)


def _ingest_clips(path: Path, jobs: list, store: Store, memorizer: Memorizer, progress: Callable[[str], None],
                  report: IngestReport) -> None:
    """Observe, memorize and commit each (clip, label, observe) job in order; skip stored clips."""
    failed_before = len(report.clips_failed)
    for clip, label, observe in jobs:
        if store.has_clip(clip.clip_id):
            report.clips_skipped += 1
            progress(f"{label} already stored, skipped")
            continue
        t0 = time.perf_counter()
        try:
            obs = observe()
        except MediaError as e:
            report.clips_failed.append((str(path), e.reason))
            progress(f"{label} skipped: {e}")
            continue
        written = memorizer.memorize(obs)
        memories = written.memories
        if written.notes:
            obs = replace(obs, notes=obs.notes + tuple(written.notes))
        try:
            store.commit_clip(clip_row(obs), memories, written.entities, written.edges, written.updated)
        except OSError as e:
            raise OSError(e.errno, f"writing clip {clip.index} of {path} to the store {store.uri} failed "
                          f"({e.strerror or e}); free space or fix permissions and run ingest again: "
                          "committed clips are kept and will be skipped") from e
        report.clips_new += 1
        report.memories_new += len(memories)
        notes = f"; {path}: {'; '.join(obs.notes)}" if obs.notes else ""
        text_lines = sum(len(f.text_lines) for f in obs.frames)
        progress(f"{label} {len(obs.speech)} turn(s), {len({t.speaker for t in obs.speech if t.speaker})} "
                 f"speaker(s), {len(obs.faces)} face(s) of {len({f.person for f in obs.faces})} people, "
                 f"{len(obs.frames)} distinct frame(s), {text_lines} text line(s), "
                 f"{len(memories)} memories in {time.perf_counter() - t0:.1f} s{notes}")
    if jobs and len(report.clips_failed) - failed_before == len(jobs):
        report.files_failed.append((str(path), "no clip could be decoded; the file may be truncated or corrupt"))
    else:
        report.files_ingested.append(str(path))
