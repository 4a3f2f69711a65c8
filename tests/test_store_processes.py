"""The store across processes: readers while a writer writes, and a writer killed mid-clip."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from embeddings.base import build_text_embedder
from graph import commit
from graph.rows import ClipRow, Edge, Memory, content_id
from graph.store import Store

WRITER = textwrap.dedent("""
    import dataclasses, os, signal, sys, time
    import numpy as np
    from graph import commit
    from graph.rows import ClipRow, Edge, Entity, Memory, content_id
    from graph.store import Store
    from embeddings.base import build_text_embedder

    store = Store(sys.argv[1], build_text_embedder("hash"))
    clips, kill_clip, kill_step, pause_s = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
    current = None

    def step(name):  # the hook between a commit's writes: die there, as a kill -9 would
        if current == kill_clip and name == kill_step:
            os.kill(os.getpid(), signal.SIGKILL)

    commit.step = step
    with store.writing("test writer"):
        for i in range(clips):
            current, clip = i, f"clip{i:03d}"
            if store.has_clip(clip):
                continue
            memories = [Memory(content_id(clip, j), "semantic" if j == 0 else "episodic",
                               f"clip {i} memory {j} about tea", clip, "/r.mp4", 1000.0 + 30 * i + j,
                               1001.0 + 30 * i + j) for j in range(5)]
            first = store.get_memories([content_id("clip000", 0)])
            updated = [dataclasses.replace(first[0], weight=first[0].weight + 1)] if first else []  # reinforced
            voice = Entity("voice_1", "voice", 1000.0, 1030.0 + 30 * i, [np.full(4, float(i), np.float32)], i + 1)
            edges = [Edge("same_person", "voice_1", "face_1", float(i + 1), clip, (clip,)),  # re-asserted each clip
                     Edge("mentions", memories[1].memory_id, "voice_1", 1.0, clip)]
            store.commit_clip(ClipRow(clip, "/r.mp4", "sha", i, 30.0 * i, 30.0, 1000.0 + 30 * i, 1030.0 + 30 * i, ""),
                              memories, [voice], edges, updated)
            if i == 2:
                store.refresh_indexes()  # a full-text index, so readers search text as well as vectors
            time.sleep(pause_s)  # an ingest spends seconds per clip on perception; a bare loop would outrun readers
""")


def _writer(
    store_dir, clips: int, kill_clip: int = -1, kill_step: str = "", pause_s: float = 0.0
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WRITER,
            str(store_dir),
            str(clips),
            str(kill_clip),
            kill_step,
            str(pause_s),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )


def _state(store: Store) -> dict:
    """Everything the store holds, in a comparable form."""
    store.catch_up()
    rows = {
        name: sorted(
            getattr(store, name).search().limit(None).to_list(),
            key=lambda r: str(list(r.values())[0]),
        )
        for name in ("clips", "memories", "edges", "entities")
    }
    for r in rows["clips"]:
        r.pop("ingested_ts")
    for r in rows["edges"]:
        r.pop("created_ts")
    for r in rows["memories"]:
        r["vector"] = list(r["vector"])
    return rows


@pytest.mark.slow
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
    time.sleep(
        1.1
    )  # reads may lag another process's writes by up to a second (Store.read_consistency_s)
    assert seen_clips == sorted(seen_clips) and seen_memories == sorted(
        seen_memories
    )  # only ever grows
    assert len(set(seen_clips)) > 2  # the reader saw the writer's progress, not one frozen version
    assert store.count()["clips"] == 40 and store.count()["memories"] == 200


@pytest.fixture(scope="module")
def three_clips(tmp_path_factory) -> dict:
    """What a writer that commits clips 0 to 2 and stops leaves."""
    path = tmp_path_factory.mktemp("clean") / "s"
    proc = _writer(path, 3)
    assert proc.stderr is not None  # stderr=PIPE
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    return _state(Store(path, build_text_embedder("hash")))


@pytest.mark.slow
@pytest.mark.parametrize("kill_step", ["memories", "updated", "edges", "entities", "clip", "end"])
def test_a_writer_killed_at_each_step_of_a_commit_leaves_nothing_half_done(
    tmp_path, three_clips, kill_step
):
    proc = _writer(tmp_path / "s", 5, kill_clip=3, kill_step=kill_step)
    proc.wait(timeout=120)
    assert proc.returncode == -9
    store = Store(tmp_path / "s", build_text_embedder("hash"), read_consistency_s=0)
    finished = kill_step == "end"  # killed after the clip row: the commit is whole
    assert [store.has_clip(f"clip{i:03d}") for i in range(5)] == [True, True, True, finished, False]
    # a reader, before any writer recovers the store: clip 3's memories are never answered with
    found = {h.memory.clip_id for h in store.search("clip 3 memory about tea", k=50)}
    assert ("clip003" in found) == finished
    assert ("clip003" in {m.clip_id for m in store.in_time_range(1090.0, 1120.0)}) == finished
    assert (
        "clip003"
        in {
            h.memory.clip_id
            for h in store.search(
                "clip 3 memory", k=50, vector=np.zeros(store.embedder.dim, np.float32)
            )
        }
    ) == finished  # the full-text half alone finds it
    seed = store.get_memories([content_id("clip002", 4)])
    near = store.neighbour_hits(seed, store.embedder.embed(["tea"])[0], window_s=60.0)
    assert ("clip003" in {h.memory.clip_id for h in near}) == finished
    assert (tmp_path / "s" / ".commit").exists()
    with store.writing("test"):  # the next writer undoes (or, after the clip row, keeps) the commit
        pass
    assert not (tmp_path / "s" / ".commit").exists()
    if not finished:
        assert (
            _state(store) == three_clips
        )  # memories, the reinforced one, edges, entities: as before clip 3
    rerun = _writer(tmp_path / "s", 5)  # ingest again: clip 3 is stored once, nothing doubles
    assert rerun.wait(timeout=120) == 0, rerun.stderr.read()
    store.catch_up()
    assert store.count()["clips"] == 5 and store.count()["memories"] == 25
    first = store.get_memories([content_id("clip000", 0)])[0]
    assert first.weight == 5.0  # reinforced once by each of clips 1 to 4, never twice by clip 3
    assert {e.weight for e in store.all_edges("same_person")} == {5.0}


def test_an_error_part_way_through_a_commit_undoes_it_at_once(tmp_path, monkeypatch):
    store = Store(tmp_path / "s", build_text_embedder("hash"))
    clip = ClipRow("c1", "/r.mp4", "sha", 0, 0.0, 30.0, 1000.0, 1030.0, "")
    memory = Memory(
        content_id("c1", 0), "episodic", "a memory about tea", "c1", "/r.mp4", 1000.0, 1001.0
    )

    def full(name):
        if name == "entities":
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(commit, "step", full)
    with pytest.raises(OSError, match="No space"):
        store.commit_clip(clip, [memory], [], [Edge("mentions", memory.memory_id, "voice_1")])
    assert store.count() == {"clips": 0, "entities": 0, "memories": 0, "edges": 0}
    assert not (tmp_path / "s" / ".commit").exists()
    monkeypatch.setattr(commit, "step", lambda name: None)
    store.commit_clip(
        clip, [memory], [], [Edge("mentions", memory.memory_id, "voice_1")]
    )  # the retry stores it
    assert store.count()["memories"] == 1 and store.count()["edges"] == 1
