"""``mnemo bench day``: what a day of recordings costs, and what the gates that skip empty content save.

On the hour of ``bench/day_media.py`` (about a quarter of it speech, the rest quiet rooms, people
sitting still, a screen that barely changes, a film), with the configured (offline default) models
loaded before the timings:

- the sequential ingest (``mnemo ingest``'s path): seconds, x real time, per-stage seconds, and the
  process's peak resident memory, sampled while it runs;
- the cost with no gating, so the saving shows: the first six-minute block (one of each scene, in
  the day's proportions) is perceived again twice, with the gates (as the ingest ran) and with every
  gate off (ASR over all audio without voice activity detection, faces, tags and text on every
  frame, text looked for everywhere). Each stage's extra seconds in that block, times the number of
  blocks, is added to the measured ingest: ``ungated_x_realtime`` is an estimate from one block
  measured both ways, and says so;
- what the gates lose, on that block (``gate_losses``): ASR word error rate on the calls against
  pyannote's reference transcript, words "heard" where nobody speaks, frames with a face on the
  calls and the still scene, and the words typed on the desktop that text recognition read.

The run, wired to the configured models, is ``mnemo.bench_day.run``; here are the targets, the
losses and the report.
"""

from __future__ import annotations

from bench.day_media import BLOCK, typed_words
from bench.metrics import meets, normalize_words, word_error_rate

BLOCK_CLIPS = len(BLOCK)
TARGETS = {"x_realtime": (">=", 10.0), "peak_rss_mb": ("<=", 1536.0)}


def gate_losses(scenes: list[str], gated, ungated) -> dict:
    """What the gates change on one block (``ClipObservations`` of the same clips, with the gates
    and without): for each figure, ``(gated, ungated)``."""
    from bench.fixtures import pyannote_sample, read_stm

    reference = " ".join(text for _, _, _, text in read_stm(pyannote_sample() / "sample.stm"))

    def calls_wer(observations) -> float:
        wers = [
            word_error_rate(reference, o.transcript)
            for s, o in zip(scenes, observations)
            if s == "call"
        ]
        return round(sum(wers) / len(wers), 4) if wers else 0.0

    def words_without_speech(observations) -> int:
        return sum(
            len(normalize_words(o.transcript)) for s, o in zip(scenes, observations) if s != "call"
        )

    def frames_with_faces(observations) -> int:
        return sum(
            len({f.frame_time_s for f in o.faces})
            for s, o in zip(scenes, observations)
            if s in ("call", "still")
        )

    def typed_words_read(observations) -> int:
        return sum(
            1
            for word, o in zip(typed_words(scenes), observations)
            if word and word in normalize_words(o.screen_text)
        )

    return {
        name: (f(gated), f(ungated))
        for name, f in (
            ("calls_wer", calls_wer),
            ("words_without_speech", words_without_speech),
            ("frames_with_faces", frames_with_faces),
            ("typed_words_read", typed_words_read),
        )
    }


def ungated_stage_s(f: dict) -> dict[str, float]:
    """Each stage's seconds for the whole recording without gates: the ingest's, plus the extra the
    first block took without them, once per block."""
    stages = dict.fromkeys([*f["stage_s"], *f["block_ungated_stage_s"]], 0.0)
    return {
        k: f["stage_s"].get(k, 0.0)
        + f["blocks"]
        * (f["block_ungated_stage_s"].get(k, 0.0) - f["block_gated_stage_s"].get(k, 0.0))
        for k in stages
    }


def complete(f: dict) -> dict:
    """The derived figures, added in place."""
    f["x_realtime"] = f["recording_s"] / f["ingest_s"]
    ungated_s = f["ingest_s"] + f["blocks"] * (f["block_ungated_s"] - f["block_gated_s"])
    f["ungated_ingest_s"] = ungated_s
    f["ungated_x_realtime"] = f["recording_s"] / ungated_s
    f["ungated_stage_s"] = ungated_stage_s(f)
    return f


def summary(f: dict) -> dict:
    """The JSON line."""
    out = {
        k: round(f[k], 3)
        for k in (
            "recording_s",
            "x_realtime",
            "ungated_x_realtime",
            "peak_rss_mb",
            "speech_share",
            "ingest_s",
            "ungated_ingest_s",
        )
    }
    out |= {
        "clips": f["clips"],
        "cpus": f["cpus"],
        "blocks": f["blocks"],
        "stage_s": {k: round(v, 2) for k, v in f["stage_s"].items()},
        "ungated_stage_s": {k: round(v, 2) for k, v in f["ungated_stage_s"].items()},
        "writer_s": round(f["writer_s"], 2),
        "writer_parts_s": {k: round(v, 2) for k, v in f["writer_parts_s"].items()},
        "losses": {k: {"gated": g, "ungated": u} for k, (g, u) in f["losses"].items()},
        "meets": {k: meets(f[k], *t) for k, t in TARGETS.items()},
    }
    return out


def format_report(f: dict) -> str:
    scenes = ", ".join(f"{n} {s}" for s, n in f["scenes"].items())
    lines = [
        f"recording: {f['recording']} ({f['recording_s']:.0f} s, {f['clips']} clips of 30 s: {scenes}), "
        f"{f['speech_share']:.1%} of it speech; {f['cpus']} CPU(s), models loaded before the timings",
        "",
        f"{'stage':28} {'gated s':>9} {'ungated s':>10}   (ungated: estimated from the first block run both ways)",
    ]
    for stage in f["ungated_stage_s"]:
        lines.append(
            f"{stage.removesuffix('_s'):28} {f['stage_s'].get(stage, 0.0):9.1f} {f['ungated_stage_s'][stage]:10.1f}"
        )
    parts = ", ".join(f"{k.removesuffix('_s')} {v:.1f}" for k, v in f["writer_parts_s"].items())
    lines += [
        f"{'writer':28} {f['writer_s']:9.1f}   (its own thread: {parts})",
        "",
        f"ingest {f['ingest_s']:.1f} s: {f['x_realtime']:.2f}x real time "
        f"(target >= {TARGETS['x_realtime'][1]:g}: {'met' if meets(f['x_realtime'], *TARGETS['x_realtime']) else 'MISSED'}); "
        f"with no gate about {f['ungated_ingest_s']:.0f} s, {f['ungated_x_realtime']:.2f}x",
        f"peak resident memory during the ingest {f['peak_rss_mb']:.0f} MB ({f['rss_start_mb']:.0f} MB with the "
        f"models loaded before it; target <= {TARGETS['peak_rss_mb'][1]:g}: "
        f"{'met' if meets(f['peak_rss_mb'], *TARGETS['peak_rss_mb']) else 'MISSED'})",
        "",
        "what the gates lose on the first block (gated / ungated):",
    ]
    labels = {
        "calls_wer": "ASR word error rate on the calls",
        "words_without_speech": "words heard where nobody speaks",
        "frames_with_faces": "frames with a face (calls, still scene)",
        "typed_words_read": f"words typed on the desktop and read (of {f['block_scenes'].count('desktop')})",
    }
    for key, (g, u) in f["losses"].items():
        lines.append(f"  {labels[key]:44} {g} / {u}")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    """``mnemo bench day``'s own options."""
    parser.add_argument(
        "--blocks",
        type=int,
        metavar="N",
        help="six-minute blocks of the day recording (default 10: an hour)",
    )
