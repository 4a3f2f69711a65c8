"""``mnemo bench digest``: day digests of LoCoMo conversations against what the dataset says
happened each day.

Each conversation is ingested as ``bench locomo`` ingests it (one store each, its sessions spoken
by enrolled voices at the session's date and time). For every date that holds a session, the day
digest (``control.digest``, offline) is scored against the dataset's gold for that date:

- **event recall**: the share of ``event_summary`` events the digest states. An event counts as
  stated when one digest sentence holds at least ``COVER`` of the event's content words (stopwords
  and the conversation's speaker names left out, words folded to a crude stem: ``attends`` and
  ``attended`` are ``attend``). The dataset's events paraphrase what was said ("Caroline attends an
  LGBTQ support group" for "I went to a LGBTQ support group yesterday"): lexical matching
  undercounts paraphrase: the report says how well the rule tells the dataset's ``observation``
  facts from the turns they cite (``matcher_check``). Sentence-embedding similarity was tried as
  the rule and rejected: on those pairs (three dev conversations, mpnet), cosine 0.6 kept 77% of
  the cited turns, but only 29% of the turns it matched were the cited one (the turns of one
  session are all about the same things); this rule, at 50%: 73% and 79%.
- **ROUGE-L**: the F-measure of the longest common subsequence of words between the digest's
  moments and the ``session_summary`` of the day.

Two baselines in the same run, on the same days: ``lead`` (as many moments as the digest, the first
of the day) and ``all`` (every memory that could be a moment: the ceiling of event recall).
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC
from pathlib import Path
from typing import Any

import numpy as np

COVER = 0.5  # share of an event's content words one digest sentence must hold


def words_of(text: str, names: set[str]) -> set[str]:
    from control.digest import content_words, stem

    return {stem(w) for w in content_words(text) if w not in names}


def covered(event: str, sentences: list[str], names: set[str]) -> bool:
    """Whether one of ``sentences`` states ``event`` (see the module doc)."""
    need = words_of(event, names)
    if not need:
        return False
    return any(len(need & words_of(s, names)) >= COVER * len(need) for s in sentences)


def matcher_check(conversations, gold) -> tuple[float, float]:
    """How well ``covered`` tells a stated fact, on the dataset's own pairs: each ``observation``
    fact against the turn it cites (stated) and the other turns of its session (not stated).
    Returns (recall, precision)."""
    tp = fn = fp = 0
    for conv in conversations:
        names = {n.lower() for n in conv.speakers} | {n.lower()[:3] for n in conv.speakers}
        for session in conv.sessions:
            for _, fact, dia_id in gold[conv.key][session.index].observations:
                for turn in session.turns:
                    said = covered(fact, [turn.text], names)
                    if turn.dia_id == dia_id:
                        tp, fn = tp + said, fn + (not said)
                    else:
                        fp += said
    return (tp / (tp + fn) if tp + fn else 0.0), (tp / (tp + fp) if tp + fp else 0.0)


def compared_ways(name: str, how_many: Callable[[int, int], int]) -> dict[str, Any]:
    """The selections a bench compares, each a ``select`` for ``build``: ``name``'s own (None),
    the first ``how_many(candidates, limit)`` candidates ("lead"), and every candidate ("all")."""
    return {
        name: None,
        "lead": lambda v, texts, limit: list(range(how_many(len(v), limit))),
        "all": lambda v, texts, limit: list(range(len(v))),
    }


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F-measure over lower-case words."""
    a = re.findall(r"[a-z0-9']+", candidate.lower())
    b = re.findall(r"[a-z0-9']+", reference.lower())
    if not a or not b:
        return 0.0
    index = defaultdict(list)
    for j, w in enumerate(b):
        index[w].append(j)
    row = np.zeros(len(b) + 1, dtype=np.int32)
    for w in a:  # the LCS table one row at a time
        prev = row.copy()
        for j in index.get(w, ()):
            row[j + 1] = prev[j] + 1
        np.maximum.accumulate(np.maximum(row, prev), out=row)
    lcs = int(row[-1])
    if lcs == 0:
        return 0.0
    p, r = lcs / len(a), lcs / len(b)
    return 2 * p * r / (p + r)


