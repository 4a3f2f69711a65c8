"""Consolidation of semantic memories: repeat -> reinforce, contradiction -> supersede.

A semantic memory states one fact, ``subject|relation|value`` (``character_2|is from|Chicago``).
The relations in ``SINGLE_VALUED`` hold one value at a time (one origin, one current home, one
name); any other relation (the LLM writer's "likes", "has a sister named") may hold many. For a new
fact, the current memory is the one for ``subject|relation`` (single-valued) or for
``subject|relation|value`` (values compared without case or extra spaces):

- no current memory: it is stored as is;
- the current one has the same value: the new one is not stored; the current one gains the new
  evidence in its provenance and ``weight`` = the number of clips that stated it (idempotent: a
  re-run of a clip adds nothing);
- a single-valued relation with another value: the new one is stored, the current one gets
  ``valid_to_ts`` = the new one's start and stays in the store, and a ``supersedes`` edge links them.

Episodic memories are events and never consolidated.
"""

from __future__ import annotations

from dataclasses import replace

from graph import sql
from graph.rows import Edge, Memory
from graph.store import Store

SINGLE_VALUED = frozenset(
    {"is named", "is from", "lives in", "works as", "works at", "is married to"}
)


def _norm(value: str) -> str:
    return " ".join(value.lower().split())


def clip_evidence(clip_id: str) -> str:
    return f"clip:{clip_id}"


class Consolidator:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.current: dict[
            str, Memory
        ] = {}  # subject|relation(|value) -> current memory, once seen this run

    def _current(self, key: str, subject: str, relation: str, value: str | None) -> Memory | None:
        """The current memory for ``subject|relation`` (``value`` None) or ``subject|relation|value``."""
        if key not in self.current:
            found = self.store.memories_where(
                f"kind = 'semantic' AND valid_to_ts IS NULL AND {sql.starts_with('fact', f'{subject}|{relation}|')}"
            )
            if value is not None:
                found = [m for m in found if _norm(m.fact.split("|", 2)[2]) == _norm(value)]
            if found:
                self.current[key] = found[-1]
        return self.current.get(key)

    def add(self, new: Memory) -> tuple[Memory | None, Memory | None, list[Edge]]:
        """(memory to store or None, changed earlier memory or None, edges) for a new semantic memory."""
        subject, relation, value = new.fact.split("|", 2)
        single = relation in SINGLE_VALUED
        key = f"{subject}|{relation}" if single else f"{subject}|{relation}|{_norm(value)}"
        old = self._current(key, subject, relation, None if single else value)
        if old is None:
            self.current[key] = new
            return new, None, []
        if _norm(old.fact.split("|", 2)[2]) == _norm(value):
            provenance = tuple(dict.fromkeys(old.provenance + new.provenance))
            weight = float(sum(1 for p in provenance if p.startswith("clip:")))
            reinforced = replace(old, provenance=provenance, weight=weight)
            self.current[key] = reinforced
            edge = Edge(
                "supports", new.provenance[0], old.memory_id, 1.0, new.clip_id, new.provenance
            )
            return None, reinforced, [edge]
        superseded = replace(old, valid_to_ts=new.start_ts)
        self.current[key] = new
        return (
            new,
            superseded,
            [Edge("supersedes", new.memory_id, old.memory_id, 1.0, new.clip_id, (old.fact,))],
        )
