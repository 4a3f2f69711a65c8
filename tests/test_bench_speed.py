"""``mnemo bench speed``'s figures: the writer's serial seconds leave the embedding of memories out,
and the report and JSON line carry what the issue names (the bench itself runs by hand: minutes)."""

import json

from bench import speed
from pipeline.ingest import IngestReport


def test_the_writers_serial_seconds_are_memorizing_and_committing_only():
    report = IngestReport(clips_new=4, memorize_s=0.2, commit_s=0.6, embed_s=8.0, writer_wait_s=1.0,
                          stage_s={"speech_s": 20.0, "ocr_s": 0.0})
    assert report.writer_s == 0.8
    per_clip = speed.per_clip(report)
    assert per_clip["speech"] == 5.0 and "ocr" not in per_clip  # a stage that took nothing is left out
    assert (per_clip["writer: memorize"], per_clip["writer: commit"]) == (0.05, 0.15)
    assert (per_clip["writer: embed memories"], per_clip["writer: loop waited"]) == (2.0, 0.25)


def test_the_report_marks_each_target_and_the_json_line_has_the_issues_keys():
    stages = {"speech": 5.0, "writer: memorize": 0.01}
    figures = {"recording": "/cache/lifelog-5min.mp4", "recording_s": 300.0, "clips": 10, "cpus": 2,
               "asr_only_s": 36.0, "sequential_s": 118.5, "ray_s": 102.9, "ray_s_by_workers": {1: 126.8, 2: 102.9},
               "workers": 2, "stages_sequential": stages, "stages_ray": stages, "rss_mb_sequential": 2800.0,
               "rss_mb_ray": {"driver": 2800.0}, "differences": {1: [], 2: ["memories: 1 missing"]},
               "writer_s_per_clip": 0.104, "equivalent": False, "realtime_x_sequential": 300.0 / 118.5,
               "realtime_x_ray": 300.0 / 102.9, "full_over_asr": 102.9 / 36.0}
    text = speed.format_report(figures)
    assert "Ray store (2 worker(s)) against the sequential one: memories: 1 missing" in text
    marks = {line.split()[0]: line.split()[-1] for line in text.splitlines() if line.split()[:1] and
             line.split()[0] in speed.TARGETS}
    assert marks == {"realtime_x_ray": "MISSED", "full_over_asr": "MISSED", "writer_s_per_clip": "ok",
                     "equivalent": "MISSED"}
    line = json.loads(json.dumps(speed.summary(figures)))
    assert list(line) == ["recording_s", "sequential_s", "ray_s", "workers", "asr_only_s", "realtime_x_sequential",
                          "realtime_x_ray", "full_over_asr", "writer_s_per_clip", "equivalent"]
    assert line["full_over_asr"] == 2.858 and line["equivalent"] is False
