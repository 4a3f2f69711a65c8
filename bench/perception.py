"""``mnemo bench perception``: accuracy of the perception defaults on real media made by others.

- ASR word error rate, speaker attribution and diarization error rate (DER, which also counts speech
  predicted where there is none) on pyannote's ``sample.wav`` (30 s, two speakers) against its
  ``sample.stm`` and ``sample.rttm``;
- face identities and cluster purity on opencv-doc's ``Megamind.avi`` against hand-made shot labels
  (``tests/data/megamind_faces.json``), through perception, clip-local grouping and identity matching;
- OCR character error rate on two opencv-doc screenshots against a hand transcription of some of
  their lines (``tests/data/ocr_lines.json``). Text read beyond those lines is not scored: the
  transcription is partial, so it cannot tell real text from misreadings. ``ocr_cer`` reads the
  screenshots as the screenshot path does (their own size); ``ocr_cer_video`` reads them as a 720p
  screen recording reaches OCR: centred on a 1280x720 canvas and scaled to the 960x540 that video
  frames are decoded at, through the video path's text gate.

It also reports seconds per stage, with models loaded beforehand, and scaled to a 30 s clip.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.fixtures import opencv_doc, pyannote_sample, read_rttm, read_stm
from bench.metrics import (
    cluster_purity,
    diarization_error_rate,
    line_cer,
    meets,
    speaker_attribution,
    word_error_rate,
)
from memorize.identity import EntityMatcher, MatchPolicy
from memorize.writer_offline import offline_memories
from perception.observe import Perceivers, observe_clip
from perception.sources.frames import read_image
from perception.sources.media import plan_clips, probe

DATA_DIR = Path(__file__).resolve().parents[1] / "tests" / "data"

TARGETS = {
    "asr_wer": ("<=", 0.10),
    "speaker_attribution": (">=", 0.85),
    "face_identities": ("==", 2),
    "face_purity": (">=", 0.90),
    "ocr_cer": ("<=", 0.10),
    "ocr_cer_video": ("<=", 0.10),
}
REPORTED = ("speaker_der",)  # figures without a target yet


@dataclass
class PerceptionReport:
    figures: dict[str, float] = field(default_factory=dict)
    stage_s: dict[str, tuple[float, float]] = field(
        default_factory=dict
    )  # stage -> (seconds, media seconds)
    details: list[str] = field(default_factory=list)

    def meets(self, name: str) -> bool:
        return meets(self.figures[name], *TARGETS[name])


def _labels(name: str) -> dict:
    path = DATA_DIR / name
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} is missing: the bench reads its hand labels from the repository's "
            "tests/data; run it from a checkout (pip install -e .)"
        )
    return json.loads(path.read_text(encoding="utf-8"))


def _warm_up(p: Perceivers) -> None:
    """Load every model once, so the stage timings are steady-state per-clip costs."""
    silence = np.zeros(16000 * 2, dtype=np.float32)
    p.asr.transcribe(silence, 16000)
    p.speaker.embed_windows(silence, 16000)
    frame = np.full((120, 160, 3), 128, dtype=np.uint8)
    p.faces.analyze(frame)
    if p.image is not None:
        p.image.analyze([frame])
    if p.ocr is not None:
        p.ocr.read(frame)


def speech_figures(p: Perceivers, report: PerceptionReport) -> None:
    folder = pyannote_sample()
    source = probe(folder / "sample.wav")
    (clip,) = plan_clips(source, 30.0)
    obs = observe_clip(clip, p)
    reference = " ".join(text for _, _, _, text in read_stm(folder / "sample.stm"))
    report.figures["asr_wer"] = word_error_rate(reference, obs.transcript)
    ref_turns = [(t.speaker, t.start_s, t.end_s) for t in read_rttm(folder / "sample.rttm")]
    predicted = [(s.speaker, s.start_s, s.end_s) for s in obs.speakers]
    report.figures["speaker_attribution"] = speaker_attribution(ref_turns, predicted)
    report.figures["speaker_der"] = diarization_error_rate(ref_turns, predicted)
    report.stage_s["speech (ASR + diarization)"] = (obs.timings_s["speech_s"], clip.duration_s)
    report.stage_s["decode (audio)"] = (obs.timings_s["decode_s"], clip.duration_s)
    report.details.append(f"ASR transcript: {obs.transcript}")
    report.details.append(f"speakers found: {len({t.speaker for t in obs.speech if t.speaker})}")


def face_figures(p: Perceivers, face_threshold: float, report: PerceptionReport) -> None:
    labels = _labels("megamind_faces.json")
    source = probe(opencv_doc() / "Megamind.avi")
    matcher = EntityMatcher("face", MatchPolicy(face_threshold))
    voices = EntityMatcher("voice", MatchPolicy(1.0))
    entity_of: dict[str, str] = {}
    truth_of: dict[str, str | None] = {}
    seconds = {"faces": 0.0, "image": 0.0, "ocr": 0.0, "decode": 0.0}
    media_s = 0.0
    for clip in plan_clips(source, 30.0):
        obs = observe_clip(clip, p)
        for key in seconds:
            seconds[key] += obs.timings_s.get(f"{key}_s", 0.0)
        media_s += clip.duration_s
        for memory in offline_memories(obs, matcher, voices).memories:
            if memory.entity_ids and memory.entity_ids[0].startswith("face_"):
                for face_id in memory.provenance:
                    entity_of[face_id] = memory.entity_ids[0]
        for face in obs.faces:
            t = clip.offset_s + face.frame_time_s
            truth_of[face.face_id] = next(
                (s["identity"] for s in labels["shots"] if s["start_s"] <= t < s["end_s"]), None
            )
        report.details.append(
            f"Megamind clip {clip.index}: {len(obs.faces)} usable faces; "
            f"{'; '.join(obs.notes) or 'no notes'}; {len(obs.frames)} distinct frames, "
            f"top tags: {[f.tags[0][0] for f in obs.frames if f.tags][:6]}"
        )
    scored = [
        (entity_of[f], truth)
        for f, truth in truth_of.items()
        if truth is not None and f in entity_of
    ]
    report.figures["face_identities"] = len(set(entity_of.values()))
    report.figures["face_purity"] = cluster_purity([a for a, _ in scored], [t for _, t in scored])
    report.details.append(
        f"faces scored: {len(scored)}; entities: {sorted(set(entity_of.values()))}"
    )
    report.stage_s["decode (video, frames)"] = (seconds["decode"], media_s)
    report.stage_s["faces (detect, filter, group)"] = (seconds["faces"], media_s)
    report.stage_s["image tags + embedding"] = (seconds["image"], media_s)
    report.stage_s["OCR gate on video frames"] = (seconds["ocr"], media_s)


def ocr_figures(p: Perceivers, report: PerceptionReport) -> None:
    ocr = p.ocr
    if ocr is None:
        raise ValueError(
            'the OCR figure needs an OCR backend; set [perception] ocr_backend = "rapidocr"'
        )
    from bench.speed_media import centred
    from perception.ocr.stage import read_frames
    from perception.sources.frames import limit_size
    from perception.sources.media import VIDEO_MAX_SIDE

    def in_video(frame):  # the video path: the coverage gate's detection, reused by the read
        return read_frames([frame], [0.0], ocr, p.ocr_every_s, p.ocr_min_text_fraction, [])[0]

    labels = _labels("ocr_lines.json")
    folder = opencv_doc()
    totals = {"ocr_cer": [0, 0], "ocr_cer_video": [0, 0]}
    for name, lines in labels["images"].items():
        image = read_image(folder / name)
        video = limit_size(centred(image), VIDEO_MAX_SIDE)[0]
        for figure, frame, where, read_text in (
            ("ocr_cer", image, "", ocr.read),
            ("ocr_cer_video", video, " in a video frame", in_video),
        ):
            t0 = time.perf_counter()
            read = read_text(frame)
            report.stage_s[f"OCR {name}{where} ({frame.shape[1]}x{frame.shape[0]})"] = (
                time.perf_counter() - t0,
                0.0,
            )
            e, c = line_cer(lines, [ln.text for ln in read])
            report.details.append(
                f"OCR {name}{where}: {len(read)} lines, CER {e / c:.3f} "
                f"on {len(lines)} hand-typed lines"
            )
            totals[figure][0] += e
            totals[figure][1] += c
    for figure, (edits, chars) in totals.items():
        report.figures[figure] = edits / chars


def run(
    p: Perceivers, face_threshold: float, progress: Callable[[str], None] = lambda m: None
) -> PerceptionReport:
    report = PerceptionReport()
    progress("loading models …")
    _warm_up(p)
    progress("speech: ASR and speakers on pyannote's sample.wav …")
    speech_figures(p, report)
    progress("faces: Megamind.avi …")
    face_figures(p, face_threshold, report)
    progress("OCR: two opencv-doc screenshots …")
    ocr_figures(p, report)
    return report


def format_report(report: PerceptionReport) -> str:
    lines = ["figure                 value    target", "---------------------  -------  ---------"]
    for name, (op, bound) in TARGETS.items():
        v = report.figures[name]
        shown = f"{v:d}" if isinstance(v, int) else f"{v:.3f}"
        lines.append(
            f"{name:<21}  {shown:>7}  {op} {bound}  {'ok' if report.meets(name) else 'MISSED'}"
        )
    for name in REPORTED:
        lines.append(f"{name:<21}  {report.figures[name]:7.3f}  (reported)")
    width = max(38, *map(len, report.stage_s))
    lines += ["", f"{'stage':<{width}}  seconds   per 30 s of media"]
    for stage, (secs, media) in report.stage_s.items():
        per30 = f"{secs * 30.0 / media:.2f}" if media else "-"
        lines.append(f"{stage:<{width}}  {secs:7.2f}   {per30}")
    lines += [""] + report.details
    return "\n".join(lines)
