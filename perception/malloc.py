"""glibc's allocator made to give back what a process frees: settings for a whole process that
ingests (the CLI's, the watcher's, a Ray perception worker's), and a mode for the models whose
activations are few and large (text detection, the lean text embedder). In ``perception``, the
lowest package that runs models, so that the models and the processes above them share it."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

M_ARENA_MAX, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD = -8, -3, -1  # glibc's mallopt parameters
MAPPED_BLOCKS = 1 << 20  # blocks_mapped's threshold
_set_threshold: list[int] = []  # the mmap threshold limit_malloc set in this process, if it did


@lru_cache(maxsize=1)
def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def limit_malloc(
    arenas: int = 2, mmap_threshold: int = 4 << 20, trim_threshold: int = 1 << 20
) -> list[str]:
    """Make glibc's malloc give back what an ingest frees; a setting the user made in the
    environment is left as it is. Returns the settings made (none where the C library is not glibc).

    - ``arenas``: each thread that allocates (the models' thread pools, the commit thread) otherwise
      gets an arena of its own, and what it frees there (decoded frames, image batches) stays in
      the process.
    - ``mmap_threshold``: blocks from this size on are mapped and unmapped by themselves. glibc's
      own threshold rises to the largest block freed (up to 32 MB), after which loading a model and
      each clip's frames and activations fragment the heap and stay resident. Much lower, a
      decoded frame is mapped and faulted in anew each time, which is slower.
    - ``trim_threshold``: free memory at the top of the heap past this is returned at once.
    """
    done = []
    try:
        libc = _libc()
        # each setting, its mallopt parameter, and the variable that sets it before the program starts
        for name, param, variable, value in (
            ("arenas", M_ARENA_MAX, "MALLOC_ARENA_MAX", arenas),
            ("mmap_threshold", M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", mmap_threshold),
            ("trim_threshold", M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", trim_threshold),
        ):
            if variable not in os.environ and libc.mallopt(param, value):
                done.append(name)
                if param == M_MMAP_THRESHOLD:
                    _set_threshold[:] = [value]
    except (OSError, AttributeError):
        pass
    return done


@contextmanager
def blocks_mapped(threshold: int = MAPPED_BLOCKS) -> Iterator[None]:
    """Within: blocks from ``threshold`` on are mapped and unmapped by themselves; after,
    ``limit_malloc``'s threshold again, and the heap's free pages handed back (``malloc_trim``).
    For a model whose activations are few and large (text detection, the lean text embedder): from
    the heap they leave it fragmented and resident. A block the heap's free space can hold still
    comes from there, so in a process that has run other models the gain is smaller (measured in
    docs/benchmarks.md).
    Nothing changes where ``limit_malloc`` set no threshold (the user set one, or the C library is
    not glibc) or a lower one. Process-wide while it lasts: another thread's large blocks are
    mapped too."""
    if not _set_threshold or threshold >= _set_threshold[0]:
        yield
        return
    libc = _libc()
    libc.mallopt(M_MMAP_THRESHOLD, threshold)
    try:
        yield
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, _set_threshold[0])
        give_back_freed_memory()


def give_back_freed_memory() -> bool:
    """Return the free memory inside glibc's heaps to the system (``malloc_trim``), not only at their
    top: what the blocks under the mapping threshold leave free between live ones. Called after
    each clip, so the resident size follows what the next clip needs. Returns False where the C library is not glibc."""
    try:
        _libc().malloc_trim(0)  # its result says only whether something was returned
        return True
    except (OSError, AttributeError):
        return False
