"""A GTK 3 window for the accessibility tests: labels, an entry, a password entry holding a
secret and a text view with more lines than it shows, scrolled so that lines above and below are
out of view. Run by Debian's python (python3-gi, gir1.2-gtk-3.0); prints ``visible N`` for each
text-view line wholly in view, ``hidden N`` for each wholly out of it, then ``ready``."""

from __future__ import annotations

import argparse
import importlib

# imported by name: mnemo's venv (and its type checker) has no GObject bindings, Debian's python has
gi = importlib.import_module("gi")
gi.require_version("Gtk", "3.0")
Gtk = importlib.import_module("gi.repository.Gtk")
GLib = importlib.import_module("gi.repository.GLib")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--title", required=True)
    p.add_argument("--label", action="append", default=[], help="a label (repeat for more)")
    p.add_argument("--entry", default="", help="the text of an ordinary entry")
    p.add_argument("--password", default="", help="the secret in a password entry")
    p.add_argument("--line", action="append", default=[], help="a line of the text view")
    p.add_argument("--shown", type=int, default=4, help="lines the text view has room for")
    p.add_argument("--top", type=int, default=0, help="the text view's first line in view")
    p.add_argument("--geometry", default="500x400+40+40", help="WxH+X+Y")
    args = p.parse_args()

    win = Gtk.Window(title=args.title)
    size, _, place = args.geometry.partition("+")
    w, h = (int(v) for v in size.split("x"))
    x, y = (int(v) for v in place.split("+"))
    win.set_default_size(w, h)
    win.move(x, y)
    win.connect("destroy", Gtk.main_quit)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=4)
    win.add(box)
    for text in args.label:
        label = Gtk.Label(label=text)
        label.set_xalign(0)
        box.pack_start(label, False, False, 0)
    entry = Gtk.Entry()
    entry.set_text(args.entry)
    box.pack_start(entry, False, False, 0)
    secret = Gtk.Entry()
    secret.set_visibility(False)
    secret.set_input_purpose(Gtk.InputPurpose.PASSWORD)
    secret.set_text(args.password)
    box.pack_start(secret, False, False, 0)
    view = Gtk.TextView()
    view.set_editable(False)
    view.get_buffer().set_text("\n".join(args.line))
    scroller = Gtk.ScrolledWindow()
    scroller.set_policy(Gtk.PolicyType.NEVER, Gtk.PolicyType.ALWAYS)
    scroller.add(view)
    box.pack_start(scroller, False, False, 0)
    win.show_all()

    state = {"step": 0}

    def settle() -> bool:
        """Size the view to ``shown`` lines once laid out, scroll to ``top``, then report."""
        buf = view.get_buffer()
        _, line_h = view.get_line_yrange(buf.get_iter_at_line(0))
        if line_h <= 0 or not view.get_realized():
            return True
        if state["step"] == 0:
            scroller.set_size_request(-1, line_h * args.shown)
            state["step"] = 1
            return True
        adj = scroller.get_vadjustment()
        top_y, _ = view.get_line_yrange(buf.get_iter_at_line(args.top))
        if state["step"] == 1:
            adj.set_value(top_y)
            state["step"] = 2
            return True
        rect = view.get_visible_rect()
        for i in range(len(args.line)):
            ly, lh = view.get_line_yrange(buf.get_iter_at_line(i))
            if ly >= rect.y and ly + lh <= rect.y + rect.height:
                print(f"visible {i}")
            elif ly + lh <= rect.y or ly >= rect.y + rect.height:
                print(f"hidden {i}")
        print("ready", flush=True)
        return False

    GLib.timeout_add(100, settle)
    Gtk.main()


if __name__ == "__main__":
    main()
