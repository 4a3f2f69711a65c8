"""Process settings for ingesting processes."""

import subprocess
import sys


def _run(code: str, env: dict | None = None) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout


def test_malloc_gives_back_what_an_ingest_frees_unless_the_user_chose_otherwise():
    import os

    code = "from perception.malloc import limit_malloc; print(','.join(limit_malloc()))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    # glibc on every machine this project runs on
    assert _run(code, env).strip() == "arenas,mmap_threshold,trim_threshold"
    assert _run(code, env | {"MALLOC_ARENA_MAX": "8"}).strip() == "mmap_threshold,trim_threshold"
    assert _run(code, env | {"MALLOC_MMAP_THRESHOLD_": "65536"}).strip() == "arenas,trim_threshold"


BLOCKS = """
import numpy as np
from perception.malloc import blocks_mapped, limit_malloc
limit_malloc(mmap_threshold=32 << 20, trim_threshold=32 << 20)  # the watcher's

def anon_kb():
    status = open("/proc/self/status").read().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:"))

def held_after_free():
    keep = np.ones(1 << 16, dtype=np.uint8)  # small and live: the heap's top is not trimmed
    block = np.ones(8 << 20, dtype=np.uint8)  # touched: resident
    later = np.ones(1 << 16, dtype=np.uint8)  # above it in the heap
    before = anon_kb()
    del block
    return round((before - anon_kb()) / 1024), keep, later

with blocks_mapped():
    inside = held_after_free()[0]
print(inside, held_after_free()[0])
"""


def test_blocks_mapped_gives_large_blocks_back_when_freed_then_the_heap_serves_them_again():
    """Under the watcher's allocator an 8 MB block comes from the heap and stays with the process
    when freed; within ``blocks_mapped`` it is mapped and given back; after, the heap again. (A
    block the heap's free space can hold comes from there even within: it is not mapped.)"""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    inside, after = map(int, _run(BLOCKS, env).split())
    assert inside == 8 and after == 0
    # the user's own threshold is theirs: blocks_mapped leaves it
    mine = env | {"MALLOC_MMAP_THRESHOLD_": str(32 << 20)}
    assert list(map(int, _run(BLOCKS, mine).split()))[0] == 0
