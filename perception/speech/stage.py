"""The speech stage of one clip: ASR segments split into sentence-sized turns, then diarized."""

from __future__ import annotations

import re
import time

import numpy as np

from perception.records import SpeakerSegment, SpeechTurn, Word
from perception.speech.base import SpeakerEmbedder, SpeechRecognizer
from perception.speech.diarize import diarize
from perception.speech.hints import SpeechHints, mostly_hints, respell
from perception.speech.second_pass import SecondPass

_SENTENCE_END = re.compile(r"[.?!…]['\")\]]*$")


def split_turns(segments: list[SpeechTurn], max_gap_s: float) -> list[SpeechTurn]:
    """Split ASR segments into sentence-sized turns at sentence ends and pauses.

    Whisper segments often run across a change of speaker; sentences and pauses are where a
    change is most likely, so each turn gets its own voice embedding downstream.
    """
    turns: list[SpeechTurn] = []
    for seg in segments:
        if not seg.words:
            turns.append(seg)
            continue
        groups: list[list[Word]] = [[]]
        for prev, word in zip((None, *seg.words[:-1]), seg.words):
            if (
                prev is not None
                and groups[-1]
                and (_SENTENCE_END.search(prev.text) or word.start_s - prev.end_s > max_gap_s)
            ):
                groups.append([])
            groups[-1].append(word)
        for j, group in enumerate(groups):
            turns.append(
                SpeechTurn(
                    segment_id=f"{seg.segment_id}.{j}",
                    text=" ".join(w.text for w in group),
                    start_s=group[0].start_s,
                    end_s=group[-1].end_s,
                    language=seg.language,
                    words=tuple(group),
                )
            )
    return turns


def transcribe_clip(
    clip_id: str,
    audio: np.ndarray | None,
    sample_rate: int,
    asr: SpeechRecognizer,
    speaker: SpeakerEmbedder,
    max_turn_gap_s: float,
    max_distance: float,
    min_speaker_s: float,
    second_pass: SecondPass | None = None,
    hints: SpeechHints | None = None,
    notes: list[str] | None = None,
    timings: dict[str, float] | None = None,
    hint_first_pass: bool = False,
) -> tuple[list[SpeechTurn], str, list[SpeakerSegment]]:
    """Turns with clip-local speakers (segment ids prefixed with ``clip_id``), the language, and
    the speaker timeline; nothing for a clip without audio or speech. ``hint_first_pass``: the
    recogniser is told the names in ``hints`` as hotwords (a reading that is mostly those names is
    decoded again without them, with a note). ``second_pass`` decodes again where names and doubt
    are, told the same names; its seconds and the audio it heard go to ``timings``
    (``second_pass_s``, ``second_pass_audio_s``), a failure to ``notes``. Spellings the hints
    teach are kept either way (``perception.speech.hints.respell``)."""
    if audio is None or audio.size == 0:
        return [], "", []
    hotwords = hints.hotwords() if hints and hint_first_pass else ""
    segments, language = asr.transcribe(audio, sample_rate, hotwords=hotwords or None)
    if hotwords and mostly_hints(segments, hints):
        segments, language = asr.transcribe(audio, sample_rate)
        if notes is not None:
            notes.append(
                "the speech read as mostly the expected names: transcribed again without them"
            )
    if not segments:
        return [], "", []
    if second_pass is not None:
        t0 = time.perf_counter()
        again = second_pass.redecode(audio, sample_rate, segments, hints)
        segments = again.turns
        if timings is not None:
            timings["second_pass_s"] = time.perf_counter() - t0
            timings["second_pass_audio_s"] = again.audio_s
        if again.note and notes is not None:
            notes.append(again.note)
    segments = respell(segments, hints)
    turns, timeline = diarize(
        split_turns(segments, max_turn_gap_s),
        audio,
        sample_rate,
        speaker,
        max_distance=max_distance,
        min_speaker_s=min_speaker_s,
    )
    return (
        [
            SpeechTurn(
                f"{clip_id}:{t.segment_id}",
                t.text,
                t.start_s,
                t.end_s,
                t.language,
                t.words,
                t.voice_embedding,
                t.speaker,
            )
            for t in turns
        ],
        language,
        timeline,
    )