def run(
    path: str | Path,
    make_store,
    policies,
    progress=lambda m: None,
    writer=None,
    writer_days: int | None = None,
) -> dict:
    """Ingest each conversation into ``make_store(key)`` and score its day digests; with ``writer``
    (a digest -> ``control.digest_llm.Written``), the LLM-written account of each day (of the first
    ``writer_days`` only, when given) beside the digest on the same days."""
    from bench.datasets.locomo import load, load_gold
    from bench.locomo import ingest_conversation
    from control.digest import build, day_bounds, moments_for

    conversations = load(path)
    gold = load_gold(path)
    ways = compared_ways("digest", moments_for)
    words: dict[str, list[int]] = {w: [] for w in ways}  # words of the moments, a day
    hits: dict[str, list[bool]] = {w: [] for w in ways}
    rouge: dict[str, list[float]] = {w: [] for w in ways}
    llm: dict[str, Any] = {
        "words": [],
        "hits": [],
        "rouge": [],
        "s": 0.0,
        "failed": 0,
        "dropped": 0,
        "sentences": 0,
        "model": "",
        "days": 0,
        "offline_hits": [],
        "offline_rouge": [],
        "ungrounded": 0,
    }
    days = 0
    digest_s = 0.0
    for conv in conversations:
        store = make_store(conv.key)
        ingest_conversation(conv, store, policies)
        names = {n.lower() for n in conv.speakers} | {n.lower()[:3] for n in conv.speakers}
        by_day = defaultdict(list)
        for s in conv.sessions:
            by_day[s.started_at.astimezone(UTC).date()].append(s)
        for day, sessions in sorted(by_day.items()):
            events = [e for s in sessions for _, e in gold[conv.key][s.index].events]
            summary = " ".join(gold[conv.key][s.index].summary for s in sessions)
            days += 1
            for way, select in ways.items():
                t0 = time.perf_counter()
                d = build(store, *day_bounds(day, UTC), "day", select=select)
                if way == "digest":
                    digest_s += time.perf_counter() - t0
                    if writer is not None and (writer_days is None or llm["days"] < writer_days):
                        said = " ".join(t.text for s in sessions for t in s.turns)
                        _write(writer, d, events, summary, names, llm, said)
                        moments = [m.text for m in d.moments]
                        llm["offline_hits"] += [covered(e, moments, names) for e in events]
                        if summary:
                            llm["offline_rouge"].append(rouge_l(" ".join(moments), summary))
                sentences = [m.text for m in d.moments]
                words[way].append(sum(len(t.split()) for t in sentences))
                hits[way] += [covered(e, sentences, names) for e in events]
                if summary:
                    rouge[way].append(rouge_l(" ".join(sentences), summary))
        progress(
            f"{conv.sample_id}: {len(by_day)} day(s), event recall so far {np.mean(hits['digest'] or [False]):.3f}"
        )
    figures: dict[str, Any] = {
        "days": days,
        "events": len(hits["digest"]),
        "event_recall": round(float(np.mean(hits["digest"])), 4) if hits["digest"] else None,
        "rouge_l": round(float(np.mean(rouge["digest"])), 4) if rouge["digest"] else None,
        "ms_per_day": round(1000 * digest_s / max(days, 1), 1),
    }
    if writer is not None:
        scores = {"event_recall": "hits", "rouge_l": "rouge"}
        scores |= {"offline_event_recall": "offline_hits", "offline_rouge_l": "offline_rouge"}
        figures["written"] = written_figures(llm, "days", "day", scores)
        figures["written"]["ungrounded_kept"] = llm["ungrounded"]
    figures["matcher_recall"], figures["matcher_precision"] = (
        round(x, 4) for x in matcher_check(conversations, gold)
    )
    figures["words_per_day"] = round(float(np.mean(words["digest"])), 1) if days else None
    for way in ("lead", "all"):
        figures[f"{way}_words_per_day"] = round(float(np.mean(words[way])), 1) if days else None
        figures[f"{way}_event_recall"] = round(float(np.mean(hits[way])), 4) if hits[way] else None
        figures[f"{way}_rouge_l"] = round(float(np.mean(rouge[way])), 4) if rouge[way] else None
    return figures


def _mean(xs: list, digits: int = 4) -> float | None:
    return round(float(np.mean(xs)), digits) if xs else None


