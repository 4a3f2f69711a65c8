"""``mnemo bench speed`` wired to the configured models: ASR alone, the sequential ingest and the Ray
ingest on ``bench.speed_media``'s five-minute recording (what it measures: ``bench.speed``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bench.speed import per_clip, writer_s_per_clip
from bench.speed_media import build_speed_recording
from graph.compare import differences
from graph.store import Store
from mnemo.config import MnemoConfig


def asr_only_s(cfg: MnemoConfig, recording: Path, clip_s: float) -> float:
    """Seconds the configured ASR takes over every clip of the recording (decoding not counted)."""
    from mnemo.wiring import build_asr, usable_cpus
    from perception.sources.media import SAMPLE_RATE, decode_audio, plan_clips, probe

    asr = build_asr(cfg.perception, cfg.perception.threads or usable_cpus())
    audio = [decode_audio(clip) for clip in plan_clips(probe(recording), clip_s)]
    asr.transcribe(audio[0][:SAMPLE_RATE], SAMPLE_RATE)  # load the model outside the timing
    t0 = time.perf_counter()
    for a in audio:
        asr.transcribe(a, SAMPLE_RATE)
    return time.perf_counter() - t0


def run(
    cfg: MnemoConfig,
    workdir: Path,
    workers: int | None = None,
    progress: Callable[[str], None] = lambda m: None,
) -> dict:
    import ray

    from mnemo.wiring import (
        build_perceivers,
        faces_backend_name,
        match_policies,
        perceivers_factory,
        text_embedder,
        usable_cpus,
    )
    from perception.sources.media import probe
    from pipeline.ingest import ingest
    from ray_jobs.ingest import connect, ingest_ray, peak_rss_mb

    recording = build_speed_recording()
    recording_s = probe(recording).duration_s
    clip_s = cfg.perception.clip_s
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    embedder = text_embedder(cfg.graph)
    embedder.embed(["warm up"])  # one text model for every store, loaded once outside the timings
    quiet = lambda m: None  # noqa: E731
    figures: dict = {"recording": str(recording), "recording_s": recording_s, "cpus": usable_cpus()}

    progress(f"ASR alone on {recording.name} ({recording_s:.0f} s) …")
    figures["asr_only_s"] = asr_only_s(cfg, recording, clip_s)

    progress("sequential ingest …")
    t0 = time.perf_counter()
    sequential = Store(workdir / "sequential", embedder)
    report = ingest(
        [str(recording)],
        sequential,
        build_perceivers(cfg.perception, cfg.llm),
        policies,
        clip_s,
        progress=quiet,
    )
    figures["sequential_s"] = time.perf_counter() - t0
    figures["clips"] = report.clips_new
    figures["stages_sequential"] = per_clip(report)
    figures["rss_mb_sequential"] = peak_rss_mb()

    ray_runs = {}
    try:
        n = connect(None, workers)
        for w in sorted({1, n}):
            progress(f"Ray ingest, {w} worker(s) …")
            store = Store(workdir / f"ray-{w}", embedder)
            t0 = time.perf_counter()
            report = ingest_ray(
                [str(recording)],
                store,
                perceivers_factory(cfg.perception),
                policies,
                clip_s,
                progress=quiet,
                workers=w,
            )
            ray_runs[w] = (time.perf_counter() - t0, report, differences(store, sequential))
    finally:
        ray.shutdown()
    figures["ray_s_by_workers"] = {w: s for w, (s, _r, _d) in ray_runs.items()}
    figures["differences"] = {w: d for w, (_s, _r, d) in ray_runs.items()}
    figures["workers"] = n
    ray_s, report, _ = ray_runs[n]
    figures["ray_s"] = ray_s
    figures["stages_ray"] = per_clip(report)
    figures["rss_mb_ray"] = dict(report.peak_rss_mb)
    figures["writer_s_per_clip"] = writer_s_per_clip(report)
    figures["equivalent"] = all(not d for d in figures["differences"].values())
    figures["realtime_x_sequential"] = recording_s / figures["sequential_s"]
    figures["realtime_x_ray"] = recording_s / ray_s
    figures["full_over_asr"] = ray_s / figures["asr_only_s"]
    return figures
