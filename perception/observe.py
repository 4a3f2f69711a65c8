"""One clip in, one ``ClipObservations`` out: speech with speakers, faces grouped into clip-local
people, and per distinct frame object tags, an image embedding and on-screen text; optionally a
caption from a vision-language model.

A pure function of the clip and the model backends, with no global state, so Ray can run it. Each
stage that fails leaves a note and an empty part of the record, never a crash, and every stage is
timed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from llm.images import jpeg_bytes
from perception.errors import MediaError, stage_errors
from perception.faces.base import FaceAnalyzer
from perception.faces.stage import FacePolicy, LastFaceless, detect_faces
from perception.ocr.base import TextReader
from perception.ocr.stage import (
    LastRead,
    TreeText,
    last_of_edits,
    read_frames,
    read_screens,
    tree_text,
)
from perception.records import (
    Clip,
    ClipMedia,
    ClipObservations,
    FaceObservation,
    FrameObservation,
    SpeakerSegment,
    SpeechTurn,
)
from perception.sources.frames import (
    distinct_frames,
    limit_size,
    read_image,
    returning_views,
    to_rgb8,
)
from perception.sources.media import load_media
from perception.sources.screenshots import (
    AUDIO_RATE,
    ScreenClip,
    Screenshot,
    read_audio_piece,
)
from perception.speech.base import SpeakerEmbedder, SpeechRecognizer
from perception.speech.hints import SpeechHints
from perception.speech.second_pass import SecondPass
from perception.speech.stage import transcribe_clip
from perception.speech.two_streams import heard_once, on_channel
from perception.vision.base import Captioner, ImageAnalyzer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Perceivers:
    asr: SpeechRecognizer
    speaker: SpeakerEmbedder
    faces: FaceAnalyzer
    image: ImageAnalyzer | None = None
    ocr: TextReader | None = None
    captioner: Captioner | None = None
    # decodes again, with a wider beam, where names and doubt are (None: the first pass only)
    second_pass: SecondPass | None = None
    hint_first_pass: bool = False  # the first pass is told the expected names as hotwords
    frame_fps: float = 1.0
    decode_threads: int = 0  # video decoder threads; 0: the machine's CPUs
    # faces (dlib's detector and embedder use one thread) run on a thread of their own beside speech
    # and text (two threads each): for a clip given more than one CPU
    faces_beside: bool = False
    max_turn_gap_s: float = 0.6
    diarize_max_distance: float = 0.25
    diarize_min_speaker_s: float = 2.5
    face_policy: FacePolicy = FacePolicy()
    duplicate_max_diff: float = (
        3.0  # mean grey-level change below which a frame repeats the last one
    )
    ocr_min_text_fraction: float = 0.01  # run recognition only on frames this text-covered
    ocr_every_s: float = 5.0  # video: look for text at most this often (screenshots: every frame)
    ocr_last_of_edits: bool = (
        False  # screenshots: read only the last frame of each run of small edits
    )
    # video: a frame the next distinct one changes in at most this share of its rows (a typed word)
    # is read in that next one, once (None: each frame read for itself)
    ocr_small_edit: float | None = 0.25
    caption_max_frames: int = 4
    # screenshots: the last screen read, kept from clip to clip, so that the next is read only where
    # it differs. A watcher's, which sees clips in order; None (each clip starts afresh) keeps a
    # clip's observations a function of the clip alone, as ingest on Ray needs
    last_read: LastRead | None = None
    # the same for faces: the last frame looked at for faces with none in it (a watcher's)
    last_faceless: LastFaceless | None = None
    # a frame is looked at for faces only where one can have come in since the last faceless one
    # (``detect_faces``); False: every distinct frame is (a baseline with every gate off)
    faces_where_changed: bool = True
    max_frame_side: int = 1920  # larger frames (4K screenshots) are downscaled before analysis
    keep_images_px: int = (
        0  # >0: keep distinct frames (this long side) and face crops as JPEG for an LLM writer
    )


def _frames(
    frames: list,
    times: list[float],
    p: Perceivers,
    notes: list[str],
    timings: dict[str, float],
    returns: dict[int, int] | None = None,
    shown: list[int] | None = None,
    trees: Sequence[TreeText | None] = (),
) -> list[FrameObservation]:
    """Tags, embedding and on-screen text of the distinct frames (``returns``: those showing again
    what an earlier one showed, whose tags and text they get; ``shown``: screenshots, the last of
    each run of small edits, the ones read; ``trees``: screenshots, what accessibility trees said
    of each, ``read_screens``); a failing backend leaves a note."""
    tagged: list = [((), None)] * len(frames)
    returns = returns or {}
    t0 = time.perf_counter()
    if p.image is not None and frames:
        try:
            source = _tag_sources(len(frames), returns, shown)
            first = sorted(set(source))
            of_first = dict(zip(first, p.image.analyze([frames[i] for i in first])))
            tagged = [of_first[source[i]] for i in range(len(frames))]
        except stage_errors() as e:
            notes.append(f"image tags failed: {e}")
            log.warning("image tags failed: %s", e)
    timings["image_s"] = time.perf_counter() - t0
    texts: list = [()] * len(frames)
    t0 = time.perf_counter()
    if p.ocr_last_of_edits and (p.ocr is not None or any(t is not None for t in trees)):
        texts = read_screens(
            frames, times, p.ocr, notes, last=p.last_read, shown=shown, trees=trees
        )
    elif p.ocr is not None:
        texts = read_frames(
            frames,
            times,
            p.ocr,
            p.ocr_every_s,
            p.ocr_min_text_fraction,
            notes,
            p.ocr_small_edit,
            returns,
        )
    timings["ocr_s"] = time.perf_counter() - t0
    images = [jpeg_bytes(f, p.keep_images_px) if p.keep_images_px else b"" for f in frames]
    return [
        FrameObservation(t, tags, emb, text, image)
        for t, (tags, emb), text, image in zip(times, tagged, texts, images)
    ]


def _tag_sources(n: int, returns: dict[int, int], shown: list[int] | None) -> list[int]:
    """For each of ``n`` frames, the frame whose image tags it takes: the earlier frame it shows
    again (``returns``), and of screenshots (``shown``: the last of each run of small edits, the
    last frame among them) the one that ends its run of small edits, which shows what it does
    but a typed word or a clock's hand."""
    source = [returns.get(i, i) for i in range(n)]
    if shown is None:
        return source
    ends, j = [0] * n, len(shown) - 1
    for i in range(n - 1, -1, -1):
        while j > 0 and shown[j - 1] >= i:
            j -= 1
        ends[i] = shown[j]
    return [ends[i] for i in source]


