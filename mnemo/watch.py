"""Live ingestion of a capture folder: each 30 s screenshot clip is ingested once it has closed,
so what was on screen a minute ago can be asked about while capture runs.

The models load once; every ``poll_s`` the folder is planned again with clips still open left for
later and clips older than the last one looked at skipped without hashing. A clip that fails (a
broken image) is reported and not retried in this run; committed clips are skipped on a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from graph.store import Store
from memorize.identity import MatchPolicy
from mnemo.forgetting import apply_retention
from perception.observe import Perceivers
from pipeline.ingest import ingest

log = logging.getLogger(__name__)


@dataclass
class WatchReport:
    polls: int = 0
    clips_new: int = 0
    clips_failed: int = 0
    memories_new: int = 0
    lag_s: list[float] = field(default_factory=list)  # per ingested clip: seconds from its last screenshot to searchable


def watch(folder: str | Path, store: Store, perceivers: Perceivers, policies: tuple[MatchPolicy, MatchPolicy],
          clip_s: float = 30.0, poll_s: float = 5.0, settle_s: float = 1.0, duration_s: float | None = None,
          stop: threading.Event | None = None, say: Callable[[str], None] = print,
          retention_days: float = 0.0, max_store_gb: float = 0.0, redactor=None) -> WatchReport:
    """Ingest closed screenshot clips under ``folder`` until ``stop`` is set or ``duration_s`` passed;
    after each ingest, clips past ``retention_days`` or beyond ``max_store_gb`` are forgotten."""
    stop = stop or threading.Event()
    folder = Path(folder)
    report = WatchReport()
    since: datetime | None = None  # the first poll looks at everything (resumes after a restart)
    end = time.monotonic() + duration_s if duration_s else float("inf")
    while not stop.is_set():
        closed = datetime.fromtimestamp(time.time() - settle_s, timezone.utc)
        if folder.is_dir():
            run = ingest([str(folder)], store, perceivers, policies, clip_s=clip_s, progress=log.debug,
                         screens_closed_before=closed, screens_since=since, redactor=redactor)
            report.polls += 1
            report.clips_new += run.clips_new
            report.clips_failed += len(run.clips_failed)
            report.memories_new += run.memories_new
            for path, reason in run.clips_failed:
                say(f"watch: a clip of {path} failed: {reason}")
            if run.clips_new:
                lag = time.time() - (closed.timestamp() // clip_s) * clip_s
                report.lag_s.append(lag)
                say(f"watch: {run.clips_new} clip(s), {run.memories_new} memories ingested; the newest closed "
                    f"{lag:.0f} s ago")
            if run.clips_new and (retention_days or max_store_gb):
                gone = apply_retention(store, retention_days, max_store_gb)
                if any(gone.values()):
                    say(f"watch: forgot {gone['expired_clips']} clip(s) past the retention of {retention_days:g} "
                        f"days and {gone['budget_clips']} to stay within {max_store_gb:g} GB")
            # the next poll starts at the first window that was still open
            since = datetime.fromtimestamp((closed.timestamp() // clip_s) * clip_s, timezone.utc)
        if time.monotonic() >= end:
            break
        stop.wait(min(poll_s, max(0.0, end - time.monotonic())))
    return report
