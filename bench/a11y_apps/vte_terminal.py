"""A VTE terminal (GTK 3, Vte 2.91) for the accessibility tests: runs a shell that prints the given
lines and then waits, so the terminal shows them. Run by Debian's python (python3-gi,
gir1.2-vte-2.91); prints ``ready`` once every line is on the terminal."""

from __future__ import annotations

import shlex

from bench.a11y_apps.window import gi_modules, gtk_window, parser

Gtk, GLib, Vte = gi_modules({"Gtk": "3.0", "Vte": "2.91"}, "Gtk", "GLib", "Vte")


def main() -> None:
    p = parser(__doc__, "640x400+80+80")
    p.add_argument("--line", action="append", default=[], help="a line the shell prints")
    args = p.parse_args()

    win = gtk_window(Gtk, args.title, args.geometry)
    term = Vte.Terminal()
    win.add(term)
    # no prompt, no echo: the terminal shows the lines and nothing else
    script = "printf '%s\\n' " + " ".join(shlex.quote(t) for t in args.line) + "; exec sleep 100000"
    term.spawn_async(
        Vte.PtyFlags.DEFAULT,
        None,
        ["/bin/sh", "-c", script],
        None,
        GLib.SpawnFlags.DEFAULT,
        None,
        None,
        -1,
        None,
        None,
    )
    win.show_all()

    def shown() -> bool:
        """Every line printed: the cursor is on the row below the last (the text is read from
        the terminal's own buffer, so it is on the terminal when the cursor has passed it)."""
        _, row = term.get_cursor_position()
        if row >= len(args.line):
            print("ready", flush=True)
            return False
        return True

    GLib.timeout_add(50, shown)
    Gtk.main()


if __name__ == "__main__":
    main()
