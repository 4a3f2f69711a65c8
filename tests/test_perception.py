"""Perception backends and stages on real images and media, including bad input."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import skimage.data

from factories import media_clip
from perception.errors import MediaError
from perception.faces.stage import FacePolicy, detect_faces
from perception.observe import observe_media
from perception.ocr.spacing import restore_spacing
from perception.records import ClipMedia
from perception.sources.frames import distinct_frames, read_image, to_rgb8


def _media(frames=(), audio=None, times=None) -> ClipMedia:
    frames = tuple(frames)
    return ClipMedia(
        audio, 16000, frames, tuple(times if times is not None else range(len(frames)))
    )


# --- colour modes, reading, duplicates (no models) ---------------------------------------------


@pytest.mark.parametrize(
    "image",
    [
        np.full((20, 30), 128, np.uint8),  # grayscale
        np.full((20, 30, 1), 128, np.uint8),  # grayscale with a channel axis
        np.full((20, 30), 128 * 257, np.uint16),  # 16-bit grayscale
        np.full((20, 30, 3), 128 * 257, np.uint16),  # 16-bit RGB
        np.dstack(
            [np.full((20, 30, 3), 128, np.uint8), np.full((20, 30), 255, np.uint8)]
        ),  # opaque RGBA
        np.full((20, 30, 3), 128 / 255, np.float32),  # float in [0, 1]
    ],
)
def test_every_colour_mode_becomes_rgb8(image):
    out = to_rgb8(image)
    assert out.shape == (20, 30, 3) and out.dtype == np.uint8
    assert np.all(np.abs(out.astype(int) - 128) <= 1)


def test_transparent_pixels_read_as_white_and_non_images_are_refused():
    rgba = np.zeros((4, 4, 4), np.uint8)  # fully transparent black
    assert np.all(to_rgb8(rgba) == 255)
    for bad in (
        np.zeros((4, 4, 2), np.uint8),
        np.zeros((0, 4, 3), np.uint8),
        np.zeros(5, np.uint8),
    ):
        with pytest.raises(ValueError, match="not an image"):
            to_rgb8(bad)


def test_image_files_in_odd_modes_are_read_and_broken_ones_named(tmp_path):
    cv2.imwrite(str(tmp_path / "gray16.png"), np.full((8, 8), 40000, np.uint16))
    cv2.imwrite(
        str(tmp_path / "bgra.png"),
        np.dstack(
            [np.zeros((8, 8, 3), np.uint8) + [255, 0, 0], np.full((8, 8), 255, np.uint8)]
        ).astype(np.uint8),
    )
    cv2.imwrite(str(tmp_path / "bgr16.png"), np.zeros((8, 8, 3), np.uint16) + [65535, 0, 0])
    assert read_image(tmp_path / "gray16.png").shape == (8, 8, 3)
    assert tuple(read_image(tmp_path / "bgr16.png")[0, 0]) == (0, 0, 255)
    assert tuple(read_image(tmp_path / "bgra.png")[0, 0]) == (
        0,
        0,
        255,
    )  # BGR on disk, RGB in memory
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(MediaError, match="broken.png"):
        read_image(tmp_path / "broken.png")
    with pytest.raises(MediaError, match="missing.png"):
        read_image(tmp_path / "missing.png")


def test_near_duplicate_frames_are_skipped():
    a = np.full((48, 64, 3), 100, np.uint8)
    b = a.copy()
    b[0, 0] = 110  # sensor noise: same picture
    c = np.full((48, 64, 3), 200, np.uint8)
    assert distinct_frames([a, b, c, c]) == [0, 2]
    assert distinct_frames([a, b, c, c], max_mean_diff=0) == [0, 1, 2, 3]


def test_word_spacing_is_restored_only_where_it_is_safe():
    assert (
        restore_spacing("AtrackbarcreatedwithaNULLwindow")
        == "A track bar created with a NULL window"
    )
    assert (
        restore_spacing("nameisattached tothecontrolpanel.")
        == "name is attached to the control panel."
    )
    assert restore_spacing("Region-basedsegmentation") == "Region-based segmentation"
    for keep in (
        "libmixed_sample.so",
        "CTRL+arrowLEFT",
        "Refactor",
        "x86-64",
        "#include<opencv2/core/core.hpp>",
    ):
        assert restore_spacing(keep) == keep


# --- real models ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_efficientnet_tags_a_real_photo(perceivers):
    ((tags, emb),) = perceivers.image.analyze([skimage.data.chelsea()])
    assert tags and any("cat" in label for label, _ in tags[:3])
    assert emb.shape == (1280,) and abs(float(np.linalg.norm(emb)) - 1) < 1e-4


@pytest.mark.slow
def test_open_clip_code_path_with_a_random_small_model_and_a_local_checkpoint(tmp_path):
    torch = pytest.importorskip("torch")
    from perception.vision.image_openclip import OpenClipImages

    frames = [skimage.data.chelsea(), skimage.data.coffee()]
    random_model = OpenClipImages(
        "RN50", random_init=True, labels=["cat", "cup of coffee", "rocket"]
    )
    (tags, emb), _ = random_model.analyze(frames)
    assert len(tags) == 3 and emb.shape == (random_model.dim,)
    assert random_model.embed_text(["a cat"]).shape == (1, random_model.dim)
    # the local-file path: the same weights saved and loaded back give the same embeddings
    ckpt = tmp_path / "rn50.pt"
    torch.save(random_model._model.state_dict(), ckpt)
    loaded = OpenClipImages("RN50", checkpoint=str(ckpt), labels=["cat", "cup of coffee", "rocket"])
    assert np.allclose(loaded.embed_images(frames), random_model.embed_images(frames), atol=1e-4)
    with pytest.raises(ValueError, match="checkpoint"):
        OpenClipImages("RN50")


@pytest.mark.slow
def test_ocr_reads_a_real_scanned_page_in_grayscale(perceivers):
    lines = perceivers.ocr.read(to_rgb8(skimage.data.page()))
    text = " ".join(ln.text for ln in lines)
    assert "Region-based segmentation" in text
    assert "markers of the coins" in text
    for ln in lines:
        x0, y0, x1, y1 = ln.box_xyxy
        assert 0 <= x0 < x1 <= 384 and 0 <= y0 < y1 <= 191 and 0.5 <= ln.confidence <= 1


@pytest.mark.slow
@pytest.mark.parametrize("min_side, network_input", [(0, (544, 960)), (736, (736, 1312))])
def test_ocr_detects_on_the_frame_at_its_own_size_unless_told_to_upscale(min_side, network_input):
    from perception.ocr.ocr_rapidocr import RapidOCRReader

    reader = RapidOCRReader(threads=1, detect_min_side=min_side)
    detector = reader._load().text_det
    seen = []
    infer = detector.session
    detector.session = lambda batch: seen.append(batch.shape[2:]) or infer(batch)
    page = cv2.resize(to_rgb8(skimage.data.page()), (960, 540))  # a 960x540 video frame of a page
    lines = reader.read(page)
    assert seen == [network_input]  # one detection pass; DBNet needs sides in multiples of 32
    assert "Region-based segmentation" in " ".join(ln.text for ln in lines)
    with pytest.raises(ValueError, match="detect_min_side"):
        RapidOCRReader(detect_min_side=-1)


@pytest.mark.slow
def test_blurred_faces_are_dropped_and_two_faces_of_one_frame_stay_two_people(perceivers):
    face = skimage.data.astronaut()[40:320, 100:380]  # one real face, 280x280
    sharp = np.hstack([face, face])  # the same face twice in one frame
    faces, dropped = detect_faces("c", [sharp], [0.0], perceivers.faces, FacePolicy())
    assert len(faces) == 2 and dropped == 0
    assert faces[0].person != faces[1].person  # one frame: two people, however alike
    blurred = cv2.GaussianBlur(face, (0, 0), 6)
    faces, dropped = detect_faces("c", [blurred], [0.0], perceivers.faces, FacePolicy())
    assert faces == []


@pytest.mark.slow
def test_a_face_is_looked_for_again_only_where_one_fits_in_what_changed(perceivers):
    """A screen with no face, then a line of words typed on it, then a face opened in a corner:
    the typed line is too thin for a face, so that frame is not looked at; the face is found. A
    face that was there is looked for in every frame (it may have gone)."""
    from perception.faces.stage import LastFaceless, no_room_for_a_face, smallest_face

    class Counting:
        def __init__(self, inner):
            self.inner, self.looked = inner, 0

        def analyze(self, frame):
            self.looked += 1
            return self.inner.analyze(frame)

    screen = np.full((1080, 1920, 3), 230, np.uint8)
    typed = screen.copy()
    cv2.putText(typed, "walnut chestnut hazel", (60, 500), 0, 1.0, (0, 0, 0), 2)
    opened = typed.copy()
    opened[560:1072, 1400:1912] = skimage.data.astronaut()  # its face 109 px wide
    side = smallest_face(perceivers.faces, screen.shape, FacePolicy())
    assert side == 60  # half dlib's 80 px window on the screen scaled to 640 px, upsampled once
    assert no_room_for_a_face(screen, typed, side)
    assert not no_room_for_a_face(typed, opened, side)
    assert not no_room_for_a_face(screen, typed[:540], side)  # another size: everything changed
    turned = typed.copy()  # a page of text turned in a window whose tree speaks for it
    turned[100:500, 100:900] = 40
    tree = np.zeros(screen.shape[:2], bool)
    tree[80:520, 80:920] = True
    assert no_room_for_a_face(typed, turned, side, tree)
    assert not no_room_for_a_face(typed, turned, side)
    assert not no_room_for_a_face(typed, opened, side, tree)  # the face is outside the text
    counting = Counting(perceivers.faces)
    faces, _ = detect_faces(
        "c", [screen, typed, opened, opened], [0.0, 2.0, 4.0, 6.0], counting, FacePolicy()
    )
    assert counting.looked == 3  # the first, the face opened, and the frame after it
    assert {f.frame_time_s for f in faces} == {4.0, 6.0}
    counting.looked, last = 0, LastFaceless()  # a watcher's clips, one after another
    detect_faces("c1", [screen], [0.0], counting, FacePolicy(), last=last)
    assert counting.looked == 1 and last.frame is screen
    detect_faces("c2", [typed], [0.0], counting, FacePolicy(), last=last)
    assert counting.looked == 1  # the next clip's first frame: a line typed
    faces, _ = detect_faces("c3", [opened], [0.0], counting, FacePolicy(), last=last)
    assert counting.looked == 2 and faces and last.frame is None


@pytest.mark.slow
def test_one_face_across_frames_is_one_clip_local_person(perceivers):
    face = skimage.data.astronaut()
    shifted = np.roll(face, 12, axis=1)
    faces, _ = detect_faces(
        "c", [face, shifted, face], [0.0, 1.0, 2.0], perceivers.faces, FacePolicy()
    )
    assert len(faces) == 3 and len({f.person for f in faces}) == 1


# --- bad input through the whole observer: no crash, an empty or partial record, a reason ---------


@pytest.mark.slow
def test_silent_audio_gives_no_speech(perceivers):
    obs = observe_media(media_clip(), _media(audio=np.zeros(30 * 16000, np.float32)), perceivers)
    assert obs.speech == () and obs.speakers == () and obs.language == ""
    assert set(obs.timings_s) >= {"speech_s", "faces_s", "image_s", "ocr_s", "caption_s"}


@pytest.mark.slow
def test_audio_shorter_than_a_second_does_not_crash(perceivers, sample_wav):
    import soundfile as sf

    audio, _ = sf.read(sample_wav, dtype="float32")
    short = audio[int(6.7 * 16000) : int(7.4 * 16000)]  # 0.7 s: Diane's first "Hello?"
    obs = observe_media(media_clip(0.7), _media(audio=short), perceivers)
    assert obs.speakers == ()  # too short to diarize: turns without a speaker label are fine
    assert all(t.speaker == "" for t in obs.speech)


@pytest.mark.slow
def test_video_without_faces_and_odd_frames(perceivers):
    blank = np.full((360, 640, 3), 30, np.uint8)
    gray16 = np.full((360, 640), 20000, np.uint16)
    rgba = np.dstack([np.full((360, 640, 3), 90, np.uint8), np.full((360, 640), 255, np.uint8)])
    corrupt = np.zeros((360, 640, 2), np.uint8)  # a frame a broken decoder might hand over
    obs = observe_media(
        media_clip(), _media([blank, gray16, rgba, corrupt], times=[0, 1, 2, 3]), perceivers
    )
    assert obs.faces == ()
    assert any("frame at 3.0 s skipped" in n for n in obs.notes)
    assert [f.frame_time_s for f in obs.frames] == [
        0,
        1,
        2,
    ]  # the gray frame differs from the blank one


@pytest.mark.slow
def test_a_4k_frame_is_downscaled_and_analysed(perceivers):
    frame = cv2.resize(skimage.data.astronaut(), (3840, 3840))
    obs = observe_media(media_clip(), _media([frame], times=[0.0]), perceivers)
    (face,) = obs.faces
    assert max(face.box_xywh[2:]) < 1920  # boxes are in the downscaled frame
    assert obs.frames[0].embedding is not None


@pytest.mark.slow  # the real perception models
@pytest.mark.parametrize("beside", [False, True])
def test_an_opencv_error_in_a_stage_is_a_note_not_an_aborted_ingest(perceivers, beside):
    """cv2.error derives from Exception only; a backend that raises it (a frame OpenCV cannot
    handle) must leave a note like any stage failure, also on the faces' own thread."""
    from dataclasses import replace

    class BrokenFaces:
        dim = 128

        def analyze(self, frame_rgb):
            return cv2.resize(np.zeros((0, 0), np.uint8), (0, 0))  # raises cv2.error

    broken = replace(perceivers, faces=BrokenFaces(), image=None, ocr=None, faces_beside=beside)
    obs = observe_media(
        media_clip(), _media([np.full((120, 160, 3), 60, np.uint8)], times=[0.0]), broken
    )
    assert obs.faces == () and any(n.startswith("faces failed") for n in obs.notes)
    assert len(obs.frames) == 1  # the other stages ran
