"""Ingest: recordings, GPS tracks and screenshot folders → clips → observations → memories → store.

Three parts, shared by the sequential path here (``ingest``) and the Ray path (``ray_jobs/ingest.py``):

- ``plan``: probe the files, cut clips and group screenshots (with the capture daemon's sound, whose
  files are never recordings of their own), skip committed clips, and number the rest in the order
  they are memorized (files first, then folders; clips in time order);
- ``observe_job``: one clip's perception, a pure function of the job (any process may run it);
- ``ClipWriter``: memorize and commit clips strictly in plan order (identity and consolidation
  depend on the past). Each clip commits on its own, so a crash loses at most the clip in flight,
  and a rerun skips committed clips. After a clip whose microphone made its voice the owner
  (``ClipWrite.owner_heard``) commits, that is written to the people log.

``store_writer`` is the one writer both paths write through: it holds the store's writer lock,
plans, and finishes the ``ClipWriter`` whatever happens.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import takewhile
from pathlib import Path

from graph.forget_store import forgotten_clip_ids
from graph.store import Store
from memorize.identity import MatchPolicy
from memorize.memorizer import ClipWrite, Memorizer, clip_row
from memorize.redact import Redactor
from memorize.writer_llm import LLMWriter
from perception.errors import MediaError
from perception.malloc import give_back_freed_memory
from perception.observe import Perceivers, observe_clip, observe_screen_clip
from perception.records import Clip, ClipObservations, TrackSegment
from perception.sources.media import expand_paths, missing_streams, plan_clips, probe
from perception.sources.screenshots import (
    ScreenClip,
    folders_with_screenshots,
    is_capture_audio,
    plan_screen_clips,
    stored_under_legacy_ids,
)
from perception.sources.tracks import TRACK_SUFFIXES, dropped_note, plan_track_clips
from pipeline.hints import HintBook
from pipeline.jobs import ClipJob

log = logging.getLogger(__name__)


@dataclass
class IngestReport:
    files_ingested: list[str] = field(default_factory=list)
    files_failed: list[tuple[str, str]] = field(default_factory=list)
    clips_failed: list[tuple[str, str]] = field(default_factory=list)
    clips_new: int = 0
    clips_skipped: int = 0
    memories_new: int = 0
    stage_s: dict[str, float] = field(
        default_factory=dict
    )  # perception stage -> seconds, summed over new clips
    # the writer, summed over new clips: memorizing (on the writer's loop), then embedding the
    # clip's memories and committing them (on the commit thread behind it), in clip order; the loop
    # waits when the commit thread is behind (that wait overlaps the embedding and committing)
    memorize_s: float = 0.0
    commit_s: float = 0.0
    embed_s: float = 0.0
    writer_wait_s: float = 0.0
    peak_rss_mb: dict[str, float] = field(
        default_factory=dict
    )  # process -> its peak resident memory
    clips_by_worker: dict[str, int] = field(
        default_factory=dict
    )  # --ray: perception worker -> clips it perceived
    redacted: dict[str, int] = field(
        default_factory=dict
    )  # kind -> spans replaced before storing (memorize.redact)

    @property
    def writer_s(self) -> float:
        """Every second the writer works on its clips: memorizing, embedding the memories and
        committing them (the last two on the commit thread). The loop's waits are not added: they
        overlap the commit thread's work."""
        return self.memorize_s + self.embed_s + self.commit_s

    @property
    def ok(self) -> bool:
        """False only when nothing could be ingested (already-stored files count as ingested)."""
        return bool(self.files_ingested) or not self.files_failed


@dataclass
class IngestPlan:
    jobs: list[ClipJob]
    clips_of: dict[
        str, int
    ]  # path -> its clips, committed ones included (files and folders in order)


