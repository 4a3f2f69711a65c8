"""``mnemo bench screenshotvqa``: MIRIX's ScreenshotVQA protocol.

Per user, every screenshot (files with "compressed" in the name skipped) is ingested in time order
into that user's store, then the user's questions are asked of the whole memory. The skipped files
are left out by ingesting a folder of links to the kept ones, so the store's clips are exactly what
the protocol sees. MIRIX reports accuracy as the unweighted mean over users; so does this runner
(``accuracy``), beside the pooled proxies.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from bench.datasets import screenshotvqa
from bench.judge import Judge
from bench.qa import Asked, Harness, add_flag, ask, format_table, pct, size_mb, summarise


def _stage(user: screenshotvqa.User, dest: Path) -> Path:
    """A folder of links to the user's kept screenshots (relinked each run)."""
    dest.mkdir(parents=True, exist_ok=True)
    wanted = {p.name: p.resolve() for p in user.screenshots}
    for old in dest.iterdir():
        if (
            old.name not in wanted
            or not old.is_symlink()
            or Path(os.readlink(old)) != wanted[old.name]
        ):
            old.unlink()
    for name, target in wanted.items():
        if not (dest / name).is_symlink():
            (dest / name).symlink_to(target)
    return dest


def run(
    data: str | Path,
    harness: Harness,
    work: Path,
    judge: Judge | None = None,
    progress=lambda m: None,
) -> dict:
    users = screenshotvqa.load(data)
    asked_all: list[Asked] = []
    per_user: dict[str, dict] = {}
    ingest_s, stores = 0.0, set()
    for user in users:
        key = hashlib.sha256(str(Path(data).resolve() / user.name).encode()).hexdigest()[:16]
        staged = _stage(user, work / "staged" / key / user.name)
        store = harness.store(key)
        stores.add(Path(store.uri))
        progress(
            f"{user.name}: {len(user.screenshots)} screenshots ({len(user.skipped)} compressed skipped), "
            f"{len(user.questions)} questions"
        )
        t0 = time.perf_counter()
        report = harness.ingest([str(staged)], store, None)
        ingest_s += time.perf_counter() - t0
        for path, why in report.clips_failed:
            progress(f"  {path}: {why}")
        agent = harness.agent(store)
        asked = [
            ask(
                agent,
                f"{user.name}_Q{i + 1}",
                qa.question,
                qa.answer,
                judge,
                expect_not_found=qa.expects_not_found,
            )
            for i, qa in enumerate(user.questions)
        ]
        per_user[user.name] = {
            k: v for k, v in summarise(asked, judge is not None).items() if k != "per_type"
        }
        asked_all += asked
    figures = summarise(asked_all, judge is not None)
    if judge is not None:  # MIRIX: the unweighted mean of the users' accuracies
        accs = [u["accuracy"] for u in per_user.values() if u["accuracy"] is not None]
        figures["accuracy_pooled"] = figures["accuracy"]
        figures["accuracy"] = round(sum(accs) / len(accs), 4) if accs else None
        figures["judge_model"] = judge.model
    figures.update(
        users=len(users),
        screenshots=sum(len(u.screenshots) for u in users),
        skipped_compressed=sum(len(u.skipped) for u in users),
        per_user=per_user,
        ingest_s=round(ingest_s, 1),
        store_mb=round(sum(size_mb(p) for p in stores), 2),
        asked=asked_all,
    )
    return figures


def format_report(figures: dict) -> str:
    lines = [
        f"ScreenshotVQA: {figures['users']} users, {figures['screenshots']} screenshots "
        f"({figures['skipped_compressed']} compressed skipped); ingest {figures['ingest_s']:.1f} s this run, "
        f"stores {figures['store_mb']:.2f} MB"
    ]
    lines += format_table(figures, "  all screenshots ingested, then each user's questions asked")
    if figures["accuracy"] is not None:
        lines.append(
            f"  accuracy, unweighted mean over users (MIRIX's protocol): {100 * figures['accuracy']:.1f} %; "
            f"judge {figures['judge_model']}"
        )
    for name, u in figures["per_user"].items():
        lines.append(
            f"  {name}: {u['questions']} questions, in-context@5 {pct(u['answer_in_context@5'])}"
        )
    lines.append(
        "  paper (MIRIX): MIRIX 59.50 % at 15.89 MB; SigLIP@50 RAG 44.10 % at 15.07 GB; Gemini long context 11.66 %"
    )
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench screenshotvqa``'s own options."""
    parser.add_argument(
        "--data",
        metavar="DIR",
        help="a folder with qa_pairs.json and one folder of screenshots per user",
    )
    add_flag(parser, "--mini")
    add_flag(parser, "--judge")
    parser.add_argument(
        "--details", metavar="FILE", help="write every question, answer and score to this JSON file"
    )
