"""``mnemo ingest --ray``: the sequential ingest's stages, with perception on a Ray Data actor pool.

- The driver plans (``pipeline.ingest.plan``): probes files, cuts clips, skips committed ones and
  numbers the rest in memorizing order.
- Perception runs in ``Perceive`` actors (``map_batches`` with a callable class and a fixed pool):
  each loads its models once, with ``num_cpus`` CPUs (and ``num_gpus``) and its libraries' threads
  matched to them. A clip whose media is broken comes back as a ``MediaError`` row, never dropped;
  an actor that dies is restarted and its clip retried, until the clip has killed ``MAX_DEATHS``
  actors: then it comes back failed, with the reason, and the rest of the ingest goes on.
- The driver memorizes and commits (``ClipWriter``), one clip at a time in sequence order: results
  arrive in any order and wait in a reorder buffer. LanceDB's ``write_lance`` is not used: the
  memory store commits per clip, so a crash loses at most the clip in flight and a rerun resumes at
  the first uncommitted clip.

Media paths and the store must be reachable from every worker (a shared path, or ``s3://``).
"""

from __future__ import annotations

import os
import pickle
import socket
from collections.abc import Callable
from datetime import datetime

from graph.store import Store
from memorize.identity import MatchPolicy
from memorize.writer_llm import LLMWriter
from perception.errors import MediaError
from perception.malloc import limit_malloc
from perception.observe import Perceivers
from perception.records import ClipObservations
from pipeline.ingest import (
    IngestReport,
    Planning,
    observe_job,
    store_writer,
    to_stderr,
    write_in_order,
)
from ray_jobs.order import in_order

# the caller's recipe for the perceivers (picklable: it travels to every actor), called with the
# CPUs Ray gave the actor so every library's threads match them (``mnemo.wiring.perceivers_factory``)
BuildPerceivers = Callable[[int], Perceivers]


# a clip whose worker died this many times is recorded as failed instead of tried again: it would
# otherwise kill worker after worker (a decoder crash, memory it cannot have) and fail the ingest
MAX_DEATHS = 3
MAX_RESTARTS = (
    10 * MAX_DEATHS
)  # per worker: room for ten clips that kill it, not for endless crashes


class Attempts:
    """A small Ray actor counting the attempts at each clip, across workers and their restarts."""

    def __init__(self) -> None:
        self.seen: dict[int, int] = {}

    def attempt(self, seq: int) -> int:
        self.seen[seq] = self.seen.get(seq, 0) + 1
        return self.seen[seq]


class Perceive:
    """A Ray Data actor: builds the perceivers once, then observes one clip job per row. A clip
    whose earlier attempts each ended with the worker's death (``attempts`` counts them) comes
    back as a failure instead of being tried again."""

    def __init__(self, build: BuildPerceivers, threads: int, attempts=None) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        limit_malloc()
        self.perceivers = build(
            threads
        )  # threads matched to this actor's CPUs: workers do not oversubscribe
        self.attempts = attempts

    def __call__(self, batch: dict) -> dict:
        import ray

        seqs, results, seconds = [], [], []
        for seq, blob in zip(batch["seq"], batch["job"]):
            job = pickle.loads(blob)
            # a task is retried only when its attempt gave no result: its worker died
            tries = (
                ray.get(self.attempts.attempt.remote(int(seq))) if self.attempts is not None else 1
            )
            result: ClipObservations | MediaError
            if tries > MAX_DEATHS:
                result, took = (
                    MediaError(
                        job.path,
                        f"{job.label}: its perception worker died {MAX_DEATHS} times "
                        "on it (out of memory, or a crash in a native library); the clip is "
                        "skipped, the rest is ingested",
                    ),
                    0.0,
                )
            else:
                result, took = observe_job(job, self.perceivers)
            seqs.append(int(seq))
            results.append(
                pickle.dumps(result)
            )  # a MediaError too: a broken clip is a row, not a gap
            seconds.append(took)
        n = len(seqs)
        # the node's id, not its host name: two nodes of one machine (or of one container image) share a name
        worker = f"{os.uname().nodename} node {ray.get_runtime_context().get_node_id()[:8]} pid {os.getpid()}"
        return {
            "seq": seqs,
            "result": results,
            "seconds": seconds,
            "worker": [worker] * n,
            "rss_mb": [peak_rss_mb()] * n,
        }


def peak_rss_mb() -> float:
    """This process's peak resident memory in MiB (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def loopback_only() -> None:
    """Keep a local Ray (started after this) on 127.0.0.1: it serves this process only. Ray turns a
    node address of 127.0.0.1 into the machine's network address (``resolve_ip_for_localhost``)
    unless its single-machine switch is off, which the driver reads when ray is imported and Ray's
    own processes read from the environment they inherit."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def connect(
    address: str | None, workers: int | None, progress: Callable[[str], None] = to_stderr
) -> int:
    """Join the cluster at ``address`` ("auto" or host:port), or start a local Ray with this
    machine's CPUs; returns how many perception workers to run."""
    import ray

    if not ray.is_initialized():
        if address:
            _join(address, progress)
        else:
            loopback_only()
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    return max(1, workers or cpus)


