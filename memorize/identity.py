"""Match face and voice embeddings to persistent entities (``face_1``, ``voice_2``).

Online matching in time order: an embedding joins the entity whose best sample is most similar,
if that similarity reaches the backend's threshold; otherwise it starts a new entity. Each entity
keeps a bounded set of samples, chosen to stay diverse (a new sample replaces the one most like
another sample), so matching stays cheap and robust to pose or channel changes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graph.records import Entity


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
        best, best_sim = None, -1.0
        for entity in self.entities:
            if entity.samples:
                sim = float(np.max(np.stack(entity.samples) @ embedding))
                if sim > best_sim:
                    best, best_sim = entity, sim
        if best is None or best_sim < self.policy.threshold:
            best = Entity(self._next_id(), self.kind, ts, ts)
            self.entities.append(best)
        self._add_sample(best, embedding)
        best.first_seen_ts = min(best.first_seen_ts, ts)
        best.last_seen_ts = max(best.last_seen_ts, ts)
        best.observations += 1
        self.touched[best.entity_id] = best
        return best

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
