"""Live ingestion of a capture folder: each 30 s screenshot clip is ingested once it has closed,
so what was on screen and said a minute ago can be asked about while capture runs.

The models load once. The first look plans the whole folder (a restart resumes there); from then
on the watcher follows file events (inotify, through watchfiles) and plans only the day folders
that gained a frame or a sound file, once that file's 30 s window has closed and ``settle_s`` more
have passed: the daemon stores a window's sound up to about 3 s after the window ends
(``perception.capture.audio``), so the default waits 4 s, and a window is ingested with its
frames and its sound together. A sound file names its window, so a window heard in front of a
still screen (sound, no frame) is due as soon as its sound is there. An idle folder is never read
again, however many days it holds. Clips still open are left for later and clips older than the
last one looked at are skipped without hashing. Where file events cannot be had, it looks every ``poll_s``
instead, and says so. A clip that fails (a broken image) is reported and not retried in this run;
committed clips are skipped on a restart.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from embeddings.base import TextEmbedder
from graph.store import Store
from memorize.identity import MatchPolicy
from mnemo.forget_with_media import apply_retention, drop_ingested_sound
from perception.capture.owned import audio_of
from perception.observe import Perceivers
from perception.sources.frames import is_image_file
from perception.sources.screenshots import is_capture_audio
from pipeline.ingest import ingest

log = logging.getLogger(__name__)

# after a window closes, how long its files may still be coming: the daemon stores a window's sound
# within about 3 s of its end (it finds the speech in it first)
SETTLE_S = 4.0


@dataclass
class WatchReport:
    polls: int = 0
    clips_new: int = 0
    clips_failed: int = 0
    memories_new: int = 0
    lag_s: list[float] = field(
        default_factory=list
    )  # per ingested clip: seconds from its last screenshot to searchable


def watch(
    folder: str | Path,
    store: Store,
    perceivers: Perceivers,
    policies: tuple[MatchPolicy, MatchPolicy],
    clip_s: float = 30.0,
    poll_s: float = 5.0,
    settle_s: float = SETTLE_S,
    duration_s: float | None = None,
    stop: threading.Event | None = None,
    say: Callable[[str], None] = print,
    retention_days: float = 0.0,
    max_store_gb: float = 0.0,
    redactor=None,
    events: bool = True,
    release_after_s: float = 0.0,
    fresh: Callable[[], tuple[Perceivers, TextEmbedder]] | None = None,
    keep_sound: bool = True,
) -> WatchReport:
    """Ingest closed screenshot clips (with their sound) under ``folder`` until ``stop`` is set or
    ``duration_s`` passed, each ``settle_s`` after its window closed (its sound is written after the
    window ends; see the module's docstring); after each ingest, clips past ``retention_days`` or beyond ``max_store_gb`` are forgotten.
    ``events=False`` looks every ``poll_s`` instead of following file events. After
    ``release_after_s`` without a clip to ingest (0: never), the models loaded so far are let go:
    ``fresh()`` gives perceivers and a text embedder that load again on first use, in place of
    those used so far, whose memory goes back to the system. ``keep_sound=False`` (``[capture]
    keep_audio = 0``): the capture daemon's sound of each clip committed is deleted, its
    transcript kept."""
    stop = stop or threading.Event()
    folder = Path(folder)
    report = WatchReport()
    end = time.monotonic() + duration_s if duration_s else float("inf")
    # folder -> (when the earliest window it gained a frame in closes, when the latest does), + settle_s
    due: dict[Path, tuple[float, float]] = {folder: (0.0, 0.0)}
    # folder -> the first window still open at its last look: earlier ones are skipped without hashing
    since: dict[Path, datetime | None] = {}
    first: datetime | None = None  # since, for folders the first look (of everything) covered
    last_ingest: float | None = None  # monotonic; None: nothing loaded since the last release
    for changed in _changes(folder, stop, poll_s, events, say):
        now = time.time()
        if (
            release_after_s
            and fresh is not None
            and last_ingest is not None
            and time.monotonic() - last_ingest >= release_after_s
        ):
            perceivers, store.embedder = fresh()
            gc.unfreeze()  # the models let go are the collector's again (``release_memory``)
            released = release_memory()
            last_ingest = None
            log.info("watch: models let go after %.0f s idle (%s)", release_after_s, released)
        if changed is None:  # looking, not following events: everything is due
            due[folder] = (0.0, 0.0)
        window_end = (now // clip_s + 1) * clip_s + settle_s
        for path in changed or ():
            # a frame, a sound or a sidecar was written: its folder; a new folder (a new day): the
            # folder itself, as frames written into it before its watch was set up raise no event
            where = (
                path.parent
                if is_image_file(path) or is_capture_audio(path) or path.name.endswith(".json")
                else path
                if path.is_dir()
                else None
            )
            # a sound is written after its window closed, and names it: due once it has settled
            heard = audio_of(path.name)
            ends = (heard[0].timestamp() // clip_s + 1) * clip_s + settle_s if heard else window_end
            if where is not None:
                earliest, latest = due.get(where, (ends, ends))
                due[where] = (min(earliest, ends), max(latest, ends))
        ready = sorted(p for p, (earliest, _) in due.items() if earliest <= now)
        if ready and folder.is_dir():
            closed = datetime.fromtimestamp(now - settle_s, UTC)
            opened = datetime.fromtimestamp((closed.timestamp() // clip_s) * clip_s, UTC)
            for p in ready:
                latest = due.pop(p)[1]
                if (
                    latest > now
                ):  # it has frames in the window still open: look again when that closes
                    due[p] = (latest, latest)
            ready = [
                p for p in ready if not any(q in p.parents for q in ready)
            ]  # a new month and its new day
            starts = [since.get(p, first) for p in ready]
            known = [s for s in starts if s is not None]
            looked_at = _ingest(
                [p for p in ready if p.is_dir()],
                closed,
                min(known) if len(known) == len(starts) else None,
                store,
                perceivers,
                policies,
                clip_s,
                report,
                say,
                retention_days,
                max_store_gb,
                redactor,
                stop,
                keep_sound,
            )
            if looked_at:  # perception ran: models are loaded, and its garbage can go back
                last_ingest = time.monotonic()
                log.debug("watch: after the ingest, %s", release_memory())
            for p in ready:
                since[p] = opened
            if (
                first is None and folder in ready
            ):  # the first look: frames written while it ran raised no
                first = opened  # event yet, so everything is looked at once more
                due[folder] = (window_end, window_end)
        if time.monotonic() >= end:
            break
    return report


# the watcher's malloc: blocks up to this size come from the heap, and freed heap stays with the
# process until trimmed after each clip (``watch_malloc``)
HEAP_BLOCKS = 32 << 20


def watch_malloc() -> list[str]:
    """glibc's allocator set for a watcher: ``limit_malloc`` with blocks up to ``HEAP_BLOCKS`` served
    from the heap and the heap kept until ``release_memory`` trims it after each clip. With the
    CLI's lower thresholds (4 MB, trimmed past 1 MB), each line the OCR recognises maps its
    buffers afresh and the kernel faults in and zeroes every page of them again: on 8 replayed
    screenshot clips, 12.8 million page faults and 28 s of system time beside 55 s of user time;
    with these, 1.4 million and 6 s, for 50 to 125 MB more at the peak (docs/benchmarks.md)."""
    from perception.malloc import limit_malloc

    return limit_malloc(mmap_threshold=HEAP_BLOCKS, trim_threshold=HEAP_BLOCKS)


def release_memory() -> str:
    """Collect garbage and hand freed heap back to the system (glibc's malloc_trim); says how much
    resident memory this process holds after.

    The first call (after the first clip: the libraries imported, the models loaded) then moves
    what is alive out of the collector's sight (``gc.freeze``), so that each later collection looks
    at what came since, not at the million objects that stay: they took 0.17 s a clip, 7 % of the
    watcher's CPU on a replayed quarter hour of ``bench capture``'s desktop. Frozen objects are
    still freed when nothing refers to them; only a cycle among them waits for ``gc.unfreeze``,
    which the watch calls when it lets the models go."""
    from perception.malloc import give_back_freed_memory

    gc.collect()
    if not gc.get_freeze_count():
        gc.freeze()
    give_back_freed_memory()  # not glibc: the allocator keeps what it keeps
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return "resident memory unknown"
    rss = next((line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")), "?")
    return f"{rss} kB resident"


def _ingest(
    folders: list[Path],
    closed: datetime,
    since: datetime | None,
    store: Store,
    perceivers: Perceivers,
    policies: tuple[MatchPolicy, MatchPolicy],
    clip_s: float,
    report: WatchReport,
    say: Callable[[str], None],
    retention_days: float,
    max_store_gb: float,
    redactor,
    stop: threading.Event | None = None,
    keep_sound: bool = True,
) -> int:
    """Ingest what closed in ``folders``; returns how many clips perception ran on."""
    run = ingest(
        [str(f) for f in folders],
        store,
        perceivers,
        policies,
        clip_s=clip_s,
        progress=log.debug,
        screens_closed_before=closed,
        screens_since=since,
        redactor=redactor,
        stop=stop,
        serial=True,  # the OCR's and the text embedder's peaks of memory one after the other
        after_each=release_memory,  # the heap kept (watch_malloc) is a clip's, not a backlog's
    )
    report.polls += 1
    report.clips_new += run.clips_new
    report.clips_failed += len(run.clips_failed)
    report.memories_new += run.memories_new
    for path, reason in run.clips_failed:
        say(f"watch: a clip of {path} failed: {reason}")
    if run.clips_new:
        lag = time.time() - (closed.timestamp() // clip_s) * clip_s
        report.lag_s.append(lag)
        say(
            f"watch: {run.clips_new} clip(s), {run.memories_new} memories ingested; the newest closed "
            f"{lag:.0f} s ago; OCR {run.stage_s.get('ocr_s', 0.0):.1f} s"
        )
    if run.clips_new and not keep_sound:
        dropped = drop_ingested_sound(store, folders)
        if dropped:
            say(f"watch: {dropped} sound file(s) ingested and deleted (keep_audio = 0)")
    if run.clips_new and (retention_days or max_store_gb):
        gone = apply_retention(store, retention_days, max_store_gb)
        if any(gone.values()):
            say(
                f"watch: forgot {gone['expired_clips']} clip(s) past the retention of {retention_days:g} "
                f"days and {gone['budget_clips']} to stay within {max_store_gb:g} GB"
            )
    return run.clips_new + len(run.clips_failed)


def _changes(
    folder: Path, stop: threading.Event, poll_s: float, events: bool, say: Callable[[str], None]
) -> Iterator[set[Path] | None]:
    """Once a second at most: the paths written under ``folder`` since the last yield (often none),
    from file events; or, where those cannot be had, None every ``poll_s`` (look at everything)."""
    yield set()  # the first look
    while events and not stop.is_set():
        if not folder.is_dir():  # not made yet: the daemon makes it when it starts
            stop.wait(min(poll_s, 1.0))
            yield set()
            continue
        try:
            import watchfiles

            for changes in watchfiles.watch(
                folder,
                stop_event=stop,
                rust_timeout=1000,
                yield_on_timeout=True,
                debounce=200,
                step=50,
                raise_interrupt=False,
            ):
                yield {Path(p) for change, p in changes if change != watchfiles.Change.deleted}
            return
        except (
            ImportError,
            OSError,
            RuntimeError,
        ) as e:  # no watchfiles; inotify watches used up; folder gone
            say(
                f"watch: cannot follow file events in {folder} ({e}); looking every {poll_s:g} s instead"
            )
            break
    while not stop.wait(poll_s):
        yield None
