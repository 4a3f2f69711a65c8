"""SQL filter pieces for LanceDB (DataFusion syntax), with every value quoted here and only here."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from graph.rows import MEMORY_KINDS, Memory


def quote(value: str) -> str:
    """A SQL string literal: ``'`` doubled, so no value can end the literal."""
    return "'" + str(value).replace("'", "''") + "'"


def in_list(column: str, values: Iterable[str]) -> str:
    return f"{column} IN ({', '.join(map(quote, values))})"


def involves(entity_ids: Iterable[str]) -> str:
    """Memories whose ``entity_ids`` hold any of these."""
    return f"array_has_any(entity_ids, [{', '.join(map(quote, entity_ids))}])"


def _literal(text: str) -> str:
    """``text`` for a LIKE pattern with ``%``, ``_`` and the escape character matching only themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def starts_with(column: str, prefix: str) -> str:
    """``column`` begins with ``prefix`` taken literally: ``%``, ``_`` and the escape character in
    it match only themselves (a bare ``LIKE 'prefix%'`` lets them act as wildcards)."""
    return f"{column} LIKE {quote(_literal(prefix) + '%')} ESCAPE '\\'"


def contains(column: str, text: str) -> str:
    """``column`` holds ``text`` taken literally, case-insensitively."""
    return f"lower({column}) LIKE {quote('%' + _literal(text.lower()) + '%')} ESCAPE '\\'"


def near(memories: Sequence[Memory], window_s: float, longest_s: float | None = None) -> str:
    """Memories of the same recordings within ``window_s`` of any of these, not these.

    ``longest_s``, the longest any memory lasts, bounds ``start_ts`` on both sides. Those ranges
    lead the filter on their own, so LanceDB answers them from the scalar index on ``start_ts`` and
    checks the rest only on the rows they give (a range that also names the recording and
    ``end_ts`` makes it scan every row)."""
    spans = " OR ".join(
        f"(source_path = {quote(m.source_path)} AND end_ts >= {m.start_ts - window_s!r} "
        f"AND start_ts <= {m.end_ts + window_s!r})"
        for m in memories
    )
    others = f"({spans}) AND NOT {in_list('memory_id', [m.memory_id for m in memories])}"
    if longest_s is None:
        return others
    ranges = " OR ".join(
        f"(start_ts >= {m.start_ts - window_s - longest_s!r} AND start_ts <= {m.end_ts + window_s!r})"
        for m in memories
    )
    return f"({ranges}) AND {others}"


def memory_filter(
    before_ts: float | None = None,
    kind: str | tuple[str, ...] | None = None,
    entity_ids: Sequence[str] | None = None,
    start_ts: float | None = None,
    end_ts: float | None = None,
    include_superseded: bool = False,
) -> tuple[str | None, bool]:
    """The filter of a memory search, and whether it is selective enough to apply before the
    vector search. ``before_ts``: only what was known strictly before then (ended before it, not
    superseded before it), so a memory that begins and ends at ``before_ts`` (a frame read at the
    first instant of the next clip) is left out; without it superseded memories are left out unless
    ``include_superseded``."""
    filters = []
    if before_ts is not None:
        t = float(before_ts)
        filters.append(f"end_ts < {t!r} AND (valid_to_ts IS NULL OR valid_to_ts >= {t!r})")
    elif not include_superseded:
        filters.append("valid_to_ts IS NULL")
    selective = (
        before_ts is not None
        or bool(kind)
        or bool(entity_ids)
        or start_ts is not None
        or end_ts is not None
    )
    if kind is not None:
        kinds = (kind,) if isinstance(kind, str) else tuple(kind)
        unknown = set(kinds) - set(MEMORY_KINDS)
        if unknown:
            raise ValueError(
                f"unknown memory kind(s) {sorted(unknown)}; choose from {', '.join(MEMORY_KINDS)}"
            )
        filters.append(in_list("kind", kinds))
    if entity_ids:
        filters.append(involves(entity_ids))
    if start_ts is not None:
        filters.append(f"end_ts >= {float(start_ts)!r}")
    if end_ts is not None:
        filters.append(f"start_ts <= {float(end_ts)!r}")
    return (" AND ".join(f"({f})" for f in filters) or None), selective
