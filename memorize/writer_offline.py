"""The offline memory writer: deterministic episodic memories from one clip's observations.

- one memory per speaker turn: ``<voice_2> said: "…"``, the consecutive sentences of one voice
  (ASR and diarization give sentences; a turn keeps what someone said together); speech captured
  on the microphone carries ``HEARD_ON_MIC`` in its provenance (the owner's side)
- one memory per face entity seen in the clip (perception's clip-local face clusters are matched to
  entities one-to-one): ``<face_1> is visible from 10:00:07 to 10:00:29``
- what was on screen: one ``resource`` memory per distinct text shown, with its times, where it
  was read from (the apps' accessibility tree, OCR or both) and the browser's address where the
  tree gave one, and for screenshots one memory per application window in front
- what the scene showed: one memory with the confident object/scene tags of the clip
Every memory carries its clip, absolute time span, entity ids and the observation ids it came from.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np

from graph.rows import BY_OWNER, HEARD_ON_MIC, Memory, content_id
from memorize.identity import EntityMatcher
from perception.records import ClipObservations


def _clock(ts: float, tz) -> str:
    return datetime.fromtimestamp(ts, tz=tz).strftime("%H:%M:%S")


def _clip_memory(
    obs: ClipObservations,
    key: tuple[object, ...],
    kind: str,
    text: str,
    span: tuple[float, float],
    entity_ids: tuple[str, ...],
    provenance: tuple[str, ...],
) -> Memory:
    """A memory of this clip, its id from the clip, ``key`` (what kind of thing, which one)."""
    clip = obs.clip
    return Memory(
        content_id(clip.clip_id, *key),
        kind,
        text,
        clip.clip_id,
        clip.source.path,
        span[0],
        span[1],
        entity_ids,
        provenance,
    )


def _owner_fragments(
    obs: ClipObservations,
    voice_of: dict[str, np.ndarray],
    speakers: dict,
    voices: EntityMatcher,
    owner_voices: frozenset[str],
) -> dict:
    """Clip-local speakers on the microphone that matched no voice (fragments), each given to the
    owner's voice when, of every voice known, that is the one nearest it."""
    if not owner_voices:
        return {}
    channel = {t.speaker: t.channel for t in obs.speech if t.speaker}
    known = {e.entity_id for e in voices.entities}
    given = {}
    for k, embedding in voice_of.items():
        if k in speakers or channel.get(k) != "mic":
            continue
        nearest = voices.nearest(embedding, known)
        if nearest is not None and nearest.entity_id in owner_voices:
            given[k] = nearest
    return given


@dataclass(frozen=True)
class OfflineWrite:
    memories: list[Memory]
    voice_of: dict[str, str]  # clip-local speaker -> voice entity id
    face_of: dict[str, str]  # clip-local face person -> face entity id


