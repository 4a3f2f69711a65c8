"""Screen text from the accessibility tree (issue 67): the capture sidecar's ``screen_text`` is
checked as untrusted input, its lines are taken as they are, OCR reads only the rest of the frame
(the boxes the tree speaks for painted over first), and the screen memory says where its text came
from and keeps the browser's address."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from perception.ocr.base import TextBoxes
from perception.ocr.stage import TREE_FILL, LastRead, read_beside, tree_text
from perception.records import TextLine
from perception.sources.screenshots import MAX_COORD, plan_screen_clips, scan

W, H = 1280, 800
TREE_BOX = (0, 0, W, 400)  # the accessible window's content: the tree speaks for it
PICTURE = (60, 200, 620, 330)  # a canvas inside it: OCR reads it
URL = "file:///tmp/page.html"
TREE_TEXTS = [  # what the tree holds, each drawn where it says
    ("Quarterly budget for the Lisbon office", "label", (40, 80)),
    ("Travel spend rose by 12 percent", "label", (40, 140)),
    ("password: hunter2", "entry", (700, 140)),
]
HIDDEN = (
    "Hidden draft 77",
    (700, 80),
)  # drawn in the tree's box, in no line of it: OCR must not read it
CANVAS = ("CANVAS CHART 42", (100, 280))
OCR_TEXTS = [("Meeting notes for Tuesday", (40, 560)), ("Bring the signed contract", (40, 620))]


def _put(image: np.ndarray, text: str, at: tuple[int, int], colour=(20, 20, 20)):
    """``text`` drawn at ``at`` (its baseline's start); its box x0, y0, x1, y1."""
    import cv2

    font, scale, thick = cv2.FONT_HERSHEY_SIMPLEX, 1.0, 2
    cv2.putText(image, text, at, font, scale, colour, thick, cv2.LINE_AA)
    (w, h), base = cv2.getTextSize(text, font, scale, thick)
    return at[0], at[1] - h - 4, at[0] + w, at[1] + base + 4


def _screen(dark_tree: bool = False) -> tuple[np.ndarray, list]:
    """A 1280x800 screen: an accessible window on top (dark themed or not) holding the tree's lines,
    a line no tree holds and a canvas; a window OCR reads below. Its tree lines, as the daemon
    writes them."""
    import cv2

    image = np.full((H, W, 3), 255, np.uint8)
    ink = (20, 20, 20)
    if dark_tree:
        image[TREE_BOX[1] : TREE_BOX[3], TREE_BOX[0] : TREE_BOX[2]] = 10
        ink = (235, 235, 235)
    lines = [[t, role, *_put(image, t, at, ink), 0] for t, role, at in TREE_TEXTS]
    _put(image, HIDDEN[0], HIDDEN[1], ink)
    cv2.rectangle(image, PICTURE[:2], (PICTURE[2] - 1, PICTURE[3] - 1), (230, 240, 250), -1)
    _put(image, *CANVAS)
    for t, at in OCR_TEXTS:
        _put(image, t, at)
    return image, lines


def _screen_text(lines: list) -> dict:
    return {
        "source": "atspi",
        "lines": lines,
        "paint": [[*TREE_BOX, 1], [*PICTURE, 0]],
        "windows": [
            {
                "app": "Chromium",
                "title": "Budget - Chromium",
                "url": URL,
                "nodes": 212,
                "complete": True,
                "ms": 14.2,
            }
        ],
    }


def _capture(folder, name: str, when: str, screen_text=None, dark_tree: bool = False):
    """A captured frame and its sidecar (``screen_text``: None for none, else as given; "tree":
    the frame's own tree lines and paint). The frame's tree lines."""
    import cv2

    folder.mkdir(exist_ok=True)
    image, lines = _screen(dark_tree)
    cv2.imwrite(str(folder / name), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    meta: dict[str, object] = {
        "captured_at": when,
        "app": "Chromium",
        "window": "Budget - Chromium",
    }
    if screen_text == "tree":
        meta["screen_text"] = _screen_text(lines)
    elif screen_text is not None:
        meta["screen_text"] = screen_text
    (folder / f"{name}.json").write_text(json.dumps(meta))
    return lines


def _expected_tree(lines: list) -> list[TextLine]:
    return [TextLine(t, (x0, y0, x1, y1), 1.0, "atspi") for t, _r, x0, y0, x1, y1, _w in lines]


def _in_tree_box(box) -> bool:
    """Whether a line's middle lies where the tree speaks (its box, the canvas aside)."""
    cx, cy = (box[0] + box[2]) // 2, (box[1] + box[3]) // 2

    def inside(b):
        return b[0] <= cx < b[2] and b[1] <= cy < b[3]

    return inside(TREE_BOX) and not inside(PICTURE)


# --- the sidecar, checked (no models) ----------------------------------------------------------


def test_screen_text_becomes_tree_lines_paint_and_the_address(tmp_path):
    lines = _capture(tmp_path / "cap", "a.png", "2026-11-20T09:00:05+00:00", "tree")
    (shot,) = scan(tmp_path / "cap")
    st = shot.screen_text
    assert st is not None
    assert list(st.lines) == _expected_tree(lines)
    assert st.paint == ((*TREE_BOX, True), (*PICTURE, False))
    assert st.url == URL
    assert (shot.app, shot.window) == ("Chromium", "Budget - Chromium")


def _malformed(lines: list) -> dict[str, object]:
    good = _screen_text(lines)
    return {
        "not an object": ["atspi", lines],
        "another source": {**good, "source": "ocr"},
        "lines not a list": {**good, "lines": {"0": lines[0]}},
        "a line's text a number": {**good, "lines": [[42, *lines[0][1:]], *lines[1:]]},
        "a line too short": {**good, "lines": [lines[0][:6], *lines[1:]]},
        "a coordinate a string": {**good, "lines": [[*lines[0][:2], "40", *lines[0][3:]]]},
        "a coordinate NaN": {**good, "lines": [[*lines[0][:2], float("nan"), *lines[0][3:]]]},
        "a window index out of range": {**good, "lines": [[*lines[0][:6], 3]]},
        "a window index true": {**good, "lines": [[*lines[0][:6], True]]},
        "a flag of 2": {**good, "paint": [[*TREE_BOX, 2]]},
        "a window's url a list": {**good, "windows": [{"url": [URL]}]},
        "a line over 4,000 characters": {**good, "lines": [["x" * 4001, "label", 0, 0, 9, 9, 0]]},
        "a 10 MB line": {**good, "lines": [["x" * 10_000_000, "label", 0, 0, 9, 9, 0]]},
        "too many lines": {**good, "lines": [["a", "label", 0, 0, 9, 9, 0]] * 5001},
        "too many characters": {**good, "lines": [["y" * 3000, "label", 0, 0, 9, 9, 0]] * 70},
        "too many paint boxes": {**good, "paint": [[0, 0, 9, 9, 1]] * 257},
        "all of it at once": {
            "source": "atspi",
            "lines": [[7, None, -5, 10**12, "x", 3, 0], ["z" * 10_000_000, "label", 0, 0, 1, 1, 0]],
            "paint": [[-100, -100, 10**9, 10**9, 1], "box"],
            "windows": "Chromium",
        },
    }


@pytest.mark.parametrize("case", list(_malformed([["t", "label", 0, 0, 9, 9, 0]])))
def test_a_malformed_screen_text_is_ignored_with_one_warning_naming_the_sidecar(
    tmp_path, caplog, case
):
    folder = tmp_path / "cap"
    lines = _capture(folder, "a.png", "2026-11-20T09:00:05+00:00")
    side = folder / "a.png.json"
    meta = json.loads(side.read_text())
    meta["screen_text"] = _malformed(lines)[case]
    side.write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING, logger="perception.sources.screenshots"):
        (shot,) = scan(folder)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, [r.getMessage()[:200] for r in warnings]
    message = warnings[0].getMessage()
    assert str(side) in message and "screen_text ignored" in message
    assert len(message) < 500  # says why, never the text itself
    assert shot.screen_text is None  # read by OCR as before
    assert (shot.app, shot.window) == ("Chromium", "Budget - Chromium")  # the rest of it kept


def test_boxes_out_of_range_are_clipped_and_empty_entries_dropped(tmp_path, caplog):
    st = {
        "source": "atspi",
        "lines": [
            ["Left edge", "label", -50, 10, 200, 40, 0],
            ["Beyond", "label", 10, 10, 10**400, 10**12, 0],
            ["Off screen", "label", -900, -900, -10, -10, 0],  # nothing of it left: dropped
            ["   ", "label", 0, 0, 50, 50, 0],  # nothing to say: dropped
            ["Half pixels", "label", 1.4, 2.6, 30.5, 40.0, 0],
        ],
        "paint": [[-10, -10, 99999, 500, 1], [5, 5, 5, 90, 0]],  # the second covers nothing
        "windows": [{"app": "Mousepad", "title": "notes.txt", "url": "java script:x"}],
    }
    _capture(tmp_path / "cap", "a.png", "2026-11-20T09:00:05+00:00", st)
    with caplog.at_level(logging.WARNING, logger="perception.sources.screenshots"):
        (shot,) = scan(tmp_path / "cap")
    assert not caplog.records
    got = shot.screen_text
    assert got is not None
    assert [(ln.text, ln.box_xyxy) for ln in got.lines] == [
        ("Left edge", (0, 10, 200, 40)),
        ("Beyond", (10, 10, MAX_COORD, MAX_COORD)),
        ("Half pixels", (1, 3, 30, 40)),
    ]
    assert got.paint == ((0, 0, MAX_COORD, 500, True),)
    assert got.url == ""  # an address with a space is none
    tree = tree_text(got.lines, got.paint, (H, W, 3))  # then clipped to the frame it is read on
    assert tree.lines[1].box_xyxy == (10, 10, W, H)
    assert tree.mask[:500].all() and not tree.mask[500:].any()


class _FakeReader:
    """A reader that 'reads' given lines anywhere on the frame it is given (recorded)."""

    name = "fake"
    reads_parts = False

    def __init__(self, lines: list[TextLine]) -> None:
        self.lines = lines
        self.frames: list[np.ndarray] = []

    def detect(self, frame_rgb):
        self.frames.append(frame_rgb.copy())
        return TextBoxes(1.0)

    def read(self, frame_rgb, boxes=None):
        return list(self.lines)


def test_ocr_reads_the_painted_copy_and_its_lines_where_the_tree_speaks_are_dropped():
    frame = np.full((H, W, 3), 255, np.uint8)
    tree_line = TextLine("Quarterly budget", (40, 49, 571, 91), 1.0, "atspi")
    tree = tree_text([tree_line], [(*TREE_BOX, True), (*PICTURE, False)], frame.shape)
    inside = TextLine("Quarterly budgot", (43, 57, 570, 87), 0.9)  # the tree's line, misread
    canvas = TextLine("CANVAS CHART 42", (102, 254, 416, 284), 0.95)  # in the hole painted after
    below = TextLine("Meeting notes", (39, 534, 412, 570), 0.99)
    reader = _FakeReader([inside, canvas, below])
    lines = read_beside(reader, frame, tree, LastRead(), 0.0, [])
    assert lines == (tree_line, canvas, below)
    (seen,) = reader.frames
    assert (seen[tree.mask] == TREE_FILL).all() and (seen[~tree.mask] == 255).all()
    # the tree speaks for 98 % of the frame or more: OCR is not asked at all
    whole = tree_text([tree_line], [(0, 0, W, H, True), (0, 0, 20, 20, False)], frame.shape)
    reader = _FakeReader([below])
    assert read_beside(reader, frame, whole, LastRead(), 0.0, []) == (tree_line,)
    assert reader.frames == []


def test_tree_text_goes_through_redaction_and_the_memory_says_where_it_came_from():
    from memorize.redact import Redactor
    from memorize.writer_offline import _screen_memories, screen_lines
    from perception.records import Clip, ClipObservations, FrameObservation, SourceInfo

    start = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
    clip = Clip("c1", SourceInfo("/cap", "sha", 30.0, False, True, start, "sidecar"), 0, 0.0, 30.0)
    tree = (
        TextLine("Quarterly budget", (40, 49, 571, 91), 1.0, "atspi"),
        TextLine("password: hunter2", (700, 110, 960, 150), 1.0, "atspi"),
    )
    ocr = TextLine("Meeting notes", (39, 534, 412, 570), 0.99)
    frames = (
        FrameObservation(1.0, text_lines=(*tree, ocr), url="https://bob:s3cretpass@example.com/b"),
        FrameObservation(9.0, text_lines=(ocr,)),
        FrameObservation(15.0, text_lines=tree, url=URL),
    )
    obs, counts = Redactor().observations(ClipObservations(clip, (), (), frames=frames))
    # two frames show the line; a line that is only a password's name and value is taken by the
    # credential-keyword rule, as a secret
    assert counts["secret"] == 3
    texts = sorted(m.text for m in _screen_memories(obs, UTC))
    assert texts == [
        "On screen at 09:00:01 (accessibility tree and OCR; https://bob:[secret]@example.com/b): "
        "Quarterly budget | password: [secret] | Meeting notes",
        "On screen at 09:00:09: Meeting notes",  # OCR's alone: as before the tree
        f"On screen at 09:00:15 (accessibility tree; {URL}): Quarterly budget | password: [secret]",
    ]
    memory = next(m for m in _screen_memories(obs, UTC) if "(accessibility tree;" in m.text)
    # what is said before the lines (the source, the address) is no line
    assert screen_lines(memory) == ("Quarterly budget", "password: [secret]")


# --- for real: a rendered screen, real OCR ----------------------------------------------------


class _Recording:
    """The real reader, with every frame it is asked to detect text on kept."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.reads_parts = inner, inner.name, inner.reads_parts
        self.frames: list[np.ndarray] = []

    def detect(self, frame_rgb):
        self.frames.append(frame_rgb.copy())
        return self.inner.detect(frame_rgb)

    def read(self, frame_rgb, boxes=None):
        return self.inner.read(frame_rgb, boxes)


def _observe(folder, perceivers):
    from perception.observe import observe_screen_clip

    reader = _Recording(perceivers.ocr)
    (sc,) = plan_screen_clips(folder, 30.0)
    return observe_screen_clip(sc, replace(perceivers, ocr=reader, image=None)), reader


@pytest.mark.slow
def test_the_tree_lines_are_taken_and_ocr_reads_only_the_rest(tmp_path, perceivers):
    folder = tmp_path / "cap"
    lines = _capture(folder, "a.png", "2026-11-20T09:00:05+00:00", "tree")
    obs, reader = _observe(folder, perceivers)
    (frame,) = obs.frames
    assert frame.url == URL
    tree = [ln for ln in frame.text_lines if ln.source == "atspi"]
    assert tree == _expected_tree(lines)  # exactly as the app holds them
    ocr = [ln for ln in frame.text_lines if ln.source != "atspi"]
    assert {ln.source for ln in ocr} == {"ocr"}
    read = [ln.text for ln in ocr]
    assert all(t in read for t, _at in OCR_TEXTS), read  # the window without a tree
    assert any(t.startswith("CANVAS") for t in read), read  # the canvas inside the accessible one
    assert not [ln for ln in ocr if _in_tree_box(ln.box_xyxy)]  # one source per line
    assert "Hidden" not in frame.text and "Quarterly" not in " ".join(read)
    # OCR saw the tree's box in one flat colour, and the canvas and the rest as they are
    image, _ = _screen()
    (seen,) = reader.frames
    where = np.zeros((H, W), bool)
    where[TREE_BOX[1] : TREE_BOX[3], TREE_BOX[0] : TREE_BOX[2]] = True
    where[PICTURE[1] : PICTURE[3], PICTURE[0] : PICTURE[2]] = False
    assert (seen[where] == TREE_FILL).all()
    assert np.abs(seen[~where].astype(int) - image[~where]).max() <= 1  # PNG round trip


@pytest.mark.slow
def test_a_change_under_the_tree_is_not_read_again(tmp_path, perceivers):
    folder = tmp_path / "cap"
    _capture(folder, "a.png", "2026-11-20T09:00:05+00:00", "tree")
    # the accessible window turned dark: every row of its box changed, nothing OCR reads did
    _capture(folder, "b.png", "2026-11-20T09:00:09+00:00", "tree", dark_tree=True)
    obs, reader = _observe(folder, perceivers)
    first, second = obs.frames
    assert len(reader.frames) == 1  # the second frame needed no OCR at all
    assert [ln for ln in second.text_lines if ln.source == "ocr"] == [
        ln for ln in first.text_lines if ln.source == "ocr"
    ]
    assert [ln.text for ln in second.text_lines if ln.source == "atspi"] == [
        t for t, _r, _at in TREE_TEXTS
    ]


@pytest.mark.slow
def test_a_malformed_screen_text_leaves_the_frame_to_ocr(tmp_path, perceivers, caplog):
    folder = tmp_path / "cap"
    lines = _capture(folder, "a.png", "2026-11-20T09:00:05+00:00")
    side = folder / "a.png.json"
    meta = json.loads(side.read_text())
    meta["screen_text"] = _malformed(lines)["all of it at once"]
    side.write_text(json.dumps(meta))
    with caplog.at_level(logging.WARNING, logger="perception.sources.screenshots"):
        obs, reader = _observe(folder, perceivers)
    said = [r for r in caplog.records if r.name == "perception.sources.screenshots"]
    assert len(said) == 1 and str(side) in said[0].getMessage()
    (frame,) = obs.frames
    assert {ln.source for ln in frame.text_lines} == {"ocr"} and frame.url == ""
    read = [ln.text for ln in frame.text_lines]
    assert "Quarterly budget for the Lisbon office" in read, read  # nothing lost
    assert (reader.frames[0] != TREE_FILL).any(axis=2)[: TREE_BOX[3]].any()  # nothing painted


@pytest.mark.slow
def test_the_screen_memory_says_its_source_and_keeps_the_address(
    tmp_path, hash_store, perceivers, policies
):
    from pipeline.ingest import ingest

    folder = tmp_path / "cap"
    _capture(folder, "a.png", "2026-11-20T09:00:05+00:00", "tree")
    _capture(folder, "b.png", "2026-11-20T09:01:05+00:00")  # the same screen, no tree: OCR alone
    report = ingest([str(folder)], hash_store, perceivers, policies, progress=lambda _m: None)
    assert report.clips_new == 2
    screens = sorted(
        (m for m in hash_store.memories_where("kind = 'resource'")), key=lambda m: m.start_ts
    )
    assert [m.text.partition(": ")[0] for m in screens] == [
        f"On screen at 09:00:05 (accessibility tree and OCR; {URL})",
        "On screen at 09:01:05",
    ]
    tree_memory = screens[0].text
    assert "Quarterly budget for the Lisbon office" in tree_memory
    assert "Meeting notes for Tuesday" in tree_memory
    assert "password: [secret]" in tree_memory  # the tree's line redacted as OCR's is
    for m in hash_store.memories_where("clip_id != ''"):
        assert "hunter2" not in m.text
    clip = hash_store.get_clip(screens[0].clip_id)
    assert clip is not None and "hunter2" not in clip["screen_text"]
