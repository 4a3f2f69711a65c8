"""Evidence recall in ``bench locomo --spoken``: memories mapped back to dialogue turns by time in
the spoken recordings, each question's ranked turns scored against its evidence, recall@5/10/20
pooled over categories 1-4 and per category."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from bench.datasets.locomo import CATEGORIES, Conversation
from bench.metrics import recall_at_k
from bench.speech_synth import SpokenSession

KS = (5, 10, 20)
SUBSTANTIAL = 0.3  # a memory maps to every turn covering this share of the memory or of the turn


def turns_of_memory(
    start_ts: float, end_ts: float, turns: Sequence[tuple[str, float, float]]
) -> list[str]:
    """The turns (``(dia_id, start_ts, end_ts)``) a memory spanning ``[start_ts, end_ts]`` speaks
    of: the one it overlaps most first, then every other it overlaps substantially (at least
    ``SUBSTANTIAL`` of the memory or of the turn), by overlap. A memory of an instant maps to the
    turn around it."""
    span = end_ts - start_ts
    if span <= 0:
        return [d for d, a, b in turns if a <= start_ts <= b][:1]
    overlaps = sorted(
        ((min(end_ts, b) - max(start_ts, a), a, d, b - a) for d, a, b in turns),
        key=lambda o: (-o[0], o[1]),
    )
    overlaps = [o for o in overlaps if o[0] > 0]
    return [
        d
        for i, (o, _, d, length) in enumerate(overlaps)
        if i == 0 or o >= SUBSTANTIAL * span or o >= SUBSTANTIAL * length
    ]


def absolute_turns(session: SpokenSession) -> list[tuple[str, float, float]]:
    return [
        (t.dia_id, session.started_ts + t.start_s, session.started_ts + t.end_s)
        for t in session.turns
    ]


def ranked_turns_by_time(
    memories, turns_by_path: dict[str, list[tuple[str, float, float]]]
) -> list[str]:
    """Dialogue turns behind ranked memories, first occurrence first. A memory counts only against
    the turns of its own recording (``source_path``): one of another conversation maps to none."""
    out: dict[str, None] = {}
    for m in memories:
        turns = turns_by_path.get(m.source_path)
        if turns:
            out.update(dict.fromkeys(turns_of_memory(m.start_ts, m.end_ts, turns)))
    return list(out)


def empty_scores() -> dict[int, dict[int, list[float]]]:
    return {c: {k: [] for k in KS} for c in CATEGORIES}


def mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def recall_table(scores: dict[int, dict[int, list[float]]]) -> dict:
    """Recall@k pooled over categories 1-4 (5, adversarial, apart, as ``bench locomo`` does) and per
    category; None where there is no question."""
    main = [c for c in CATEGORIES if c != 5]
    out: dict = {"questions": sum(len(scores[c][KS[0]]) for c in main)}
    for k in KS:
        out[f"recall@{k}"] = mean([v for c in main for v in scores[c][k]])
    out["per_category"] = {
        str(c): {
            "questions": len(scores[c][KS[0]]),
            **{f"recall@{k}": mean(scores[c][k]) for k in KS},
        }
        for c in CATEGORIES
    }
    return out


def ask(planner, conv: Conversation, rank: Callable, scores) -> float:
    """Every question of ``conv`` through ``planner``; the seconds spent on retrieval and mapping."""
    spent = 0.0
    for q in conv.questions:
        t0 = time.perf_counter()
        turns = rank(planner.retrieve(q.question).memories)
        spent += time.perf_counter() - t0
        for k in KS:
            scores[q.category][k].append(recall_at_k(turns, q.evidence, k))
    return spent


def merge_scores(into, scores) -> None:
    for c in CATEGORIES:
        for k in KS:
            into[c][k] += scores[c][k]
