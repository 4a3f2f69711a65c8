"""The capture daemon with the accessibility tree, for real: Xvfb and openbox, a D-Bus session with
at-spi2 (``bench.a11y_session``), a GTK window run by Debian's python, and the daemon writing frames.
What the tree says lands in each kept frame's sidecar exactly as the window shows it; a password
field's secret and an excluded window's words are in no file the daemon writes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from conftest import require_x, unavailable
from perception.capture.config import CaptureConfig
from perception.capture.daemon import Capturer
from perception.capture.storage import CaptureStore

pytestmark = pytest.mark.slow

LABEL = "Quarterly budget for the Lisbon office"
ENTRY = "travel 4200 euros"
SECRET = "Zq7-hunter2-wolfram"
OTHER = "Ferncastle invoice numbers"  # the words of the window kept out


@pytest.fixture
def session(desktop):
    from bench.a11y_session import A11ySession, missing_tools

    require_x()
    if why := missing_tools():
        unavailable(why)
    s = A11ySession(desktop.display)
    try:
        with s.activated():
            yield s
    finally:
        s.close()


def _gtk(session, title: str, geometry: str, *labels: str, password: str = "", entry: str = ""):
    args = ["--title", title, "--geometry", geometry, "--entry", entry, "--password", password]
    for text in labels:
        args += ["--label", text]
    return session.python_app("gtk_window", *args)


def _capture(desktop, out: Path, seconds: float, cipher=None, **cfg) -> Capturer:
    c = CaptureConfig(out=str(out), interval_s=0.5, **cfg)
    cap = Capturer(c, CaptureStore(out, cipher=cipher), display_name=desktop.display)
    cap.run(duration_s=seconds)
    return cap


def _sidecars(out: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(out.rglob("*.jpg.json"))]


def _every_byte(out: Path) -> bytes:
    return b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())


def test_a_windows_text_is_stored_from_its_tree_exactly_and_a_password_never(
    desktop, session, tmp_path
):
    _gtk(session, "Budget notes", "520x300+200+150", LABEL, entry=ENTRY, password=SECRET)
    desktop.run(["xdotool", "search", "--sync", "--name", "^Budget notes$", "windowactivate"])
    time.sleep(0.5)
    out = tmp_path / "out"
    cap = _capture(desktop, out, 3.0)
    sides = _sidecars(out)
    assert sides, "no frame was kept"
    texts = [s["screen_text"] for s in sides if "screen_text" in s]
    assert texts, f"no frame has text from the tree: {sides[0]}"
    lines = {(ln[0], ln[1]) for ln in texts[0]["lines"]}
    assert (LABEL, "label") in lines and (ENTRY, "text") in lines, lines
    win = texts[0]["windows"][0]
    assert win["title"] == "Budget notes" and win["complete"], win
    # the window's box is the tree's to speak for; its lines lie inside it, in the frame's pixels
    x0, y0, x1, y1, flag = texts[0]["paint"][-1]
    assert flag == 1 and x0 <= 200 + 10 and y0 <= 150 + 40 and x1 >= 700 and y1 >= 430
    for ln in texts[0]["lines"]:
        assert x0 <= ln[2] < ln[4] <= x1 and y0 <= ln[3] < ln[5] <= y1, ln
    # GTK shows a password as bullets, in pixels and in its tree: the field is not read at all
    assert not any(ln[1] == "password text" for t in texts for ln in t["lines"])
    assert SECRET.encode() not in _every_byte(out)
    status = cap.status()["tree"]
    assert status["frames"] >= 1 and status["why"] == "", status


def test_an_excluded_window_is_never_asked_and_its_words_are_in_no_file(desktop, session, tmp_path):
    _gtk(session, "Ledger private", "400x200+900+500", OTHER)
    _gtk(session, "Budget notes", "520x300+200+150", LABEL)
    desktop.run(["xdotool", "search", "--sync", "--name", "^Budget notes$", "windowactivate"])
    time.sleep(0.5)
    out = tmp_path / "out"
    _capture(desktop, out, 3.0, exclude_titles=["^Ledger"])
    texts = [s["screen_text"] for s in _sidecars(out) if "screen_text" in s]
    assert texts and all(w["title"] != "Ledger private" for t in texts for w in t["windows"])
    assert any(ln[0] == LABEL for t in texts for ln in t["lines"])
    assert OTHER.encode() not in _every_byte(out)
    # the control: without the exclusion, the same window's words are read from its tree
    out2 = tmp_path / "out2"
    _capture(desktop, out2, 3.0)
    assert any(ln[0] == OTHER for s in _sidecars(out2) for ln in s["screen_text"]["lines"])


def test_without_an_accessibility_bus_the_frames_are_kept_for_ocr(desktop, tmp_path, monkeypatch):
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={tmp_path}/no-bus")
    desktop.xterm("plain shell", geometry="60x10+100+100")
    out = tmp_path / "out"
    cap = _capture(desktop, out, 2.0)
    sides = _sidecars(out)
    assert sides and not any("screen_text" in s for s in sides)
    assert cap.status()["tree"]["why"], "the status should say why the tree cannot be read"


def test_words_typed_into_an_accessible_window_are_kept_from_its_tree(desktop, session, tmp_path):
    """Typing: each word, typed a second apart into a GTK entry, is in the tree text of a frame
    the daemon kept while it was the latest word (the daemon grabs when a burst of typing pauses)."""
    import threading

    _gtk(session, "Typing pad", "520x200+200+150", "Type here")
    desktop.run(["xdotool", "search", "--sync", "--name", "^Typing pad$", "windowactivate"])
    time.sleep(0.5)
    out = tmp_path / "out"
    words = ["amber", "birch", "cedar", "dune", "ember", "fjord"]
    typed: list[tuple[str, float]] = []

    def type_words() -> None:
        time.sleep(1.0)
        for w in words:
            typed.append((w, time.time()))
            desktop.type(w + " ")
            time.sleep(1.2)

    typist = threading.Thread(target=type_words)
    typist.start()
    _capture(desktop, out, 1.5 + 1.2 * len(words) + 1.0, pause_grab_s=0.3)
    typist.join()
    kept = [
        (p, json.loads(p.read_text()).get("screen_text", {}).get("lines", []))
        for p in sorted(out.rglob("*.jpg.json"))
    ]
    entry_texts = [" ".join(ln[0] for ln in lines if ln[1] == "text") for _, lines in kept]
    for w, _ in typed:
        assert any(w in t.split() for t in entry_texts), (w, entry_texts)


def test_with_encryption_the_tree_text_is_in_no_file_in_clear(
    desktop, session, tmp_path, monkeypatch
):
    """The sidecar is encrypted with the frame: the words the tree gave are stored, never in clear."""
    from cryptography.fernet import Fernet

    from perception.capture.crypto import load_cipher
    from perception.sources.screenshots import _sidecar

    monkeypatch.setenv("MNEMO_CAPTURE_KEY", Fernet.generate_key().decode())
    _gtk(session, "Budget notes", "520x300+200+150", LABEL, entry=ENTRY)
    desktop.run(["xdotool", "search", "--sync", "--name", "^Budget notes$", "windowactivate"])
    time.sleep(0.5)
    out = tmp_path / "out"
    _capture(desktop, out, 2.0, cipher=load_cipher())
    frames = sorted(out.rglob("*.jpg.enc"))
    assert frames, "no frame was kept"
    every = _every_byte(out)
    assert LABEL.encode() not in every and ENTRY.encode() not in every
    lines = [ln[0] for f in frames for ln in _sidecar(f).get("screen_text", {}).get("lines", [])]
    assert LABEL in lines and ENTRY in lines
