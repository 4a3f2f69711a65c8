"""Per clip, in time order: identities, characters, names, facts, consolidation -> one ``ClipWrite``.

Holds the state that spans clips (entity matchers, characters, current facts), loaded from the
store when it starts, so a later ``ingest`` continues where the last one stopped.

Captured sound tells whose side a voice is on: while nobody is the owner and the user never said
who is, the one voice heard on the microphone in a clip is proposed as the owner
(``ClipWrite.owner_heard``; the ingest writes it to the people log once the clip is committed, see
``graph.edit_people.heard_owner``). Two voices on the microphone in one clip propose nobody.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace

from graph import sql
from graph.entity_ids import highest_issued
from graph.resolve_people import active_ops, may_hear_owner, owner_of
from graph.rows import ClipRow, Edge, Entity, Memory, content_id, sources_of
from graph.store import Store
from llm.client import LLMError
from memorize.characters import ClipChanges, People
from memorize.consolidate import Consolidator, clip_evidence
from memorize.identity import EntityMatcher, MatchPolicy
from memorize.naming import KINDS as NAME_KINDS
from memorize.naming import Naming, among
from memorize.redact import Redactor
from memorize.speech_facts import addressed_in, facts_in, names_in
from memorize.writer_llm import LLMClipMemories, LLMWriter
from memorize.writer_offline import offline_memories
from perception.records import ClipObservations

log = logging.getLogger(__name__)


def clip_row(obs: ClipObservations) -> ClipRow:
    """The clip's row for the store: where its media is, and what was said, shown and noted."""
    c = obs.clip
    return ClipRow(
        c.clip_id,
        c.source.path,
        c.source.sha256,
        c.index,
        c.offset_s,
        c.duration_s,
        c.start_ts,
        c.end_ts,
        obs.transcript,
        obs.notes,
        obs.screen_text,
        obs.caption,
    )


@dataclass
class ClipWrite:
    memories: list[Memory]  # new memories of this clip
    entities: list[Entity]  # entities created or changed
    edges: list[Edge]
    updated: list[Memory]  # memories of earlier clips changed by consolidation
    notes: list[str]  # what went wrong (kept with the clip row)
    # the voice heard alone on the microphone while nobody is the owner: to be marked the owner
    # once the clip is committed (``graph.edit_people.heard_owner``); "" for none
    owner_heard: str = ""


