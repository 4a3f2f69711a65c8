"""Folders of screenshots: clips by capture time, OCR as resource memories, apps from sidecars."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import replace

import numpy as np
import pytest

from perception.sources.media import file_sha256
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


def _capture(folder, src, name, when):
    """``src`` copied into ``folder`` as ``name``, captured at ``when`` (its sidecar)."""
    folder.mkdir(exist_ok=True)
    shutil.copyfile(src, folder / name)
    (folder / f"{name}.json").write_text(json.dumps({"captured_at": when, "app": "Viewer"}))
    return folder / name


def _old_id(*images):
    """The id an earlier version gave a clip of these images: their contents only."""
    digest = hashlib.sha256()
    for image in images:
        digest.update(file_sha256(image).encode())
    return f"screen-{digest.hexdigest()[:20]}"


def _as_before_issue_68(monkeypatch):
    """Ingest plans screenshot clips under their old content-only ids, as the earlier version did."""
    import pipeline.ingest

    def old_plan(*args, **kwargs):
        return [
            replace(sc, clip=replace(sc.clip, clip_id=_old_id(*(s.path for s in sc.shots))))
            for sc in plan_screen_clips(*args, **kwargs)
        ]

    monkeypatch.setattr(pipeline.ingest, "plan_screen_clips", old_plan)


def test_the_same_picture_at_another_time_is_another_clip(
    tmp_path, opencv_dir, hash_store, perceivers, policies
):
    """An unchanged screen an hour later, and the same screenshot copied into another day's folder:
    the same bytes, other clips."""
    src = opencv_dir / "qtgui.png"
    day = tmp_path / "day1"
    _capture(day, src, "at9.png", "2026-11-20T09:00:20+00:00")
    _capture(day, src, "at10.png", "2026-11-20T10:00:20+00:00")
    clips = plan_screen_clips(day, 30.0)
    assert len(clips) == 2 and clips[0].clip.source.sha256 == clips[1].clip.source.sha256
    assert clips[0].clip.clip_id != clips[1].clip.clip_id
    report = ingest([str(day)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert report.clips_new == 2
    copied = _capture(tmp_path / "day2", day / "at9.png", "at9.png", "2026-11-21T09:00:20+00:00")
    report = ingest(
        [str(copied.parent)], hash_store, perceivers, policies, progress=lambda _m: None
    )
    assert report.clips_new == 1 and hash_store.count()["clips"] == 3


def test_reingesting_a_folder_with_a_repeated_picture_adds_nothing(
    tmp_path, opencv_dir, hash_store, perceivers, policies
):
    folder = tmp_path / "screens"
    _capture(folder, opencv_dir / "qtgui.png", "at9.png", "2026-11-20T09:00:20+00:00")
    _capture(folder, opencv_dir / "qtgui.png", "at10.png", "2026-11-20T10:00:20+00:00")
    first = ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert first.clips_new == 2
    lines = []
    again = ingest([str(folder)], hash_store, perceivers, policies, progress=lines.append)
    assert again.clips_new == 0 and again.clips_skipped == 2
    assert sum("already stored, skipped" in line for line in lines) == 2
    assert hash_store.count()["clips"] == 2


def test_clips_stored_under_the_old_id_are_not_stored_again(
    tmp_path, opencv_dir, hash_store, perceivers, policies, monkeypatch
):
    """A store an earlier version wrote holds screenshot clips under their content-only id: a
    re-ingest knows them (same slot), and still takes the same picture at another time."""
    folder = tmp_path / "screens"
    at9 = _capture(folder, opencv_dir / "qtgui.png", "at9.png", "2026-11-20T09:00:20+00:00")
    with monkeypatch.context() as m:
        _as_before_issue_68(m)
        old = ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert old.clips_new == 1 and hash_store.has_clip(_old_id(at9))
    again = ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert again.clips_new == 0 and again.clips_skipped == 1
    _capture(folder, opencv_dir / "qtgui.png", "at10.png", "2026-11-20T10:00:20+00:00")
    later = ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert later.clips_new == 1 and later.clips_skipped == 1
    assert hash_store.count()["clips"] == 2


def test_a_clip_forgotten_under_the_old_id_stays_forgotten(
    tmp_path, opencv_dir, hash_store, perceivers, policies, monkeypatch
):
    """The forget log keeps the old id only, which says no time: those pictures are not stored
    again under the new id."""
    from graph.forget_store import Filter, forget
    from graph.forget_store import plan as forget_plan

    folder = tmp_path / "screens"
    at9 = _capture(folder, opencv_dir / "qtgui.png", "at9.png", "2026-11-20T09:00:20+00:00")
    with monkeypatch.context() as m:
        _as_before_issue_68(m)
        ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    f = Filter(clip_id=_old_id(at9))
    forget(hash_store, forget_plan(hash_store, f), f)
    lines = []
    again = ingest([str(folder)], hash_store, perceivers, policies, progress=lines.append)
    assert again.clips_new == 0 and any("was forgotten, skipped" in line for line in lines)
    assert hash_store.count()["clips"] == 0


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
    first of a clip always is), nor is the last edit, which differs from the first frame (no face
    in it) only by a line of words, too thin for a face; the photo's faces are found, at its time,
    and no earlier. Image tags are worked out for the last edit and the photo, and the edited
    frames take the last edit's."""
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
    assert counting.looked == 2  # the first and the photo; not the edits
    assert obs.faces and {f.frame_time_s for f in obs.faces} == {6.0}
    assert tagging.tagged == 2
    tags = [f.tags for f in obs.frames]
    assert len(tags) == 4 and tags[0] == tags[1] == tags[2] and all(tags)
