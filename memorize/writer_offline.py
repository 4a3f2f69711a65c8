"""The offline memory writer: deterministic episodic memories from one clip's observations.

- one memory per speech turn: ``<voice_2> said: "…"``
- one memory per face entity seen in the clip (perception's clip-local face clusters are matched to
  entities one-to-one): ``<face_1> is visible from 10:00:07 to 10:00:29``
Every memory carries its clip, absolute time span, entity ids and the observation ids it came from.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone

import numpy as np

from graph.records import Memory, content_id
from memorize.identity import EntityMatcher
from perception.records import ClipObservations


def _clock(ts: float, tz) -> str:
    return datetime.fromtimestamp(ts, tz=tz).strftime("%H:%M:%S")


def write_clip_memories(obs: ClipObservations, faces: EntityMatcher, voices: EntityMatcher) -> list[Memory]:
    """Resolve identities (updating the matchers) and return the clip's memories in time order."""
    clip = obs.clip
    base = clip.start_ts
    tz = clip.source.recorded_at.tzinfo or timezone.utc
    memories: list[Memory] = []

    # one entity per diarized speaker of the clip; they are different people, so matched distinctly
    voice_of: dict[str, np.ndarray] = {}
    for turn in obs.speech:
        if turn.speaker and turn.voice_embedding is not None:
            voice_of.setdefault(turn.speaker, turn.voice_embedding)
    speakers = dict(zip(voice_of, voices.match_distinct(list(voice_of.values()), base))) if voice_of else {}
    for turn in obs.speech:
        start, end = base + turn.start_s, base + turn.end_s
        entity = speakers.get(turn.speaker)
        speaker, entity_ids = (f"<{entity.entity_id}>", (entity.entity_id,)) if entity else ("someone", ())
        text = f'{speaker} said: "{turn.text}"'
        memories.append(Memory(content_id(clip.clip_id, "speech", turn.segment_id, text), "episodic", text,
                               clip.clip_id, clip.source.path, start, end, entity_ids, (turn.segment_id,)))

    # one entity per clip-local face cluster (perception groups faces; two of one frame never share)
    people: dict[str, list] = defaultdict(list)
    for face in obs.faces:
        people[face.person or face.face_id].append(face)
    seen: dict[str, list] = {}
    if people:
        centroids = []
        for group in people.values():
            c = np.mean([f.embedding for f in group], axis=0)
            centroids.append(c / (np.linalg.norm(c) + 1e-9))
        first_ts = base + min(f.frame_time_s for f in obs.faces)
        for group, entity in zip(people.values(), faces.match_distinct(centroids, first_ts)):
            seen.setdefault(entity.entity_id, []).extend(group)
    for entity_id, group in seen.items():
        start = base + min(f.frame_time_s for f in group)
        end = base + max(f.frame_time_s for f in group)
        text = f"<{entity_id}> is visible from {_clock(start, tz)} to {_clock(end, tz)}"
        memories.append(Memory(content_id(clip.clip_id, "face", entity_id), "episodic", text,
                               clip.clip_id, clip.source.path, start, end, (entity_id,),
                               tuple(f.face_id for f in group)))
    return sorted(memories, key=lambda m: (m.start_ts, m.memory_id))
