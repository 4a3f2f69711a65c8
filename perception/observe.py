"""One clip in, one ``ClipObservations`` out: speech with speakers, faces grouped into clip-local
people, and per distinct frame object tags, an image embedding and on-screen text; optionally a
caption from a vision-language model.

A pure function of the clip and the model backends, with no global state, so Ray can run it. Each
stage that fails leaves a note and an empty part of the record, never a crash, and every stage is
timed.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, replace

from llm.images import jpeg_bytes
from perception.base import Captioner, FaceAnalyzer, ImageAnalyzer, SpeakerEmbedder, SpeechRecognizer, TextReader
from perception.diarize import diarize
from perception.errors import MediaError
from perception.faces import FacePolicy, detect_faces
from perception.images import distinct_frames, limit_size, read_image, to_rgb8
from perception.records import (Clip, ClipMedia, ClipObservations, FaceObservation, FrameObservation, SpeakerSegment,
                                SpeechTurn, Word)
from perception.screens import ScreenClip
from perception.sources import load_media

log = logging.getLogger(__name__)

_SENTENCE_END = re.compile(r"[.?!…]['\")\]]*$")


@dataclass(frozen=True)
class Perceivers:
    asr: SpeechRecognizer
    speaker: SpeakerEmbedder
    faces: FaceAnalyzer
    image: ImageAnalyzer | None = None
    ocr: TextReader | None = None
    captioner: Captioner | None = None
    frame_fps: float = 1.0
    max_turn_gap_s: float = 0.6
    diarize_max_distance: float = 0.25
    diarize_min_speaker_s: float = 2.5
    face_policy: FacePolicy = FacePolicy()
    duplicate_max_diff: float = 3.0  # mean grey-level change below which a frame repeats the last one
    ocr_min_text_fraction: float = 0.01  # run recognition only on frames this text-covered
    ocr_every_s: float = 5.0  # video: look for text at most this often (screenshots: every frame)
    caption_max_frames: int = 4
    max_frame_side: int = 1920  # larger frames (4K screenshots) are downscaled before analysis
    keep_images_px: int = 0  # >0: keep distinct frames (this long side) and face crops as JPEG for an LLM writer


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


def _speech(clip: Clip, media: ClipMedia, p: Perceivers) -> tuple[list[SpeechTurn], str, list[SpeakerSegment]]:
    audio = media.audio
    if audio is None or audio.size == 0:
        return [], "", []
    segments, language = p.asr.transcribe(audio, media.sample_rate)
    if not segments:
        return [], "", []
    turns, timeline = diarize(split_turns(segments, p.max_turn_gap_s), audio, media.sample_rate, p.speaker,
                              max_distance=p.diarize_max_distance, min_speaker_s=p.diarize_min_speaker_s)
    return [SpeechTurn(f"{clip.clip_id}:{t.segment_id}", t.text, t.start_s, t.end_s, t.language, t.words,
                       t.voice_embedding, t.speaker) for t in turns], language, timeline


def _frames(frames: list, times: list[float], p: Perceivers, notes: list[str],
            timings: dict[str, float]) -> list[FrameObservation]:
    """Tags, embedding and on-screen text of the distinct frames; a failing backend leaves a note."""
    tagged: list = [((), None)] * len(frames)
    t0 = time.perf_counter()
    if p.image is not None and frames:
        try:
            tagged = p.image.analyze(frames)
        except (RuntimeError, ValueError) as e:
            notes.append(f"image tags failed: {e}")
            log.warning("image tags failed: %s", e)
    timings["image_s"] = time.perf_counter() - t0
    texts: list = [()] * len(frames)
    t0 = time.perf_counter()
    if p.ocr is not None:
        last_t = -float("inf")
        for i, frame in enumerate(frames):
            if times[i] - last_t < p.ocr_every_s:
                continue
            last_t = times[i]
            try:
                if p.ocr_min_text_fraction <= 0 or p.ocr.text_fraction(frame) >= p.ocr_min_text_fraction:
                    texts[i] = tuple(p.ocr.read(frame))
            except (RuntimeError, ValueError) as e:
                notes.append(f"OCR failed on the frame at {times[i]:.1f} s: {e}")
                log.warning("OCR failed on the frame at %.1f s: %s", times[i], e)
    timings["ocr_s"] = time.perf_counter() - t0
    images = [jpeg_bytes(f, p.keep_images_px) if p.keep_images_px else b"" for f in frames]
    return [FrameObservation(t, tags, emb, text, image)
            for t, (tags, emb), text, image in zip(times, tagged, texts, images)]


def observe_clip(clip: Clip, p: Perceivers) -> ClipObservations:
    """Decode the clip and run every perceiver on it; a failing stage leaves a note, not a crash.

    Raises ``MediaError`` when nothing of the clip can be decoded.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    media, notes = load_media(clip, p.frame_fps)
    notes = list(notes)
    timings["decode_s"] = time.perf_counter() - t0
    return observe_media(clip, media, p, notes, timings)


