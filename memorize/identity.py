"""Match face and voice embeddings to persistent entities (``face_1``, ``voice_2``).

Online matching in time order: an embedding joins the entity whose best sample (faces) or whose
profile, the mean of its samples (voices, ``by_profile``), is most similar, if that similarity
reaches the backend's threshold; otherwise it starts a new entity. Each entity
keeps a bounded set of samples, chosen to stay diverse (a new sample replaces the one most like
another sample), so matching stays cheap and robust to pose or channel changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

import numpy as np

from graph.rows import Entity


@dataclass(frozen=True)
class MatchPolicy:
    threshold: float  # cosine similarity to join an existing entity
    max_samples: int = 8
    same_similarity: float | None = None  # see ``EntityMatcher.match_distinct`` (voices)
    same_margin: float = 0.1
    merge_similarity: float | None = None  # entities this alike are one person (``alike``; voices)
    min_found_s: float = 0.0  # voices: speech needed to found a new entity
    # voices: match against the entity's profile (the mean of its samples) instead of its best
    # sample: a voice's 30 s centroids scatter, and the diverse samples kept are its odd ones
    by_profile: bool = False
    merge_min_samples: int = 2  # ``alike``: samples both entities need (voices: 1, a fragment too)


class EntityMatcher:
    def __init__(
        self,
        kind: str,
        policy: MatchPolicy,
        entities: list[Entity] | None = None,
        issued: int = 0,
    ) -> None:
        """``issued``: the highest number the store ever gave an entity of ``kind``
        (``graph.entity_ids.highest_issued``): a new entity never takes a forgotten one's id."""
        self.kind = kind
        self.issued = issued
        self.policy = policy
        self.entities = list(entities or [])
        self.touched: dict[str, Entity] = {}
        self.absorbed: set[str] = set()  # entities merged into another: matched no more

    def _next_id(self) -> str:
        taken = [int(e.entity_id.rsplit("_", 1)[-1]) for e in self.entities]
        self.issued = max([self.issued, *taken]) + 1
        return f"{self.kind}_{self.issued}"

    def match(self, embedding: np.ndarray, ts: float) -> Entity:
        """The entity this embedding belongs to (created if none is close enough); updates it."""
        return self.match_distinct([embedding], ts)[0]

    @overload
    def match_distinct(
        self, embeddings: list[np.ndarray], ts: float, may_found: None = None
    ) -> list[Entity]: ...

    @overload
    def match_distinct(
        self, embeddings: list[np.ndarray], ts: float, may_found: list[bool]
    ) -> list[Entity | None]: ...

    def match_distinct(
        self, embeddings: list[np.ndarray], ts: float, may_found: list[bool] | None = None
    ) -> list[Entity] | list[Entity | None]:
        """Match embeddings known to be different people (two faces in one frame, two speakers
        of one clip): greedy one-to-one by similarity, so they never share an entity.

        One exception, for voices: clustering inside a clip may split one voice in two (a voice's
        short windows are only loosely alike), and the spare part, whose own entity is taken, joins
        it anyway when it is at least ``policy.same_similarity`` like it and clearly closer to it
        than to any other entity. An embedding with ``may_found`` False (a fragment too short to
        found a person) that matches nothing gets None instead of a new entity."""
        queries = np.stack(embeddings)
        sims = np.full((len(embeddings), len(self.entities)), -1.0)
        for j, known in enumerate(self.entities):
            if known.samples and known.entity_id not in self.absorbed:
                sims[:, j] = (
                    queries @ self.centroid(known)
                    if self.policy.by_profile
                    else (queries @ np.stack(known.samples).T).max(axis=1)
                )
        chosen: dict[int, Entity] = {}
        used: set[int] = set()
        for flat in np.argsort(-sims, axis=None):
            i, j = np.unravel_index(flat, sims.shape)
            if sims[i, j] < self.policy.threshold:
                break
            if i not in chosen and j not in used:
                chosen[int(i)] = self.entities[j]
                used.add(int(j))
        same = self.policy.same_similarity
        if same is not None and self.entities:
            for i in range(len(embeddings)):
                if i in chosen:
                    continue
                order = np.argsort(-sims[i])
                best = sims[i, order[0]]
                second = sims[i, order[1]] if len(order) > 1 else -1.0
                if best >= same and best - second >= self.policy.same_margin:
                    chosen[i] = self.entities[int(order[0])]
        out: list[Entity | None] = []
        for i, embedding in enumerate(embeddings):
            entity = chosen.get(i)
            if entity is None:
                if may_found is not None and not may_found[i]:
                    out.append(None)
                    continue
                entity = Entity(self._next_id(), self.kind, ts, ts)
                self.entities.append(entity)
            self._add_sample(entity, embedding)
            entity.first_seen_ts = min(entity.first_seen_ts, ts)
            entity.last_seen_ts = max(entity.last_seen_ts, ts)
            entity.observations += 1
            self.touched[entity.entity_id] = entity
            out.append(entity)
        return out

    def absorb(self, keep: Entity, gone: Entity) -> None:
        """``gone`` turned out to be ``keep``: it is matched no more, so later speech goes to one
        entity (memories that name ``gone`` resolve through the edge that records the merge).
        Samples are not moved: ``keep``'s stay its own, so a user who splits ``gone`` off again gets
        two entities that match as they did before the merge."""
        self.absorbed.add(gone.entity_id)
        keep.first_seen_ts = min(keep.first_seen_ts, gone.first_seen_ts)
        keep.last_seen_ts = max(keep.last_seen_ts, gone.last_seen_ts)
        self.touched[keep.entity_id] = keep
        self.touched[gone.entity_id] = gone

    def centroid(self, entity: Entity) -> np.ndarray:
        c = np.mean(entity.samples, axis=0)
        return c / (np.linalg.norm(c) + 1e-9)

    def alike(
        self, entity: Entity, min_similarity: float, min_samples: int = 2
    ) -> list[tuple[float, Entity]]:
        """Other entities whose sample centroid is at least ``min_similarity`` like this one's
        (both with ``min_samples``), most alike first: candidates to be the same person."""
        if len(entity.samples) < min_samples:
            return []
        mine = self.centroid(entity)
        out = [
            (float(self.centroid(e) @ mine), e)
            for e in self.entities
            if e is not entity
            and len(e.samples) >= min_samples
            and e.entity_id not in self.absorbed
        ]
        return sorted((x for x in out if x[0] >= min_similarity), key=lambda x: -x[0])

    def nearest(self, embedding: np.ndarray, among: set[str]) -> Entity | None:
        """Of the entities ``among`` (ids) that have samples, the one whose centroid is most like
        ``embedding``; None where none has. Matches nothing and records nothing."""
        known = [
            e
            for e in self.entities
            if e.entity_id in among and e.samples and e.entity_id not in self.absorbed
        ]
        if not known:
            return None
        return max(known, key=lambda e: float(embedding @ self.centroid(e)))

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
