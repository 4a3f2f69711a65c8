"""Typed records that leave perception. Units are in field names."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import numpy as np


@dataclass(frozen=True)
class SourceInfo:
    """What probing a recording found."""

    path: str
    sha256: str
    duration_s: float
    has_audio: bool
    has_video: bool
    recorded_at: datetime  # absolute start of the recording (timezone-aware)
    start_origin: str  # "option", "metadata" or "mtime": where recorded_at came from


@dataclass(frozen=True)
class Clip:
    """A 30 s window [offset_s, offset_s + duration_s) of one source."""

    clip_id: str
    source: SourceInfo
    index: int
    offset_s: float
    duration_s: float

    @property
    def end_offset_s(self) -> float:
        return self.offset_s + self.duration_s

    @property
    def start_ts(self) -> float:
        """Absolute start, seconds since the epoch."""
        return self.source.recorded_at.timestamp() + self.offset_s

    @property
    def end_ts(self) -> float:
        return self.start_ts + self.duration_s


@dataclass(frozen=True)
class ClipMedia:
    """Decoded media of one clip: 16 kHz mono float32 audio and sampled RGB frames."""

    audio: np.ndarray | None  # shape (n,), float32 in [-1, 1]; None without an audio stream
    sample_rate: int
    frames: tuple[np.ndarray, ...]  # RGB uint8 (h, w, 3)
    frame_times_s: tuple[float, ...]  # offsets within the clip


@dataclass(frozen=True)
class Word:
    text: str
    start_s: float  # offset within the clip
    end_s: float
    probability: float


@dataclass(frozen=True)
class SpeechTurn:
    """A stretch of speech by one (unknown) speaker, with its voice embedding."""

    segment_id: str
    text: str
    start_s: float  # offset within the clip
    end_s: float
    language: str
    words: tuple[Word, ...] = ()
    voice_embedding: np.ndarray | None = (
        None  # the speaker's voice; None when it could not be embedded
    )
    speaker: str = ""  # clip-local speaker label from diarization ("s0", "s1", …); "" when unknown
    # the stream it was heard on: "mic" (the microphone: the owner's side) or "out" (what the
    # computer played) for captured sound, whose labels are then "m0", "o0", …; "" for a
    # recording's single track
    channel: str = ""


@dataclass(frozen=True)
class SpeakerSegment:
    """A stretch of the clip's speech attributed to one clip-local speaker (diarization)."""

    speaker: str  # "s0", "s1", … (captured sound: "m0", "o0", …) as on the speech turns
    start_s: float  # offset within the clip
    end_s: float


@dataclass(frozen=True)
class FaceObservation:
    face_id: str
    frame_time_s: float  # offset within the clip
    box_xywh: tuple[int, int, int, int]
    score: float  # detector score
    embedding: np.ndarray
    sharpness: float = 0.0  # variance of the Laplacian of the face crop at 128x128 (blur filter)
    person: str = ""  # clip-local face cluster ("p0", "p1", …); "" when not clustered
    crop_jpeg: bytes = b""  # the face, for an LLM memory writer; only kept when asked for


@dataclass(frozen=True)
class TextLine:
    """One line of on-screen text."""

    text: str
    box_xyxy: tuple[int, int, int, int]  # axis-aligned bounds of the detected quadrilateral
    confidence: float
    # where it was read: "ocr" (the pixels) or "atspi" (the app's accessibility tree, as the
    # capture daemon wrote it in the frame's sidecar; its text exact, confidence 1.0)
    source: str = "ocr"


@dataclass(frozen=True)
class FrameObservation:
    """What one sampled (non-duplicate) frame shows."""

    frame_time_s: float  # offset within the clip
    tags: tuple[tuple[str, float], ...] = ()  # object/scene labels with probabilities, best first
    embedding: np.ndarray | None = None  # image embedding (L2-normalised)
    text_lines: tuple[TextLine, ...] = ()
    image_jpeg: bytes = (
        b""  # the frame, downscaled, for an LLM memory writer; only kept when asked for
    )
    app: str = ""  # screenshots: the application in front, when the capture recorded it
    window: str = ""  # screenshots: its window title
    caption: str = ""  # a description of the frame (e.g. a shared photo's caption)
    source_id: str = (
        ""  # the item this frame came from (a screenshot path, a dataset id); "" for video
    )
    camera: str = ""  # photos: the camera's make and model (EXIF)
    place: tuple[float, float] | None = (
        None  # photos: where it was taken (EXIF GPS), latitude and longitude
    )
    input: bool = False  # captured screens: kept while the user typed or moved the mouse
    url: str = ""  # captured screens: the browser's address, where the accessibility tree gave it

    @property
    def text(self) -> str:
        return "\n".join(line.text for line in self.text_lines)


@dataclass(frozen=True)
class TrackSegment:
    """A stretch of a GPS track (``perception.sources.tracks``): a stay in one place, or a move
    between stays. Positions are (latitude, longitude) in degrees."""

    kind: str  # "stay" or "move"
    start_ts: float
    end_ts: float
    start: tuple[float, float]  # the first fix
    end: tuple[float, float]  # the last fix
    centre: tuple[float, float] | None  # a stay's median position; None for a move
    km: float  # the path along its fixes
    fixes: int


@dataclass(frozen=True)
class ClipObservations:
    clip: Clip
    speech: tuple[SpeechTurn, ...]
    faces: tuple[FaceObservation, ...]
    notes: tuple[str, ...] = ()  # why something is missing (no audio stream, decode error, ...)
    timings_s: dict[str, float] = field(default_factory=dict)  # seconds per stage
    frames: tuple[FrameObservation, ...] = ()  # sampled frames left after near-duplicate skipping
    caption: str = ""  # from a vision-language model; "" without one
    language: str = ""  # spoken language detected by ASR; "" without speech
    speakers: tuple[SpeakerSegment, ...] = ()  # who spoke when, over the clip's speech
    track: TrackSegment | None = None  # a clip of a GPS track: where the owner stayed or went

    @property
    def screen_text(self) -> str:
        return "\n".join(f.text for f in self.frames if f.text_lines)

    @property
    def transcript(self) -> str:
        return " ".join(t.text for t in self.speech)
