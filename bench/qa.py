"""Scoring questions asked of a memory: what the M3-Bench and ScreenshotVQA runners report.

Per question: whether the gold answer is in the evidence the agent read (answer-in-context@k),
token F1 and containment of the agent's answer (proxies, never called accuracy), how much of what
it read came from clips it may not use (leakage), its latency, and the judge's verdict when there
is a judge. Questions whose gold answer is a bare yes/no are scored apart (the word is in almost
any text), and so are the mini sets' questions whose evidence lies where the agent may not look
(the right behaviour is not to find it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.judge import Judge, Verdict
from bench.metrics import contains_answer, is_yes_no, token_f1, wilson_interval

if TYPE_CHECKING:
    from graph.store import Store
    from pipeline.ingest import IngestReport

K = 5


@dataclass(frozen=True)
class Harness:
    """What a runner needs from the composition root: a store per key, ingestion, an agent."""

    store: Callable[[str], Store]  # key -> its store
    ingest: Callable[[list[str], Store, datetime | None], IngestReport]  # (paths, store, start)
    agent: Callable[
        [Store], Any
    ]  # store -> an answerer with .ask(question, before_ts=), of either kind


@dataclass(frozen=True)
class Asked:
    question_id: str
    question: str
    gold: str
    answer: str
    types: tuple[str, ...]  # short labels ("ME", "PU", ...); () where a set has none
    context: tuple[str, ...]  # texts of the memories read, best first
    expect_not_found: bool = False  # its evidence is out of reach by design
    read: int = 0  # memories read
    leaked: int | None = None  # of them, from clips after the cutoff; None: no cutoff applies
    ms: float = 0.0
    verdict: Verdict | None = None

    @property
    def yes_no(self) -> bool:
        return is_yes_no(self.gold)

    def in_context(self, k: int = K) -> bool:
        return contains_answer(self.gold, "\n".join(self.context[:k]))

    def to_json(self) -> dict:
        out = {
            "question_id": self.question_id,
            "question": self.question,
            "gold": self.gold,
            "answer": self.answer,
            "types": list(self.types),
            f"in_context@{K}": self.in_context(),
            "token_f1": round(token_f1(self.gold, self.answer), 4),
            "contains_gold": contains_answer(self.gold, self.answer),
            "read": self.read,
            "leaked": self.leaked,
            "ms": round(self.ms, 1),
        }
        if self.verdict is not None:
            out["judge"] = {"correct": self.verdict.correct, "reply": self.verdict.reply[:200]}
        return out


def ask(
    agent,
    question_id: str,
    question: str,
    gold: str,
    judge: Judge | None,
    types: tuple[str, ...] = (),
    expect_not_found: bool = False,
    before_ts: float | None = None,
    leaked: Callable[[Sequence], int] | None = None,
) -> Asked:
    """Ask ``agent`` one question (timed), count what it read beyond the cutoff with ``leaked``
    (memories read -> how many are out of bounds; None: no cutoff), and judge the answer."""
    t0 = time.perf_counter()
    answer = agent.ask(question, before_ts=before_ts)
    ms = 1000 * (time.perf_counter() - t0)
    read = answer.evidence
    verdict = judge.judge(question, gold, answer.answer) if judge is not None else None
    return Asked(
        question_id,
        question,
        gold,
        answer.answer,
        types,
        tuple(m.text for m in read),
        expect_not_found,
        len(read),
        None if leaked is None else leaked(read),
        ms,
        verdict,
    )


def size_mb(path: Path) -> float:
    """Bytes under a folder, in MB (0 when it is not there)."""
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6
        if path.is_dir()
        else 0.0
    )


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _accuracy(asked: list[Asked]) -> dict:
    judged = [
        a.verdict.correct for a in asked if a.verdict is not None and a.verdict.correct is not None
    ]
    right = sum(1 for correct in judged if correct)
    lo, hi = wilson_interval(right, len(judged))
    return {
        "accuracy": round(right / len(judged), 4) if judged else None,
        "judged": len(judged),
        "ci95": [round(lo, 4), round(hi, 4)] if judged else None,
    }


def summarise(asked: list[Asked], judged: bool, k: int = K) -> dict:
    """The figures of a run. ``answer_in_context@k`` is over questions with a findable, non-yes/no
    gold answer; ``not_found_ok`` counts out-of-reach questions whose answer was (rightly) not
    found; leakage is pooled over the memories read under a cutoff."""
    findable = [a for a in asked if not a.expect_not_found]
    scored = [a for a in findable if not a.yes_no]
    later = [a for a in asked if a.expect_not_found]
    cut = [a for a in asked if a.leaked is not None]
    read = sum(a.read for a in cut)
    figures: dict[str, object] = {
        "questions": len(asked),
        f"answer_in_context@{k}": _mean([float(a.in_context(k)) for a in scored]),
        "in_context_questions": len(scored),
        "yes_no_questions": sum(1 for a in findable if a.yes_no),
        "yes_no_in_context": _mean([float(a.in_context(k)) for a in findable if a.yes_no]),
        "out_of_reach_questions": len(later),
        "not_found_ok": sum(1 for a in later if not a.in_context(len(a.context))),
        "token_f1": _mean([token_f1(a.gold, a.answer) for a in findable]),
        "containment": _mean([float(contains_answer(a.gold, a.answer)) for a in findable]),
        "leakage": round(sum(a.leaked or 0 for a in cut) / read, 4) if read else 0.0,
        "leakage_questions": len(cut),
        "ms_per_query": round(sum(a.ms for a in asked) / len(asked), 1) if asked else None,
    }
    acc = _accuracy(asked) if judged else {"accuracy": None, "judged": 0, "ci95": None}
    figures.update(acc)
    figures["judge_failed"] = sum(
        1 for a in asked if a.verdict is not None and a.verdict.correct is None
    )
    figures["judge_unclear"] = sum(1 for a in asked if a.verdict is not None and a.verdict.unclear)
    per_type: dict[str, dict] = {}
    for label in sorted({t for a in asked for t in a.types}):
        of = [a for a in asked if label in a.types]
        row = {
            "questions": len(of),
            f"answer_in_context@{k}": _mean(
                [float(a.in_context(k)) for a in of if not a.expect_not_found and not a.yes_no]
            ),
        }
        if judged:
            row.update(_accuracy(of))
        per_type[label] = row
    figures["per_type"] = per_type
    return figures


def format_table(figures: dict, title: str, k: int = K) -> list[str]:
    """The report's lines: proxies labelled as proxies, accuracy only from a judge."""
    f = figures
    lines = [
        title,
        f"  questions {f['questions']}; answer-in-context@{k} (gold answer in the evidence read, recall proxy): "
        f"{pct(f[f'answer_in_context@{k}'])} of {f['in_context_questions']}",
        f"  yes/no gold answers, scored apart: {f['yes_no_questions']} (in context {pct(f['yes_no_in_context'])})",
        f"  out of reach by design: {f['out_of_reach_questions']}, rightly not found: {f['not_found_ok']}",
        f"  answer token F1 {_num(f['token_f1'])}, gold contained in answer {pct(f['containment'])} "
        "(proxies, not accuracy)",
        f"  leakage {f['leakage']:.4f} over {f['leakage_questions']} question(s) with a cutoff; "
        f"{_num(f['ms_per_query'])} ms per question",
    ]
    if f["accuracy"] is None:
        lines.append("  accuracy: not judged (pass --judge with an [llm] endpoint)")
    else:
        lo, hi = f["ci95"]
        lines.append(
            f"  judged accuracy {100 * f['accuracy']:.1f} % of {f['judged']} (95 % Wilson {100 * lo:.1f}-"
            f"{100 * hi:.1f} %); judge failed {f['judge_failed']}, unclear replies {f['judge_unclear']}"
        )
    if f["per_type"]:
        lines.append("  type  questions  in-context@5  accuracy (95 % CI)")
        for label, row in f["per_type"].items():
            acc = (
                "-"
                if row.get("accuracy") is None
                else (
                    f"{100 * row['accuracy']:.1f} % ({100 * row['ci95'][0]:.1f}-{100 * row['ci95'][1]:.1f})"
                )
            )
            lines.append(
                f"  {label:<5} {row['questions']:9d}  {pct(row[f'answer_in_context@{k}']):>12}  {acc}"
            )
    return lines


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}" if v < 10 else f"{v:.1f}"


# the flags the M3-Bench and ScreenshotVQA benches share, as they say them
FLAGS = {
    "--mini": "the small set built from real media, with hand-written questions",
    "--judge": "score answers with the paper's judge prompt on the [llm] endpoint ([llm] "
    "judge_model, default [llm] model)",
}


def add_flag(parser, name: str) -> None:
    """One of ``FLAGS`` (a switch) on the bench's ``parser``."""
    parser.add_argument(name, action="store_true", help=FLAGS[name])
