"""What the windows of ``a11y_apps`` share: their options (a title, a place on the screen, the
fields of a form) and a GTK 3 window put there. Imported by Debian's python, which runs them as
modules of this tree (``bench.a11y_session``): the standard library only."""

from __future__ import annotations

import argparse
import importlib
from typing import Any


def gi_modules(versions: dict[str, str], *names: str) -> list[Any]:
    """The GObject modules ``names`` (of ``gi.repository``), ``versions`` required first. Imported
    by name: mnemo's venv (and its type checker) has no GObject bindings, Debian's python has."""
    gi = importlib.import_module("gi")
    for name, version in versions.items():
        gi.require_version(name, version)
    return [importlib.import_module(f"gi.repository.{name}") for name in names]


def parser(doc: str | None, geometry: str) -> argparse.ArgumentParser:
    """The options every window takes: ``--title`` and ``--geometry`` (WxH+X+Y, by default
    ``geometry``)."""
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--title", required=True)
    p.add_argument("--geometry", default=geometry, help="WxH+X+Y")
    return p


def add_form(p: argparse.ArgumentParser, field: str) -> None:
    """A form's options: its labels, an ordinary text ``field`` (what the toolkit calls it) and a
    password one."""
    p.add_argument("--label", action="append", default=[], help="a label (repeat for more)")
    p.add_argument("--entry", default="", help=f"the text of an ordinary {field}")
    p.add_argument("--password", default="", help=f"the secret in a password {field}")


def place(geometry: str) -> tuple[int, int, int, int]:
    """``WxH+X+Y`` as ``(x, y, w, h)``."""
    size, _, at = geometry.partition("+")
    w, h = (int(v) for v in size.split("x"))
    x, y = (int(v) for v in at.split("+"))
    return x, y, w, h


def gtk_window(gtk: Any, title: str, geometry: str) -> Any:
    """A GTK 3 window (``gtk``: the ``Gtk`` module, its version required by the caller) titled
    ``title`` at ``geometry``; closing it ends the main loop."""
    win = gtk.Window(title=title)
    x, y, w, h = place(geometry)
    win.set_default_size(w, h)
    win.move(x, y)
    win.connect("destroy", gtk.main_quit)
    return win
