"""Process settings for ingesting processes."""

import subprocess
import sys


def _run(code: str, env: dict | None = None) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout


def test_malloc_gives_back_what_an_ingest_frees_unless_the_user_chose_otherwise():
    import os

    code = "from pipeline.process import limit_malloc; print(','.join(limit_malloc()))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    # glibc on every machine this project runs on
    assert _run(code, env).strip() == "arenas,mmap_threshold,trim_threshold"
    assert _run(code, env | {"MALLOC_ARENA_MAX": "8"}).strip() == "mmap_threshold,trim_threshold"
    assert _run(code, env | {"MALLOC_MMAP_THRESHOLD_": "65536"}).strip() == "arenas,trim_threshold"
