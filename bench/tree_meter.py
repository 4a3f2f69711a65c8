"""CPU seconds and resident memory of a process and every process under it (``TreeMeter``), and
the same minute by minute (``PerMinute``): how ``bench capture`` and ``bench serve`` measure a
daemon with its children."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path


class TreeMeter:
    """CPU seconds and resident memory of a process and every process under it.

    - CPU (``cpu_s``): user and system time of the root and its live descendants, plus the time of
      the children each of them has waited for (``children_user``/``children_system``: an ingest
      child, or one it ran, that has exited). A descendant that exits unwaited, orphaned to init, is
      lost; ``mnemo capture`` waits for its watcher.
    - Memory: a thread samples the tree every ``every_s`` while the meter runs; ``peak_rss_mb`` is
      the highest summed RSS of the tree in one sample (a spike shorter than ``every_s`` may be
      missed), ``root_peak_rss_mb`` the root's own peak as the kernel kept it (VmHWM).
      ``peak_at`` is when that sample was taken and ``peak_by`` what each process held in it (by
      ``_label``), so that a peak can be told apart from the steady state and put on one process.
      ``peak_pss_mb`` is the same of the summed PSS (proportional set size: a page shared by n
      processes counts 1/n in each), where the RSS counts the libraries the daemon and its watcher
      both map twice.
    """

    def __init__(self, pid: int, every_s: float = 0.25) -> None:
        import psutil

        self.root = psutil.Process(pid)
        self.every_s = every_s
        self.peak_rss_mb = 0.0
        self.peak_at: float | None = None  # time.time() of the sample with the peak RSS
        self.peak_by: dict[str, float] = {}  # MB each process held in it
        self.peak_pss_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def members(self) -> list:
        import psutil

        try:
            return [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def _each(self, what: Callable) -> float:
        import psutil

        total = 0.0
        for p in self.members():
            try:
                total += what(p)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):  # gone between listing and reading
                pass
        return total

    def cpu_s(self) -> float:
        """The tree's CPU seconds so far."""
        return self._each(
            lambda p: sum(p.cpu_times()[:4])
        )  # user, system, children_user, children_system

    def root_cpu_s(self) -> float:
        """The root's own CPU seconds so far (its children apart)."""
        t = self.root.cpu_times()
        return t.user + t.system

    def rss_mb(self) -> float:
        """The tree's summed resident memory now."""
        return sum(self._rss_by().values())

    def pss_mb(self) -> float:
        """The tree's summed proportional set size now (0 where the kernel does not give it)."""
        return self._each(lambda p: _pss_kb(p.pid)) / 1024

    def root_peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.root.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def _rss_by(self) -> dict:
        """Each live process of the tree (a ``psutil.Process``) -> its resident memory now, MB."""
        import psutil

        out = {}
        for p in self.members():
            try:
                out[p] = p.memory_info().rss / 2**20
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
        return out

    def _sample(self) -> None:
        while True:
            by = self._rss_by()
            total = sum(by.values())
            if total > self.peak_rss_mb:  # labelled only here: a new peak is rare, samples are not
                self.peak_rss_mb, self.peak_at = total, time.time()
                self.peak_by = {_label(p): round(mb, 1) for p, mb in by.items()}
            self.peak_pss_mb = max(self.peak_pss_mb, self.pss_mb())
            if self._stop.wait(self.every_s):
                return

    def start(self) -> TreeMeter:
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def _label(p) -> str:
    """A process as a person reads it in a report: its program and first argument ("mnemo watch")
    and its pid."""
    import psutil

    try:
        args = p.cmdline() or [p.name()]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        args = ["gone"]  # exited since the sample that held it
    # python -m mnemo watch ... -> mnemo watch
    if len(args) > 2 and args[1] == "-m":
        args = args[2:]
    return f"{' '.join(Path(a).name for a in args[:2])} ({p.pid})"


def _pss_kb(pid: int) -> float:
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:  # gone, or a kernel without it
        return 0.0
    return next(
        (float(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:")), 0.0
    )


class PerMinute:
    """Each minute: the tree's CPU over it (% of one core) and its resident memory at its end."""

    def __init__(self, meter: TreeMeter) -> None:
        self.meter = meter
        self.cpu_pct: list[float] = []
        self.rss_mb: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> PerMinute:
        self._thread.start()
        return self

    def _run(self) -> None:
        last, at = self.meter.cpu_s(), time.time()
        while not self._stop.wait(60.0):
            now, cpu = time.time(), self.meter.cpu_s()
            self.cpu_pct.append(round(100 * (cpu - last) / (now - at), 2))
            self.rss_mb.append(round(self.meter.rss_mb(), 1))
            last, at = cpu, now

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
