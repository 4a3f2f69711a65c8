"""Characters: one person, tying their face and voice entities together.

A *character* (``character_3``) is one person. Every voice entity gets one when first heard, and a
face joins it when evidence says they belong together; it is stored as an entity of kind
``character`` with ``same_person`` edges to its face and voice entities (the edge keeps the clips
that are its evidence). Two characters found to be one person get a ``same_person`` edge between
them; ``graph.resolve_people`` resolves the groups when they are read.

Face–voice evidence (offline): while a clip-local speaker talks, the sampled frames that show
exactly one person vote for that person's face entity. Pairs are taken one-to-one, most votes
first; a face with at least ``min_frames`` votes and ``min_share`` of the speaker's votes not
already spent on faces bound to other speakers is linked to the voice.

Names are decided from what is heard (``memorize/naming.py``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from graph.rows import Edge, Entity
from perception.records import ClipObservations


@dataclass
class ClipChanges:
    """What memorizing a clip changes, gathered as it goes: the clip's id (the edges'; "" for an
    enrolment, written with the next clip), the edges it adds and the characters it touched."""

    clip_id: str
    edges: list[Edge] = field(default_factory=list)
    touched: dict[str, Entity] = field(default_factory=dict)


@dataclass
class People:
    """Characters and which face/voice entities belong to them (loaded from the store, updated
    per clip)."""

    characters: dict[str, Entity] = field(default_factory=dict)
    member_of: dict[str, str] = field(default_factory=dict)  # face/voice entity id -> character id
    min_frames: int = 3
    min_share: float = 0.6
    issued: int = 0  # the highest character number the store ever gave (graph.entity_ids)

    @classmethod
    def load(cls, characters: list[Entity], groups: list[tuple[str, ...]], **kw) -> People:
        """From the characters and the people groups (``graph.resolve_people``: each group's ids, its
        lowest character first): every other member belongs to that character."""
        people = cls({c.entity_id: c for c in characters}, **kw)
        for ids in groups:
            if ids and ids[0] in people.characters:
                for member in ids[1:]:
                    people.member_of[member] = ids[0]
        return people

    def merge(
        self, keep: str, other: str, weight: float, evidence: tuple[str, ...], changes: ClipChanges
    ) -> None:
        """Make character ``other`` part of ``keep`` (a ``same_person`` edge between the two: the
        evidence stays, and a user's split can take it apart again)."""
        changes.edges.append(Edge("same_person", other, keep, weight, changes.clip_id, evidence))
        for member, cid in list(self.member_of.items()):
            if cid == other:
                self.member_of[member] = keep
        self.member_of[other] = keep
        changes.touched[keep] = self.characters[keep]

    def _new(self, ts: float) -> Entity:
        taken = (int(c.rsplit("_", 1)[-1]) for c in self.characters)
        self.issued = max(self.issued, *taken, 0) + 1  # never a forgotten character's number
        entity = Entity(f"character_{self.issued}", "character", ts, ts)
        self.characters[entity.entity_id] = entity
        return entity

    def character_of(self, entity_id: str) -> Entity | None:
        cid = (
            entity_id
            if entity_id in self.characters and entity_id not in self.member_of
            else self.member_of.get(entity_id)
        )
        return self.characters.get(cid) if cid else None

    def known_character(self, entity_id: str) -> Entity:
        """The character of an entity that has one (every voice heard in a clip is given one)."""
        character = self.character_of(entity_id)
        if character is None:
            raise KeyError(f"{entity_id} belongs to no character")
        return character

    def members(self, character_id: str) -> list[str]:
        return sorted(e for e, c in self.member_of.items() if c == character_id)

    def ensure(
        self, entity_id: str, ts: float, evidence: tuple[str, ...], changes: ClipChanges
    ) -> Entity:
        """The character of ``entity_id``, created (with its same_person edge) if it has none."""
        character = self.character_of(entity_id)
        if character is None:
            character = self._new(ts)
            self.member_of[entity_id] = character.entity_id
            changes.edges.append(
                Edge("same_person", entity_id, character.entity_id, 1.0, changes.clip_id, evidence)
            )
        character.first_seen_ts = min(character.first_seen_ts, ts)
        character.last_seen_ts = max(character.last_seen_ts, ts)
        changes.touched[character.entity_id] = character
        return character

    def link_faces_and_voices(
        self,
        obs: ClipObservations,
        voice_of: dict[str, str],
        face_of: dict[str, str],
        changes: ClipChanges,
    ) -> list[tuple[str, str]]:
        """Link each speaker's voice to the face seen alone while they speak; returns the
        (voice, face) pairs linked in this clip. ``voice_of`` maps clip-local speakers to voice
        entities, ``face_of`` clip-local face persons to face entities."""
        frames: dict[float, set[str]] = {}
        for f in obs.faces:
            frames.setdefault(f.frame_time_s, set()).add(f.person)
        heard: dict[
            str, set[float]
        ] = {}  # speaker -> frame times while they talk (each frame once)
        for turn in obs.speech:
            if turn.speaker in voice_of:
                heard.setdefault(turn.speaker, set()).update(
                    t for t in frames if turn.start_s - 0.5 <= t <= turn.end_s + 0.5
                )
        votes: dict[str, Counter] = {}
        for speaker, times in heard.items():
            votes[speaker] = Counter(next(iter(frames[t])) for t in times if len(frames[t]) == 1)
        # one-to-one, strongest evidence first: a face already bound to another speaker of this clip
        # is no evidence for this one (the camera may stay on a listener)
        pairs = sorted(
            ((n, speaker, person) for speaker, c in votes.items() for person, n in c.items()),
            reverse=True,
        )
        taken_speakers: set[str] = set()
        taken_persons: set[str] = set()
        linked = []
        for n, speaker, person in pairs:
            if speaker in taken_speakers or person in taken_persons or person not in face_of:
                continue
            free = sum(v for p, v in votes[speaker].items() if p not in taken_persons)
            if n < self.min_frames or n < self.min_share * free:
                continue
            taken_speakers.add(speaker)
            taken_persons.add(person)
            voice, face = voice_of[speaker], face_of[person]
            if self.link(voice, face, obs.clip.start_ts, (obs.clip.clip_id,), float(n), changes):
                linked.append((voice, face))
        return linked

    def link(
        self,
        voice: str,
        face: str,
        ts: float,
        evidence: tuple[str, ...],
        weight: float,
        changes: ClipChanges,
    ) -> bool:
        """Put ``voice`` and ``face`` in one character (a new one, or the one either has); False when
        both already belong to characters (the same one, or two we do not merge)."""
        cv, cf = self.character_of(voice), self.character_of(face)
        if cv is not None and cf is not None:
            return False
        existing = cv or cf
        if existing is None:
            character = self.ensure(voice, ts, evidence, changes)
        else:
            character = existing
            changes.touched[character.entity_id] = character
        for member in (voice, face):
            if self.character_of(member) is None:
                self.member_of[member] = character.entity_id
                changes.edges.append(
                    Edge(
                        "same_person",
                        member,
                        character.entity_id,
                        weight,
                        changes.clip_id,
                        evidence,
                    )
                )
        return True
