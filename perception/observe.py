"""One clip in, one ``ClipObservations`` out: speech turns with speakers' voice embeddings, and faces.

A pure function of the clip and the model backends, with no global state, so Ray can run it.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass

from perception.base import FaceAnalyzer, SpeakerEmbedder, SpeechRecognizer
from perception.diarize import diarize
from perception.errors import MediaError
from perception.records import Clip, ClipMedia, ClipObservations, FaceObservation, SpeechTurn, Word
from perception.sources import load_media

log = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"[.?!…]['\")\]]*$")


@dataclass(frozen=True)
class Perceivers:
    asr: SpeechRecognizer
    speaker: SpeakerEmbedder
    faces: FaceAnalyzer
    frame_fps: float = 1.0
    max_turn_gap_s: float = 0.6
    diarize_max_distance: float = 0.3


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
            if prev is not None and groups[-1] and (
                _SENTENCE_END.search(prev.text) or word.start_s - prev.end_s > max_gap_s
            ):
                groups.append([])
            groups[-1].append(word)
        for j, group in enumerate(groups):
            turns.append(SpeechTurn(
                segment_id=f"{seg.segment_id}.{j}",
                text=" ".join(w.text for w in group),
                start_s=group[0].start_s,
                end_s=group[-1].end_s,
                language=seg.language,
                words=tuple(group),
            ))
    return turns


def _speech(clip: Clip, media: ClipMedia, p: Perceivers) -> list[SpeechTurn]:
    audio = media.audio
    if audio is None or audio.size == 0:
        return []
    segments, _language = p.asr.transcribe(audio, media.sample_rate)
    turns = diarize(split_turns(segments, p.max_turn_gap_s), audio, media.sample_rate, p.speaker,
                    max_distance=p.diarize_max_distance)
    return [SpeechTurn(f"{clip.clip_id}:{t.segment_id}", t.text, t.start_s, t.end_s, t.language, t.words,
                       t.voice_embedding, t.speaker) for t in turns]


def _faces(clip: Clip, media: ClipMedia, p: Perceivers) -> list[FaceObservation]:
    out = []
    for i, (frame, t) in enumerate(zip(media.frames, media.frame_times_s)):
        for j, (box, score, emb) in enumerate(p.faces.analyze(frame)):
            out.append(FaceObservation(f"{clip.clip_id}:f{i}.{j}", t, box, score, emb))
    return out


def observe_clip(clip: Clip, p: Perceivers) -> ClipObservations:
    """Decode the clip and run every perceiver on it; a failing stream leaves a note, not a crash.

    Raises ``MediaError`` when nothing of the clip can be decoded.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    media, notes = load_media(clip, p.frame_fps)
    notes = list(notes)
    timings["decode_s"] = time.perf_counter() - t0

    speech: list[SpeechTurn] = []
    faces: list[FaceObservation] = []
    t0 = time.perf_counter()
    try:
        speech = _speech(clip, media, p)
    except (RuntimeError, ValueError, MediaError) as e:
        notes.append(f"speech failed: {e}")
        log.warning("%s clip %d: speech failed: %s", clip.source.path, clip.index, e)
    timings["speech_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        faces = _faces(clip, media, p)
    except (RuntimeError, ValueError) as e:
        notes.append(f"faces failed: {e}")
        log.warning("%s clip %d: faces failed: %s", clip.source.path, clip.index, e)
    timings["faces_s"] = time.perf_counter() - t0
    return ClipObservations(clip, tuple(speech), tuple(faces), tuple(notes), timings)
