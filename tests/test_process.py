"""Process settings for ingesting processes."""

import subprocess
import sys


def _run(code: str, env: dict | None = None) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout


def test_malloc_arenas_are_capped_unless_the_user_chose_a_number():
    import os

    code = "from pipeline.process import limit_malloc_arenas; print(limit_malloc_arenas())"
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _run(code, env).strip() == "True"  # glibc on every machine this project runs on
    assert _run(code, env | {"MALLOC_ARENA_MAX": "8"}).strip() == "False"
