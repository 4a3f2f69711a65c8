"""``Candidate``: one memory in the planner's pool, with what found it and how it scores.

``control.planner`` fills and re-ranks the pool; ``control.screens`` drops the screen readings a
later one continues. Both work on this record, which lives apart from either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from graph.rows import Memory


@dataclass
class Candidate:
    memory: Memory
    similarity: float | None = None
    bm25: float | None = None
    found_by: set[str] = field(
        default_factory=set
    )  # "search", "person:<id>", "time:<text>", "neighbour"
    score: float = 0.0
