"""The ingest's unit of work: ``ClipJob``, one clip to observe and memorize.

``plan`` (``pipeline.ingest``) makes the jobs, ``pipeline.hints`` adds the names each one's speech
may hold, ``observe_job`` perceives one and ``ClipWriter`` memorizes them in ``seq`` order (in one
process, or on Ray through ``ray_jobs``). The record lives apart from all of them so that each
imports it without importing the others.
"""

from __future__ import annotations

from dataclasses import dataclass

from perception.records import Clip, TrackSegment
from perception.sources.screenshots import ScreenClip
from perception.speech.hints import SpeechHints


@dataclass(frozen=True)
class ClipJob:
    """One clip to observe and memorize; ``seq`` is its place in the memorizing order."""

    seq: int
    path: str  # the file or screenshot folder it comes from
    label: str  # for progress lines
    clip: Clip
    screens: ScreenClip | None = None  # a clip of screenshots
    track: TrackSegment | None = None  # a stay or a move of a GPS track
    hints: SpeechHints | None = None  # the names its speech may hold (``pipeline.hints``)
