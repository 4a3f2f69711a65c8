import numpy as np
import pytest

from embeddings.base import build_text_embedder
from graph.rows import ClipRow, Entity, Memory, content_id
from graph.store import Store, StoreError


def _clip(clip_id="c1", start=1000.0):
    return ClipRow(clip_id, "/rec/a.mp4", "sha", 0, 0.0, 30.0, start, start + 30.0, "transcript")


def _mem(text, clip_id="c1", start=1000.0):
    return Memory(
        content_id(clip_id, text),
        "episodic",
        text,
        clip_id,
        "/rec/a.mp4",
        start,
        start + 2.0,
        ("voice_1",),
        ("seg0",),
    )


def test_write_commits_clip_last_and_search_finds_memories(hash_store):
    assert not hash_store.has_clip("c1")
    mems = [
        _mem('<voice_1> said: "I grew up in Chicago"'),
        _mem('<voice_2> said: "the weather is cold"'),
    ]
    ent = Entity("voice_1", "voice", 1000.0, 1002.0, [np.ones(4, dtype=np.float32) / 2], 1)
    hash_store.commit_clip(_clip(), mems, [ent])
    hash_store.refresh_indexes()
    assert hash_store.has_clip("c1")
    assert hash_store.count() == {"clips": 1, "entities": 1, "memories": 2, "edges": 0}
    hits = hash_store.search("where did she grow up? Chicago", k=2)
    assert hits[0].memory.text == mems[0].text
    assert hits[0].text_rank == 1  # the full-text index took part
    assert hits[0].memory.provenance == ("seg0",) and hits[0].memory.entity_ids == ("voice_1",)
    loaded = hash_store.load_entities("voice")
    assert [e.entity_id for e in loaded] == ["voice_1"] and np.allclose(loaded[0].samples[0], 0.5)


def test_rewriting_a_clip_adds_nothing(hash_store):
    mems = [_mem("a memory about tea")]
    for _ in range(2):
        hash_store.commit_clip(_clip(), mems, [])
    assert hash_store.count() == {"clips": 1, "entities": 0, "memories": 1, "edges": 0}


def test_before_filter_hides_later_memories(hash_store):
    hash_store.commit_clip(_clip("c1", 1000.0), [_mem("coffee in the morning", "c1", 1000.0)], [])
    hash_store.commit_clip(_clip("c2", 5000.0), [_mem("coffee in the evening", "c2", 5000.0)], [])
    hash_store.refresh_indexes()
    assert {h.memory.clip_id for h in hash_store.search("coffee", k=5)} == {"c1", "c2"}
    assert {h.memory.clip_id for h in hash_store.search("coffee", k=5, before_ts=2000.0)} == {"c1"}


def test_store_refuses_an_embedder_of_another_dimension(tmp_path):
    Store(tmp_path / "s", build_text_embedder("hash"))

    class Other:
        name, dim = "other", 8

        def embed(self, texts):
            return np.zeros((len(texts), 8), dtype=np.float32)

    with pytest.raises(StoreError, match="384-d"):
        Store(tmp_path / "s", Other())


def test_empty_store_search_returns_nothing(hash_store):
    assert hash_store.search("anything") == []


def test_a_retried_clip_drops_what_a_killed_attempt_left(hash_store):
    import pyarrow as pa

    # a process killed after writing the memories of c1 but before its clip row
    orphan = _mem('<voice_9> said: "half written"')
    row = {
        "memory_id": orphan.memory_id,
        "kind": "episodic",
        "text": orphan.text,
        "vector": hash_store.embedder.embed([orphan.text])[0].tolist(),
        "clip_id": "c1",
        "source_path": orphan.source_path,
        "start_ts": 1000.0,
        "end_ts": 1002.0,
        "entity_ids": ["voice_9"],
        "provenance": ["seg0"],
    }
    hash_store.memories.add(pa.Table.from_pylist([row], schema=hash_store.memories.schema))
    assert not hash_store.has_clip("c1")

    retry = _mem('<voice_1> said: "half written"')
    hash_store.commit_clip(_clip(), [retry], [])
    texts = [r["text"] for r in hash_store.memories.search().limit(None).to_list()]
    assert texts == [retry.text]


