"""Rows of the memory graph. Times are absolute, seconds since the epoch (``*_ts``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

SCHEMA_VERSION = 1


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


@dataclass
class Entity:
    """A persistent identity (``face_3``, ``voice_7``) with a bounded set of embedding samples."""

    entity_id: str
    kind: str  # "face" or "voice"
    first_seen_ts: float
    last_seen_ts: float
    samples: list[np.ndarray] = field(default_factory=list)
    observations: int = 0
    name: str = ""


@dataclass(frozen=True)
class Memory:
    memory_id: str
    kind: str  # "episodic" for now; semantic etc. come with consolidation
    text: str
    clip_id: str
    source_path: str
    start_ts: float
    end_ts: float
    entity_ids: tuple[str, ...] = ()
    provenance: tuple[str, ...] = ()  # speech segment ids, face observation ids


@dataclass(frozen=True)
class Hit:
    memory: Memory
    score: float  # fused reciprocal-rank score
    vector_rank: int | None
    text_rank: int | None
