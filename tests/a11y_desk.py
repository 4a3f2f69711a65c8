"""A desktop whose applications speak AT-SPI, as the accessibility-tree tests hold it (X11's in
``test_capture_a11y``, sway's in ``test_capture_tree_sway``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench.a11y_session import A11ySession
    from perception.capture.windows import DesktopSession, WindowInfo


@dataclass
class A11yDesk:
    """A desktop whose applications speak AT-SPI, as a module of accessibility-tree tests holds
    it: its AT-SPI session (``bench.a11y_session``), capture's view of its windows and a folder."""

    session: A11ySession
    windows: DesktopSession
    tmp: Path

    def window_where(self, matches, what: str, timeout_s: float) -> WindowInfo:
        """The mapped window that ``matches`` (a test on a ``WindowInfo``), the topmost of them,
        once capture sees one; an ``AssertionError`` naming ``what`` and the windows there after
        ``timeout_s``."""
        import time

        deadline = time.monotonic() + timeout_s
        while True:
            wins = [w for w in self.windows.stacking() if matches(w) and w.rect]
            if wins:
                return wins[-1]
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what}: {self.windows.stacking()}")
            time.sleep(0.1)


@contextmanager
def a11y_on(server, start_session, open_windows) -> Iterator[tuple[A11ySession, DesktopSession]]:
    """On the display ``server`` (a Desktop or a Sway): the AT-SPI session ``start_session()``
    activated and capture's view of the windows ``open_windows()``; the view, the session and the
    server closed when done (the server at once when the session does not start)."""
    try:
        session = start_session()
    except BaseException:
        server.close()
        raise
    windows = open_windows()
    try:
        with session.activated():
            yield session, windows
    finally:
        windows.close()
        session.close()
        server.close()
