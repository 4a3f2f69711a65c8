"""Per clip, in time order: identities, characters, names, facts, consolidation -> one ``ClipWrite``.

Holds the state that spans clips (entity matchers, characters, current facts), loaded from the
store when it starts, so a later ``ingest`` continues where the last one stopped.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from graph import sql
from graph.rows import ClipRow, Edge, Entity, Memory, content_id
from graph.store import Store
from llm.client import LLMError
from memorize.consolidate import Consolidator, clip_evidence
from memorize.identity import EntityMatcher, MatchPolicy
from memorize.characters import People
from memorize.speech_facts import facts_in, names_in
from memorize.writer_llm import LLMClipMemories, LLMWriter
from memorize.writer_offline import offline_memories
from perception.records import ClipObservations

log = logging.getLogger(__name__)


def clip_row(obs: ClipObservations) -> ClipRow:
    """The clip's row for the store: where its media is, and what was said, shown and noted."""
    c = obs.clip
    return ClipRow(c.clip_id, c.source.path, c.source.sha256, c.index, c.offset_s, c.duration_s,
                   c.start_ts, c.end_ts, obs.transcript, obs.notes, obs.screen_text, obs.caption)


@dataclass
class ClipWrite:
    memories: list[Memory]  # new memories of this clip
    entities: list[Entity]  # entities created or changed
    edges: list[Edge]
    updated: list[Memory]  # memories of earlier clips changed by consolidation
    notes: list[str]  # what went wrong (kept with the clip row)


