"""M3-Bench annotations (the M3-Agent release's ``robot.json`` / ``web.json``) as typed records.

The upstream file is a dict: video id -> ``{"video_path", "mem_path", "qa_list": [...]}``; each
question has ``question``, ``answer``, ``question_id``, ``reasoning``, ``type`` (a list of labels)
and, in the robot split, ``timestamp`` ("MM:SS" or "HH:MM:SS", when the question is asked) and
``before_clip``: only memory from 30 s clips 0..``before_clip`` may be used. The timestamp is not
where the evidence is.

Type labels are normalised to the paper's five: the released robot.json still says "Multi-Detail
Reasoning" (the paper's Multi-Evidence Reasoning) and some files "Human Understanding" (Person
Understanding). Fields this loader does not know are kept in ``extra`` (the mini sets record
evidence spans there).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

CLIP_S = 30.0

# the paper's types and the short names its tables use
TYPES = {
    "Multi-Evidence Reasoning": "ME",
    "Multi-Hop Reasoning": "MH",
    "Cross-Modal Reasoning": "CM",
    "Person Understanding": "PU",
    "General Knowledge Extraction": "GK",
}
ALIASES = {
    "Multi-Detail Reasoning": "Multi-Evidence Reasoning",
    "Human Understanding": "Person Understanding",
}
SPLITS = ("robot", "web")


@dataclass(frozen=True)
class Evidence:
    """Where a mini-set answer is in the media (seconds from the start of the video)."""

    start_s: float
    end_s: float
    modality: str  # "speech", "screen", "face", ...


@dataclass(frozen=True)
class Question:
    question_id: str
    question: str
    answer: str
    types: tuple[str, ...]  # normalised full names, keys of TYPES
    timestamp_s: float | None  # when it is asked (robot)
    before_clip: int | None  # last clip whose memory may be used (robot); None: the whole video
    reasoning: str = ""
    evidence: tuple[Evidence, ...] = ()  # only in sets that record it (the mini sets)

    @property
    def evidence_is_later(self) -> bool:
        """All recorded evidence lies after ``before_clip``: the right answer is "not found"."""
        if self.before_clip is None or not self.evidence:
            return False
        return all(e.start_s >= (self.before_clip + 1) * CLIP_S for e in self.evidence)


@dataclass(frozen=True)
class Video:
    video_id: str
    video_path: str  # as written in the annotations, e.g. data/videos/robot/living_room_06.mp4
    questions: tuple[Question, ...]
    extra: dict = field(default_factory=dict)


def normalise_type(label: str) -> str:
    label = " ".join(label.split())
    label = ALIASES.get(label, label)
    if label not in TYPES:
        raise ValueError(
            f"unknown M3-Bench question type {label!r}; known: {', '.join([*TYPES, *ALIASES])}"
        )
    return label


def parse_timestamp(value: str | float | int) -> float:
    """Seconds from "MM:SS", "HH:MM:SS" or a number of seconds."""
    if isinstance(value, (int, float)):
        return float(value)
    parts = value.strip().split(":")
    if not 1 <= len(parts) <= 3 or not all(re.fullmatch(r"\d+(\.\d+)?", p) for p in parts):
        raise ValueError(f"timestamp {value!r} is not MM:SS or HH:MM:SS")
    seconds = 0.0
    for p in parts:
        seconds = seconds * 60 + float(p)
    return seconds


def _question(raw: dict, video_id: str, robot: bool) -> Question:
    qid = str(raw.get("question_id") or f"{video_id}_?")
    try:
        question, answer = str(raw["question"]), str(raw["answer"])
    except KeyError as e:
        raise ValueError(f"question {qid} of {video_id} has no {e.args[0]!r}") from None
    timestamp = (
        parse_timestamp(raw["timestamp"]) if raw.get("timestamp") not in (None, "") else None
    )
    before = None
    if robot:
        if raw.get("before_clip") is not None:
            before = int(raw["before_clip"])
        elif (
            timestamp is not None
        ):  # the release's rule: the clip before the one the question is asked in
            before = math.floor(timestamp / CLIP_S) - 1
    evidence = tuple(
        Evidence(float(e["start_s"]), float(e["end_s"]), str(e.get("modality", "")))
        for e in raw.get("evidence") or ()
    )
    types = raw.get("type") or []
    return Question(
        qid,
        question,
        answer,
        tuple(normalise_type(t) for t in ([types] if isinstance(types, str) else types)),
        timestamp,
        before,
        str(raw.get("reasoning", "")),
        evidence,
    )


def load(path: str | Path, split: str | None = None) -> tuple[str, list[Video]]:
    """(split, videos) from an annotation file. ``split`` defaults to the file's name (robot.json,
    web.json), else to "robot" when its questions carry ``before_clip``."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ValueError(f"cannot read the M3-Bench annotations {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ValueError(
            f"{path} is not JSON ({e}); pass robot.json or web.json from the M3-Agent release"
        ) from None
    if not isinstance(data, dict) or not all(
        isinstance(v, dict) and "qa_list" in v for v in data.values()
    ):
        raise ValueError(
            f"{path} is not in the M3-Bench format (a dict of video id -> {{video_path, qa_list}})"
        )
    if split is None:
        stem = path.stem.lower()
        split = next((s for s in SPLITS if s in stem), None)
        if split is None:
            split = (
                "robot"
                if any("before_clip" in q for v in data.values() for q in v["qa_list"])
                else "web"
            )
    if split not in SPLITS:
        raise ValueError(f"split {split!r}: choose robot or web")
    videos = []
    for video_id, entry in data.items():
        questions = tuple(_question(q, video_id, split == "robot") for q in entry["qa_list"])
        extra = {k: v for k, v in entry.items() if k not in ("video_path", "qa_list")}
        videos.append(
            Video(
                str(video_id), str(entry.get("video_path") or f"{video_id}.mp4"), questions, extra
            )
        )
    return split, videos


def resolve(video: Video, root: Path, split: str) -> Path | None:
    """The video file under ``root``: the annotation's relative path as is, or with its leading
    folders dropped one at a time (``data/videos/robot/x.mp4``, ``videos/robot/x.mp4``,
    ``robot/x.mp4``, ``x.mp4``), or ``<split>/x.mp4``."""
    rel = PurePosixPath(video.video_path)
    tails = [PurePosixPath(*rel.parts[i:]) for i in range(len(rel.parts))]
    for candidate in [*tails, PurePosixPath(split) / rel.name]:
        path = root / candidate
        if path.is_file():
            return path
    return None