def offline_memories(
    obs: ClipObservations,
    faces: EntityMatcher,
    voices: EntityMatcher,
    min_tag_prob: float = 0.3,
    owner_voices: frozenset[str] = frozenset(),
) -> OfflineWrite:
    """Resolve identities (updating the matchers); the clip's memories in time order, and which
    entity each clip-local speaker and face person became. Memories name people by entity id
    (``<voice_1> said: …``): names are resolved when read, so a rename shows everywhere. A
    speaker heard for less than the voice policy's ``min_found_s`` in the clip joins a known voice or stays
    "someone": a fragment never founds a person. The microphone is the owner's, though: a fragment
    heard there that matches no voice is the owner's (``owner_voices``: the owner's voice entities)
    where its voice is more like the owner's than like any other voice known (an echo's leftover of
    the far side is not the owner's); it adds no sample to the owner's voice."""
    clip = obs.clip
    base = clip.start_ts
    tz = clip.source.recorded_at.tzinfo or UTC
    memories: list[Memory] = []

    # one entity per diarized speaker of the clip; they are different people, so matched distinctly
    voice_of: dict[str, np.ndarray] = {}
    spoken_s: dict[str, float] = defaultdict(float)
    for turn in obs.speech:
        if turn.speaker and turn.voice_embedding is not None:
            voice_of.setdefault(turn.speaker, turn.voice_embedding)
            spoken_s[turn.speaker] += turn.end_s - turn.start_s
    speakers = {}
    if voice_of:
        matched = voices.match_distinct(
            list(voice_of.values()),
            base,
            may_found=[spoken_s[k] >= voices.policy.min_found_s for k in voice_of],
        )
        speakers = {k: e for k, e in zip(voice_of, matched) if e is not None}
        speakers |= _owner_fragments(obs, voice_of, speakers, voices, owner_voices)
    for turns in _speaker_turns(obs.speech, {k: e.entity_id for k, e in speakers.items()}):
        start, end = base + turns[0].start_s, base + turns[-1].end_s
        entity = speakers.get(turns[0].speaker)
        speaker, entity_ids = (
            (f"<{entity.entity_id}>", (entity.entity_id,)) if entity else ("someone", ())
        )
        text = f'{speaker} said: "{" ".join(t.text for t in turns)}"'
        ids = tuple(t.segment_id for t in turns)
        mic = (HEARD_ON_MIC,) if any(t.channel == "mic" for t in turns) else ()
        memories.append(
            _clip_memory(
                obs, ("speech", *ids, text), "episodic", text, (start, end), entity_ids, ids + mic
            )
        )

    # one entity per clip-local face cluster (perception groups faces; two of one frame never share)
    people: dict[str, list] = defaultdict(list)
    for face in obs.faces:
        people[face.person or face.face_id].append(face)
    seen: dict[str, list] = {}
    face_of: dict[str, str] = {}
    if people:
        centroids = []
        for group in people.values():
            c = np.mean([f.embedding for f in group], axis=0)
            centroids.append(c / (np.linalg.norm(c) + 1e-9))
        first_ts = base + min(f.frame_time_s for f in obs.faces)
        for (person, group), entity in zip(
            people.items(), faces.match_distinct(centroids, first_ts)
        ):
            seen.setdefault(entity.entity_id, []).extend(group)
            face_of[person] = entity.entity_id
    for entity_id, group in seen.items():
        start = base + min(f.frame_time_s for f in group)
        end = base + max(f.frame_time_s for f in group)
        text = f"<{entity_id}> is visible from {_clock(start, tz)} to {_clock(end, tz)}"
        faces_seen = tuple(f.face_id for f in group)
        memories.append(
            _clip_memory(
                obs, ("face", entity_id), "episodic", text, (start, end), (entity_id,), faces_seen
            )
        )
    memories += (
        _screen_memories(obs, tz)
        + _app_memories(obs, tz)
        + _image_memories(obs, tz)
        + _photo_memories(obs, tz)
        + _track_memories(obs, tz)
        + _scene_memories(obs, min_tag_prob)
    )
    return OfflineWrite(
        sorted(memories, key=lambda m: (m.start_ts, m.memory_id)),
        {k: e.entity_id for k, e in speakers.items()},
        face_of,
    )


def _speaker_turns(
    speech, entity_of: dict[str, str], max_gap_s: float = 1.5, max_s: float = 20.0
) -> list[list]:
    """The clip's sentences grouped into turns: consecutive sentences of one voice with pauses of at
    most ``max_gap_s``, up to ``max_s`` long. ASR gives sentences, but a question is about what
    someone said in a turn ("I researched adoption agencies. It's been a dream..."), and one memory
    a turn keeps its sentences' context together (LoCoMo spoken: see ``bench locomo --spoken``)."""
    groups: list[list] = []
    for turn in sorted(speech, key=lambda t: t.start_s):
        last = groups[-1][-1] if groups else None
        if (
            last is not None
            and entity_of.get(last.speaker) is not None
            and entity_of.get(last.speaker) == entity_of.get(turn.speaker)
            and last.channel == turn.channel
            and turn.start_s - last.end_s <= max_gap_s
            and turn.end_s - groups[-1][0].start_s <= max_s
        ):
            groups[-1].append(turn)
        else:
            groups.append([turn])
    return groups


