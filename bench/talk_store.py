"""A small store written by hand: two voices talking in clips of one recording, each voice with its
own character, a face seen with the first, nobody named. The tests' people store and the fault
bench's stores are built from it (each with its own lines, times and ids)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

LINES = [  # (clip, speaker, seconds into the clip, what was said)
    (0, "voice_1", 2, "Hi there, how was the trip to Lisbon?"),
    (
        0,
        "voice_2",
        6,
        "Lisbon was lovely, the tiles everywhere and the custard tarts at the bakery.",
    ),
    (0, "voice_1", 12, "Did you take the old tram up the hill?"),
    (1, "voice_2", 3, "I rode tram 28 twice, it was packed."),
    (1, "voice_1", 9, "Next year I want to see Porto."),
]
PEOPLE = ("voice_1", "voice_2", "character_1", "character_2", "face_1")


def write_talk(
    store,
    t0: float,
    clips: int,
    clip_id: Callable[[int], str],
    source: str,
    sha: str,
    lines: Sequence[tuple[int, str, float, str]] = LINES,
    face_in: Sequence[int] = (0,),
):
    """Commit ``clips`` clips of 30 s from ``t0``, each with the ``lines`` said in it (as the offline
    writer words them), the five people, and ``face_1`` seen in the clips ``face_in``."""
    from graph.rows import ClipRow, Edge, Entity, Memory, content_id

    for index in range(clips):
        start = t0 + 30 * index
        clip = ClipRow(
            clip_id(index),
            source,
            sha,
            index,
            30.0 * index,
            30.0,
            start,
            start + 30,
            " ".join(t for c, _, _, t in lines if c == index),
        )
        memories = [
            Memory(
                content_id(clip.clip_id, at),
                "episodic",
                f'<{who}> said: "{text}"',
                clip.clip_id,
                source,
                start + at,
                start + at + 3,
                (who,),
            )
            for c, who, at, text in lines
            if c == index
        ]
        if index in face_in:
            memories.append(
                Memory(
                    content_id(clip.clip_id, "face"),
                    "episodic",
                    "<face_1> was seen.",
                    clip.clip_id,
                    source,
                    start + 1,
                    start + 20,
                    ("face_1",),
                )
            )
        entities = [Entity(e, e.split("_")[0], t0, start + 30, [], 1) for e in PEOPLE]
        edges = [
            Edge("same_person", "voice_1", "character_1"),
            Edge("same_person", "voice_2", "character_2"),
            Edge("same_person", "face_1", "character_1"),
        ]
        store.commit_clip(clip, memories, entities, edges)
    return store
