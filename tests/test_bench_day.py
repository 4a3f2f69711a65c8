"""``mnemo bench day``: the day's make-up, the noise that stands for a quiet room, the gates the
ungated run turns off, and the figures (the bench itself runs by hand: minutes)."""

import re
import threading
from typing import cast

import numpy as np
import pytest

from bench import day
from bench.day_media import (
    BLOCK,
    SAMPLE_RATE,
    WORDS,
    room_noise,
    schedule,
    speech_share,
    typed_words,
)


@pytest.mark.slow  # real media (the pyannote call, OpenCV's samples)
def test_the_day_is_about_a_quarter_speech_in_the_stated_scenes(pyannote_dir):
    scenes = schedule()
    assert len(scenes) == 120  # an hour of 30 s clips
    assert {s: scenes.count(s) for s in BLOCK} == {
        "call": 40,
        "desktop": 30,
        "still": 20,
        "film": 10,
        "noise": 20,
    }
    assert 0.22 <= speech_share() <= 0.28


@pytest.mark.slow  # the real voice activity model
def test_room_noise_is_quiet_and_no_speech_to_voice_activity_detection():
    from perception.speech.diarize import speech_regions

    noise = room_noise(30.0)
    rms_db = 20 * np.log10(np.sqrt(np.mean(noise.astype(np.float64) ** 2)))
    assert -52 <= rms_db <= -47
    assert speech_regions(noise, SAMPLE_RATE) == []
    assert np.array_equal(noise, room_noise(30.0))  # seeded: the same recording every build


