"""``mnemo bench locomo --qa``: answers scored by LoCoMo's own answer metric (``bench.locomo_f1``),
the offline answer beside the reasoned ones, on the same questions in the same run.

Each conversation is ingested as the retrieval bench does (``bench.locomo``). Every answerer is
asked every chosen question: ``offline`` (today's quotation), ``0.5b`` and ``1.5b`` (the packaged
models through ``control.reason``, each served here for the run), ``endpoint`` (the configured
``[llm]`` endpoint through the same reasoner, when there is one).

Per answerer: F1 over categories 1–4 and per category (LoCoMo's: 1 multi-hop, 2 temporal, 3
open-domain, 4 single-hop); category 5 (adversarial) as the share answered "not in memory";
``wrong``, the share of questions of categories 1–4 answered with F1 < 0.1 and no abstention (a
confident wrong answer); foreign citations (a cited clip that none of the memories it read come
from); seconds per question p50/p90; prompt tokens per question.

``limit`` takes a stratified sample of each conversation's questions: each category's share of
the sample is its share of the conversation's questions (largest remainders, at least one each
where the limit allows), its questions drawn in a fixed shuffled order, so runs compare.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.datasets.locomo import Question, load
from bench.locomo import ingest_conversation
from bench.locomo_f1 import abstained, score

ANSWERERS = ("offline", "0.5b", "1.5b", "endpoint")


def stratified(questions: Sequence[Question], limit: int | None, seed: str) -> list[Question]:
    """Up to ``limit`` of ``questions``, each category in proportion (see the module's note)."""
    if limit is not None and limit < 1:
        raise ValueError(f"--limit {limit}: give at least 1 question per conversation")
    if limit is None or limit >= len(questions):
        return list(questions)
    by_cat: dict[int, list[Question]] = {}
    for q in questions:
        by_cat.setdefault(q.category, []).append(q)
    for cat, qs in by_cat.items():
        random.Random(f"{seed}:{cat}").shuffle(qs)
    exact = {c: limit * len(qs) / len(questions) for c, qs in by_cat.items()}
    take = {c: int(x) for c, x in exact.items()}
    if limit >= len(by_cat):
        for c in take:
            take[c] = max(take[c], 1)
    left = limit - sum(take.values())
    for c in sorted(exact, key=lambda c: exact[c] - take[c], reverse=True):
        if left <= 0:
            break
        if take[c] < len(by_cat[c]):
            take[c] += 1
            left -= 1
    while sum(take.values()) > limit:  # the minimum of one each overshot: trim the largest
        biggest = max(take, key=lambda c: take[c])
        take[biggest] -= 1
    chosen = {id(q) for c, qs in by_cat.items() for q in qs[: take[c]]}
    return [q for q in questions if id(q) in chosen]


@dataclass
class Tally:
    scores: dict[int, list[float]] = field(default_factory=dict)
    wrong: int = 0
    foreign: int = 0
    seconds: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)

    def add(self, category: int, f1: float, answer, seconds: float, tokens: int | None) -> None:
        self.scores.setdefault(category, []).append(f1)
        if category != 5 and f1 < 0.1 and not abstained(answer.answer):
            self.wrong += 1
        read = {m.clip_id for m in answer.evidence}
        self.foreign += sum(1 for c in answer.citations if c.clip_id not in read)
        self.seconds.append(seconds)
        if tokens is not None:
            self.prompt_tokens.append(tokens)

    def figures(self) -> dict:
        answered = [s for c in (1, 2, 3, 4) for s in self.scores.get(c, [])]
        adversarial = self.scores.get(5, [])
        secs = sorted(self.seconds)

        def mean(xs):
            return round(statistics.fmean(xs), 4) if xs else None

        return {
            "f1": mean(answered),
            "f1_by_category": {str(c): mean(self.scores.get(c, [])) for c in (1, 2, 3, 4)},
            "abstained_adversarial": mean(adversarial),
            "wrong": round(self.wrong / len(answered), 4) if answered else None,
            "foreign_citations": self.foreign,
            "s_p50": round(secs[len(secs) // 2], 2) if secs else None,
            "s_p90": round(secs[min(len(secs) - 1, int(0.9 * len(secs)))], 2) if secs else None,
            "prompt_tokens": round(statistics.fmean(self.prompt_tokens))
            if self.prompt_tokens
            else None,
            "questions": len(self.seconds),
        }


def run(
    path: str | Path,
    make_store: Callable,
    policies,
    answerers: Callable,
    limit: int | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> dict:
    """``answerers(store)`` gives {name: (answerer, its ChatClient or None)} for one store.
    ``limit``: questions per conversation (a stratified sample). The figures' ``asked`` lists every
    question with each answerer's answer, score, seconds and steps (``--details``)."""
    tallies: dict[str, Tally] = {}
    asked = 0
    records: list[dict] = []
    for conv in load(path):
        store = make_store(conv.key)
        ingest_conversation(conv, store, policies)
        chosen = stratified(conv.questions, limit, conv.key)
        progress(f"{conv.key}: {len(chosen)} of {len(conv.questions)} questions")
        rows: list[dict[str, Any]] = [
            {
                "conversation": conv.key,
                "category": q.category,
                "question": q.question,
                "gold": q.answer,
                "answers": {},
            }
            for q in chosen
        ]
        records += rows
        for name, (answerer, client) in answerers(store).items():
            tally = tallies.setdefault(name, Tally())
            for i, (q, row) in enumerate(zip(chosen, rows, strict=True), 1):
                if i % 10 == 0:
                    progress(f"{conv.key}: {name} {i}/{len(chosen)}")
                before = client.tokens["prompt_tokens"] if client else None
                t0 = time.perf_counter()
                answer = answerer.ask(q.question)
                seconds = time.perf_counter() - t0
                tokens = client.tokens["prompt_tokens"] - before if client else None
                f1 = score(answer.answer, q.answer, q.category)
                tally.add(q.category, f1, answer, seconds, tokens)
                row["answers"][name] = {
                    "answer": answer.answer,
                    "f1": round(f1, 4),
                    "seconds": round(seconds, 2),
                    "citations": [c.clip_id for c in answer.citations],
                    "steps": list(answer.steps),
                }
            progress(f"{conv.key}: {name} answered {len(chosen)}")
        asked += len(chosen)
    return {
        "questions": asked,
        "qa": {name: t.figures() for name, t in tallies.items()},
        "asked": records,
    }


def format_report(figures: dict, models: dict[str, str], title: str | None = None) -> str:
    """LoCoMo's table per answerer; with ``title`` (another set, its questions not in LoCoMo's
    categories: ``bench m3 --mini --qa``), F1 over all its questions."""

    def f(x, fmt=".3f"):
        return "n/a" if x is None else format(x, fmt)

    def tail(q) -> str:
        return (
            f"  {f(q['wrong'], '.2f'):>5}  {q['foreign_citations']:>7}  {f(q['s_p50'], '.1f'):>5}"
            f"  {f(q['s_p90'], '.1f'):>5}  {f(q['prompt_tokens'], '.0f'):>10}"
        )

    used = "Models: " + ", ".join(f"{k} = {v}" for k, v in models.items())
    if title:
        lines = [
            f"{title}: answers scored by LoCoMo's token F1 against the annotated answer: "
            f"{figures['questions']} question(s)",
            "answerer   F1     wrong  foreign  s p50  s p90  prompt tok",
            *(f"{name:9} {f(q['f1']):>5} {tail(q)}" for name, q in figures["qa"].items()),
            "wrong: F1 < 0.1 without abstaining. " + used,
        ]
        return "\n".join(lines)
    lines = [
        f"LoCoMo answers scored as LoCoMo scores them (token F1, Porter stems): {figures['questions']} "
        "question(s)",
        "answerer   F1    multi-hop temporal open-dom single-hop  adversarial  wrong  foreign  "
        "s p50  s p90  prompt tok",
    ]
    for name, q in figures["qa"].items():
        c = q["f1_by_category"]
        lines.append(
            f"{name:9} {f(q['f1']):>5}  {f(c['1']):>8} {f(c['2']):>8} {f(c['3']):>8} {f(c['4']):>10}"
            f"  {f(q['abstained_adversarial']):>11}{tail(q)}"
        )
    lines.append(
        "F1 over categories 1-4; adversarial: the share answered 'not in memory'; wrong: F1 < 0.1 "
        "without abstaining. " + used
    )
    return "\n".join(lines)
