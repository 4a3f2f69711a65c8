"""Whether two stores hold the same memory: what the Ray and sequential ingests are checked by."""

from __future__ import annotations

import numpy as np

from graph.store import Store

TABLES = ("clips", "memories", "entities", "edges")
RUN_COLUMNS = frozenset(
    {"ingested_ts", "created_ts"}
)  # when this run wrote a row, not what it wrote
VECTOR_COLUMNS = frozenset(
    {"vector", "samples"}
)  # floats, compared with a tolerance by ``samples``


def table_rows(store: Store) -> dict[str, list[tuple]]:
    """Each table's rows as sorted tuples of strings, without the run's write times and the vectors."""
    out = {}
    for name in TABLES:
        table = getattr(store, name).to_arrow()
        columns = [c for c in table.column_names if c not in RUN_COLUMNS | VECTOR_COLUMNS]
        out[name] = sorted(
            tuple(str(row[c]) for c in columns) for row in table.select(columns).to_pylist()
        )
    return out


def samples(store: Store) -> dict[str, np.ndarray]:
    """Each face or voice entity's stored embedding samples."""
    return {
        r["entity_id"]: np.array(r["samples"], dtype=np.float32)
        for r in store.entities.to_arrow().select(["entity_id", "samples"]).to_pylist()
        if r["samples"]
    }


def differences(a: Store, b: Store, atol: float = 1e-4) -> list[str]:
    """What differs between two stores (empty when they are equivalent): rows per table, and entity
    samples beyond ``atol`` (processes with other thread counts round floats differently)."""
    out = []
    rows_a, rows_b = table_rows(a), table_rows(b)
    for name in TABLES:
        only_a = set(rows_a[name]) - set(rows_b[name])
        only_b = set(rows_b[name]) - set(rows_a[name])
        if only_a or only_b or len(rows_a[name]) != len(rows_b[name]):
            out.append(
                f"{name}: {len(rows_a[name])} rows against {len(rows_b[name])}, {len(only_a)} only in the "
                f"first, {len(only_b)} only in the second"
            )
    sa, sb = samples(a), samples(b)
    if sa.keys() != sb.keys():
        out.append(f"entities with samples differ: {sorted(sa.keys() ^ sb.keys())}")
    for entity in sorted(sa.keys() & sb.keys()):
        if sa[entity].shape != sb[entity].shape or not np.allclose(
            sa[entity], sb[entity], atol=atol
        ):
            out.append(f"{entity}: embedding samples differ")
    return out