class Counting:
    """The real face analyzer, counting the frames it is asked to analyse."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0

    def analyze(self, frame):
        self.calls += 1
        return self.inner.analyze(frame)


@pytest.mark.slow  # the real perception models on real audio
def test_the_ungated_perceivers_analyse_every_frame_and_decode_all_audio(perceivers, sample_wav):
    from dataclasses import replace

    from mnemo.bench_day import ungated
    from perception.observe import observe_media
    from perception.records import Clip, ClipMedia
    from perception.sources.media import probe

    assert perceivers.asr.vad_filter
    bare = ungated(perceivers)
    assert not bare.asr.vad_filter and bare.asr.model_name == perceivers.asr.model_name
    assert (bare.duplicate_max_diff, bare.ocr_every_s, bare.ocr_min_text_fraction) == (
        0.0,
        0.0,
        0.0,
    )

    frame = np.full((240, 320, 3), 90, dtype=np.uint8)
    clip = Clip("c0", probe(sample_wav), 0, 0.0, 4.0)
    media = ClipMedia(None, SAMPLE_RATE, (frame,) * 4, (0.0, 1.0, 2.0, 3.0))
    for p, analysed in ((perceivers, 1), (bare, 4)):
        counting = Counting(p.faces)
        obs = observe_media(clip, media, replace(p, faces=counting))
        assert counting.calls == analysed
        assert len(obs.frames) == analysed

    silence = np.zeros(5 * SAMPLE_RATE, dtype=np.float32)
    silence[::400] = 1e-4  # not digital zero: the decoder gets something to hear
    assert perceivers.asr.transcribe(silence, SAMPLE_RATE)[0] == []  # the gate: nothing decoded


def _obs(transcript: str = "", screen: str = "", faces_at: tuple[float, ...] = ()):
    from perception.records import (
        Clip,
        ClipObservations,
        FaceObservation,
        FrameObservation,
        SpeechTurn,
        TextLine,
    )

    speech = (SpeechTurn("t", transcript, 0.0, 1.0, "en"),) if transcript else ()
    frames = (
        (FrameObservation(0.0, text_lines=(TextLine(screen, (0, 0, 10, 10), 0.9),)),)
        if screen
        else ()
    )
    faces = tuple(
        FaceObservation(f"f{t}", t, (0, 0, 10, 10), 0.9, np.zeros(4, np.float32)) for t in faces_at
    )
    # no clip: the gate losses read only what was observed
    return ClipObservations(cast(Clip, None), speech, faces, frames=frames)


@pytest.mark.slow  # real media (the pyannote call, OpenCV's samples)
def test_gate_losses_compare_the_same_clips_with_and_without_gates(pyannote_dir):
    from bench.fixtures import read_stm

    reference = " ".join(text for *_, text in read_stm(pyannote_dir / "sample.stm"))
    scenes = ["call", "desktop", "noise", "still"]
    assert typed_words(scenes) == [None, WORDS[0], None, None]
    gated = [
        _obs(reference, faces_at=(0.0, 1.0)),
        _obs(screen=f"notes {WORDS[1]}"),
        _obs(),
        _obs(faces_at=(0.0,)),
    ]
    ungated = [
        _obs(reference, faces_at=(0.0, 1.0, 1.0)),
        _obs(screen=f"notes {WORDS[0]}"),
        _obs("thank you"),
        _obs(faces_at=(0.0, 2.0)),
    ]
    losses = day.gate_losses(scenes, gated, ungated)
    assert losses == {
        "calls_wer": (0.0, 0.0),
        "words_without_speech": (0, 2),
        "frames_with_faces": (3, 4),
        "typed_words_read": (0, 1),
    }


def test_the_ungated_cost_adds_each_blocks_extra_seconds():
    f = {
        "recording_s": 3600.0,
        "ingest_s": 300.0,
        "blocks": 10,
        "block_gated_s": 30.0,
        "block_ungated_s": 90.0,
        "stage_s": {"speech_s": 100.0, "faces_s": 20.0},
        "block_gated_stage_s": {"speech_s": 10.0, "faces_s": 2.0},
        "block_ungated_stage_s": {"speech_s": 50.0, "faces_s": 12.0, "ocr_s": 3.0},
    }
    day.complete(f)
    assert f["x_realtime"] == pytest.approx(12.0)
    assert f["ungated_ingest_s"] == pytest.approx(900.0)
    assert f["ungated_x_realtime"] == pytest.approx(4.0)
    assert f["ungated_stage_s"] == pytest.approx(
        {"speech_s": 500.0, "faces_s": 120.0, "ocr_s": 30.0}
    )
    f |= {
        "recording": "day.mp4",
        "clips": 120,
        "cpus": 2,
        "scenes": {"call": 40},
        "speech_share": 0.25,
        "peak_rss_mb": 1400.0,
        "rss_start_mb": 900.0,
        "writer_s": 14.0,
        "block_scenes": ["call"],
        "writer_parts_s": {"memorize_s": 1.0, "embed_s": 12.0, "commit_s": 1.0},
        "losses": {},
    }
    assert day.summary(f)["writer_parts_s"] == {"memorize_s": 1.0, "embed_s": 12.0, "commit_s": 1.0}
    assert re.search(
        r"^writer +14\.0 +\(its own thread: memorize 1\.0, embed 12\.0, commit 1\.0\)$",
        day.format_report(f),
        re.MULTILINE,
    )


class CountingReader:
    """The real text reader, counting full reads."""

    def __init__(self, inner) -> None:
        self.inner, self.reads = inner, 0

    def detect(self, frame):
        return self.inner.detect(frame)

    def read(self, frame, boxes):
        self.reads += 1
        return self.inner.read(frame, boxes)


@pytest.mark.slow
def test_a_word_typed_on_a_still_screen_is_kept_and_read_once(perceivers, opencv_dir):
    """A still screen in a video, a word typed on it at 20 s: the frame with the word is distinct
    (it moves the 32x32 average by a fraction of a level) and the screen is read once, with the word.
    Both halves failed before: the frame was skipped as a repeat, and each distinct frame was read."""
    import cv2

    from bench.day_media import _Desktop
    from bench.speed_media import centred
    from perception.ocr.stage import read_frames
    from perception.sources.frames import distinct_frames

    screen = centred(cv2.cvtColor(cv2.imread(str(opencv_dir / "qtgui.png")), cv2.COLOR_BGR2RGB))
    desktop = _Desktop({"qtgui.png": screen})
    before, after = desktop.frame("qtgui.png", 1), desktop.frame("qtgui.png", 2)
    noisy = before.copy()
    noisy[::7, ::5] = np.clip(noisy[::7, ::5].astype(int) + 12, 0, 255).astype(
        np.uint8
    )  # codec noise
    frames = [before, noisy, before, after, after]
    keep = distinct_frames(frames)
    assert keep == [0, 3]

    reader = CountingReader(perceivers.ocr)
    texts = read_frames([frames[i] for i in keep], [0.0, 20.0], reader, 5.0, 0.01, [])
    assert reader.reads == 1 and texts[0] == ()
    assert WORDS[1] in " ".join(line.text for line in texts[1]).lower()


@pytest.mark.slow
def test_a_word_typed_in_an_encoded_desktop_clip_is_read_once(
    perceivers, opencv_dir, pyannote_dir, tmp_path
):
    """The same through H.264, as the day recording stores a desktop clip: the codec moves the thin
    lines of a still screen by up to 48 grey levels from frame to frame, more than JPEG does, and
    that must not make the screen read twice (it was, in every desktop clip of the day bench)."""
    import ffmpeg

    from bench.day_media import FPS, frames
    from bench.speed_media import encode
    from perception.ocr.stage import read_frames
    from perception.sources.frames import distinct_frames
    from perception.sources.media import decode_frames, plan_clips, probe

    silence = ffmpeg.input("anullsrc=r=16000:cl=mono", f="lavfi").audio
    (clip,) = plan_clips(
        probe(encode(tmp_path / "desktop.mp4", frames(["desktop"]), 30.0, silence, fps=FPS)), 30.0
    )
    images, times = decode_frames(clip, 1.0)
    keep = distinct_frames(list(images))
    assert keep == [0, 20]
    reader = CountingReader(perceivers.ocr)
    texts = read_frames([images[i] for i in keep], [times[i] for i in keep], reader, 5.0, 0.01, [])
    assert reader.reads == 1 and texts[0] == ()
    assert WORDS[0] in " ".join(line.text for line in texts[1]).lower()


@pytest.mark.slow
def test_a_thin_line_moved_by_the_codec_is_no_edit_but_text_drawn_elsewhere_is(
    perceivers, opencv_dir
):
    """H.264 moves a still screen's 1-pixel lines by more than 48 levels now and then (the day
    recording's later desktop clips: 8 single rows between 50 and 450, by up to 63), which made
    the changed band the whole screen and every desktop clip was read twice. A glyph spans
    several rows, a line one: only runs of changed rows count."""
    import cv2

    from bench.day_media import _Desktop
    from bench.speed_media import centred
    from perception.ocr.stage import changed_regions, read_frames

    screen = centred(cv2.cvtColor(cv2.imread(str(opencv_dir / "qtgui.png")), cv2.COLOR_BGR2RGB))
    desktop = _Desktop({"qtgui.png": screen})
    before, after = desktop.frame("qtgui.png", 1), desktop.frame("qtgui.png", 2)
    noisy = before.copy()
    for row in (50, 98, 226, 258, 365, 450):
        noisy[row, 100:500] = np.clip(noisy[row, 100:500].astype(int) + 63, 0, 255).astype(np.uint8)

    def grey(frame):
        return cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)

    regions = changed_regions(grey(noisy), grey(after))
    height = before.shape[0]
    assert regions  # the note line, where the word was typed, and only there
    assert all(y0 >= height - 70 - 8 and y1 <= height for _, y0, _, y1 in regions), regions
    reader = CountingReader(perceivers.ocr)
    texts = read_frames([noisy, after], [0.0, 20.0], reader, 5.0, 0.01, [])
    assert reader.reads == 1 and texts[0] == ()
    assert WORDS[1] in " ".join(line.text for line in texts[1]).lower()

    edited = after.copy()  # text drawn high on the screen is an edit there
    cv2.putText(
        edited, "invoice", (300, 120), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (20, 20, 20), 2, cv2.LINE_AA
    )
    assert min(y0 for _, y0, _, _ in changed_regions(grey(noisy), grey(edited))) <= 100


@pytest.mark.slow
def test_a_call_cutting_between_speakers_has_each_picture_analysed_once(
    perceivers, opencv_dir, pyannote_dir
):
    """The day's call clip, as its pictures are shown: the view cuts between Diane, Sheila and both
    8 times in 30 s, 3 pictures in all. Each picture's faces and text are found once; a frame that
    shows a picture again gets what its first showing had, as if it had been analysed itself."""
    from bench.speed_media import Scenes
    from perception.faces.stage import detect_faces
    from perception.ocr.stage import read_frames
    from perception.sources.frames import distinct_frames, returning_views

    pictures = Scenes()
    frames = [pictures.frame("call", float(t)) for t in range(30)]
    times = [float(t) for t in range(30)]
    keep = distinct_frames(frames)
    returns = returning_views([frames[i] for i in keep])
    assert len(keep) == 8 and len(keep) - len(returns) == 3
    assert all(np.array_equal(frames[keep[a]], frames[keep[b]]) for a, b in returns.items())

    once, every = Counting(perceivers.faces), Counting(perceivers.faces)
    faces, _ = detect_faces(
        "c",
        frames,
        times,
        once,
        perceivers.face_policy,
        analyzed=keep,
        returns={keep[a]: keep[b] for a, b in returns.items()},
    )
    reference, _ = detect_faces("c", frames, times, every, perceivers.face_policy, analyzed=keep)
    assert (once.calls, every.calls) == (3, 8)
    assert [(f.frame_time_s, f.box_xywh, f.person) for f in faces] == [
        (f.frame_time_s, f.box_xywh, f.person) for f in reference
    ]
    returned = {times[keep[a]] for a in returns}
    assert returned <= {f.frame_time_s for f in faces}  # the pictures shown again have their faces

    reader, plain = CountingReader(perceivers.ocr), CountingReader(perceivers.ocr)
    distinct, at = [frames[i] for i in keep], [times[i] for i in keep]
    texts = read_frames(distinct, at, reader, 0.0, 0.0, [], returns=returns)
    assert texts == read_frames(distinct, at, plain, 0.0, 0.0, [])
    assert (reader.reads, plain.reads) == (3, 8)


def test_returning_views_finds_a_picture_shown_again_and_nothing_when_off():
    from perception.sources.frames import returning_views

    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 255, (90, 160, 3), dtype=np.uint8) for _ in range(2))
    noisy = np.clip(a.astype(int) + rng.integers(-2, 3, a.shape), 0, 255).astype(np.uint8)
    typed = a.copy()
    typed[40:52, 20:90] = 0  # a word on the same screen: a different picture
    assert returning_views([a, b, noisy, typed, b]) == {2: 0, 4: 1}
    assert returning_views([a, b, noisy], max_mean_diff=0.0) == {}


@pytest.mark.slow  # real media (the pyannote call, OpenCV's samples)
def test_each_clip_has_its_scene_for_30_s_and_a_desktop_clip_types_one_word_at_20_s(
    opencv_dir, pyannote_dir
):
    from bench.day_media import FPS, TYPE_AT_S, frames

    scenes = ["desktop", "call", "desktop", "still"]
    shown = list(frames(scenes))
    per_clip = int(30 * FPS)
    assert (
        len(shown) == len(scenes) * per_clip
    )  # a frame a tick: the picture keeps time with the sound
    first, second = shown[:per_clip], shown[2 * per_clip : 3 * per_clip]
    at = int(TYPE_AT_S * FPS)
    assert all(np.array_equal(f, first[0]) for f in first[:at]) and all(
        np.array_equal(f, first[at]) for f in first[at:]
    )
    rows = np.flatnonzero((first[0] != first[at]).any(axis=(1, 2)))
    assert (
        rows.min() >= first[0].shape[0] - 70
    )  # the word goes into the note line at the foot, nothing else moves
    assert np.array_equal(
        second[0], first[at]
    )  # the next desktop clip starts with the words typed so far
    assert not np.array_equal(shown[per_clip], first[0]) and np.array_equal(
        shown[-1], shown[3 * per_clip]
    )


class Threaded(Counting):
    """The real face analyzer, noting the thread each frame is analysed on."""

    def __init__(self, inner) -> None:
        super().__init__(inner)
        self.threads: set[str] = set()

    def analyze(self, frame):
        self.threads.add(threading.current_thread().name)
        return super().analyze(frame)


@pytest.mark.slow
def test_faces_beside_speech_and_text_give_what_one_stage_after_another_gives(
    perceivers, sample_wav
):
    """With more than one CPU the faces of a clip are found on a thread of their own while speech
    and text run: the observations are those of the stages run one after another."""
    from dataclasses import replace

    import soundfile as sf

    from bench.speed_media import Scenes
    from factories import media_clip
    from perception.observe import observe_media
    from perception.records import ClipMedia

    audio, sr = sf.read(sample_wav, dtype="float32")
    pictures = Scenes()
    frames = tuple(pictures.frame("call", float(t)) for t in range(30))
    media = ClipMedia(audio[: 30 * sr], sr, frames, tuple(float(t) for t in range(30)))
    clip = media_clip()

    def observe(beside: bool):
        faces = Threaded(perceivers.faces)
        obs = observe_media(clip, media, replace(perceivers, faces=faces, faces_beside=beside))
        return obs, faces.threads

    (beside, threads), (in_turn, own) = observe(True), observe(False)
    assert {t.split("_")[0] for t in threads} == {
        "mnemo-faces"
    } and threading.current_thread().name in own
    assert beside.faces and beside.speech and beside.frames
    assert [(f.frame_time_s, f.box_xywh, f.person) for f in beside.faces] == [
        (f.frame_time_s, f.box_xywh, f.person) for f in in_turn.faces
    ]
    assert [(t.text, t.start_s, t.speaker) for t in beside.speech] == [
        (t.text, t.start_s, t.speaker) for t in in_turn.speech
    ]
    assert [(f.frame_time_s, f.text_lines) for f in beside.frames] == [
        (f.frame_time_s, f.text_lines) for f in in_turn.frames
    ]
    assert beside.notes == in_turn.notes and "faces_s" in beside.timings_s
