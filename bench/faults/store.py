"""Fault scenarios of the store: a writer killed mid-commit, a forget killed part-way, a full disk.

Each fault is done for real: writers and ``mnemo forget`` run as child processes that ``SIGKILL``
themselves at a named step of a commit (``graph.commit.step``) or of a forget (``graph.forget_store.step``),
and the full disk is a small tmpfs mounted in a private mount namespace (``unshare -rm``). What was
left is then read back: the store through a fresh ``Store``, the journal and capture folders on
disk, the user's files by their hashes, the forgotten text by grepping every file under the store.

``kill_commit`` and ``kill_forget`` are in ``store_kills``, ``full_disk`` in ``store_disk``, what
they share (the synthetic clips, the child processes, the readers) in ``store_kit``.
"""

from __future__ import annotations

from bench.faults import by_name
from bench.faults.store_disk import full_disk
from bench.faults.store_kills import kill_commit, kill_forget

SCENARIOS = by_name(kill_commit, kill_forget, full_disk)
