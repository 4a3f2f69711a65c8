"""Fault scenarios: processes killed and folders that are the user's.

- ``killed_watcher`` (``processes_watcher``): the capture daemon (``mnemo capture --ingest`` on a
  real X display, Xvfb) runs its watcher under ``mnemo.supervise``. The watcher is SIGKILLed while
  frames arrive: it must come back and ingest the frames written while it was dead; then the daemon
  is SIGKILLed: no process of its tree may stay.
- ``killed_ray_worker`` (``processes_ray``): ``mnemo ingest --ray`` against a local Ray (one
  ``ray start`` for all tries, 127.0.0.1 only) of a real call (pyannote's sample.wav, two 15 s
  clips); a perception worker is SIGKILLed from outside mid-ingest. The ingest must finish with
  every clip stored once and the store equal to a sequential ingest; once this run's Ray processes
  are stopped as ``ray stop`` does (SIGTERM, SIGKILL after 16 s; never ``ray stop`` itself, which
  ends every Ray of the user's) none may be left. Not run without the ``[ray]`` extra.
- ``capture_foreign_folder`` (``processes_folders``): ``mnemo capture --out`` on a folder of the
  user's refuses and changes nothing; in a marked capture folder, the recovery the daemon runs at
  start deletes only its own leftovers, never the user's files beside them.
- ``forget_users_folder`` (``processes_folders``): a folder of the user's photos is ingested, then
  ``mnemo forget --yes`` over all, part or none of their time: the clips' memories go, every file of
  the folder stays.

Every mnemo here runs as a real process. ``prelude`` (Python run in that process before mnemo's
``main``) is the seam the tests use to break a guard inside it; the bench passes none. What the
scenarios share is in ``processes_kit``.
"""

from __future__ import annotations

from bench.faults import by_name
from bench.faults.processes_folders import capture_foreign_folder, forget_users_folder
from bench.faults.processes_ray import killed_ray_worker
from bench.faults.processes_watcher import killed_watcher

SCENARIOS = by_name(killed_watcher, killed_ray_worker, capture_foreign_folder, forget_users_folder)