def _frame_id(obs: ClipObservations, frame) -> str:
    """A frame's provenance id: the item it came from, else the clip and its time."""
    return frame.source_id or f"{obs.clip.clip_id}:frame@{frame.frame_time_s:.2f}"


def _frame_memory(obs: ClipObservations, frame, what: str, text: str) -> Memory:
    """An episodic memory of one frame (an image shown, a photo), at its time, from it alone."""
    ts = obs.clip.start_ts + frame.frame_time_s
    frame_id = _frame_id(obs, frame)
    return _clip_memory(obs, (what, frame_id, text), "episodic", text, (ts, ts), (), (frame_id,))


def _span(obs: ClipObservations, frames: list) -> tuple[float, float, tuple[str, ...]]:
    """Absolute start and end of these frames, and their provenance ids."""
    base = obs.clip.start_ts
    return (
        base + min(f.frame_time_s for f in frames),
        base + max(f.frame_time_s for f in frames),
        tuple(_frame_id(obs, f) for f in frames),
    )


# how a screen memory begins: "On screen at 09:26:00: line | line" (read by OCR), or where the
# apps' accessibility tree gave some of it, with the address it gave, "On screen at 09:26:00
# (accessibility tree; https://…): …"
SCREEN_AT = "On screen at "
LINE_JOIN = " | "
READ_FROM = {"atspi": "accessibility tree", "ocr": "OCR"}  # a text line's source, as said


def screen_lines(memory: Memory) -> tuple[str, ...] | None:
    """The lines of a screen memory this writer wrote (``_screen_memories``), in reading order;
    None for any other memory."""
    if memory.kind != "resource" or not memory.text.startswith(SCREEN_AT):
        return None
    # after the clock and where it was read from, which have no ": " in them (an address holds
    # no space)
    body = memory.text.partition(": ")[2]
    return tuple(line.strip() for line in body.split(LINE_JOIN) if line.strip())


def _screen_memories(obs: ClipObservations, tz) -> list[Memory]:
    """One resource memory per distinct on-screen text, spanning the frames that showed it."""
    shown: dict[str, list] = {}
    for frame in obs.frames:
        if frame.text_lines:
            shown.setdefault(frame.text, []).append(frame)
    out = []
    for text, frames in shown.items():
        start, end, provenance = _span(obs, frames)
        source = _read_from(frames)
        body = (
            f"{SCREEN_AT}{_clock(start, tz)}{f' ({source})' if source else ''}: "
            f"{text.replace(chr(10), LINE_JOIN)}"
        )
        out.append(
            _clip_memory(
                obs,
                ("screen", text),
                "resource",
                body,
                (start, end),
                (),
                provenance + _by_owner(frames),
            )
        )
    return out


def _read_from(frames: list) -> str:
    """Where the frames' text was read when the accessibility tree gave some of it ("accessibility
    tree", or "accessibility tree and OCR"), and the addresses the tree gave, each once:
    "accessibility tree; https://…"; "" for text OCR read alone (every screen memory before the
    tree, and every video's), which says nothing more."""
    sources = {line.source for f in frames for line in f.text_lines}
    if sources <= {"ocr"} and not any(f.url for f in frames):
        return ""
    said = " and ".join(
        READ_FROM.get(s, s) for s in sorted(sources, key=lambda s: (s != "atspi", s))
    )
    urls = list(dict.fromkeys(f.url for f in frames if f.url))
    return "; ".join([said, *urls])


def _by_owner(frames: list) -> tuple[str, ...]:
    """``BY_OWNER`` when the user was at the keyboard or mouse for any of these frames."""
    return (BY_OWNER,) if any(f.input for f in frames) else ()


