"""Folders of screenshots: clips by capture time, OCR as resource memories, apps from sidecars."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from perception.sources.screenshots import plan_screen_clips
from pipeline.ingest import ingest

pytestmark = pytest.mark.slow


@pytest.fixture
def shots(tmp_path, opencv_dir):
    folder = tmp_path / "screens"
    folder.mkdir()
    for name, when, app, window in [
        (
            "eclipse_cdt_cfg7.png",
            "2026-11-20T09:00:05+00:00",
            "Eclipse",
            "jni_part.cpp - Eclipse SDK",
        ),
        ("qtgui.png", "2026-11-20T09:00:20+00:00", "Qt Designer", "main1"),
        ("again.png", "2026-11-20T09:02:00+00:00", "Eclipse", "jni_part.cpp - Eclipse SDK"),
    ]:
        src = opencv_dir / ("eclipse_cdt_cfg7.png" if name == "again.png" else name)
        shutil.copyfile(src, folder / name)
        (folder / f"{name}.json").write_text(
            json.dumps({"captured_at": when, "app": app, "window": window})
        )
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    (folder / "broken.png.json").write_text(
        json.dumps({"captured_at": "2026-11-20T09:00:10+00:00"})
    )
    return folder


def test_screenshots_are_grouped_into_clips_by_capture_time(shots):
    clips = plan_screen_clips(shots, 30.0)
    assert [len(c.shots) for c in clips] == [3, 1]  # 09:00:00-30 (with the broken one), 09:02:00-30
    assert [s.time_origin for s in clips[0].shots] == ["sidecar"] * 3
    assert clips[0].clip.clip_id == plan_screen_clips(shots, 30.0)[0].clip.clip_id  # stable ids


def test_a_screenshot_folder_becomes_screen_text_and_app_memories(
    shots, hash_store, perceivers, policies
):
    lines = []
    report = ingest([str(shots)], hash_store, perceivers, policies, progress=lines.append)
    assert report.clips_new == 2 and report.files_ingested == [str(shots)]
    assert any("broken.png" in line and "screenshot skipped" in line for line in lines)
    resources = hash_store.memories_where("kind = 'resource'")
    assert any("CDT Build Console" in m.text for m in resources)
    assert any("control panel" in m.text for m in resources)
    apps = [
        m.text
        for m in hash_store.memories_where("kind = 'episodic'")
        if m.text.startswith("Using ")
    ]
    assert "Using Eclipse (jni_part.cpp - Eclipse SDK) from 09:00:05 to 09:00:05" in apps
    assert any(a.startswith("Using Qt Designer (main1)") for a in apps)
    clip = hash_store.get_clip(resources[0].clip_id)
    assert "CDT Build Console" in clip["screen_text"] or "control panel" in clip["screen_text"]
    hits = hash_store.search("Build Finished console", kind="resource")
    assert hits and "Build Finished" in hits[0].memory.text
    again = ingest([str(shots)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert again.clips_new == 0 and again.clips_skipped == 2  # resumable


class CountingFaces:
    """The real face analyzer, counting the frames it is asked to look at."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.looked = 0

    def analyze(self, frame):
        self.looked += 1
        return self.inner.analyze(frame)


class CountingImages:
    """The real image tagger, counting the frames it is asked to tag."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.tagged = 0

    def analyze(self, frames):
        self.tagged += len(frames)
        return self.inner.analyze(frames)


def test_faces_and_tags_on_screenshots_are_for_the_frames_read(tmp_path, opencv_dir, perceivers):
    """Four screenshots: two small edits (a word typed, twice), the second edit, and then a photo
    of people opened. The frames that a later one only edits are not looked at for faces (the
    first of a clip always is); the photo's faces are found, at its time, and no earlier. Image
    tags are worked out for the last edit and the photo, and the edited frames take the last
    edit's."""
    from dataclasses import replace

    import cv2

    from bench.fixtures import group_photo
    from perception.observe import observe_screen_clip

    screen = np.full((1080, 1920, 3), 200, np.uint8)  # a desktop with a window on it
    window = cv2.imread(str(opencv_dir / "qtgui.png"))
    screen[: window.shape[0], : window.shape[1]] = window
    photo = cv2.imread(str(group_photo()))
    frames = [screen.copy() for _ in range(4)]
    for k, frame in enumerate(frames[1:], 1):  # a word typed into the text, then another
        cv2.putText(frame, "walnut" if k == 1 else "walnut chestnut", (40, 60), 0, 0.6, (0, 0, 0))
    frames[3][-photo.shape[0] :, -photo.shape[1] :] = photo  # the photo, opened in front
    folder = tmp_path / "screens"
    folder.mkdir()
    for k, frame in enumerate(frames):
        cv2.imwrite(str(folder / f"shot{k}.png"), frame)
        (folder / f"shot{k}.png.json").write_text(
            json.dumps({"captured_at": f"2026-11-20T09:00:0{2 * k}+00:00", "app": "Viewer"})
        )
    (clip,) = plan_screen_clips(folder, 30.0)
    counting, tagging = CountingFaces(perceivers.faces), CountingImages(perceivers.image)
    obs = observe_screen_clip(clip, replace(perceivers, faces=counting, ocr=None, image=tagging))
    assert counting.looked == 3  # the first, the last of the edits, the photo; not the first edit
    assert obs.faces and {f.frame_time_s for f in obs.faces} == {6.0}
    assert tagging.tagged == 2
    tags = [f.tags for f in obs.frames]
    assert len(tags) == 4 and tags[0] == tags[1] == tags[2] and all(tags)
