"""Exclusions that hold for the pixels, not only the metadata.

A focused excluded window means nothing of its monitor is stored. An excluded window that is
visible but not focused is painted black in the stored image, except where windows above it in the
stack cover it, so the window on top stays readable. The black happens before anything is encoded,
written, read by OCR or embedded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from perception.capture.windows import Rect, WindowInfo

PRIVATE_TITLES = (
    r"\bPrivate Browsing\b",
    r"\bIncognito\b",
    r"\bInPrivate\b",
    r"\bPrivate Window\b",
)
# Chromium's incognito windows carry no mark in their title or X properties (checked with xprop on
# Debian's chromium): a browser process started private is known by its command line instead
BROWSERS = (
    "chromium",
    "chromium-browser",
    "google-chrome",
    "brave-browser",
    "microsoft-edge",
    "vivaldi-stable",
    "firefox",
    "firefox-esr",
    "librewolf",
)
PRIVATE_FLAGS = (
    "--incognito",
    "-incognito",
    "--private-window",
    "-private-window",
    "-private",
    "--inprivate",
)
# password managers and secret prompts, by WM_CLASS class or instance (lower case)
SECRET_APPS = (
    "keepassxc",
    "keepass2",
    "keepass",
    "1password",
    "bitwarden",
    "enpass",
    "seahorse",
    "pinentry",
    "gcr-prompter",
    "kwalletmanager5",
    "proton pass",
    "lastpass",
)


@dataclass(frozen=True)
class Exclusions:
    classes: tuple[str, ...] = ()
    titles: tuple[str, ...] = ()  # regular expressions, searched case-insensitively
    builtin: bool = True  # private/incognito windows and password managers
    _compiled: tuple[re.Pattern, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        patterns = [*self.titles, *(PRIVATE_TITLES if self.builtin else ())]
        compiled = []
        for p in patterns:
            try:
                compiled.append(re.compile(p, re.IGNORECASE))
            except re.error as e:
                raise ValueError(
                    f"--exclude-title {p!r} is not a valid regular expression: {e}"
                ) from e
        object.__setattr__(self, "_compiled", tuple(compiled))

    def changed(self, add: bool, cls: str | None = None, title: str | None = None) -> Exclusions:
        """These exclusions with a window class or title pattern added (``add``) or taken out. The
        built-in ones (private windows, password managers) stay; only configuration turns them off."""
        if not cls and not title:
            raise ValueError(
                'say which window: a class ({"class": "KeePassXC"}) or a title pattern '
                '({"title": "^Bank"})'
            )
        classes, titles = list(self.classes), list(self.titles)
        for items, value in ((classes, cls), (titles, title)):
            if not value:
                continue
            if not isinstance(value, str):
                raise ValueError(f"{value!r} is not text")
            if add and value not in items:
                items.append(value)
            elif not add:
                if value not in items:
                    raise ValueError(
                        f"{value!r} is not an exclusion added by you; they are: "
                        f"{', '.join(self.classes + self.titles) or 'none'}"
                    )
                items.remove(value)
        return Exclusions(tuple(classes), tuple(titles), self.builtin)

    def listing(self) -> dict:
        return {
            "classes": list(self.classes),
            "titles": list(self.titles),
            "builtin": self.builtin,
            "builtin_classes": list(SECRET_APPS) if self.builtin else [],
            "builtin_titles": list(PRIVATE_TITLES) if self.builtin else [],
        }

    def why(self, window: WindowInfo) -> str | None:
        """Why the window is excluded (the rule that matched), or None."""
        names = {window.app.lower(), window.instance.lower()} - {""}
        browser = {window.app.lower(), window.instance.split(" (")[0].lower()} & set(
            BROWSERS
        )  # "chromium (/profile)"
        if self.builtin and browser and _started_private(window.pid):
            return "a browser started private"
        for cls in (*self.classes, *(SECRET_APPS if self.builtin else ())):
            if cls.lower() in names:
                return f"class {cls}"
        for p in self._compiled:
            if p.search(window.title):
                return f"title /{p.pattern}/"
        return None


def _started_private(pid: int | None) -> bool:
    """Whether the process was started with a private-browsing flag (its /proc command line)."""
    if not pid:
        return False
    try:
        args = open(f"/proc/{int(pid)}/cmdline", "rb").read().split(b"\0")
    except OSError:  # gone, or another machine's process (a remote X client)
        return False
    return any(a.decode(errors="replace").split("=")[0] in PRIVATE_FLAGS for a in args)


def blackout(
    frame: np.ndarray, monitor: Rect, windows: Iterable[WindowInfo], excluded: Iterable[int]
) -> int:
    """Paint black, in place, what the excluded windows show on this monitor. ``windows`` are
    bottom to top, in the layout's coordinates; a frame with more pixels than the monitor's
    layout size (a HiDPI output scaled by 2) is painted at its own scale. Returns how many
    excluded windows were painted."""
    stack = [(w.wid, w.rect) for w in windows if w.rect is not None]
    excluded = set(excluded)
    scale = (frame.shape[1] / monitor.width, frame.shape[0] / monitor.height)
    painted = 0
    for i, (wid, rect) in enumerate(stack):
        if wid not in excluded or not rect.intersects(monitor):
            continue
        mask = np.zeros(frame.shape[:2], dtype=bool)
        _fill(mask, rect, monitor, scale, True)
        for above, above_rect in stack[i + 1 :]:
            if above not in excluded:
                _fill(mask, above_rect, monitor, scale, False)
        frame[mask] = 0
        painted += 1
    return painted


def _fill(
    mask: np.ndarray, rect: Rect, monitor: Rect, scale: tuple[float, float], value: bool
) -> None:
    """Set ``rect`` (layout coordinates) in ``mask`` (the monitor's pixels). Painted black
    (``value`` True) the edges round outwards, left uncovered (False) inwards: a fraction of a
    scaled pixel is never left showing."""
    import math

    sx, sy = scale
    grow = math.floor if value else math.ceil
    shrink = math.ceil if value else math.floor
    x0 = max(grow((rect.x - monitor.x) * sx), 0)
    y0 = max(grow((rect.y - monitor.y) * sy), 0)
    x1 = min(shrink((rect.x + rect.width - monitor.x) * sx), mask.shape[1])
    y1 = min(shrink((rect.y + rect.height - monitor.y) * sy), mask.shape[0])
    if x1 > x0 and y1 > y0:
        mask[y0:y1, x0:x1] = value