def to_stderr(msg: str) -> None:
    """The default progress: each line to stderr at once."""
    print(msg, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Planning:
    """What ``plan`` is told besides the paths: the clip length, the start of a recording that
    says none, and for live capture which screenshot clips wait and which are not looked at."""

    clip_s: float = 30.0
    start: datetime | None = None
    screens_closed_before: datetime | None = None
    screens_since: datetime | None = None


def plan(
    paths: list[str],
    store: Store,
    planning: Planning = Planning(),
    progress: Callable[[str], None] = to_stderr,
    report: IngestReport | None = None,
) -> IngestPlan:
    """The clips still to ingest, numbered in memorizing order. Unreadable files go to
    ``report.files_failed`` and committed clips to ``report.clips_skipped``. For live capture:
    screenshot clips still open at ``planning.screens_closed_before`` wait, and those that started
    before ``planning.screens_since`` are not looked at."""
    report = report if report is not None else IngestReport()
    # a capture daemon's sound files found in a folder are part of its screen clips, not recordings
    given = {str(Path(p)) for p in paths}
    files = [f for f in expand_paths(paths) if str(f) in given or not is_capture_audio(f)]
    folders = folders_with_screenshots(paths)
    total = len(files) + len(folders)
    jobs: list[ClipJob] = []
    clips_of: dict[str, int] = {}
    forgotten = forgotten_clip_ids(store)  # `mnemo forget` took them back: not stored again
    stored_before: set[str] = set()  # screenshot clips a store stored under their old id

    def add(
        path: Path,
        clip: Clip,
        label: str,
        screens: ScreenClip | None = None,
        track: TrackSegment | None = None,
    ) -> None:
        # A forgotten old (content-only) id says no time: the pictures stay forgotten at any time.
        if clip.clip_id in forgotten or (screens is not None and screens.legacy_id in forgotten):
            report.clips_skipped += 1
            progress(f"{label} was forgotten, skipped")
        elif clip.clip_id in stored_before or store.has_clip(clip.clip_id):
            report.clips_skipped += 1
            progress(f"{label} already stored, skipped")
        else:
            jobs.append(ClipJob(len(jobs), str(path), label, clip, screens, track))

    for n, path in enumerate(files, start=1):
        if path.suffix.lower() in TRACK_SUFFIXES:
            try:
                track, pieces = plan_track_clips(path)
            except MediaError as e:
                report.files_failed.append((str(path), e.reason))
                progress(f"[{n}/{total}] skipped {e}")
                continue
            clips_of[str(path)] = len(pieces)
            stays = sum(seg.kind == "stay" for _, seg in pieces)
            dropped = dropped_note(track)
            progress(
                f"[{n}/{total}] {path}: GPS track of {len(track.fixes)} fix(es) from "
                f"{pieces[0][0].source.recorded_at.isoformat()}, "
                f"{stays} stay(s) and {len(pieces) - stays} move(s)"
                + (f"; {dropped}" if dropped else "")
            )
            for clip, seg in pieces:
                add(
                    path,
                    clip,
                    f"  {path.name} {seg.kind} {clip.index + 1}/{len(pieces)} "
                    f"[{clip.offset_s:.0f}-{clip.end_offset_s:.0f} s]",
                    track=seg,
                )
            continue
        try:
            source = probe(path, start=planning.start)
        except MediaError as e:
            report.files_failed.append((str(path), e.reason))
            progress(f"[{n}/{total}] skipped {e}")
            continue
        clips = list(plan_clips(source, planning.clip_s))
        clips_of[str(path)] = len(clips)
        missing = missing_streams(source)  # said once for the file, not for each clip
        progress(
            f"[{n}/{total}] {path}: {source.duration_s:.1f} s, {len(clips)} clip(s), "
            f"start {source.recorded_at.isoformat()} (from {source.start_origin})"
            + (f"; {missing}" if missing else "")
        )
        for clip in clips:
            add(
                path,
                clip,
                f"  {path.name} clip {clip.index + 1}/{len(clips)} [{clip.offset_s:.0f}-{clip.end_offset_s:.0f} s]",
            )
    for n, folder in enumerate(folders, start=len(files) + 1):
        screen_clips = plan_screen_clips(
            folder, planning.clip_s, planning.screens_closed_before, planning.screens_since
        )
        stored_before.update(
            stored_under_legacy_ids(
                screen_clips, store.get_clips(sorted({sc.legacy_id for sc in screen_clips}))
            )
        )
        clips_of[str(folder)] = len(screen_clips)
        sounds = sum(len(c.audio) for c in screen_clips)
        progress(
            f"[{n}/{total}] {folder}: {sum(len(c.shots) for c in screen_clips)} picture(s)"
            + (f" and {sounds} sound file(s)" if sounds else "")
            + f" in {len(screen_clips)} clip(s) of {planning.clip_s:g} s"
        )
        for k, sc in enumerate(screen_clips, start=1):
            add(
                folder,
                sc.clip,
                f"  {folder.name} clip {k}/{len(screen_clips)} "
                f"[{sc.clip.source.recorded_at.isoformat()}, {len(sc.shots)} shot(s)"
                + (f", {len(sc.audio)} sound(s)]" if sc.audio else "]"),
                sc,
            )
    return IngestPlan(jobs, clips_of)


def observe_job(
    job: ClipJob, perceivers: Perceivers
) -> tuple[ClipObservations | MediaError, float]:
    """The clip's observations, or the ``MediaError`` saying that nothing of it could be decoded,
    and the seconds it took."""
    t0 = time.perf_counter()
    try:
        if job.track is not None:
            obs = ClipObservations(job.clip, (), (), track=job.track)
        elif job.screens is not None:
            obs = observe_screen_clip(job.screens, perceivers)
        else:
            obs = observe_clip(job.clip, perceivers, job.hints)
    except MediaError as e:
        return e, time.perf_counter() - t0
    finally:
        give_back_freed_memory()  # the clip's frames and activations, and what the writer freed meanwhile
    return obs, time.perf_counter() - t0


@dataclass
class _Pending:
    """A memorized clip whose memories are being embedded and committed on the commit thread."""

    job: ClipJob
    obs: ClipObservations
    written: ClipWrite
    observe_s: float
    memorize_s: float
    committed: Future | None = None  # of the seconds its embedding and its commit took


class ClipWriter:
    """Memorizes and commits observed clips in plan order (the caller keeps the order).

    Memorizing and committing are the serial part, in clip order: identity and consolidation depend
    on every earlier clip. Only memorizing runs on the caller's loop. Each clip's memories are
    embedded and then committed on ``commit_pool`` (one thread, so clips commit in order) while the
    next clip is memorized. The memorizer needs no earlier clip committed (it keeps what it wrote
    this run), so the store is the one a fully serial writer gives. At most ``max_pending`` clips
    wait uncommitted (the writer waits beyond that); a crash loses those, and a rerun redoes them.
    After a failed commit no later clip commits. ``max_pending`` 0: each clip is committed before
    the next is observed (a watcher's least memory: perception's and the embedder's peaks apart).
    """

    def __init__(
        self,
        store: Store,
        memorizer: Memorizer,
        report: IngestReport,
        progress: Callable[[str], None] = to_stderr,
        commit_pool: Executor | None = None,
        max_pending: int = 2,
        learn: Callable[[ClipObservations, ClipWrite], None] | None = None,
    ) -> None:
        self.store = store
        self.learn = learn  # told each memorized clip (``pipeline.hints.HintBook.learn``)
        self.memorizer = memorizer
        self.report = report
        self.progress = progress
        self.failed_of: dict[str, int] = {}
        self.max_pending = max(0, max_pending)
        self._own_pool = commit_pool is None
        self.commit_pool = commit_pool or ThreadPoolExecutor(1, thread_name_prefix="mnemo-commit")
        self.pending: deque[_Pending] = deque()
        self._broken = False  # a commit failed: later clips must not commit after the gap

    def failed(self, job: ClipJob, error: MediaError) -> None:
        self.report.clips_failed.append((job.path, error.reason))
        self.failed_of[job.path] = self.failed_of.get(job.path, 0) + 1
        self.progress(f"{job.label} skipped: {error}")

    def write(self, job: ClipJob, obs: ClipObservations, observe_s: float = 0.0) -> None:
        """Memorize the clip now; it is embedded and committed behind, on the commit thread."""
        t0 = time.perf_counter()
        obs, redacted = self.memorizer.redactor.observations(
            obs
        )  # before anything of the clip is kept
        for kind, n in redacted.items():
            self.report.redacted[kind] = self.report.redacted.get(kind, 0) + n
        written = self.memorizer.memorize(obs)
        # entities are the memorizer's live objects, changed again by later clips: commit this clip's state
        written.entities = [replace(e, samples=list(e.samples)) for e in written.entities]
        if written.notes:
            obs = replace(obs, notes=obs.notes + tuple(written.notes))
        if self.learn is not None:
            self.learn(obs, written)
        pending = _Pending(job, obs, written, observe_s, time.perf_counter() - t0)
        self.report.memorize_s += pending.memorize_s
        pending.committed = self.commit_pool.submit(self._embed_and_commit, pending)
        self.pending.append(pending)
        t1 = time.perf_counter()
        self._settle(self.max_pending)  # waits only when embedding and committing fall behind
        self.report.writer_wait_s += time.perf_counter() - t1

    def _embed_and_commit(self, p: _Pending) -> tuple[float, float]:
        """On the commit thread: the clip's memory vectors, then its commit; returns the seconds of each."""
        if self._broken:
            raise RuntimeError(
                f"clip {p.job.clip.index} of {p.job.path} not committed: an earlier clip's commit failed"
            )
        t0 = time.perf_counter()
        written, job = p.written, p.job
        try:
            vectors = self.store.embedder.embed([m.text for m in written.memories])
            t1 = time.perf_counter()
            self.store.commit_clip(
                clip_row(p.obs),
                written.memories,
                written.entities,
                written.edges,
                written.updated,
                vectors=vectors,
            )
            if written.owner_heard:  # its voice is stored now: the people log may name it
                self._mark_owner(written.owner_heard, job.clip.clip_id)
        except OSError as e:
            self._broken = True
            raise OSError(
                e.errno,
                f"writing clip {job.clip.index} of {job.path} to the store {self.store.uri} failed "
                f"({e.strerror or e}); free space or fix permissions and run ingest again: "
                "committed clips are kept and will be skipped",
            ) from e
        except BaseException:
            self._broken = True
            raise
        return t1 - t0, time.perf_counter() - t1

    def _mark_owner(self, voice: str, clip_id: str) -> None:
        """Mark the voice heard alone on the microphone as the owner, unless someone is by now
        (``graph.edit_people.heard_owner``); a failure to write the mark costs only the mark."""
        from graph.edit_people import heard_owner

        try:
            change = heard_owner(self.store, voice, clip_id)
        except OSError as e:
            log.warning("the owner heard on the microphone (%s) was not marked: %s", voice, e)
            return
        if change is not None:
            self.progress(
                f"{voice}, heard on the microphone, is taken to be you (the owner): if not, "
                "mark yourself with `mnemo people me ID`"
            )

    def _settle(self, keep: int) -> None:
        """Account for committed clips in order, waiting until at most ``keep`` are pending; a
        failed commit raises here."""
        while self.pending:
            committed = self.pending[0].committed
            assert committed is not None  # submitted as the clip was queued
            if len(self.pending) <= keep and not committed.done():
                break
            p = self.pending.popleft()
            self._committed(p, *committed.result())

    def _committed(self, p: _Pending, embed_s: float, commit_s: float) -> None:
        written, obs, job = p.written, p.obs, p.job
        self.report.embed_s += embed_s
        self.report.commit_s += commit_s
        for stage, seconds in obs.timings_s.items():
            self.report.stage_s[stage] = self.report.stage_s.get(stage, 0.0) + seconds
        self.report.clips_new += 1
        self.report.memories_new += len(written.memories)
        notes = f"; {job.path}: {'; '.join(obs.notes)}" if obs.notes else ""
        text_lines = sum(len(f.text_lines) for f in obs.frames)
        seen = (
            f"{obs.track.fixes} fix(es), {obs.track.km:.1f} km"
            if obs.track is not None
            else f"{len(obs.speech)} turn(s), {len({t.speaker for t in obs.speech if t.speaker})} "
            f"speaker(s), {len(obs.faces)} face(s) of {len({f.person for f in obs.faces})} people, "
            f"{len(obs.frames)} distinct frame(s), {text_lines} text line(s)"
        )
        self.progress(
            f"{job.label} {seen}, {len(written.memories)} memories in {p.observe_s + p.memorize_s + embed_s + commit_s:.1f} s{notes}"
        )

    def flush(self) -> None:
        """Wait until every memorized clip is committed, in order."""
        self._settle(0)

    def finish(self, planned: IngestPlan) -> None:
        """Commit what is memorized; per file: failed when none of its clips could be decoded;
        then the indexes are refreshed."""
        try:
            self.flush()
        finally:
            self.pending.clear()
            if self._own_pool:
                self.commit_pool.shutdown(wait=True)
            for path, n in planned.clips_of.items():
                if n and self.failed_of.get(path, 0) == n:
                    self.report.files_failed.append(
                        (path, "no clip could be decoded; the file may be truncated or corrupt")
                    )
                else:
                    self.report.files_ingested.append(path)
            if (
                self.report.clips_new
            ):  # also after a failure: what was committed stays searchable by text
                self.store.refresh_indexes()


def write_in_order(
    writer: ClipWriter,
    results: Iterable[tuple[ClipJob, ClipObservations | MediaError, float]],
    after_each: Callable[[], object] | None = None,
) -> None:
    """Write each (job, observations or error, seconds) as it comes; ``after_each`` is called once
    each is handed to the writer."""
    for job, result, seconds in results:
        if isinstance(result, MediaError):
            writer.failed(job, result)
        else:
            writer.write(job, result, seconds)
        if after_each is not None:
            after_each()


@contextmanager
def store_writer(
    who: str,
    paths: list[str],
    store: Store,
    policies: tuple[MatchPolicy, MatchPolicy],
    report: IngestReport,
    planning: Planning,
    *,
    progress: Callable[[str], None] = to_stderr,
    llm_writer: LLMWriter | None = None,
    redactor: Redactor | None = None,
    wait_s: float | None = None,
    contacts: tuple[str, ...] = (),
    max_pending: int = 2,
    learns: bool = True,
) -> Iterator[tuple[IngestPlan, HintBook, ClipWriter]]:
    """The one writer of the sequential and the Ray ingest alike: holds the store's writer lock
    for ``who`` (another writer is waited for, at most ``wait_s``; people are numbered from what
    this one read), plans what is left of ``paths`` and yields the plan, the hint book (told each
    memorized clip when ``learns``) and the ``ClipWriter``, which is finished on the way out,
    after a failure too (what was committed stays searchable by text)."""
    with store.writing(who, wait_s, say=progress):
        planned = plan(paths, store, planning, progress, report)
        book = HintBook(store, contacts)
        writer = ClipWriter(
            store,
            Memorizer(store, *policies, llm_writer=llm_writer, redactor=redactor),
            report,
            progress,
            max_pending=max_pending,
            learn=book.learn if learns else None,
        )
        try:
            yield planned, book, writer
        finally:
            writer.finish(planned)


def ingest(
    paths: list[str],
    store: Store,
    perceivers: Perceivers,
    policies: tuple[MatchPolicy, MatchPolicy],
    clip_s: float = 30.0,
    start: datetime | None = None,
    progress: Callable[[str], None] = to_stderr,
    llm_writer: LLMWriter | None = None,
    screens_closed_before: datetime | None = None,
    screens_since: datetime | None = None,
    redactor: Redactor | None = None,
    wait_s: float | None = None,
    stop: threading.Event | None = None,
    contacts: tuple[str, ...] = (),
    serial: bool = False,
    after_each: Callable[[], object] | None = None,
) -> IngestReport:
    """Ingest recordings (files, or media files found in folders) and folders of screenshots, one
    clip at a time in this process. Another process writing the store is waited for, at most
    ``wait_s`` (``StoreBusy`` then; None: until it is done). Once ``stop`` is set no further clip is
    begun (the one in hand is committed; a rerun resumes at the next): a watcher told to end by its
    dead daemon ends within a clip, not after its whole backlog. ``contacts``: names the
    recogniser is told to expect, spelled as given (``pipeline.hints``). ``serial``: each clip is
    embedded and committed before the next is observed (``ClipWriter``'s ``max_pending`` 0);
    ``after_each`` is called after each clip is handed to the writer (a watcher trims its heap)."""
    report = IngestReport()
    with store_writer(
        "mnemo ingest",
        paths,
        store,
        policies,
        report,
        Planning(clip_s, start, screens_closed_before, screens_since),
        progress=progress,
        llm_writer=llm_writer,
        redactor=redactor,
        wait_s=wait_s,
        contacts=contacts,
        max_pending=0 if serial else 2,
        learns=True,
    ) as (planned, book, writer):
        jobs = (
            planned.jobs if stop is None else takewhile(lambda _: not stop.is_set(), planned.jobs)
        )
        # each clip's hints are taken when it is observed: after every earlier clip is memorized
        hinted = (book.hinted(job) for job in jobs)
        write_in_order(writer, ((job, *observe_job(job, perceivers)) for job in hinted), after_each)
    return report