def test_indexes_take_in_new_rows_without_a_rebuild(hash_store):
    hash_store.commit_clip(_clip("c1"), [_mem("a memory about tea", "c1")], [])
    hash_store.refresh_indexes()
    hash_store.commit_clip(_clip("c2", 2000.0), [_mem("a memory about zebras", "c2", 2000.0)], [])
    assert hash_store.search("zebras", k=1)[0].text_rank == 1  # unindexed rows are searched too
    hash_store.refresh_indexes()
    (after,) = [ix for ix in hash_store.memories.list_indices() if ix.columns == ["search_text"]]
    assert after.num_unindexed_rows == 0 and after.num_indexed_rows == 2  # taken in by optimize()
    assert hash_store.search("tea", k=1)[0].text_rank == 1


def test_every_hit_and_neighbour_carries_its_cosine_similarity_to_the_query(hash_store):
    """Full-text-only hits and neighbours get their similarity from the stored vectors, so the
    planner ranks them by what they say, not by a guess."""
    mems = [
        _mem("the kettle is boiling", "c1", 1000.0),
        _mem("zebra crossings everywhere", "c1", 1005.0),
        _mem("a quiet afternoon", "c1", 1010.0),
    ]
    hash_store.commit_clip(_clip(), mems, [])
    hash_store.refresh_indexes()
    stored = dict(zip([m.text for m in mems], hash_store.embedder.embed([m.text for m in mems])))
    vector = stored[
        "zebra crossings everywhere"
    ]  # the vector search finds the zebra, the words the kettle
    hits = hash_store.search("kettle boiling", k=3, candidates=1, vector=vector)
    assert {(h.memory.text, h.vector_rank, h.text_rank) for h in hits} == {
        ("zebra crossings everywhere", 1, None),
        ("the kettle is boiling", None, 1),
    }
    for h in hits:
        assert h.similarity == pytest.approx(float(stored[h.memory.text] @ vector), abs=1e-5)
    near = hash_store.neighbour_hits([mems[1]], vector, window_s=10.0)
    assert [h.memory.text for h in near] == ["the kettle is boiling", "a quiet afternoon"]
    assert [h.similarity for h in near] == pytest.approx(
        [float(stored[h.memory.text] @ vector) for h in near], abs=1e-5
    )
    assert [
        h.memory.text for h in hash_store.neighbour_hits([mems[1]], vector, 10.0, before_ts=1004.0)
    ] == ["the kettle is boiling"]  # what was known then, as in search
    assert hash_store.neighbour_hits([], vector) == []


def test_neighbours_include_a_memory_longer_than_the_assumed_span(hash_store, tmp_path):
    """Neighbour queries bound start_ts from below by the longest memory: one that began 100 s
    before the seed and ended during it must still be found, by the handle that wrote it and by a
    handle opened later."""
    from dataclasses import replace

    seed = _mem("the seed", "c1", 1000.0)
    long = replace(_mem("a long talk", "c1", 900.0), end_ts=1001.0)  # 101 s, more than MIN_SPAN_S
    far = _mem("much earlier", "c1", 700.0)
    assert hash_store.longest_memory_s() == 60.0  # read from the empty store: the floor
    hash_store.commit_clip(_clip("c1", 900.0), [seed, long, far], [])
    vector = hash_store.embedder.embed(["talk"])[0]
    for store in (hash_store, Store(hash_store.uri, hash_store.embedder)):
        texts = {h.memory.text for h in store.neighbour_hits([seed], vector, window_s=30.0)}
        assert texts == {"a long talk"}
        assert store.longest_memory_s() >= 101.0


def _screen(text, clip_id="c1", start=1000.0):
    return Memory(
        content_id(clip_id, "screen", text),
        "resource",
        f"On screen at 10:00: {text}",
        clip_id,
        "/rec/screens",
        start,
        start + 30.0,
        (),
        (),
    )


@pytest.mark.parametrize(
    "query", ["BLUEHERON", "ships on", "ships", "bay42", "level3", "quillonbbax"]
)
def test_screen_text_is_found_whatever_its_word_boundaries(hash_store, query):
    """Words the screen reader split, merged or joined with "_" are found by the words as typed."""
    read = _screen("codename: BLUE HER ON | It shipson Friday | level 3 bay_42 | is quill on b bax")
    said = _mem('<voice_1> said: "the BLUE HER ON note, level 3"')  # speech is not joined
    hash_store.commit_clip(_clip(), [read, said], [])
    hash_store.refresh_indexes()
    hits = hash_store.search(query, k=2)
    assert [h.memory.kind for h in hits if h.text_rank is not None] == ["resource"]
    # the joins stay inside a screen line and out of speech: "onit" spans " | ", "blueheron" is spoken
    assert not [h for h in hash_store.search("onit", k=2) if h.text_rank is not None]