def written_figures(out: dict, count: str, per: str, scores: dict[str, str]) -> dict[str, Any]:
    """The figures of what a model wrote, from ``out``'s tallies (``written_sentences``'): ``count``
    the tally of how many it wrote for ("days", "people"), ``per`` what one is ("day", "profile"),
    ``scores`` each figure's name -> the tally it is the mean of."""
    return {
        "model": out["model"],
        count: out[count],
        **{name: _mean(out[tally]) for name, tally in scores.items()},
        f"words_per_{per}": _mean(out["words"], 1),
        f"s_per_{per}": round(out["s"] / max(out[count], 1), 2),
        f"failed_{count}": out["failed"],
        "sentences": out["sentences"],
        "dropped_sentences": out["dropped"],
    }


def written_sentences(writer, what, out: dict) -> list[str]:
    """The sentences ``writer`` wrote of ``what`` (none when the model gave nothing usable),
    added to ``out``'s tallies: model, dropped, failed, seconds, sentences, words."""
    from llm.client import LLMError

    t0 = time.perf_counter()
    try:
        written = writer(what)
        sentences = [s.text for s in written.sentences]
        out["model"], out["dropped"] = written.model, out["dropped"] + written.dropped
    except LLMError:
        out["failed"] += 1
        sentences = []
    out["s"] += time.perf_counter() - t0
    out["sentences"] += len(sentences)
    out["words"].append(sum(len(t.split()) for t in sentences))
    return sentences


def _write(
    writer, digest, events: list[str], summary: str, names: set[str], out: dict, said: str
) -> None:
    """One day's LLM-written account, scored as the digest is; a day the model gave nothing usable
    for counts as stating nothing. ``ungrounded``: kept sentences that what was ``said`` that day
    (every turn, not only the notes they cite) does not support."""
    from control.digest_llm import grounded

    out["days"] += 1
    sentences = written_sentences(writer, digest, out)
    out["ungrounded"] += sum(not grounded(t, [said], frozenset(names)) for t in sentences)
    out["hits"] += [covered(e, sentences, names) for e in events]
    if summary:
        out["rouge"].append(rouge_l(" ".join(sentences), summary))


def format_report(f: dict) -> str:
    def pct(x):
        return "n/a" if x is None else f"{x:.3f}"

    return "\n".join(
        [
            f"bench digest: {f['days']} day(s), {f['events']} event(s) of event_summary; offline digests "
            f"({f['ms_per_day']} ms a day)",
            "                  event recall   ROUGE-L   words a day",
            f"  digest          {pct(f['event_recall']):>12}   {pct(f['rouge_l']):>7}   {f['words_per_day']:>11}",
            f"  lead (as many)  {pct(f['lead_event_recall']):>12}   {pct(f['lead_rouge_l']):>7}   "
            f"{f['lead_words_per_day']:>11}",
            f"  all memories    {pct(f['all_event_recall']):>12}   {pct(f['all_rouge_l']):>7}   "
            f"{f['all_words_per_day']:>11}",
            *(
                [
                    f"on the first {f['written']['days']} day(s), written by {f['written']['model']} ({f['written']['s_per_day']} s a day; "
                    f"{f['written']['sentences']} sentence(s) kept, {f['written']['dropped_sentences']} dropped as not grounded, "
                    f"{f['written']['failed_days']} day(s) with no usable reply, {f['written']['ungrounded_kept']} kept that the day's turns do not support):",
                    f"  LLM-written     {pct(f['written']['event_recall']):>12}   {pct(f['written']['rouge_l']):>7}   "
                    f"{f['written']['words_per_day']:>11}",
                    f"  digest          {pct(f['written']['offline_event_recall']):>12}   {pct(f['written']['offline_rouge_l']):>7}",
                ]
                if "written" in f
                else []
            ),
            f"an event counts as stated when one digest sentence holds {COVER:.0%} of its content words; that "
            f"rule, on the dataset's observation facts against the turns they cite: recall {pct(f['matcher_recall'])}, "
            f"precision {pct(f['matcher_precision'])}",
        ]
    )


def add_arguments(parser) -> None:
    """``mnemo bench digest``'s own options."""
    from bench.locomo import add_data_argument

    add_data_argument(parser)
    parser.add_argument(
        "--llm",
        action="store_true",
        help="each day also written by the LLM from the digest's cited moments, scored alike (the "
        "[llm] endpoint, or without one the packaged model served here)",
    )
    parser.add_argument(
        "--reason",
        action="store_true",
        help="as --llm, written by the packaged reasoning model ([control] reason_model) served here",
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help="--llm: the LLM writes only the first N days"
    )
