"""``mnemo bench m3``: M3-Bench with the paper's protocol.

Each video is ingested into its own store (M3-Agent builds a memory graph per video), keyed by the
file's content so a later run, or another annotation naming the same file, reuses it. Clip *i* is
[30i, 30i+30) of the video. A robot question is asked with memory truncated to clips ≤
``before_clip``: the agent's store queries carry ``before_ts`` = the end of that clip (only memories
that ended before it, as the store's filter enforces), and leakage is measured independently, from the
clip index of every memory the agent read. Web questions use the whole video.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from bench.datasets import m3bench
from bench.judge import Judge
from bench.qa import Asked, Harness, add_flag, ask, format_table, size_mb, summarise

# every video is ingested as if recorded from this instant, so clip i starts at ORIGIN + 30 i
ORIGIN = datetime(2025, 1, 1, tzinfo=UTC)


class NoVideos(ValueError):
    """None of the annotated videos is under the videos folder."""


def coverage(videos: list[m3bench.Video], found: dict[str, Path | None]) -> dict:
    present = [v for v in videos if found[v.video_id] is not None]
    return {
        "videos": len(videos),
        "videos_found": len(present),
        "questions_total": sum(len(v.questions) for v in videos),
        "questions_covered": sum(len(v.questions) for v in present),
    }


def run(
    annotations: str | Path,
    videos_dir: str | Path,
    harness: Harness,
    split: str | None = None,
    limit: int | None = None,
    judge: Judge | None = None,
    progress=lambda m: None,
) -> dict:
    from perception.sources.media import file_sha256

    split, videos = m3bench.load(annotations, split)
    root = Path(videos_dir)
    if not root.is_dir():
        raise NoVideos(f"--videos {root} is not a folder")
    found = {v.video_id: m3bench.resolve(v, root, split) for v in videos}
    cover = coverage(videos, found)
    progress(
        f"{split}: {cover['videos_found']} of {cover['videos']} videos found under {root} "
        f"({cover['questions_covered']} of {cover['questions_total']} questions)"
    )
    present = [v for v in videos if found[v.video_id] is not None]
    if not present:
        example = videos[0].video_path if videos else "VIDEO.mp4"
        raise NoVideos(
            f"none of the {len(videos)} videos named in {annotations} is under {root}: put them at "
            f"{root / example} (the annotation's video_path) or {root / Path(example).name}"
        )
    if limit is not None:
        present = present[:limit]
    asked: list[Asked] = []
    ingest_s, stores, failed = 0.0, set(), []
    for n, video in enumerate(present, 1):
        path = found[video.video_id]
        assert path is not None  # present holds only the videos found
        store = harness.store(file_sha256(path)[:16])
        stores.add(Path(store.uri))
        t0 = time.perf_counter()
        report = harness.ingest([str(path)], store, ORIGIN)
        ingest_s += time.perf_counter() - t0
        if report.files_failed or not store.count()["clips"]:
            why = "; ".join(r for _, r in report.files_failed) or "no clip could be stored"
            progress(f"[{n}/{len(present)}] {video.video_id}: skipped, {why}")
            failed.append({"video": video.video_id, "error": why})
            continue
        progress(
            f"[{n}/{len(present)}] {video.video_id}: {report.clips_new} new clip(s), "
            f"{report.clips_skipped} already stored; asking {len(video.questions)} question(s)"
        )
        asked += ask_video(video, store, harness.agent(store), split, judge)
    figures = summarise(asked, judged=judge is not None)
    figures.update(
        split=split,
        coverage=cover,
        videos_asked=len(present) - len(failed),
        videos_failed=failed,
        ingest_s=round(ingest_s, 1),
        store_mb=round(sum(size_mb(p) for p in stores), 2),
        asked=asked,
    )
    if judge is not None:
        figures["judge_model"] = judge.model
    return figures


def ask_video(video: m3bench.Video, store, agent, split: str, judge: Judge | None) -> list[Asked]:
    clip_index: dict[str, int] = {}

    def index_of(clip_id: str) -> int:
        if clip_id not in clip_index:
            row = store.get_clip(clip_id)
            clip_index[clip_id] = (
                int(row["index"]) if row is not None else 1 << 30
            )  # uncommitted: never allowed
        return clip_index[clip_id]

    out = []
    for q in video.questions:
        cutoff = q.before_clip if split == "robot" else None
        before_ts = None if cutoff is None else ORIGIN.timestamp() + (cutoff + 1) * m3bench.CLIP_S
        leaked = (
            None
            if cutoff is None
            else (lambda read, c=cutoff: sum(1 for m in read if index_of(m.clip_id) > c))
        )
        out.append(
            ask(
                agent,
                q.question_id,
                q.question,
                q.answer,
                judge,
                tuple(m3bench.TYPES[t] for t in q.types),
                q.evidence_is_later,
                before_ts,
                leaked,
            )
        )
    return out


def format_report(figures: dict) -> str:
    c = figures["coverage"]
    lines = [
        f"M3-Bench {figures['split']}: {c['videos_found']} of {c['videos']} videos present, "
        f"{figures['videos_asked']} asked; ingest {figures['ingest_s']:.1f} s this run, stores {figures['store_mb']:.2f} MB"
    ]
    lines += format_table(
        figures,
        "  memory truncated to clips <= before_clip in the store query"
        if figures["split"] == "robot"
        else "  whole video (web)",
    )
    for f in figures["videos_failed"]:
        lines.append(f"  skipped {f['video']}: {f['error']}")
    if figures.get("judge_model"):
        lines.append(f"  judge: {figures['judge_model']}")
    lines.append(
        "  paper (M3-Agent, GPT-4o judge): robot 30.7 %, web 48.9 %; robot ME 32.8, MH 29.4, CM 31.2, PU 43.3, GK 19.1"
    )
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench m3``'s own options."""
    parser.add_argument(
        "--annotations", metavar="FILE", help="robot.json or web.json from the M3-Agent release"
    )
    parser.add_argument(
        "--videos",
        metavar="DIR",
        help="folder holding the videos (as the annotations' video_path, or by file name)",
    )
    parser.add_argument(
        "--split", choices=["robot", "web"], help="the split (default: from the file name)"
    )
    add_flag(parser, "--mini")
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N videos found")
    add_flag(parser, "--judge")
    parser.add_argument(
        "--qa",
        action="store_true",
        help="--mini: the questions asked of the offline answer and of the packaged 0.5B and 1.5B "
        "reasoning (and the [llm] endpoint when one is configured), scored by LoCoMo's token F1",
    )
    parser.add_argument(
        "--answerers",
        metavar="LIST",
        help="--qa: which, comma-separated, of offline, 0.5b, 1.5b, endpoint (default: all there are)",
    )
    parser.add_argument(
        "--llm",
        action="store_true",
        help="--mini: the LLM control loop beside the offline answerer on the same questions, judged "
        "(the [llm] endpoint, or without one the packaged model served here)",
    )
    parser.add_argument(
        "--details", metavar="FILE", help="write every question, answer and score to this JSON file"
    )
