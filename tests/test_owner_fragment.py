"""A fragment of speech on the capture daemon's microphone, too short to match or found a voice
(the owner's last words spilling into the next 30 s slot): the owner's where the owner's voice is
known and the fragment sounds more like it than like anyone else known (the far side); otherwise
"someone". Real memorizer and store, voice embeddings made to measure."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from factories import video_source
from memorize.identity import MatchPolicy
from memorize.memorizer import Memorizer
from perception.records import Clip, ClipObservations, SpeechTurn

DIM = 16
OWNER = np.eye(DIM, dtype=np.float32)[0]
FAR = np.eye(DIM, dtype=np.float32)[1]
SOURCE = video_source("/capture/2026-12-07", "c" * 64, datetime(2026, 12, 7, 9, tzinfo=UTC), 90.0)
# voices: a match wants 0.8 alike, a new person 2 s of speech
VOICES = MatchPolicy(0.8, min_found_s=2.0, by_profile=True)


def _between(a: np.ndarray, b: np.ndarray, share_of_b: float) -> np.ndarray:
    """A voice ``share_of_b`` of the way from ``a`` to ``b`` (unit length)."""
    v = (1 - share_of_b) * a + share_of_b * b + 0.6 * np.eye(DIM, dtype=np.float32)[5]
    return (v / np.linalg.norm(v)).astype(np.float32)


def _turn(clip: str, k: int, channel: str, text: str, start: float, end: float, voice):
    speaker = ("m" if channel == "mic" else "o") + "0"
    return SpeechTurn(
        f"{clip}:{channel}:seg{k}", text, start, end, "en", (), voice, speaker, channel
    )


def _clip(index: int, *turns: SpeechTurn) -> ClipObservations:
    clip = Clip(f"c{index}", SOURCE, index, 30.0 * index, 30.0)
    return ClipObservations(clip, turns, ())


def _said(memories, words: str) -> tuple[str, ...]:
    (m,) = [m for m in memories if words in m.text]
    return m.entity_ids


def test_a_fragment_on_the_microphone_is_the_owners_unless_it_sounds_like_the_far_side(
    hash_store,
) -> None:
    memorizer = Memorizer(hash_store, MatchPolicy(0.9), VOICES)
    first = memorizer.memorize(
        _clip(
            0,
            _turn("c0", 0, "mic", "Let us go over the budget for March.", 1.0, 6.0, OWNER),
            _turn("c0", 1, "out", "Sure, I have the spreadsheet open here.", 8.0, 13.0, FAR),
        )
    )
    owner = _said(first.memories, "budget")
    far = _said(first.memories, "spreadsheet")
    assert first.owner_heard == owner[0] and owner != far
    fragment = _between(OWNER, FAR, 0.2)  # the owner's voice, too loosely for a match
    assert float(fragment @ OWNER) < VOICES.threshold
    leftover = _between(OWNER, FAR, 0.8)  # the far side's echo, left on the microphone
    second = memorizer.memorize(
        _clip(
            1,
            _turn("c1", 0, "mic", "on Friday morning", 0.2, 1.2, fragment),
            _turn("c1", 1, "out", "Fine, Friday works for me then.", 3.0, 8.0, FAR),
        )
    )
    assert _said(second.memories, "Friday morning") == owner
    assert _said(second.memories, "works for me") == far
    third = memorizer.memorize(
        _clip(
            2,
            _turn("c2", 0, "mic", "well", 0.5, 0.9, leftover),
            _turn("c2", 1, "out", "Talk to you next week then.", 2.0, 6.0, FAR),
        )
    )
    assert _said(third.memories, "well") == ()  # "someone": not the owner's on the channel alone
    # the owner's voice kept no sample of the fragment
    (voice,) = [e for e in memorizer.voices.entities if e.entity_id == owner[0]]
    assert len(voice.samples) == 1


def test_without_an_owner_a_fragment_on_the_microphone_stays_someone(hash_store) -> None:
    memorizer = Memorizer(hash_store, MatchPolicy(0.9), VOICES)
    memorizer.owner_settled = True  # as when the user undid an inferred owner: none is inferred
    memorizer.memorize(
        _clip(0, _turn("c0", 1, "out", "Sure, I have the spreadsheet open here.", 8.0, 13.0, FAR))
    )
    second = memorizer.memorize(
        _clip(1, _turn("c1", 0, "mic", "on Friday morning", 0.2, 1.2, _between(OWNER, FAR, 0.2)))
    )
    assert _said(second.memories, "Friday morning") == ()