def _image_memories(obs: ClipObservations, tz) -> list[Memory]:
    """One episodic memory per frame that carries a caption (a shared photo, a described scene)."""
    clip = obs.clip
    out = []
    for frame in obs.frames:
        if frame.caption:
            ts = clip.start_ts + frame.frame_time_s
            text = f"An image shown at {_clock(ts, tz)}: {frame.caption}"
            out.append(_frame_memory(obs, frame, "image", text))
    return out


def _photo_memories(obs: ClipObservations, tz) -> list[Memory]:
    """Photos: one episodic memory per photo that says with what camera or where it was taken."""
    from memorize.places import where

    clip = obs.clip
    out = []
    for frame in obs.frames:
        if frame.camera or frame.place:
            ts = clip.start_ts + frame.frame_time_s
            text = (
                f"A photo taken at {_clock(ts, tz)}"
                + (f" {where(*frame.place)}" if frame.place else "")
                + (f" with a {frame.camera}" if frame.camera else "")
            )
            out.append(_frame_memory(obs, frame, "photo", text))
    return out


def _track_memories(obs: ClipObservations, tz) -> list[Memory]:
    """A GPS track's stay or move: one episodic memory saying where, named offline, and when."""
    from memorize.places import where

    seg = obs.track
    if seg is None:
        return []
    clip = obs.clip
    zone = (
        " UTC" if tz == UTC else ""
    )  # GPX times are UTC; where the owner's clock was is not known
    span = f"from {_hm(seg.start_ts, tz)} to {_hm(seg.end_ts, tz)}{zone} ({_duration(seg.end_ts - seg.start_ts)})"
    if seg.kind == "stay":
        assert seg.centre is not None  # every stay has its centre
        text = f"Stayed {where(*seg.centre)} {span}, by GPS track"
    else:
        text = (
            f"Travelled {seg.km:.1f} km {span}, by GPS track, setting out {where(*seg.start)} "
            f"and arriving {where(*seg.end)}"
        )
    times = (seg.start_ts, seg.end_ts)
    return [
        _clip_memory(obs, ("track", text), "episodic", text, times, (), (f"{clip.clip_id}:track",))
    ]


def _hm(ts: float, tz) -> str:
    return datetime.fromtimestamp(ts, tz=tz).strftime("%H:%M")


def _duration(s: float) -> str:
    minutes = round(s / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60:02d} min"


def _app_memories(obs: ClipObservations, tz) -> list[Memory]:
    """Screenshots: one episodic memory per application window in front during the clip."""
    used: dict[tuple[str, str], list] = {}
    for frame in obs.frames:
        if frame.app or frame.window:
            used.setdefault((frame.app, frame.window), []).append(frame)
    out = []
    for (app, window), frames in used.items():
        start, end, provenance = _span(obs, frames)
        what = f"{app} ({window})" if app and window else app or window
        text = f"Using {what} from {_clock(start, tz)} to {_clock(end, tz)}"
        out.append(
            _clip_memory(
                obs,
                ("app", app, window),
                "episodic",
                text,
                (start, end),
                (),
                provenance + _by_owner(frames),
            )
        )
    return out


def _scene_memories(obs: ClipObservations, min_prob: float) -> list[Memory]:
    """The confident object/scene tags of the clip's frames, most frequent first."""
    counts: dict[str, int] = defaultdict(int)
    tagged = []
    for frame in obs.frames:
        confident = [label for label, prob in frame.tags if prob >= min_prob]
        for label in confident:
            counts[label] += 1
        if confident:
            tagged.append(frame)
    if not counts:
        return []
    labels = sorted(counts, key=lambda k: (-counts[k], k))[:8]
    start, end, provenance = _span(obs, tagged)
    text = "The scene shows: " + ", ".join(labels)
    return [_clip_memory(obs, ("scene", text), "episodic", text, (start, end), (), provenance)]
