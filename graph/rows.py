"""Rows of the memory graph. Times are absolute, seconds since the epoch (``*_ts``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

# MIRIX's memory types that the writers produce: episodic = events (speech, faces, apps, scenes),
# semantic = lasting facts (names, origins, homes), resource = what was on screen (OCR)
MemoryKind = Literal["episodic", "semantic", "resource"]
MEMORY_KINDS: tuple[str, ...] = get_args(MemoryKind)
ENTITY_KINDS = ("face", "voice", "character")
# introduced_as / addressed_as: a voice heard giving, or being called by, a name (dst ``name:<Name>``);
# says_name: a voice that called someone else by that name (so it is probably not theirs).
# A name said to one of several voices (whom is not known yet) starts at them all, comma-joined.
EDGE_KINDS = (
    "mentions",
    "same_person",
    "next_in_time",
    "supports",
    "supersedes",
    "introduced_as",
    "addressed_as",
    "says_name",
)


# in a memory's provenance: made from screens captured while the user typed or moved the mouse, so
# the owner ("I", ``mnemo people me``) is the one who wrote or read it
BY_OWNER = "owner:at-the-keyboard"
# in a memory's provenance: speech heard on the capture daemon's microphone (the owner's side of a
# call, not what the computer played), so most likely the owner's own words
HEARD_ON_MIC = "owner:microphone"


def sources_of(src_id: str) -> list[str]:
    """The nodes an edge starts at: one, or several comma-joined (a name said to one of them)."""
    return src_id.split(",")


def content_id(*parts: object) -> str:
    """A stable id from content: the same inputs give the same id on every run."""
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:24]


@dataclass(frozen=True)
class ClipRow:
    clip_id: str
    source_path: str
    source_sha256: str
    index: int
    offset_s: float
    duration_s: float
    start_ts: float
    end_ts: float
    transcript: str
    notes: tuple[str, ...] = ()
    screen_text: str = ""  # OCR lines of the clip's distinct frames
    caption: str = ""  # from a vision-language model, when one is configured

    @property
    def media_location(self) -> str:
        """Where the clip's media is: the source file and the offsets (clips are not copied)."""
        return f"{self.source_path}#t={self.offset_s:g},{self.offset_s + self.duration_s:g}"


@dataclass
class Entity:
    """A persistent identity (``face_3``, ``voice_7``) with a bounded set of embedding samples."""

    entity_id: str
    kind: str  # one of ENTITY_KINDS
    first_seen_ts: float
    last_seen_ts: float
    samples: list[np.ndarray] = field(default_factory=list)
    observations: int = 0
    name: str = ""


@dataclass(frozen=True)
class Memory:
    memory_id: str
    kind: str  # one of MEMORY_KINDS
    text: str
    clip_id: str
    source_path: str
    start_ts: float
    end_ts: float
    entity_ids: tuple[str, ...] = ()
    provenance: tuple[
        str, ...
    ] = ()  # speech segment ids, face observation ids, supporting memory ids
    weight: float = 1.0  # grows as later evidence repeats a semantic memory
    valid_from_ts: float | None = None  # None: from start_ts
    valid_to_ts: float | None = None  # set when a later memory supersedes this one
    fact: str = ""  # semantic memories: "subject|relation|value", what consolidation compares


@dataclass(frozen=True)
class Edge:
    """A typed link between two ids (memories or entities), with the evidence for it."""

    kind: str  # one of EDGE_KINDS
    src_id: str
    dst_id: str
    weight: float = 1.0
    clip_id: str = ""  # the clip whose write created it
    evidence: tuple[str, ...] = ()  # clip ids, memory ids or observation ids

    @property
    def edge_id(self) -> str:
        return content_id(self.kind, self.src_id, self.dst_id)


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float  # fused reciprocal-rank score
    vector_rank: int | None
    text_rank: int | None
    similarity: float | None = None  # cosine similarity to the query vector
    bm25: float | None = None  # full-text score, when the text search found it
