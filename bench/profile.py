"""``mnemo bench profile``: each speaker's profile (``control.profile``) against what LoCoMo's
annotators observed about them.

Each conversation is ingested as ``bench locomo`` ingests it (one store each, its sessions spoken by
enrolled voices). For every speaker, the profile built offline is scored against the dataset's
``observation`` facts about that speaker (``Caroline is researching adoption agencies``), all
sessions together:

- **fact recall**: the share of those facts that one sentence of the profile states, matched as
  ``bench digest`` matches events (``bench.digest.covered``: one profile sentence holds at least half
  of the fact's content words, names left out, crude stems), with the same check of the rule
  against the turns the facts cite.

Two baselines in the same run, on the same people: ``lead`` (as many statements as the profile, the
person's first ones) and ``all`` (everything the profile could quote: every first-person turn of
theirs; the ceiling of fact recall for an extractive profile, and how many words it takes).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np


def score(profile, facts: list[str], names: set[str]) -> list[bool]:
    from bench.digest import covered

    sentences = profile.sentences()
    return [covered(f, sentences, names) for f in facts]


def run(
    path: str | Path,
    make_store,
    policies,
    progress=lambda m: None,
    ingest: bool = True,
    writer=None,
    writer_people: int | None = None,
) -> dict:
    """Ingest each conversation into ``make_store(key)`` (``ingest=False``: the stores already hold
    them) and score each speaker's profile; with ``writer`` (a store and a person ->
    ``control.digest_llm.Written``), the written profile of each person (of the first
    ``writer_people`` only, when given) beside the profile on the same people."""
    from bench.datasets.locomo import load, load_gold
    from bench.digest import compared_ways, matcher_check, written_figures
    from bench.locomo import ingest_conversation
    from control.profile import build, statements_for

    conversations = load(path)
    gold = load_gold(path)
    ways = compared_ways("profile", statements_for)
    hits: dict[str, list[bool]] = {w: [] for w in ways}
    words: dict[str, list[int]] = {w: [] for w in ways}
    per_person: list[dict[str, object]] = []
    people = 0
    build_s = 0.0
    written: dict[str, Any] = {"hits": [], "offline_hits": [], "people": 0, "failed": 0}
    written |= {"sentences": 0, "dropped": 0, "words": [], "s": 0.0, "model": ""}
    for conv in conversations:
        store = make_store(conv.key)
        if ingest:
            ingest_conversation(conv, store, policies)
        names = {n.lower() for n in conv.speakers} | {n.lower()[:3] for n in conv.speakers}
        for speaker in conv.speakers:
            facts = [
                fact
                for s in conv.sessions
                for who, fact, _ in gold[conv.key][s.index].observations
                if who == speaker
            ]
            if not facts:
                continue
            people += 1
            for way, select in ways.items():
                t0 = time.perf_counter()
                profile = build(store, speaker, select=select)
                if way == "profile":
                    build_s += time.perf_counter() - t0
                    per_person.append(
                        {
                            "conversation": conv.sample_id,
                            "person": speaker,
                            "facts": len(facts),
                            "statements": len(profile.statements),
                            "candidates": profile.candidates,
                        }
                    )
                got = score(profile, facts, names)
                hits[way] += got
                words[way].append(sum(len(t.split()) for t in profile.sentences()))
                if way == "profile":
                    per_person[-1]["fact_recall"] = round(float(np.mean(got)), 4)
                    if writer is not None and (
                        writer_people is None or written["people"] < writer_people
                    ):
                        _write(writer, store, speaker, facts, names, written)
                        written["offline_hits"] += got
        progress(f"{conv.sample_id}: fact recall so far {np.mean(hits['profile'] or [False]):.3f}")
    figures: dict[str, object] = {
        "people": people,
        "facts": len(hits["profile"]),
        "fact_recall": round(float(np.mean(hits["profile"])), 4) if hits["profile"] else None,
        "ms_per_profile": round(1000 * build_s / max(people, 1), 1),
        "words_per_profile": round(float(np.mean(words["profile"])), 1) if people else None,
    }
    for way in ("lead", "all"):
        figures[f"{way}_fact_recall"] = round(float(np.mean(hits[way])), 4) if hits[way] else None
        figures[f"{way}_words_per_profile"] = (
            round(float(np.mean(words[way])), 1) if people else None
        )
    if writer is not None:
        scores = {"fact_recall": "hits", "offline_fact_recall": "offline_hits"}
        figures["written"] = written_figures(written, "people", "profile", scores)
    figures["matcher_recall"], figures["matcher_precision"] = (
        round(x, 4) for x in matcher_check(conversations, gold)
    )
    figures["per_person"] = per_person
    return figures


def _write(writer, store, speaker: str, facts: list[str], names: set[str], out: dict) -> None:
    """One person's written profile (``writer(store, speaker)``), scored as the profile is; a
    person the model gave nothing usable for counts as stating nothing."""
    from bench.digest import covered, written_sentences

    out["people"] += 1
    sentences = written_sentences(lambda who: writer(store, who), speaker, out)
    out["hits"] += [covered(f, sentences, names) for f in facts]


def format_report(f: dict) -> str:
    def pct(x):
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        f"bench profile: {f['people']} people, {f['facts']} observation fact(s); offline profiles "
        f"({f['ms_per_profile']} ms each)",
        "                      fact recall   words a profile",
        f"  profile             {pct(f['fact_recall']):>11}   {f['words_per_profile']:>15}",
        f"  lead (as many)      {pct(f['lead_fact_recall']):>11}   {f['lead_words_per_profile']:>15}",
        f"  all first-person    {pct(f['all_fact_recall']):>11}   {f['all_words_per_profile']:>15}",
    ]
    lines += [
        f"    {p['conversation']} {p['person']}: {p['fact_recall']:.3f} of {p['facts']} fact(s), "
        f"{p['statements']} statement(s) of {p['candidates']}"
        for p in f["per_person"]
    ]
    if "written" in f:
        w = f["written"]
        lines += [
            f"on the first {w['people']} person(s), written by {w['model']} ({w['s_per_profile']} s "
            f"a profile; {w['sentences']} sentence(s) kept, {w['dropped_sentences']} dropped as not "
            f"grounded, {w['failed_people']} with no usable reply):",
            f"  written             {pct(w['fact_recall']):>11}   {w['words_per_profile']!s:>15}",
            f"  profile             {pct(w['offline_fact_recall']):>11}",
        ]
    lines.append(
        f"a fact counts as stated when one profile sentence holds half of its content words; that rule, "
        f"on the dataset's observation facts against the turns they cite: recall {pct(f['matcher_recall'])}, "
        f"precision {pct(f['matcher_precision'])}"
    )
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench profile``'s own options (``--spoken``: ``bench.locomo_spoken``)."""
    from bench.locomo import add_data_argument, add_spoken_arguments

    add_data_argument(parser)
    add_spoken_arguments(parser)
    parser.add_argument(
        "--reason",
        action="store_true",
        help="also each profile written by the packaged reasoning model ([control] reason_model; "
        "a configured [llm] endpoint is used instead), scored beside the profile",
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help="--reason: the model writes only the first N people"
    )
