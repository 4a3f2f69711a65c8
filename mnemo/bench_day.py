"""``mnemo bench day`` wired to the configured models: the day recording (``bench.day_media``) through
the sequential ingest, and its first block perceived again with every gate off (what it measures:
``bench.day``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench.day import BLOCK_CLIPS, gate_losses
from bench.day_media import BLOCK, BLOCKS, build_day_recording, schedule, speech_share
from graph.store import Store
from mnemo.config import MnemoConfig


class RssPeak:
    """This process's resident memory, sampled every ``every_s`` on a thread: the peak while it runs
    (``ru_maxrss`` would also hold what the process took before, building the recording)."""

    def __init__(self, every_s: float = 0.2) -> None:
        import psutil

        self._process = psutil.Process()
        self.every_s = every_s
        self.start_mb = self.peak_mb = self._process.memory_info().rss / 2**20
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-peak", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak_mb = max(self.peak_mb, self._process.memory_info().rss / 2**20)

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, self._process.memory_info().rss / 2**20)


def ungated(p):
    """The same perceivers with every gate off: ASR decodes all audio (no VAD), every frame is
    distinct (faces, tags and text on each, faces looked for however little a frame changed), text
    is looked for and read on every frame whatever it holds."""
    asr = p.asr.without_vad() if hasattr(p.asr, "without_vad") else p.asr
    return replace(
        p,
        asr=asr,
        duplicate_max_diff=0.0,
        ocr_every_s=0.0,
        ocr_min_text_fraction=0.0,
        ocr_small_edit=None,
        faces_where_changed=False,
    )


def perceive_block(clips, perceivers) -> tuple[float, dict[str, float], list]:
    """Seconds, seconds per stage, and the observations of these clips perceived (nothing stored)."""
    from perception.observe import observe_clip

    stages: dict[str, float] = {}
    observations = []
    t0 = time.perf_counter()
    for clip in clips:
        obs = observe_clip(clip, perceivers)
        for stage, s in obs.timings_s.items():
            stages[stage] = stages.get(stage, 0.0) + s
        observations.append(obs)
    return time.perf_counter() - t0, stages, observations


def run(
    cfg: MnemoConfig,
    workdir: Path,
    blocks: int = BLOCKS,
    progress: Callable[[str], None] = lambda m: None,
) -> dict:
    from bench.perception import _warm_up
    from mnemo.wiring import (
        build_perceivers,
        faces_backend_name,
        match_policies,
        text_embedder,
        usable_cpus,
    )
    from perception.sources.media import plan_clips, probe
    from pipeline.ingest import ingest

    progress(
        f"building the day recording ({blocks} blocks of {len(BLOCK)} clips; once, then cached) …"
    )
    recording = build_day_recording(blocks)
    source = probe(recording)
    clip_s = cfg.perception.clip_s
    perceivers = build_perceivers(cfg.perception, cfg.llm)
    embedder = text_embedder(cfg.graph)
    embedder.embed(["warm up"])
    _warm_up(perceivers)  # models loaded outside the timings: a day's ingest runs with them loaded
    figures: dict = {
        "recording": str(recording),
        "recording_s": source.duration_s,
        "cpus": usable_cpus(),
        "blocks": blocks,
        "speech_share": speech_share(blocks),
        "scenes": dict.fromkeys(BLOCK, 0),
    }
    for scene in schedule(blocks):
        figures["scenes"][scene] += 1

    progress(f"sequential ingest of {source.duration_s:.0f} s …")
    with RssPeak() as rss:
        t0 = time.perf_counter()
        report = ingest(
            [str(recording)],
            Store(workdir / "day", embedder),
            perceivers,
            match_policies(cfg.memorize, faces_backend_name(cfg.perception)),
            clip_s,
            progress=lambda m: None,
        )
        figures["ingest_s"] = time.perf_counter() - t0
    if report.files_failed or report.clips_failed:
        raise RuntimeError(
            f"the day recording did not ingest cleanly: {report.files_failed + report.clips_failed}"
        )
    figures |= {
        "clips": report.clips_new,
        "rss_start_mb": rss.start_mb,
        "peak_rss_mb": rss.peak_mb,
        "stage_s": dict(report.stage_s),
        "writer_s": report.writer_s,
        "writer_parts_s": {
            "memorize_s": report.memorize_s,
            "embed_s": report.embed_s,
            "commit_s": report.commit_s,
        },
    }

    first = list(plan_clips(source, clip_s))[:BLOCK_CLIPS]
    progress(f"the first block ({len(first)} clips) perceived with the gates, then without …")
    figures["block_gated_s"], figures["block_gated_stage_s"], gated_obs = perceive_block(
        first, perceivers
    )
    figures["block_ungated_s"], figures["block_ungated_stage_s"], ungated_obs = perceive_block(
        first, ungated(perceivers)
    )
    figures["block_scenes"] = schedule(1)
    figures["losses"] = gate_losses(figures["block_scenes"], gated_obs, ungated_obs)
    return figures