def _speech(
    clip: Clip,
    media: ClipMedia,
    p: Perceivers,
    notes: list[str],
    timings: dict[str, float],
    hints: SpeechHints | None = None,
) -> tuple[list[SpeechTurn], str, list[SpeakerSegment]]:
    """Turns with clip-local speakers, the language and the diarization timeline; a failure leaves a note."""
    t0 = time.perf_counter()
    survived: tuple[type[BaseException], ...] = (*stage_errors(), MediaError)
    try:
        return transcribe_clip(
            clip.clip_id,
            media.audio,
            media.sample_rate,
            p.asr,
            p.speaker,
            p.max_turn_gap_s,
            p.diarize_max_distance,
            p.diarize_min_speaker_s,
            p.second_pass,
            hints,
            notes,
            timings,
            p.hint_first_pass,
        )
    except survived as e:
        notes.append(f"speech failed: {e}")
        log.warning("%s clip %d: speech failed: %s", clip.source.path, clip.index, e)
        return [], "", []
    finally:
        timings["speech_s"] = time.perf_counter() - t0


def _faces(
    clip: Clip,
    frames: list,
    times: list[float],
    keep: list[int],
    returns: dict[int, int],
    p: Perceivers,
    notes: list[str],
    timings: dict[str, float],
    trees: Sequence[TreeText | None] = (),
) -> list[FaceObservation]:
    """Faces on the distinct frames ``keep`` (by position in ``frames``), each picture once: a
    repeated frame repeats its faces, and a frame showing again an earlier picture (``returns``, by
    position among the distinct frames) gets that picture's faces; a failure leaves a note.
    ``trees``: per frame, what the accessibility trees said of it (where they speak for text, a
    change brings no face)."""
    t0 = time.perf_counter()
    try:
        found, dropped = detect_faces(
            clip.clip_id,
            frames,
            times,
            p.faces,
            p.face_policy,
            keep_crops=p.keep_images_px > 0,
            analyzed=keep,
            returns={keep[a]: keep[b] for a, b in returns.items()},
            text=[t.mask if t is not None else None for t in trees],
            last=p.last_faceless,
            where_changed=p.faces_where_changed,
        )
        if dropped:
            notes.append(f"{dropped} face detection(s) too small or blurred to use")
        return found
    except stage_errors() as e:
        notes.append(f"faces failed: {e}")
        log.warning("%s clip %d: faces failed: %s", clip.source.path, clip.index, e)
        return []
    finally:
        timings["faces_s"] = time.perf_counter() - t0


