"""Settings for a whole process that ingests (the CLI's, a Ray perception worker's)."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from functools import lru_cache

M_ARENA_MAX, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD = -8, -3, -1  # glibc's mallopt parameters


@lru_cache(maxsize=1)
def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def limit_malloc(arenas: int = 2, mmap_threshold: int = 4 << 20, trim_threshold: int = 1 << 20) -> list[str]:
    """Make glibc's malloc give back what an ingest frees; a setting the user made in the
    environment is left as it is. Returns the settings made (none where the C library is not glibc).

    - ``arenas``: each thread that allocates (the models' thread pools, the commit thread) otherwise
      gets an arena of its own, and what it frees there (decoded frames, image batches, ~400 MB a
      clip) stays in the process. Measured on the day recording's first block (12 clips): peak RSS
      2876 MB against 2513 MB with two arenas, the same store, no slower.
    - ``mmap_threshold``: blocks from this size on are mapped and unmapped by themselves. glibc's
      own threshold rises to the largest block freed (up to 32 MB), after which loading a model and
      each clip's frames and activations fragment the heap and stay resident. On the same block,
      with the models in ONNX Runtime and two arenas: peak RSS 1580 and 1585 MB without this and
      the next setting, 1427 MB with them (54 s either way); at 1 MB 1404 MB but 61 s, at 512 kB
      1380 MB but 64-68 s (a frame, 2.7 MB, was mapped and faulted in anew each time).
    - ``trim_threshold``: free memory at the top of the heap past this is returned at once.
    """
    done = []
    try:
        libc = _libc()
        # each setting, its mallopt parameter, and the variable that sets it before the program starts
        for name, param, variable, value in (
                ("arenas", M_ARENA_MAX, "MALLOC_ARENA_MAX", arenas),
                ("mmap_threshold", M_MMAP_THRESHOLD, "MALLOC_MMAP_THRESHOLD_", mmap_threshold),
                ("trim_threshold", M_TRIM_THRESHOLD, "MALLOC_TRIM_THRESHOLD_", trim_threshold)):
            if variable not in os.environ and libc.mallopt(param, value):
                done.append(name)
    except (OSError, AttributeError):
        pass
    return done


def give_back_freed_memory() -> bool:
    """Return the free memory inside glibc's heaps to the system (``malloc_trim``), not only at their
    top: what the blocks under the mapping threshold leave free between live ones. Called after
    each clip; on the day recording's first block: peak RSS 1401 MB against 1457 MB, and 1119 MB
    against 1305 MB at its end, no slower. Returns False where the C library is not glibc."""
    try:
        _libc().malloc_trim(0)  # its result says only whether something was returned
        return True
    except (OSError, AttributeError):
        return False
