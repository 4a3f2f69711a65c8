"""Match face and voice embeddings to persistent entities (``face_1``, ``voice_2``).

Online matching in time order: an embedding joins the entity whose best sample is most similar,
if that similarity reaches the backend's threshold; otherwise it starts a new entity. Each entity
keeps a bounded set of samples, chosen to stay diverse (a new sample replaces the one most like
another sample), so matching stays cheap and robust to pose or channel changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graph.rows import Entity


@dataclass(frozen=True)
class MatchPolicy:
    threshold: float  # cosine similarity to join an existing entity
    max_samples: int = 8


class EntityMatcher:
    def __init__(self, kind: str, policy: MatchPolicy, entities: list[Entity] | None = None) -> None:
        self.kind = kind
        self.policy = policy
        self.entities = list(entities or [])
        self.touched: dict[str, Entity] = {}

    def _next_id(self) -> str:
        taken = [int(e.entity_id.rsplit("_", 1)[-1]) for e in self.entities]
        return f"{self.kind}_{max(taken, default=0) + 1}"

    def match(self, embedding: np.ndarray, ts: float) -> Entity:
        """The entity this embedding belongs to (created if none is close enough); updates it."""
        return self.match_distinct([embedding], ts)[0]

    def match_distinct(self, embeddings: list[np.ndarray], ts: float) -> list[Entity]:
        """Match embeddings known to be different people (two faces in one frame, two speakers
        of one clip): greedy one-to-one by similarity, so they never share an entity."""
        queries = np.stack(embeddings)
        sims = np.full((len(embeddings), len(self.entities)), -1.0)
        for j, entity in enumerate(self.entities):
            if entity.samples:
                sims[:, j] = (queries @ np.stack(entity.samples).T).max(axis=1)
        chosen: dict[int, Entity] = {}
        used: set[int] = set()
        for flat in np.argsort(-sims, axis=None):
            i, j = np.unravel_index(flat, sims.shape)
            if sims[i, j] < self.policy.threshold:
                break
            if i not in chosen and j not in used:
                chosen[int(i)] = self.entities[j]
                used.add(int(j))
        out = []
        for i, embedding in enumerate(embeddings):
            entity = chosen.get(i)
            if entity is None:
                entity = Entity(self._next_id(), self.kind, ts, ts)
                self.entities.append(entity)
            self._add_sample(entity, embedding)
            entity.first_seen_ts = min(entity.first_seen_ts, ts)
            entity.last_seen_ts = max(entity.last_seen_ts, ts)
            entity.observations += 1
            self.touched[entity.entity_id] = entity
            out.append(entity)
        return out

    def _add_sample(self, entity: Entity, embedding: np.ndarray) -> None:
        entity.samples.append(embedding.astype(np.float32))
        if len(entity.samples) > self.policy.max_samples:
            s = np.stack(entity.samples)
            sims = s @ s.T
            np.fill_diagonal(sims, -1.0)
            entity.samples.pop(int(np.argmax(sims.max(axis=1))))

    def take_touched(self) -> list[Entity]:
        """Entities changed since the last call (to write with the clip that changed them)."""
        out = list(self.touched.values())
        self.touched.clear()
        return out
