"""``mnemo bench speed``: how fast ingestion keeps up with recording, sequentially and on Ray.

On the five-minute recording of ``bench/speed_media.py`` (real speech, faces, film and screens), in
one run and with the configured (offline default) models:

- ASR alone on the same audio, every clip, with all this machine's CPUs: the floor of this pipeline;
- the sequential ingest (``mnemo ingest``), models loaded inside the timing;
- the Ray ingest (``mnemo ingest --ray``) with one worker and with one worker per CPU, each worker
  loading its models inside the timing;
- per-stage seconds per 30 s clip; the writer's serial seconds per clip (memorizing, and committing
  on the commit thread; both in clip order), and apart from them the embedding of the memories
  (on the commit thread, off the serial path) and how long the writer's loop waited on that thread;
  peak memory per process;
- whether each Ray store equals the sequential one (``graph.compare.differences``).

The stores are written under a temporary folder and removed afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bench.metrics import meets
from bench.speed_media import build_speed_recording
from graph.compare import differences
from graph.store import Store
from mnemo.config import MnemoConfig

TARGETS = {"realtime_x_ray": (">=", 5.0), "full_over_asr": ("<=", 2.5), "writer_s_per_clip": ("<=", 0.3),
           "equivalent": ("==", True)}


def asr_only_s(cfg: MnemoConfig, recording: Path, clip_s: float) -> float:
    """Seconds the configured ASR takes over every clip of the recording (decoding not counted)."""
    from mnemo.wiring import usable_cpus
    from perception.registry import build
    from perception.sources.media import SAMPLE_RATE, decode_audio, plan_clips, probe

    asr = build("asr", "faster-whisper", model=cfg.perception.asr_model, device=cfg.perception.device,
                compute_type=cfg.perception.asr_compute_type, cpu_threads=cfg.perception.threads or usable_cpus())
    audio = [decode_audio(clip) for clip in plan_clips(probe(recording), clip_s)]
    asr.transcribe(audio[0][:SAMPLE_RATE], SAMPLE_RATE)  # load the model outside the timing
    t0 = time.perf_counter()
    for a in audio:
        asr.transcribe(a, SAMPLE_RATE)
    return time.perf_counter() - t0


def _per_clip(report) -> dict[str, float]:
    n = max(1, report.clips_new)
    out = {k.removesuffix("_s"): v / n for k, v in report.stage_s.items() if v > 0}
    out["writer: memorize"] = report.memorize_s / n
    out["writer: commit"] = report.commit_s / n
    out["writer: embed memories"] = report.embed_s / n
    out["writer: loop waited"] = report.writer_wait_s / n
    return out


def run(cfg: MnemoConfig, workdir: Path, workers: int | None = None,
        progress: Callable[[str], None] = lambda m: None) -> dict:
    import ray

    from mnemo.wiring import (build_perceivers, faces_backend_name, match_policies, perceivers_factory, text_embedder,
                              usable_cpus)
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
    report = ingest([str(recording)], sequential, build_perceivers(cfg.perception, cfg.llm), policies, clip_s,
                    progress=quiet)
    figures["sequential_s"] = time.perf_counter() - t0
    figures["clips"] = report.clips_new
    figures["stages_sequential"] = _per_clip(report)
    figures["rss_mb_sequential"] = peak_rss_mb()

    ray_runs = {}
    try:
        n = connect(None, workers)
        for w in sorted({1, n}):
            progress(f"Ray ingest, {w} worker(s) …")
            store = Store(workdir / f"ray-{w}", embedder)
            t0 = time.perf_counter()
            report = ingest_ray([str(recording)], store, perceivers_factory(cfg.perception), policies, clip_s,
                                progress=quiet, workers=w)
            ray_runs[w] = (time.perf_counter() - t0, report, differences(store, sequential))
    finally:
        ray.shutdown()
    figures["ray_s_by_workers"] = {w: s for w, (s, _r, _d) in ray_runs.items()}
    figures["differences"] = {w: d for w, (_s, _r, d) in ray_runs.items()}
    figures["workers"] = n
    ray_s, report, _ = ray_runs[n]
    figures["ray_s"] = ray_s
    figures["stages_ray"] = _per_clip(report)
    figures["rss_mb_ray"] = dict(report.peak_rss_mb)
    figures["writer_s_per_clip"] = report.writer_s / max(1, report.clips_new)
    figures["equivalent"] = all(not d for d in figures["differences"].values())
    figures["realtime_x_sequential"] = recording_s / figures["sequential_s"]
    figures["realtime_x_ray"] = recording_s / ray_s
    figures["full_over_asr"] = ray_s / figures["asr_only_s"]
    return figures


def summary(f: dict) -> dict:
    """The JSON line: the figures the issue names, rounded."""
    keys = ("recording_s", "sequential_s", "ray_s", "workers", "asr_only_s", "realtime_x_sequential",
            "realtime_x_ray", "full_over_asr", "writer_s_per_clip", "equivalent")
    return {k: (round(f[k], 3) if isinstance(f[k], float) else f[k]) for k in keys}


def format_report(f: dict) -> str:
    lines = [f"recording: {f['recording']} ({f['recording_s']:.0f} s, {f['clips']} clips of 30 s), "
             f"{f['cpus']} CPU(s)", "",
             f"{'run':34} {'seconds':>8} {'x realtime':>11}",
             f"{'ASR alone (all CPUs)':34} {f['asr_only_s']:8.1f} {f['recording_s'] / f['asr_only_s']:11.2f}",
             f"{'sequential ingest':34} {f['sequential_s']:8.1f} {f['realtime_x_sequential']:11.2f}"]
    for w, s in f["ray_s_by_workers"].items():
        lines.append(f"{f'Ray ingest, {w} worker(s)':34} {s:8.1f} {f['recording_s'] / s:11.2f}")
    stages = list(dict.fromkeys([*f["stages_sequential"], *f["stages_ray"]]))
    lines += ["", f"{'seconds per 30 s clip':24} {'sequential':>11} {'Ray (' + str(f['workers']) + ' workers)':>16}"]
    for stage in stages:
        lines.append(f"{stage:24} {f['stages_sequential'].get(stage, 0.0):11.2f} {f['stages_ray'].get(stage, 0.0):16.2f}")
    lines += ["", "peak memory (MiB): " + ", ".join(
        [f"sequential process {f['rss_mb_sequential']:.0f}"] + [f"{k} {v:.0f}" for k, v in f["rss_mb_ray"].items()])]
    for w, d in f["differences"].items():
        lines.append(f"Ray store ({w} worker(s)) against the sequential one: " + ("equal" if not d else "; ".join(d)))
    lines.append("")
    for name, (op, bound) in TARGETS.items():
        v = f[name]
        shown = f"{v:.3f}" if isinstance(v, float) else str(v)
        lines.append(f"{name:22} {shown:>8}  {op} {bound}  {'ok' if meets(v, op, bound) else 'MISSED'}")
    return "\n".join(lines)
