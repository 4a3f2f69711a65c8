"""``mnemo bench speed``: how fast ingestion keeps up with recording, sequentially and on Ray.

On the five-minute recording of ``bench/speed_media.py`` (real speech, faces, film and screens), in
one run and with the configured (offline default) models:

- ASR alone on the same audio, every clip, with all this machine's CPUs: the floor of this pipeline;
- the sequential ingest (``mnemo ingest``), models loaded inside the timing;
- the Ray ingest (``mnemo ingest --ray``) with one worker and with one worker per CPU, each worker
  loading its models inside the timing;
- per-stage seconds per 30 s clip; the writer's seconds per clip (``writer_s_per_clip``: every
  second it works on a clip, memorizing on its loop, then embedding the memories and committing on
  the commit thread), each part apart, and how long the writer's loop waited on that thread (not
  added: the wait overlaps the commit thread's work); peak memory per process;
- whether each Ray store equals the sequential one (``graph.compare.differences``).

The stores are written under a temporary folder and removed afterwards. The run, wired to the
configured models, is ``mnemo.bench_speed.run``; here are the figures' targets, per-clip seconds and
report.
"""

from __future__ import annotations

from bench.metrics import meets

TARGETS = {
    "realtime_x_ray": (">=", 5.0),
    "full_over_asr": ("<=", 2.5),
    "writer_s_per_clip": ("<=", 0.3),
    "equivalent": ("==", True),
}


def per_clip(report) -> dict[str, float]:
    """Seconds per new clip of each perception stage and of the writer's parts (an ``IngestReport``)."""
    n = max(1, report.clips_new)
    out = {k.removesuffix("_s"): v / n for k, v in report.stage_s.items() if v > 0}
    out["writer: memorize"] = report.memorize_s / n
    out["writer: commit"] = report.commit_s / n
    out["writer: embed memories"] = report.embed_s / n
    out["writer: loop waited"] = report.writer_wait_s / n
    return out


def writer_s_per_clip(report) -> float:
    """The writer's seconds per new clip: memorizing, embedding its memories and committing them."""
    return report.writer_s / max(1, report.clips_new)


def summary(f: dict) -> dict:
    """The JSON line: the figures the issue names, rounded."""
    keys = (
        "recording_s",
        "sequential_s",
        "ray_s",
        "workers",
        "asr_only_s",
        "realtime_x_sequential",
        "realtime_x_ray",
        "full_over_asr",
        "writer_s_per_clip",
        "equivalent",
    )
    return {k: (round(f[k], 3) if isinstance(f[k], float) else f[k]) for k in keys}


def format_report(f: dict) -> str:
    lines = [
        f"recording: {f['recording']} ({f['recording_s']:.0f} s, {f['clips']} clips of 30 s), "
        f"{f['cpus']} CPU(s)",
        "",
        f"{'run':34} {'seconds':>8} {'x realtime':>11}",
        f"{'ASR alone (all CPUs)':34} {f['asr_only_s']:8.1f} {f['recording_s'] / f['asr_only_s']:11.2f}",
        f"{'sequential ingest':34} {f['sequential_s']:8.1f} {f['realtime_x_sequential']:11.2f}",
    ]
    for w, s in f["ray_s_by_workers"].items():
        lines.append(f"{f'Ray ingest, {w} worker(s)':34} {s:8.1f} {f['recording_s'] / s:11.2f}")
    stages = list(dict.fromkeys([*f["stages_sequential"], *f["stages_ray"]]))
    lines += [
        "",
        f"{'seconds per 30 s clip':24} {'sequential':>11} {'Ray (' + str(f['workers']) + ' workers)':>16}",
    ]
    for stage in stages:
        lines.append(
            f"{stage:24} {f['stages_sequential'].get(stage, 0.0):11.2f} {f['stages_ray'].get(stage, 0.0):16.2f}"
        )
    lines += [
        "",
        "peak memory (MiB): "
        + ", ".join(
            [f"sequential process {f['rss_mb_sequential']:.0f}"]
            + [f"{k} {v:.0f}" for k, v in f["rss_mb_ray"].items()]
        ),
    ]
    for w, d in f["differences"].items():
        lines.append(
            f"Ray store ({w} worker(s)) against the sequential one: "
            + ("equal" if not d else "; ".join(d))
        )
    lines.append("")
    for name, (op, bound) in TARGETS.items():
        v = f[name]
        shown = f"{v:.3f}" if isinstance(v, float) else str(v)
        lines.append(
            f"{name:22} {shown:>8}  {op} {bound}  {'ok' if meets(v, op, bound) else 'MISSED'}"
        )
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench speed``'s own options."""
    parser.add_argument(
        "--workers", type=int, metavar="N", help="Ray perception workers (default: one per CPU)"
    )