@pytest.mark.parametrize("query", ["quillonbbax", "Contoso", "zhangwei"])
def test_a_word_inside_a_run_of_words_the_screen_reader_merged_is_found(hash_store, query):
    """A page OCR read without its spaces (Chromium's page when its tree did not answer): a word
    wordninja does not know is cut into pieces, and the pieces written together again find it."""
    read = _screen(
        "Page 1 | Thereadingmarkerforpage1isquillonbbax. | invoicenumberforcontosoltd"
        " | meetingwithzhangweiontuesday"
    )
    hash_store.commit_clip(_clip(), [read], [])
    hash_store.refresh_indexes()
    assert [h.memory.kind for h in hash_store.search(query, k=2) if h.text_rank is not None] == [
        "resource"
    ]


def test_a_store_from_before_search_text_gets_the_column_and_its_index(tmp_path):
    embedder = build_text_embedder("hash")
    old = Store(tmp_path / "s", embedder)
    old.commit_clip(_clip(), [_mem("a memory about zebras")], [])
    old.refresh_indexes()
    old.memories.drop_columns(["search_text"])  # as a store written before the column existed
    old.memories.create_index("text", config=__import__("lancedb").index.FTS(), replace=True)
    store = Store(tmp_path / "s", embedder)
    assert "search_text" in store.memories.schema.names
    assert (
        store.search("zebras", k=1)[0].text_rank == 1
    )  # before the next ingest: the old index serves
    store.refresh_indexes()
    assert [ix.columns for ix in store.memories.list_indices()] == [["search_text"]]
    assert store.search("zebras", k=1)[0].text_rank == 1
    store.commit_clip(_clip("c2", 2000.0), [_screen("BLUE HER ON", "c2", 2000.0)], [])
    store.refresh_indexes()
    assert store.search("BLUEHERON", k=1)[0].text_rank == 1
    # a row an older mnemo writes into the migrated store has no search_text: its text is indexed
    import pyarrow as pa

    row = store.memories.search().where("text = 'a memory about zebras'").limit(1).to_arrow()
    row = row.set_column(
        row.schema.get_field_index("memory_id"), "memory_id", pa.array(["m-okapi"])
    )
    row = row.set_column(
        row.schema.get_field_index("text"), "text", pa.array(["a memory about okapis"])
    )
    store.memories.add(row.drop_columns(["search_text"]))
    store.refresh_indexes()
    assert store.search("okapis", k=1)[0].text_rank == 1


class _CountingClips:
    """A clips table that counts the reads made of it."""

    def __init__(self, table) -> None:
        self.table, self.reads = table, 0

    def search(self, *args, **kwargs):
        self.reads += 1
        return self.table.search(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.table, name)


@pytest.mark.parametrize("read_again_s", [0.0, 3600.0])
def test_a_reader_holding_every_clip_id_sees_new_commits_and_never_a_commit_in_progress(
    tmp_path, monkeypatch, read_again_s
):
    import graph.store as store_module
    from graph import commit
    from graph import forget_store as forget

    monkeypatch.setattr(store_module, "ALL_CLIPS_EVERY_S", read_again_s)
    writer = Store(tmp_path / "s", build_text_embedder("hash"))
    writer.commit_clip(_clip("c1", 1000.0), [_mem("tea in the morning", "c1", 1000.0)], [])
    reader = Store(tmp_path / "s", build_text_embedder("hash"), read_consistency_s=0)
    reader.clips = clips = _CountingClips(reader.clips)

    def found() -> set[str]:
        return {h.memory.clip_id for h in reader.search("tea", k=10)}

    assert found() == {"c1"} and clips.reads == 1  # every clip id, read once
    in_progress = []

    def step(
        name: str,
    ) -> None:  # between the writes of c2's commit: its memories are stored, its clip row not
        if name == "clip":
            in_progress.append((found(), clips.reads))

    monkeypatch.setattr(commit, "step", step)
    writer.commit_clip(_clip("c2", 5000.0), [_mem("tea in the evening", "c2", 5000.0)], [])
    # the clips table had not changed: c2 was not committed, and that took no lookup
    assert in_progress == [({"c1"}, 1)]
    assert found() == {"c1", "c2"}  # committed: seen at once (a lookup, or every id read again)
    assert reader.clip_offset("c2") == 0.0 - 5000.0
    reads = clips.reads
    assert found() == {"c1", "c2"} and clips.reads == reads  # nothing new: no read
    f = forget.Filter(clip_id="c1")
    forget.forget(writer, forget.plan(writer, f), f)
    assert found() == {"c2"}
