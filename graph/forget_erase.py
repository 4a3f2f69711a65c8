"""Erasing for good, the last stage of a forget: rows rewritten out of every data file that lost
one (``Eraser``), then every table compacted, its indexes rebuilt from the remaining rows and every
old table version deleted (``purge``), so that the forgotten bytes are in no file under the store.
"""

from __future__ import annotations

import warnings
from datetime import timedelta

from graph import sql


class Eraser:
    """Deletes and updates rows so that no data file keeps the old ones. A Lance delete only marks
    rows deleted (and an update is a delete and an append), and compaction rewrites a file only
    when a tenth of it is deleted: so the rows left in every file that lost one are moved out
    (``merge_insert`` of themselves, one atomic commit per batch), and the emptied files drop out of
    the table; ``purge`` then deletes them with the old versions."""

    KEYS = {
        "memories": "memory_id",
        "clips": "clip_id",
        "entities": "entity_id",
        "edges": "edge_id",
        "people_log": "seq",
    }

    def __init__(self, store) -> None:
        self.store = store
        self.fragments: dict[str, set[int]] = {}  # table -> fragments that lost rows

    def note(self, table, where: str) -> None:
        rows = (
            table.search()
            .where(where)
            .with_row_id(True)
            .select([self.KEYS[table.name]])
            .limit(None)
            .to_arrow()
        )
        self.fragments.setdefault(table.name, set()).update(
            r >> 32 for r in rows["_rowid"].to_pylist()
        )

    def delete(self, table, where: str) -> None:
        self.note(table, where)
        table.delete(where)

    def rewrite(self, batch: int = 2000) -> None:
        for name, fragments in self.fragments.items():
            if not fragments:
                continue
            table, key = getattr(self.store, name), self.KEYS[name]
            ids = table.search().with_row_id(True).select([key]).limit(None).to_arrow()
            left = [
                k
                for k, r in zip(ids[key].to_pylist(), ids["_rowid"].to_pylist())
                if r >> 32 in fragments
            ]
            for chunk in chunks(left, batch):
                where = (
                    f"{key} IN ({', '.join(str(int(k)) for k in chunk)})"
                    if key == "seq"
                    else sql.in_list(key, chunk)
                )
                rows = table.search().where(where).limit(None).to_arrow()
                table.merge_insert(key).when_matched_update_all().execute(
                    rows.select(table.schema.names)
                )


def chunks(items: list[str], n: int = 500):
    for i in range(0, len(items), n):
        yield items[i : i + n]


def purge(store) -> None:
    """Compact every table, rebuild the indexes from the remaining rows, and delete every old
    version: deleted rows live on in old data files, deletion files and index files until then."""
    from lancedb.index import FTS

    from graph.search import FTS_COLUMN

    indexes = {tuple(ix.columns): ix for ix in store.memories.list_indices()}
    tables = (
        store.memories,
        store.edges,
        store.entities,
        store.clips,
        store.people_log,
        store.forget_log,
    )
    for table in tables:
        table.optimize()
    if (FTS_COLUMN,) in indexes and store.memories.count_rows():
        store.memories.create_index(FTS_COLUMN, config=FTS(), replace=True)
    elif (FTS_COLUMN,) in indexes:
        store.memories.drop_index(indexes[(FTS_COLUMN,)].name)
    if (
        "vector",
    ) in indexes:  # its codes and row ids include the deleted rows: built again from what is left
        store.memories.drop_index(indexes[("vector",)].name)
        store.refresh_indexes(vector_index=True)
    with (
        warnings.catch_warnings()
    ):  # that readers on an old version fail is the point: it must not exist
        warnings.filterwarnings("ignore", message=".*removes every version except the latest")
        for table in tables:
            table.optimize(cleanup_older_than=timedelta(0))