class Memorizer:
    def __init__(
        self,
        store: Store,
        face_policy: MatchPolicy,
        voice_policy: MatchPolicy,
        llm_writer: LLMWriter | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.llm_writer = llm_writer
        self.redactor = (
            redactor or Redactor()
        )  # what the writer redacts before memorizing (default kinds)
        self.store = store
        issued = highest_issued(store)
        self.faces = EntityMatcher("face", face_policy, store.load_entities("face"), issued["face"])
        self.voices = EntityMatcher(
            "voice", voice_policy, store.load_entities("voice"), issued["voice"]
        )
        people = store.people()  # the user's merges, splits and names included
        self.people = People.load(
            store.load_entities("character"),
            [p.ids for p in people],
            issued=issued["character"],
        )
        # entities a user split off: never merged again by voice similarity
        self.kept_apart = {
            m
            for op in active_ops(store.people_ops())
            if op.op == "split"
            for m in op.args["members"]
        }
        # entity id -> the name the user gave its person: inference never merges two people the
        # user named differently, nor gives a user's name to someone else
        self.user_names = {i: p.name for p in people if p.name_source == "user" for i in p.ids}
        for merge in store.all_edges(
            "same_person"
        ):  # voices merged by likeness, unless split off again
            for pair in (
                x.removeprefix("voice:").split("~")
                for x in merge.evidence
                if x.startswith("voice:")
            ):
                gone = max(pair, key=lambda v: int(v.rsplit("_", 1)[-1]))
                if (
                    not set(pair) & self.kept_apart
                ):  # either voice split off: both are matched again
                    self.voices.absorbed.add(gone)
        self.naming = Naming([e for kind in NAME_KINDS for e in store.all_edges(kind)])
        self.consolidator = Consolidator(store)
        self.last_event: dict[
            str, str | None
        ] = {}  # source path -> id of its latest episodic memory
        # source path -> character -> (voice, end ts) of its latest turn there: whom a name was said to
        self.recent: dict[str, dict[str, tuple[str, float]]] = {}
        # enrolled names are given, not inferred: evidence does not change them
        self.enrolled = {
            e.dst_id for e in store.all_edges("same_person") if e.evidence == ("enrolled",)
        }
        self.source_of_clip: dict[
            str, str
        ] = {}  # clip id -> its recording (name rivals must have met)
        # the owner is known, or the user said who is: the microphone proposes nobody (again)
        self.owner_settled = not may_hear_owner(store.people_ops(), people)
        # the owner's voices: a fragment on the microphone too short to match a voice is theirs
        owner = owner_of(people)
        self.owner_voices = set(owner.voices) if owner is not None else set()
        self._pending = ClipChanges("")  # from enrol(), written with the next clip

    def enrol(self, name: str, voice_embedding, ts: float) -> str:
        """Register a known, named speaker by a sample of their voice: the voice entity it matches
        (or a new one) gets a character with that name. Written with the next clip. Returns the
        character id."""
        (voice,) = self.voices.match_distinct([voice_embedding], ts)
        character = self.people.ensure(voice.entity_id, ts, ("enrolled",), self._pending)
        character.name = character.name or name
        self.enrolled.add(character.entity_id)
        return character.entity_id

    def memorize(self, obs: ClipObservations) -> ClipWrite:
        clip = obs.clip
        self.source_of_clip[clip.clip_id] = clip.source.path
        written = offline_memories(
            obs, self.faces, self.voices, owner_voices=frozenset(self.owner_voices)
        )
        changes = ClipChanges(
            clip.clip_id,
            [replace(e, clip_id=clip.clip_id) for e in self._pending.edges],
            dict(self._pending.touched),
        )
        self._pending = ClipChanges("")
        for voice in dict.fromkeys(
            written.voice_of.values()
        ):  # every voice is someone: a person to name
            self.people.ensure(voice, clip.start_ts, (clip_evidence(clip.clip_id),), changes)
        # captured sound: the stream each voice of this clip was heard on (mic, out)
        streams = {
            written.voice_of[t.speaker]: t.channel
            for t in obs.speech
            if t.channel and t.speaker in written.voice_of
        }
        self._merge_alike_voices(written.voice_of.values(), changes, streams)
        self.people.link_faces_and_voices(obs, written.voice_of, written.face_of, changes)
        llm: LLMClipMemories | None = None
        notes: list[str] = []
        if (
            self.llm_writer is not None and obs.track is None
        ):  # a GPS track gives a model nothing to see
            try:
                llm = self.llm_writer.write(obs, written.voice_of, written.face_of)
            except LLMError as e:
                notes.append(f"LLM writer failed, offline memories kept: {e}")
                log.warning(
                    "%s clip %d: the LLM writer failed (%s); keeping the offline writer's memories",
                    clip.source.path,
                    clip.index,
                    e,
                )
            else:
                # the model read the frames themselves: what it wrote is redacted as the observations were
                llm, hidden = self.redactor.llm_reply(llm)
                if hidden:
                    notes.append(
                        "redacted from the LLM writer's reply: "
                        + ", ".join(f"{n} {k}(s)" for k, n in sorted(hidden.items()))
                    )
                for voice, face in llm.same_person:  # the model's statement is evidence too
                    self.people.link(
                        voice, face, clip.start_ts, (f"llm:{clip.clip_id}",), 1.0, changes
                    )

        semantic = self._heard_facts(obs, written.voice_of, changes)
        for entity, relation, value, evidence in llm.facts if llm else []:
            character = self.people.ensure(entity, clip.start_ts, evidence[:1], changes)
            semantic.append(
                self._fact(
                    character,
                    entity,
                    relation,
                    value,
                    obs,
                    clip.start_ts,
                    clip.end_ts,
                    evidence + (clip_evidence(clip.clip_id),),
                )
            )
            if relation == "is named" and entity.startswith("voice_"):
                changes.edges.append(
                    self.naming.add("introduced_as", entity, value, clip.clip_id, evidence[0])
                )
        self._name_people(
            {v for e in changes.edges if e.kind in NAME_KINDS for v in sources_of(e.src_id)},
            changes.touched,
        )
        memories = written.memories + (llm.episodic if llm else [])
        updated: dict[str, Memory] = {}
        for memory in semantic:
            stored, changed, new_edges = self.consolidator.add(memory)
            changes.edges += new_edges
            if stored is not None:
                memories.append(stored)
            if changed is not None:
                if changed.clip_id == clip.clip_id:  # a repeat within this clip: update it in place
                    memories = [
                        changed if m.memory_id == changed.memory_id else m for m in memories
                    ]
                else:
                    updated[changed.memory_id] = changed
        memories.sort(key=lambda m: (m.start_ts, m.memory_id))
        changes.edges += self._mentions(memories, clip.clip_id)
        events = [m for m in memories if m.kind == "episodic"]
        previous = self._last_event(clip)
        chain = ([previous] if previous else []) + [m.memory_id for m in events]
        for a, b in zip(chain, chain[1:]):
            changes.edges.append(Edge("next_in_time", a, b, 1.0, clip.clip_id))
        if events:
            self.last_event[clip.source.path] = events[-1].memory_id
        characters = list(changes.touched.values())
        entities = self.faces.take_touched() + self.voices.take_touched() + characters
        # one row an edge: its latest state
        edges = list({e.edge_id: e for e in changes.edges}.values())
        return ClipWrite(
            memories,
            entities,
            edges,
            list(updated.values()),
            notes,
            self._owner_heard(obs, written),
        )

    def _owner_heard(self, obs: ClipObservations, written) -> str:
        """The voice to mark as the owner: while nobody is, the one voice heard on the microphone in
        this clip. Two voices there (someone beside the owner, a diarization split) prove nothing:
        a later clip may. A fragment too short to found a voice (a word of the loudspeakers' echo
        the two streams heard differently) is no voice and does not count."""
        if self.owner_settled:
            return ""
        mic = {
            written.voice_of[t.speaker]
            for t in obs.speech
            if t.channel == "mic" and t.speaker in written.voice_of
        }
        if len(mic) != 1:
            return ""
        self.owner_settled = True  # proposed once: the people log decides (heard_owner)
        voice = mic.pop()
        self.owner_voices.add(voice)
        return voice

    def _last_event(self, clip) -> str | None:
        """The latest episodic memory of this clip's recording before it: remembered from earlier
        clips, or read from the store when this memorizer starts mid-recording (a resumed ingest)."""
        path = clip.source.path
        if path not in self.last_event:
            earlier = self.store.memories_where(
                f"kind = 'episodic' AND source_path = {sql.quote(path)} AND start_ts < {clip.start_ts!r}"
            )
            self.last_event[path] = (
                max(earlier, key=lambda m: (m.start_ts, m.memory_id)).memory_id if earlier else None
            )
        return self.last_event[path]

    def _heard_facts(
        self,
        obs: ClipObservations,
        voice_of: dict[str, str],
        changes: ClipChanges,
    ) -> list[Memory]:
        """Semantic memories from first-person speech: the speaker's name, where they are from or
        live. The speaker's voice gets a character if it has none; a name names it."""
        clip = obs.clip
        semantic: list[Memory] = []
        for turn in obs.speech:
            voice = voice_of.get(turn.speaker)
            if voice is None:
                continue
            names, facts = names_in(turn.text), facts_in(turn.text)
            self._heard_address(obs, turn, voice, voice_of, changes.edges)
            if not (names or facts):
                continue
            start, end = clip.start_ts + turn.start_s, clip.start_ts + turn.end_s
            evidence = (turn.segment_id, clip_evidence(clip.clip_id))
            character = self.people.ensure(voice, start, (turn.segment_id,), changes)
            for name in names[:1]:
                semantic.append(
                    self._fact(character, voice, "is named", name, obs, start, end, evidence)
                )
                changes.edges.append(
                    self.naming.add("introduced_as", voice, name, clip.clip_id, turn.segment_id)
                )
            for relation, value in facts:
                semantic.append(
                    self._fact(character, voice, relation, value, obs, start, end, evidence)
                )
        return semantic

    @staticmethod
    def _fact(
        character: Entity,
        entity: str,
        relation: str,
        value: str,
        obs: ClipObservations,
        start: float,
        end: float,
        evidence: tuple[str, ...],
    ) -> Memory:
        """A semantic memory stating ``character relation value``, with the fact consolidation
        compares. "is named" also names a character that has no name yet."""
        clip, cid = obs.clip, character.entity_id
        key: tuple[str, ...]
        if relation == "is named":
            how = "speaking as" if entity.startswith("voice_") else "seen as"
            key, text = ("name", cid, value), f"{value} (<{cid}>) is the person {how} <{entity}>."
        else:
            key, text = ("fact", cid, relation, value), f"<{cid}> {relation} {value}."
        return Memory(
            content_id(clip.clip_id, *key),
            "semantic",
            text,
            clip.clip_id,
            clip.source.path,
            start,
            end,
            (cid, entity),
            evidence,
            fact=f"{cid}|{relation}|{value}",
        )

    def _mentions(self, memories: list[Memory], clip_id: str) -> list[Edge]:
        """``mentions`` edges from episodic memories to the named characters their text names."""
        named = {c.name: c.entity_id for c in self.people.characters.values() if c.name}
        if not named:
            return []
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(named))) + r")\b")
        return [
            Edge("mentions", m.memory_id, named[name], 1.0, clip_id, m.provenance[:1])
            for m in memories
            if m.kind == "episodic"
            for name in dict.fromkeys(pattern.findall(m.text))
        ]

    def _heard_address(
        self, obs: ClipObservations, turn, voice: str, voice_of: dict[str, str], edges: list[Edge]
    ) -> None:
        """A name the speaker calls the listener by goes to the listener: the one other person
        heard in this clip, or else the last other voice of this recording within a minute. With
        more than one other person, nobody can tell whom it was said to yet: the evidence names
        them all, and counts once they turn out to be one person (``memorize.naming``)."""
        clip = obs.clip
        start, end = clip.start_ts + turn.start_s, clip.start_ts + turn.end_s
        mine = self.people.known_character(voice).entity_id
        recent = self.recent.setdefault(clip.source.path, {})
        addressed = addressed_in(turn.text)
        if addressed:
            others = [
                v
                for v in dict.fromkeys(voice_of.values())
                if self.people.known_character(v).entity_id != mine
            ]
            if not others:
                others = [
                    v
                    for v, at in recent.values()
                    if self.people.known_character(v).entity_id != mine and start - at <= 60.0
                ]
            listeners = {self.people.known_character(v).entity_id: v for v in others}
            for name in addressed:
                edges.append(
                    self.naming.add("says_name", voice, name, clip.clip_id, turn.segment_id)
                )
                if len(listeners) == 1:
                    edges.append(
                        self.naming.add(
                            "addressed_as",
                            next(iter(listeners.values())),
                            name,
                            clip.clip_id,
                            turn.segment_id,
                        )
                    )
                elif (
                    listeners
                ):  # said to one of them: it counts once they turn out to be one person
                    edges.append(
                        self.naming.add(
                            "addressed_as", among(others), name, clip.clip_id, turn.segment_id
                        )
                    )
        recent[mine] = (voice, end)

    def _merge_alike_voices(
        self,
        voices,
        changes: ClipChanges,
        streams: dict[str, str] | None = None,
    ) -> None:
        """Voices heard now that are as alike as one voice's own clips (``merge_similarity``) become
        one person: identities are reconsidered as evidence grows, and each merge is an edge
        carrying its similarity. Never two differently named people, nor what a user split off,
        nor two voices heard in this clip on the two streams of captured sound (``streams``:
        voice -> ``mic`` or ``out``): the owner at the microphone and the far side of the call are
        two people, however alike their voices (a diarization split within one stream may merge)."""
        threshold = self.voices.policy.merge_similarity
        if threshold is None:
            return
        streams = streams or {}
        for voice_id in dict.fromkeys(voices):
            entity = next(e for e in self.voices.entities if e.entity_id == voice_id)
            if voice_id in self.kept_apart or voice_id in self.voices.absorbed:
                continue
            for sim, other in self.voices.alike(
                entity, threshold, self.voices.policy.merge_min_samples
            ):
                a, b = self.people.character_of(voice_id), self.people.character_of(other.entity_id)
                if (
                    a is None
                    or b is None
                    or a is b
                    or {streams.get(voice_id), streams.get(other.entity_id)} == {"mic", "out"}
                    or other.entity_id in self.kept_apart
                    or voice_id in self.voices.absorbed
                ):
                    continue
                name_a, name_b = (self.user_names.get(c.entity_id) or c.name for c in (a, b))
                if name_a and name_b and name_a != name_b:
                    continue
                keep, gone = sorted((a, b), key=lambda c: int(c.entity_id.rsplit("_", 1)[-1]))
                # the person's name lives on the kept character only, so a name the evidence later
                # takes from it does not come back from the merged one; a given name stays given
                keep.name, gone.name = keep.name or gone.name, ""
                if gone.entity_id in self.enrolled:
                    self.enrolled.add(keep.entity_id)
                changes.touched[gone.entity_id] = gone
                self.people.merge(
                    keep.entity_id,
                    gone.entity_id,
                    round(sim, 4),
                    (f"voice:{voice_id}~{other.entity_id}", f"similarity:{sim:.3f}"),
                    changes,
                )
                self.voices.absorb(
                    *sorted((entity, other), key=lambda e: int(e.entity_id.rsplit("_", 1)[-1]))
                )

    def _heard_together(self, clips_a: set[str], clips_b: set[str]) -> bool:
        """Whether two sets of clips share a recording (clips of earlier runs are looked up once)."""
        unknown = [c for c in clips_a | clips_b if c not in self.source_of_clip]
        if unknown:
            for row in (
                self.store.clips.search()
                .where(sql.in_list("clip_id", unknown))
                .select(["clip_id", "source_path"])
                .limit(None)
                .to_list()
            ):
                self.source_of_clip[row["clip_id"]] = row["source_path"]
        sources = lambda clips: {self.source_of_clip.get(c, c) for c in clips}  # noqa: E731
        return bool(sources(clips_a) & sources(clips_b))

    def _name_people(self, voices_heard, touched: dict[str, Entity]) -> None:
        """Name (or unname) the people heard in this clip whose name evidence now says so
        (``memorize.naming``), weighed against everyone else that evidence names."""
        members: dict[str, set[str]] = {}
        for member in self.people.member_of:
            if member.startswith("voice_"):
                members.setdefault(self.people.known_character(member).entity_id, set()).add(member)
        heard = {self.people.known_character(v).entity_id for v in voices_heard}
        names = self.naming.names_heard({v for c in heard for v in members.get(c, ())})
        rivals = (
            {c for c, vs in members.items() if self.naming.names_heard(vs) & names}
            if names
            else set()
        )
        people = {c: members.get(c, set()) for c in heard | rivals}
        given = {n.casefold(): i for i, n in self.user_names.items()}
        for cid, name in self.naming.decide(people, self._heard_together).items():
            character = self.people.characters[cid]
            if cid in self.enrolled:
                continue
            owner = given.get(name.casefold())
            if owner is not None and self.people.character_of(owner) is not character:
                name = ""  # the user gave this name to someone else
            if character.name != name:
                character.name = name
                touched[cid] = character