def observe_clip(clip: Clip, p: Perceivers, hints: SpeechHints | None = None) -> ClipObservations:
    """Decode the clip and run every perceiver on it; a failing stage leaves a note, not a crash.
    ``hints``: the names its speech may hold (``perception.speech.hints``).

    Raises ``MediaError`` when nothing of the clip can be decoded.
    """
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    media, decode_notes = load_media(clip, p.frame_fps, p.decode_threads)
    notes = list(decode_notes)
    timings["decode_s"] = time.perf_counter() - t0
    return observe_media(clip, media, p, notes, timings, hints)


Heard = tuple[list[SpeechTurn], str, list[SpeakerSegment]]  # turns, language, speaker timeline


def observe_media(
    clip: Clip,
    media: ClipMedia,
    p: Perceivers,
    notes: list[str] | None = None,
    timings: dict[str, float] | None = None,
    hints: SpeechHints | None = None,
    listen: Callable[[list[str], dict[str, float]], Heard] | None = None,
    trees: Sequence[TreeText | None] = (),
) -> ClipObservations:
    """``observe_clip`` on media already decoded (screenshots, tests, other decoders). ``listen``
    (given the notes and timings) hears the clip in place of the speech stage on ``media.audio``
    (captured sound: two streams, ``_two_streams``). ``trees``: per frame of ``media``, what
    accessibility trees said of it (screenshots, in its pixels at most ``max_frame_side`` long;
    None for a frame they did not read)."""
    notes = list(notes or [])
    timings = dict(timings or {})
    frames, times, frame_trees = [], [], []
    for k, (frame, t) in enumerate(zip(media.frames, media.frame_times_s)):
        try:
            frames.append(limit_size(to_rgb8(frame), p.max_frame_side)[0])
            times.append(t)
            frame_trees.append(trees[k] if k < len(trees) else None)
        except stage_errors() as e:
            notes.append(f"frame at {t:.1f} s skipped: {e}")

    keep = distinct_frames(frames, p.duplicate_max_diff)
    distinct = [frames[i] for i in keep]
    distinct_times = [times[i] for i in keep]
    # of the distinct frames, those showing again what an earlier one showed (a call cutting
    # between speakers): by position among the distinct frames
    returns = returning_views(distinct, p.duplicate_max_diff)
    shown, face_keep, face_returns = None, keep, returns
    if p.ocr_last_of_edits:
        # screenshots: faces are looked for where text is read, on the last frame of each run of
        # small edits (a typed word, a clock's hand); a frame before it repeats the faces of the
        # one read before it, as a repeated video frame does
        shown = last_of_edits(distinct, trees=[frame_trees[i] for i in keep])
        face_keep = [keep[i] for i in shown]
        face_returns = {
            shown.index(a): shown.index(b) for a, b in returns.items() if a in shown and b in shown
        }
    face_notes: list[str] = []  # the faces' own: they may run on another thread
    faces_stage = partial(
        _faces, clip, frames, times, face_keep, face_returns, p, face_notes, timings, frame_trees
    )

    with (
        ThreadPoolExecutor(1, thread_name_prefix="mnemo-faces")
        if p.faces_beside
        else nullcontext() as pool
    ):
        beside = pool.submit(faces_stage) if pool is not None else None
        speech, language, timeline = (
            listen(notes, timings)
            if listen is not None
            else _speech(clip, media, p, notes, timings, hints)
        )
        frame_obs = _frames(
            distinct,
            distinct_times,
            p,
            notes,
            timings,
            returns,
            shown,
            [frame_trees[i] for i in keep],
        )
        faces = beside.result() if beside is not None else faces_stage()
    notes += face_notes

    caption = ""
    t0 = time.perf_counter()
    if p.captioner is not None and distinct:
        step = max(1, len(distinct) // p.caption_max_frames)
        try:
            caption = p.captioner.caption(
                distinct[::step][: p.caption_max_frames],
                distinct_times[::step][: p.caption_max_frames],
                " ".join(t.text for t in speech),
            )
        except stage_errors() as e:
            notes.append(f"caption failed: {e}")
            log.warning("%s clip %d: caption failed: %s", clip.source.path, clip.index, e)
    timings["caption_s"] = time.perf_counter() - t0
    return ClipObservations(
        clip,
        tuple(speech),
        tuple(faces),
        tuple(notes),
        timings,
        tuple(frame_obs),
        caption,
        language,
        tuple(timeline),
    )


def observe_screen_clip(sc: ScreenClip, p: Perceivers) -> ClipObservations:
    """One clip of screenshots or photos, and of the sound captured beside them: every readable
    image is a frame at its capture time.
    Screenshots are read by OCR in full (no text gate), with their app and window from the sidecar;
    where the capture read the apps' accessibility trees (``Screenshot.screen_text``), their lines
    are taken as they are and OCR reads only the rest of the screen (``read_beside``); photos (a
    clip of photos only) as video frames are, OCR only where text covers enough of the picture,
    with their camera and place. Unreadable images are skipped with a note, but a photo
    whose pixels are broken keeps what its EXIF says (a frame without pixels: when, where, with
    what). Captured sound is heard stream by stream (``_two_streams``), each piece at its place in
    the clip; an unreadable piece is skipped with a note. ``MediaError`` when nothing of the clip
    can be read."""
    t0 = time.perf_counter()
    frames, times, notes = [], [], []
    trees: list[TreeText | None] = []  # what the accessibility trees said of each frame
    shot_at: dict[float, Screenshot] = {}
    unreadable: list[FrameObservation] = []  # photos known only by their EXIF

    def at(shot: Screenshot) -> float:
        return min(max(shot.captured_at.timestamp() - sc.clip.start_ts, 0.0), sc.clip.duration_s)

    for shot in sc.shots:
        try:
            frame = read_image(shot.path)
        except MediaError as e:
            if shot.photo and (shot.place is not None or shot.camera):
                notes.append(f"photo's pixels unreadable, its time and place kept: {e}")
                unreadable.append(
                    FrameObservation(
                        at(shot), source_id=str(shot.path), camera=shot.camera, place=shot.place
                    )
                )
            else:
                notes.append(f"{'photo' if shot.photo else 'screenshot'} skipped: {e}")
            continue
        tree = None
        if shot.screen_text is not None:  # its boxes in the pixels analysed: downscaled here
            frame, scale = limit_size(frame, p.max_frame_side)
            tree = tree_text(shot.screen_text.lines, shot.screen_text.paint, frame.shape, scale)
        frames.append(frame)
        trees.append(tree)
        times.append(at(shot))
        shot_at[times[-1]] = shot
    sounds = _sounds(sc, notes)
    if not frames and not unreadable and not sounds:
        what = f"{len(sc.shots)} picture(s)" + (
            f" and {len(sc.audio)} sound file(s)" if sc.audio else ""
        )
        raise MediaError(
            sc.clip.source.path,
            f"none of the {what} of this clip could be read ({'; '.join(notes)})",
        )
    timings = {"decode_s": time.perf_counter() - t0}
    if not frames and not sounds:
        return ClipObservations(sc.clip, (), (), tuple(notes), timings, tuple(unreadable))
    if sc.shots and all(s.photo for s in sc.shots):  # holiday pictures: no OCR unless there is text
        seen = replace(p, ocr_every_s=0.0, duplicate_max_diff=0.0)
    else:  # the capture daemon keeps a frame for a typed word, a change whole-frame dedup calls a repeat
        seen = replace(
            p,
            ocr_every_s=0.0,
            ocr_min_text_fraction=0.0,
            duplicate_max_diff=0.0,
            ocr_last_of_edits=True,
        )
    obs = observe_media(
        sc.clip,
        ClipMedia(None, AUDIO_RATE, tuple(frames), tuple(times)),
        seen,
        notes,
        timings,
        listen=partial(_two_streams, sc.clip, sounds, seen) if sounds else None,
        trees=trees,
    )
    described = []
    for f in obs.frames:
        taken = shot_at.get(f.frame_time_s)
        if taken is not None:
            f = replace(
                f,
                app=taken.app,
                window=taken.window,
                camera=taken.camera,
                place=taken.place,
                input=taken.input,
                url=taken.screen_text.url if taken.screen_text is not None else "",
            )
        described.append(f)
    return replace(obs, frames=tuple(sorted(described + unreadable, key=lambda f: f.frame_time_s)))


def _sounds(sc: ScreenClip, notes: list[str]) -> dict[str, np.ndarray]:
    """Each stream's sound over the whole clip (16 kHz mono; silence where nothing was stored),
    its pieces placed at their start; a piece that cannot be read is skipped with a note."""
    n = int(round(sc.clip.duration_s * AUDIO_RATE))
    out: dict[str, np.ndarray] = {}
    for piece in sc.audio:
        try:
            samples = read_audio_piece(piece)
        except MediaError as e:
            notes.append(f"sound skipped: {e}")
            continue
        samples = samples[: int(round(piece.duration_s * AUDIO_RATE))]  # what the sidecar covers
        at = int(round((piece.start.timestamp() - sc.clip.start_ts) * AUDIO_RATE))
        if at < 0:
            samples, at = samples[-at:], 0
        samples = samples[: max(n - at, 0)]
        track = out.setdefault(piece.stream, np.zeros(n, dtype=np.float32))
        track[at : at + len(samples)] = samples
    return out


def _two_streams(
    clip: Clip,
    sounds: dict[str, np.ndarray],
    p: Perceivers,
    notes: list[str],
    timings: dict[str, float],
) -> Heard:
    """The captured streams heard one by one (``mic``, ``out``), their speakers told apart by the
    stream's letter and each turn marked with its channel; a sound heard on both is kept once
    (``perception.speech.two_streams``). The language is the one of the stream that spoke most."""
    heard: dict[str, tuple[list[SpeechTurn], list[SpeakerSegment], np.ndarray]] = {}
    languages: dict[str, tuple[float, str]] = {}
    for channel in sorted(sounds, key=lambda c: (c != "mic", c)):
        spent: dict[str, float] = {}
        turns, language, timeline = _speech(
            clip, ClipMedia(sounds[channel], AUDIO_RATE, (), ()), p, notes, spent
        )
        for key, seconds in spent.items():
            timings[key] = timings.get(key, 0.0) + seconds
        turns, timeline = on_channel(turns, timeline, channel, clip.clip_id)
        heard[channel] = (turns, timeline, sounds[channel])
        languages[channel] = (sum(t.end_s - t.start_s for t in turns), language)
    language = max(languages.values())[1] if languages else ""
    if "mic" in heard and "out" in heard:
        once = heard_once(heard["mic"], heard["out"], AUDIO_RATE)
        if once.twice:
            notes.append(f"{once.twice} stretch(es) of speech heard on both streams kept once")
        return once.turns, language, once.timeline
    turns, timeline, _ = next(iter(heard.values()), ([], [], None))
    return turns, language, timeline