class Memorizer:
    def __init__(self, store: Store, face_policy: MatchPolicy, voice_policy: MatchPolicy,
                 llm_writer: LLMWriter | None = None) -> None:
        self.llm_writer = llm_writer
        self.store = store
        self.faces = EntityMatcher("face", face_policy, store.load_entities("face"))
        self.voices = EntityMatcher("voice", voice_policy, store.load_entities("voice"))
        self.people = People.load(store.load_entities("character"), store.all_edges("same_person"))
        self.consolidator = Consolidator(store)
        self.last_event: dict[str, str | None] = {}  # source path -> id of its latest episodic memory
        self._pending_edges: list[Edge] = []  # from enrol(), written with the next clip
        self._pending_people: dict[str, Entity] = {}

    def enrol(self, name: str, voice_embedding, ts: float) -> str:
        """Register a known, named speaker by a sample of their voice: the voice entity it matches
        (or a new one) gets a character with that name. Written with the next clip. Returns the
        character id."""
        (voice,) = self.voices.match_distinct([voice_embedding], ts)
        character = self.people.ensure(voice.entity_id, ts, "", ("enrolled",), self._pending_edges, self._pending_people)
        character.name = character.name or name
        return character.entity_id

    def _names(self) -> dict[str, str]:
        """Entity id -> name, for the faces and voices of named characters."""
        return {member: self.people.characters[cid].name for member, cid in self.people.member_of.items()
                if self.people.characters.get(cid) is not None and self.people.characters[cid].name}

    def memorize(self, obs: ClipObservations) -> ClipWrite:
        clip = obs.clip
        written = offline_memories(obs, self.faces, self.voices, names=self._names())
        edges: list[Edge] = [replace(e, clip_id=clip.clip_id) for e in self._pending_edges]
        touched: dict[str, Entity] = dict(self._pending_people)
        self._pending_edges, self._pending_people = [], {}
        self.people.link_faces_and_voices(obs, written.voice_of, written.face_of, edges, touched)
        llm: LLMClipMemories | None = None
        notes: list[str] = []
        if self.llm_writer is not None:
            try:
                llm = self.llm_writer.write(obs, written.voice_of, written.face_of)
            except LLMError as e:
                notes.append(f"LLM writer failed, offline memories kept: {e}")
                log.warning("%s clip %d: the LLM writer failed (%s); keeping the offline writer's memories",
                            clip.source.path, clip.index, e)
            else:
                for voice, face in llm.same_person:  # the model's statement is evidence too
                    self.people.link(voice, face, clip.clip_id, clip.start_ts, (f"llm:{clip.clip_id}",), 1.0,
                                     edges, touched)

        semantic = self._heard_facts(obs, written.voice_of, edges, touched)
        for entity, relation, value, evidence in (llm.facts if llm else []):
            character = self.people.ensure(entity, clip.start_ts, clip.clip_id, evidence[:1], edges, touched)
            semantic.append(self._fact(character, entity, relation, value, obs, clip.start_ts, clip.end_ts,
                                       evidence + (clip_evidence(clip.clip_id),)))
        memories = [self._with_characters(m) for m in written.memories + (llm.episodic if llm else [])]
        updated: dict[str, Memory] = {}
        for memory in semantic:
            stored, changed, new_edges = self.consolidator.add(memory)
            edges += new_edges
            if stored is not None:
                memories.append(stored)
            if changed is not None:
                if changed.clip_id == clip.clip_id:  # a repeat within this clip: update it in place
                    memories = [changed if m.memory_id == changed.memory_id else m for m in memories]
                else:
                    updated[changed.memory_id] = changed
        memories.sort(key=lambda m: (m.start_ts, m.memory_id))
        edges += self._mentions(memories, clip.clip_id)
        events = [m for m in memories if m.kind == "episodic"]
        previous = self._last_event(clip)
        chain = ([previous] if previous else []) + [m.memory_id for m in events]
        for a, b in zip(chain, chain[1:]):
            edges.append(Edge("next_in_time", a, b, 1.0, clip.clip_id))
        if events:
            self.last_event[clip.source.path] = events[-1].memory_id
        entities = self.faces.take_touched() + self.voices.take_touched() + list(touched.values())
        return ClipWrite(memories, entities, edges, list(updated.values()), notes)

    def _last_event(self, clip) -> str | None:
        """The latest episodic memory of this clip's recording before it: remembered from earlier
        clips, or read from the store when this memorizer starts mid-recording (a resumed ingest)."""
        path = clip.source.path
        if path not in self.last_event:
            earlier = self.store.memories_where(
                f"kind = 'episodic' AND source_path = {sql.quote(path)} AND start_ts < {clip.start_ts!r}")
            self.last_event[path] = max(earlier, key=lambda m: (m.start_ts, m.memory_id)).memory_id if earlier else None
        return self.last_event[path]

    def _heard_facts(self, obs: ClipObservations, voice_of: dict[str, str], edges: list[Edge],
                     touched: dict[str, Entity]) -> list[Memory]:
        """Semantic memories from first-person speech: the speaker's name, where they are from or
        live. The speaker's voice gets a character if it has none; a name names it."""
        clip = obs.clip
        semantic: list[Memory] = []
        for turn in obs.speech:
            voice = voice_of.get(turn.speaker)
            names, facts = names_in(turn.text), facts_in(turn.text)
            if voice is None or not (names or facts):
                continue
            start, end = clip.start_ts + turn.start_s, clip.start_ts + turn.end_s
            evidence = (turn.segment_id, clip_evidence(clip.clip_id))
            character = self.people.ensure(voice, start, clip.clip_id, (turn.segment_id,), edges, touched)
            for name in names[:1]:
                semantic.append(self._fact(character, voice, "is named", name, obs, start, end, evidence))
            for relation, value in facts:
                semantic.append(self._fact(character, voice, relation, value, obs, start, end, evidence))
        return semantic

    @staticmethod
    def _fact(character: Entity, entity: str, relation: str, value: str, obs: ClipObservations, start: float,
              end: float, evidence: tuple[str, ...]) -> Memory:
        """A semantic memory stating ``character relation value``, with the fact consolidation
        compares. "is named" also names a character that has no name yet."""
        clip, cid = obs.clip, character.entity_id
        if relation == "is named":
            character.name = character.name or value
            how = "speaking as" if entity.startswith("voice_") else "seen as"
            return Memory(content_id(clip.clip_id, "name", cid, value), "semantic",
                          f"{value} (<{cid}>) is the person {how} <{entity}>.", clip.clip_id, clip.source.path,
                          start, end, (cid, entity), evidence, fact=f"{cid}|is named|{value}")
        label = f"{character.name} (<{cid}>)" if character.name else f"<{cid}>"
        return Memory(content_id(clip.clip_id, "fact", cid, relation, value), "semantic", f"{label} {relation} {value}.",
                      clip.clip_id, clip.source.path, start, end, (cid, entity), evidence,
                      fact=f"{cid}|{relation}|{value}")

    def _mentions(self, memories: list[Memory], clip_id: str) -> list[Edge]:
        """``mentions`` edges from episodic memories to the named characters their text names."""
        named = {c.name: c.entity_id for c in self.people.characters.values() if c.name}
        if not named:
            return []
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(named))) + r")\b")
        return [Edge("mentions", m.memory_id, named[name], 1.0, clip_id, m.provenance[:1])
                for m in memories if m.kind == "episodic"
                for name in dict.fromkeys(pattern.findall(m.text))]

    def _with_characters(self, memory: Memory) -> Memory:
        extra = tuple(c.entity_id for e in memory.entity_ids if (c := self.people.character_of(e)) is not None)
        return replace(memory, entity_ids=tuple(dict.fromkeys(memory.entity_ids + extra))) if extra else memory
