"""``mnemo bench speed``'s figures: the writer's seconds per clip count every second it works on a
clip (memorizing, and the embedding and committing on its commit thread), and the report and JSON
line carry what the issue names, the line's keys as docs/benchmarks.md says them (the bench itself
runs by hand: minutes)."""

import json
import re
import time
from pathlib import Path

from bench import speed
from pipeline.ingest import IngestReport


class SlowEmbedder:
    """The store's embedder, taking at least ``delay_s`` a call (as a real model does on 2 cores)."""

    def __init__(self, inner, delay_s: float) -> None:
        self.inner, self.delay_s = inner, delay_s

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts):
        time.sleep(self.delay_s)
        return self.inner.embed(texts)


def test_the_writers_seconds_per_clip_count_the_embedding_on_the_commit_thread(tmp_path):
    """A real writer over three clips whose memories take 0.4 s each to embed: the per-clip figure
    holds those 0.4 s (they are the writer's work, done on its commit thread)."""
    from embeddings.base import build_text_embedder
    from factories import DAY, day_jobs
    from graph.store import Store
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer
    from pipeline.ingest import ClipWriter, IngestPlan

    store = Store(tmp_path / "store", SlowEmbedder(build_text_embedder("hash"), 0.4))
    report = IngestReport()
    writer = ClipWriter(
        store, Memorizer(store, MatchPolicy(0.9, 8), MatchPolicy(0.75, 8)), report, lambda _m: None
    )
    for job, obs in day_jobs(3):
        writer.write(job, obs)
    writer.finish(IngestPlan([], {DAY.path: 3}))
    assert report.clips_new == 3
    per_clip = speed.writer_s_per_clip(report)
    assert per_clip >= 0.4  # the embedding is in it
    parts = speed.per_clip(report)
    assert parts["writer: embed memories"] >= 0.4
    assert (
        per_clip
        >= parts["writer: memorize"]
        + parts["writer: embed memories"]
        + parts["writer: commit"]
        - 1e-9
    )


def test_per_stage_seconds_leave_out_a_stage_that_took_nothing():
    report = IngestReport(clips_new=4, stage_s={"speech_s": 20.0, "ocr_s": 0.0})
    per_clip = speed.per_clip(report)
    assert per_clip["speech"] == 5.0 and "ocr" not in per_clip


def _documented_json_keys() -> list[str]:
    """The keys of ``bench speed --json``'s last line, in order, as docs/benchmarks.md says them."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md").read_text("utf-8")
    section = text.split("{ #bench-speed }", 1)[1].split("\n## ", 1)[0]
    said = re.search(r"the last line is `\{(.*?)\}`", section, re.DOTALL)
    assert said, "docs/benchmarks.md's bench speed section no longer names the --json line's keys"
    return re.findall(r'"(\w+)"', said.group(1))


def test_the_report_marks_each_target_and_the_json_line_has_the_issues_keys():
    stages = {"speech": 5.0, "writer: memorize": 0.01}
    figures = {
        "recording": "/cache/lifelog-5min.mp4",
        "recording_s": 300.0,
        "clips": 10,
        "cpus": 2,
        "asr_only_s": 36.0,
        "sequential_s": 118.5,
        "ray_s": 102.9,
        "ray_s_by_workers": {1: 126.8, 2: 102.9},
        "workers": 2,
        "stages_sequential": stages,
        "stages_ray": stages,
        "rss_mb_sequential": 2800.0,
        "rss_mb_ray": {"driver": 2800.0},
        "differences": {1: [], 2: ["memories: 1 missing"]},
        "writer_s_per_clip": 0.104,
        "equivalent": False,
        "realtime_x_sequential": 300.0 / 118.5,
        "realtime_x_ray": 300.0 / 102.9,
        "full_over_asr": 102.9 / 36.0,
    }
    text = speed.format_report(figures)
    assert "Ray store (2 worker(s)) against the sequential one: memories: 1 missing" in text
    marks = {
        line.split()[0]: line.split()[-1]
        for line in text.splitlines()
        if line.split()[:1] and line.split()[0] in speed.TARGETS
    }
    assert marks == {
        "realtime_x_ray": "MISSED",
        "full_over_asr": "MISSED",
        "writer_s_per_clip": "ok",
        "equivalent": "MISSED",
    }
    line = json.loads(json.dumps(speed.summary(figures)))
    assert list(line) == _documented_json_keys()
    assert line["full_over_asr"] == 2.858 and line["equivalent"] is False
