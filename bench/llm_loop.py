"""``mnemo bench locomo --llm``: the LLM control loop beside the offline answerer on the same
questions, in the same run.

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


def run(path: str | Path, make_store: Callable, policies, answerers: Callable, judge=None, limit: int | None = None,
        progress: Callable[[str], None] = lambda m: None) -> dict:
    """``answerers(store)`` gives (offline answerer, LLM agent, the agent's ChatClient)."""
    per: dict[str, dict[str, list]] = {p: {"recall": [], "judged": [], "seconds": [], "tokens": []}
                                       for p in ("offline", "llm")}
    errors = foreign = asked = most_rounds = 0
    for conv in load(path):
        if limit is not None and asked >= limit:
            break
        store = make_store(conv.key)
        ingest_conversation(conv, store, policies)
        offline, agent, client = answerers(store)
        known = conv.turn_ids
        for q in conv.questions:
            if not q.evidence or q.category == 5 or (limit is not None and asked >= limit):
                continue
            asked += 1
            for name, answerer in (("offline", offline), ("llm", agent)):
                before = sum(client.tokens.values()) if name == "llm" else 0
                t0 = time.perf_counter()
                try:
                    answer = answerer.ask(q.question)
                except Exception as e:  # noqa: BLE001 - the bench counts what the loop must never do
                    errors += 1
                    progress(f"{q.question!r}: the {name} path raised {type(e).__name__}: {e}")
                    continue
                row = per[name]
                row["seconds"].append(time.perf_counter() - t0)
                row["tokens"].append(sum(client.tokens.values()) - before if name == "llm" else 0)
                row["recall"].append(recall_at_k(ranked_turns(answer.evidence, known), q.evidence, 10))
                if name == "llm":
                    shown = {m.clip_id for m in answer.evidence}
                    foreign += sum(1 for c in answer.citations if c.clip_id not in shown)
                    rounds = [int(s.split(":")[0].split()[1]) for s in answer.steps if s.startswith("round ")]
                    most_rounds = max([most_rounds, *rounds])
                if judge is not None:
                    verdict = judge.judge(q.question, str(q.answer), answer.answer)
                    row["judged"].append(bool(verdict.correct))
            progress(f"{asked} question(s) asked")
    mean = lambda xs: round(sum(xs) / len(xs), 4) if xs else None  # noqa: E731
    return {"questions": asked, "llm_recall@10": mean(per["llm"]["recall"]),
            "offline_recall@10": mean(per["offline"]["recall"]),
            "llm_judge_accuracy": mean(per["llm"]["judged"]), "offline_judge_accuracy": mean(per["offline"]["judged"]),
            "errors": errors, "foreign_citations": foreign, "s_per_question": mean(per["llm"]["seconds"]),
            "offline_s_per_question": mean(per["offline"]["seconds"]),
            "tokens_per_question": mean(per["llm"]["tokens"]), "most_rounds": most_rounds,
            "judge": getattr(judge, "model", None)}


def format_report(figures: dict, model: str) -> str:
    def f(x, fmt=".3f"):
        return "n/a" if x is None else format(x, fmt)

    return "\n".join([
        f"LoCoMo, the LLM loop ({model}) beside the offline answerer: {figures['questions']} question(s)",
        "path      recall@10  judge accuracy  s/question  tokens/question",
        f"offline   {f(figures['offline_recall@10']):>9}  {f(figures['offline_judge_accuracy']):>14}  "
        f"{f(figures['offline_s_per_question'], '.2f'):>10}  {'-':>15}",
        f"llm loop  {f(figures['llm_recall@10']):>9}  {f(figures['llm_judge_accuracy']):>14}  "
        f"{f(figures['s_per_question'], '.2f'):>10}  {f(figures['tokens_per_question'], '.0f'):>15}",
        f"errors {figures['errors']}, foreign citations {figures['foreign_citations']}, most rounds a question took "
        f"{figures['most_rounds']}; judge: {figures['judge'] or 'none'} (a small judge's verdicts are noise)",
    ])
