"""``mnemo bench locomo --llm`` (and ``m3 --mini --llm``): the LLM control loop beside the offline
answerer on the same questions, in the same run.

Each LoCoMo conversation is ingested as the text bench does (``bench.locomo``); every question with
evidence (categories 1-4; ``limit`` asks only the first N) is answered twice, offline and through
the LLM loop. Per path: evidence recall@10 (the dialogue turns behind the first ten memories each
answer rests on), accuracy by the judge (the M3-Bench prompt, strict yes/no) where one is given,
seconds and tokens per question; for the loop also its errors (an exception out of it) and foreign
citations (a cited clip that none of its retrieved memories come from). A small model answers
badly: the figures show how the loop behaves with a real one.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bench.datasets.locomo import load
from bench.locomo import ingest_conversation, ranked_turns
from bench.metrics import recall_at_k


def run(
    path: str | Path,
    make_store: Callable,
    policies,
    answerers: Callable,
    judge=None,
    limit: int | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> dict:
    """``answerers(store)`` gives (offline answerer, LLM agent, the agent's ChatClient)."""
    recall: dict[str, list[float]] = {"offline": [], "llm": []}
    judged: dict[str, list[bool]] = {"offline": [], "llm": []}
    offline_s: list[float] = []
    checks: list[Checked] = []
    tokens = asked = 0
    for conv in load(path):
        if limit is not None and asked >= limit:
            break
        store = make_store(conv.key)
        ingest_conversation(conv, store, policies)
        offline, agent, client = answerers(store)
        checked = Checked(agent)
        checks.append(checked)
        known = conv.turn_ids
        for q in conv.questions:
            if not q.evidence or q.category == 5 or (limit is not None and asked >= limit):
                continue
            asked += 1
            t0 = time.perf_counter()
            answers = {"offline": offline.ask(q.question)}
            offline_s.append(time.perf_counter() - t0)
            before = sum(client.tokens.values())
            answers["llm"] = checked.ask(q.question)
            tokens += sum(client.tokens.values()) - before
            for name, answer in answers.items():
                recall[name].append(
                    recall_at_k(ranked_turns(answer.evidence, known), q.evidence, 10)
                )
                if judge is not None:
                    judged[name].append(
                        bool(judge.judge(q.question, str(q.answer), answer.answer).correct)
                    )
            progress(f"{asked} question(s) asked")
    return summary(asked, recall, judged, checks, offline_s, tokens, judge)


def summary(
    asked: int,
    recall: dict,
    judged: dict,
    checks: list[Checked],
    offline_s: list[float],
    tokens: int,
    judge,
) -> dict:
    """The issue's figures from per-path recall and verdicts and the loop's checks."""
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {
        "questions": asked,
        "llm_recall@10": mean(recall["llm"]),
        "offline_recall@10": mean(recall["offline"]),
        "llm_judge_accuracy": mean(judged["llm"]),
        "offline_judge_accuracy": mean(judged["offline"]),
        "errors": sum(c.errors for c in checks),
        "foreign_citations": sum(c.foreign_citations for c in checks),
        "s_per_question": mean([s for c in checks for s in c.seconds]),
        "offline_s_per_question": mean(offline_s),
        "tokens_per_question": round(tokens / asked, 1) if asked else None,
        "most_rounds": max([c.most_rounds for c in checks], default=0),
        "offline_fallbacks": sum(c.fallbacks for c in checks),
        "judge": getattr(judge, "model", None),
    }


def format_report(
    figures: dict, model: str, bench: str = "LoCoMo", recall: str = "recall@10"
) -> str:
    def f(x, fmt=".3f"):
        return "n/a" if x is None else format(x, fmt)

    w = max(9, len(recall))

    return "\n".join(
        [
            f"{bench}, the LLM loop ({model}) beside the offline answerer: {figures['questions']} question(s)",
            f"path      {recall:>{w}}  judge accuracy  s/question  tokens/question",
            f"offline   {f(figures['offline_recall@10']):>{w}}  {f(figures['offline_judge_accuracy']):>14}  "
            f"{f(figures['offline_s_per_question'], '.2f'):>10}  {'-':>15}",
            f"llm loop  {f(figures['llm_recall@10']):>{w}}  {f(figures['llm_judge_accuracy']):>14}  "
            f"{f(figures['s_per_question'], '.2f'):>10}  {f(figures['tokens_per_question'], '.0f'):>15}",
            f"errors {figures['errors']}, foreign citations {figures['foreign_citations']}, most rounds a question took "
            f"{figures['most_rounds']}, answered offline instead {figures['offline_fallbacks']} time(s) (the endpoint failed "
            f"or the model gave no action twice)",
            f"judge: {figures['judge'] or 'none'} (a small judge's verdicts are noise)",
        ]
    )


class Checked:
    """An answerer watched for what the LLM loop must never do: raise (counted in ``errors``; the
    question gets an empty answer), cite a clip it did not retrieve (``foreign_citations``), or
    run past its rounds (``most_rounds``: the highest round any answer's steps name)."""

    def __init__(self, agent) -> None:
        self.agent = agent
        self.errors = self.foreign_citations = self.most_rounds = self.fallbacks = 0
        self.seconds: list[float] = []

    def ask(self, question: str, before_ts: float | None = None):
        from control.answer import Answer

        t0 = time.perf_counter()
        try:
            answer = self.agent.ask(question, before_ts=before_ts)
        except Exception:  # noqa: BLE001 - counted: the loop must never raise
            self.errors += 1
            return Answer(question, "", (), ())
        finally:
            self.seconds.append(time.perf_counter() - t0)
        self.fallbacks += any(
            "answered offline" in step for step in answer.steps
        )  # the offline answer stood in
        shown = {m.clip_id for m in answer.evidence}
        self.foreign_citations += sum(1 for c in answer.citations if c.clip_id not in shown)
        rounds = [int(s.split(":")[0].split()[1]) for s in answer.steps if s.startswith("round ")]
        self.most_rounds = max([self.most_rounds, *rounds])
        return answer