def observe_media(clip: Clip, media: ClipMedia, p: Perceivers, notes: list[str] | None = None,
                  timings: dict[str, float] | None = None) -> ClipObservations:
    """``observe_clip`` on media already decoded (screenshots, tests, other decoders)."""
    notes = list(notes or [])
    timings = dict(timings or {})
    frames, times = [], []
    for frame, t in zip(media.frames, media.frame_times_s):
        try:
            frames.append(limit_size(to_rgb8(frame), p.max_frame_side)[0])
            times.append(t)
        except ValueError as e:
            notes.append(f"frame at {t:.1f} s skipped: {e}")

    speech: list[SpeechTurn] = []
    language = ""
    timeline: list[SpeakerSegment] = []
    t0 = time.perf_counter()
    try:
        speech, language, timeline = _speech(clip, media, p)
    except (RuntimeError, ValueError, MediaError) as e:
        notes.append(f"speech failed: {e}")
        log.warning("%s clip %d: speech failed: %s", clip.source.path, clip.index, e)
    timings["speech_s"] = time.perf_counter() - t0

    faces: list[FaceObservation] = []
    t0 = time.perf_counter()
    try:
        faces, dropped = detect_faces(clip.clip_id, frames, times, p.faces, p.face_policy,
                                      keep_crops=p.keep_images_px > 0)
        if dropped:
            notes.append(f"{dropped} face detection(s) too small or blurred to use")
    except (RuntimeError, ValueError) as e:
        notes.append(f"faces failed: {e}")
        log.warning("%s clip %d: faces failed: %s", clip.source.path, clip.index, e)
    timings["faces_s"] = time.perf_counter() - t0

    keep = distinct_frames(frames, p.duplicate_max_diff)
    distinct = [frames[i] for i in keep]
    distinct_times = [times[i] for i in keep]
    frame_obs = _frames(distinct, distinct_times, p, notes, timings)

    caption = ""
    t0 = time.perf_counter()
    if p.captioner is not None and distinct:
        step = max(1, len(distinct) // p.caption_max_frames)
        try:
            caption = p.captioner.caption(distinct[::step][: p.caption_max_frames],
                                          distinct_times[::step][: p.caption_max_frames],
                                          " ".join(t.text for t in speech))
        except (RuntimeError, ValueError, OSError) as e:
            notes.append(f"caption failed: {e}")
            log.warning("%s clip %d: caption failed: %s", clip.source.path, clip.index, e)
    timings["caption_s"] = time.perf_counter() - t0
    return ClipObservations(clip, tuple(speech), tuple(faces), tuple(notes), timings, tuple(frame_obs),
                            caption, language, tuple(timeline))


def observe_screen_clip(sc: ScreenClip, p: Perceivers) -> ClipObservations:
    """One clip of screenshots: every readable image is a frame at its capture time, read by OCR
    in full (no text gate), with its app and window from the sidecar. Unreadable images are
    skipped with a note; ``MediaError`` when none can be read."""
    t0 = time.perf_counter()
    frames, times, notes = [], [], []
    app_at: dict[float, tuple[str, str]] = {}
    for shot in sc.shots:
        try:
            frames.append(read_image(shot.path))
        except MediaError as e:
            notes.append(f"screenshot skipped: {e}")
            continue
        t = min(max(shot.captured_at.timestamp() - sc.clip.start_ts, 0.0), sc.clip.duration_s)
        times.append(t)
        app_at[t] = (shot.app, shot.window)
    if not frames:
        raise MediaError(sc.clip.source.path, f"none of the {len(sc.shots)} screenshot(s) of this clip could be read "
                         f"({'; '.join(notes)})")
    timings = {"decode_s": time.perf_counter() - t0}
    screens = replace(p, ocr_every_s=0.0, ocr_min_text_fraction=0.0)
    obs = observe_media(sc.clip, ClipMedia(None, 16000, tuple(frames), tuple(times)), screens, notes, timings)
    frames_with_apps = []
    for f in obs.frames:
        app, window = app_at.get(f.frame_time_s, ("", ""))
        frames_with_apps.append(replace(f, app=app, window=window))
    return replace(obs, frames=tuple(frames_with_apps))
