"""A GTK 3 window for the accessibility tests: labels, an entry, a password entry holding a
secret and a text view with more lines than it shows, scrolled so that lines above and below are
out of view. Run by Debian's python (python3-gi, gir1.2-gtk-3.0); prints ``visible N`` for each
text-view line wholly in view, ``hidden N`` for each wholly out of it, then ``ready``; then
``password N`` each time the password entry's length changes (its text is never printed)."""

from __future__ import annotations

from bench.a11y_apps.window import add_form, gi_modules, gtk_window, parser

Gtk, GLib, GdkPixbuf = gi_modules({"Gtk": "3.0"}, "Gtk", "GLib", "GdkPixbuf")


def main() -> None:
    p = parser(__doc__, "500x400+40+40")
    add_form(p, "entry")
    p.add_argument("--line", action="append", default=[], help="a line of the text view")
    p.add_argument("--shown", type=int, default=4, help="lines the text view has room for")
    p.add_argument("--top", type=int, default=0, help="the text view's first line in view")
    p.add_argument("--block", default="", help="WxH: a pure red picture below the form")
    p.add_argument(
        "--headerbar", action="store_true", help="a header bar: decorations drawn by GTK"
    )
    p.add_argument("--type-password", action="store_true", help="keys go to the password entry")
    args = p.parse_args()

    win = gtk_window(Gtk, args.title, args.geometry)
    if args.headerbar:  # client-side decorations, with a shadow around the window on Wayland
        bar = Gtk.HeaderBar(title=args.title)
        bar.set_show_close_button(True)
        win.set_titlebar(bar)
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
    # how long the secret is now (typed into it: the test knows its keys arrived), never what
    secret.connect("changed", lambda e: print(f"password {len(e.get_text())}", flush=True))
    box.pack_start(secret, False, False, 0)
    view = Gtk.TextView()
    view.set_editable(False)
    view.get_buffer().set_text("\n".join(args.line))
    scroller = Gtk.ScrolledWindow()
    scroller.set_policy(Gtk.PolicyType.NEVER, Gtk.PolicyType.ALWAYS)
    scroller.add(view)
    box.pack_start(scroller, False, False, 0)
    if args.block:  # where its pixels are is where the tree should say it is
        w, h = (int(v) for v in args.block.split("x"))
        red = GdkPixbuf.Pixbuf.new(GdkPixbuf.Colorspace.RGB, False, 8, w, h)
        red.fill(0xFF0000FF)
        image = Gtk.Image.new_from_pixbuf(red)
        image.set_halign(Gtk.Align.START)
        box.pack_start(image, False, False, 0)
    win.show_all()
    if args.type_password:
        secret.grab_focus()

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
