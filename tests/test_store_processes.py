"""The store across processes: readers while a writer writes, and a writer killed mid-clip."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from graph.store import Store
from embeddings.base import build_text_embedder

WRITER = textwrap.dedent("""
    import os, signal, sys, time
    from graph.rows import ClipRow, Memory, content_id
    from graph.store import Store
    from embeddings.base import build_text_embedder

    store = Store(sys.argv[1], build_text_embedder("hash"))
    kill_at, pause_s = int(sys.argv[3]), float(sys.argv[4])
    for i in range(int(sys.argv[2])):
        clip = f"clip{i:03d}"
        memories = [Memory(content_id(clip, j), "episodic", f"clip {i} memory {j} about tea", clip, "/r.mp4",
                           1000.0 + 30 * i + j, 1001.0 + 30 * i + j) for j in range(5)]
        if i == kill_at:  # die after the memories, before the clip row that commits them
            real = store.clips.merge_insert
            store.clips.merge_insert = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
        store.commit_clip(ClipRow(clip, "/r.mp4", "sha", i, 30.0 * i, 30.0, 1000.0 + 30 * i, 1030.0 + 30 * i, ""),
                         memories, [])
        time.sleep(pause_s)  # an ingest spends seconds per clip on perception; a bare loop would outrun the reader
""")


def _writer(store_dir, clips: int, kill_at: int = -1, pause_s: float = 0.0) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(store_dir), str(clips), str(kill_at), str(pause_s)],
                            stderr=subprocess.PIPE, text=True)


def test_readers_see_whole_tables_while_another_process_writes(tmp_path):
    store = Store(tmp_path / "s", build_text_embedder("hash"))
    # 40 clips at >= 0.1 s each take >= 4 s: with reads up to 1 s stale the reader must see several versions.
    # Without the pause a fast machine wrote all 40 in about a second and the reader saw only 0 and 19.
    proc = _writer(tmp_path / "s", 40, pause_s=0.1)
    seen_clips, seen_memories = [], []
    while proc.poll() is None:
        counts = store.count()
        seen_clips.append(counts["clips"])
        seen_memories.append(counts["memories"])
        for hit in store.search("tea", k=5):
            assert hit.memory.text.endswith("about tea")  # whole rows, never torn
        time.sleep(0.01)
    assert proc.returncode == 0, proc.stderr.read()
    time.sleep(1.1)  # reads may lag another process's writes by up to a second (Store.read_consistency_s)
    assert seen_clips == sorted(seen_clips) and seen_memories == sorted(seen_memories)  # only ever grows
    assert len(set(seen_clips)) > 2  # the reader saw the writer's progress, not one frozen version
    assert store.count()["clips"] == 40 and store.count()["memories"] == 200


def test_a_writer_killed_mid_clip_leaves_no_committed_half_clip_and_a_rerun_completes_it(tmp_path):
    proc = _writer(tmp_path / "s", 5, kill_at=3)
    proc.wait(timeout=120)
    assert proc.returncode == -9
    store = Store(tmp_path / "s", build_text_embedder("hash"))
    assert [store.has_clip(f"clip{i:03d}") for i in range(5)] == [True, True, True, False, False]
    rerun = _writer(tmp_path / "s", 5)  # ingest again: clip 3's orphans are replaced, nothing doubles
    assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
    assert store.count()["clips"] == 5 and store.count()["memories"] == 25