JOIN_TRIES = 2
ANSWER_S = 5.0  # how long a head's port may take to accept a connection


def answers(address: str, timeout_s: float = ANSWER_S) -> None:
    """Raise ``ConnectionError`` at once when nothing accepts a connection at ``address``
    (``host:port`` or ``ray://host:port``; "auto" and other forms are left to Ray): Ray itself
    waits a minute a try for a head that is not there."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit() or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        raise ConnectionError(
            f"nothing answers at {address} ({e.strerror or e}): is `ray start --head` running "
            f"there, and is {address} its address?"
        ) from e


def _join(address: str, progress: Callable[[str], None] = to_stderr) -> None:
    """``ray.init`` at ``address``, tried again once: a head that has just started (or is busy) can
    answer before its node is registered, and Ray gives up on it after a minute. Ray's own error
    says only "Failed to connect"; the one raised here carries why. (``ingest_ray`` has checked
    that something ``answers`` there before planning.)"""
    import ray

    for attempt in range(1, JOIN_TRIES + 1):
        try:
            ray.init(address=address, log_to_driver=False)
            return
        except ConnectionError as e:
            why = f"{e}: {e.__cause__}" if e.__cause__ else str(e)
            if attempt == JOIN_TRIES:
                raise ConnectionError(
                    f"{why} (is `ray start --head` running there, and is {address} its address?)"
                ) from e
            progress(f"Ray at {address} did not take this driver ({why}); trying again")


def ingest_ray(
    paths: list[str],
    store: Store,
    perceivers: BuildPerceivers,
    policies: tuple[MatchPolicy, MatchPolicy],
    clip_s: float = 30.0,
    start: datetime | None = None,
    progress: Callable[[str], None] = to_stderr,
    llm_writer: LLMWriter | None = None,
    workers: int | None = None,
    address: str | None = None,
    gpus_per_worker: float = 0.0,
    actor: type | None = None,
    redactor=None,
    wait_s: float | None = None,
    contacts: tuple[str, ...] = (),
) -> IngestReport:
    """Ingest as ``pipeline.ingest.ingest`` does, with perception on ``workers`` Ray actors of class
    ``actor`` (default ``Perceive``; the fault tests pass one that dies), each building its
    perceivers with ``perceivers(cpus)`` (``mnemo.wiring.perceivers_factory``); ``wait_s`` and
    ``contacts`` as there. Clips are perceived side by side, so each is told the names known when
    the run was planned (and those on screen that day), not those its earlier clips establish."""
    import ray
    import ray.data

    if address and not ray.is_initialized():
        answers(address)  # before planning: a wrong address is said at once

    report = IngestReport()
    with store_writer(
        "mnemo ingest --ray",
        paths,
        store,
        policies,
        report,
        Planning(clip_s, start),
        progress=progress,
        llm_writer=llm_writer,
        redactor=redactor,
        wait_s=wait_s,
        contacts=contacts,
        learns=False,  # every clip's hints are taken before the first is memorized
    ) as (planned, book, writer):
        if planned.jobs:
            n = min(connect(address, workers, progress), len(planned.jobs))
            cpus = max(1, int(ray.cluster_resources().get("CPU", 1)) // n)
            progress(
                f"perception on {n} Ray worker(s), {cpus} CPU(s) each; memorizing here in clip order"
            )
            ray.data.DataContext.get_current().enable_progress_bars = False
            items = [
                {"seq": job.seq, "job": pickle.dumps(book.hinted(job))} for job in planned.jobs
            ]
            # one clip in flight per actor: a free actor takes the next clip, instead of clips queued
            # early behind a busy one (clips differ in cost: the last ones otherwise run on one actor)
            rows = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                actor or Perceive,
                batch_size=1,
                compute=ray.data.ActorPoolStrategy(size=n, max_tasks_in_flight_per_actor=1),
                fn_constructor_args=(
                    perceivers,
                    cpus,
                    ray.remote(num_cpus=0)(Attempts).remote(),
                ),
                num_cpus=cpus,
                num_gpus=gpus_per_worker or None,
                # a dead worker is restarted and its clip retried (Ray also
                # spends retries on a worker still restarting) until the clip
                # has killed MAX_DEATHS of them: then Perceive fails it. A
                # worker that keeps dying before any clip (its models do not
                # load) ends the ingest after MAX_RESTARTS
                max_restarts=MAX_RESTARTS,
                max_task_retries=-1,
            )
            write_in_order(writer, _results(planned.jobs, rows, report))
    report.peak_rss_mb["driver"] = peak_rss_mb()  # after the last commit and index refresh
    return report


def _results(jobs: list, rows, report: IngestReport):
    """(job, observations or error, seconds) in sequence order; each worker's peak memory noted."""
    for r in in_order((int(r["seq"]), r) for r in rows.iter_rows()):
        worker = f"perception worker {r['worker']}"
        report.peak_rss_mb[worker] = max(report.peak_rss_mb.get(worker, 0.0), float(r["rss_mb"]))
        report.clips_by_worker[worker] = report.clips_by_worker.get(worker, 0) + 1
        yield jobs[r["seq"]], pickle.loads(r["result"]), float(r["seconds"])
