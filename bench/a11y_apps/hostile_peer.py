"""A hostile AT-SPI application for the accessibility reader's tests: it registers on the
accessibility bus as atk-bridge does (``org.a11y.atspi.Socket.Embed`` on the registry's root, so
the registry lists it among its children) and serves one frame, titled ``--title`` and placed at
``--box``, whose tree is built to hurt a reader. Run by mnemo's python (jeepney); needs
``DBUS_SESSION_BUS_ADDRESS`` (the accessibility bus is found through ``org.a11y.Bus``), prints
``ready`` once embedded.

Modes:

- ``endless``: every node below the frame has ``--fanout`` children, to any depth.
- ``huge``: the frame holds one text node whose name and text are ``--mb`` megabytes, whatever
  range is asked for.
- ``liar``: the frame says it has 3 children (and GetChildAtIndex gives 3), and its GetChildren
  lists ``--count`` of them.
- ``silent``: embedded, it answers nothing more.
- ``stall``: it answers for its application and frame, then nothing below the frame.
- ``busy``: a frame of three labels, as a busy application is: from the first call it gets, it
  answers nothing for ``--busy`` seconds, then everything.
"""

from __future__ import annotations

import argparse
import sys
import time

from jeepney import DBusAddress, MessageType, new_error, new_method_call, new_method_return
from jeepney.io.blocking import open_dbus_connection
from jeepney.low_level import Endianness, HeaderFields, Message, padding, parse_signature

ROOT = "/org/a11y/atspi/accessible/root"
FRAME = "/org/a11y/atspi/accessible/frame"
NODE = "/org/a11y/atspi/accessible/n"  # NODE/<id>: node ids, so the tree need not be stored
ACCESSIBLE = "org.a11y.atspi.Accessible"
TEXT = "org.a11y.atspi.Text"
COMPONENT = "org.a11y.atspi.Component"
PROPS = "org.freedesktop.DBus.Properties"
# AtspiStateType bits: active, showing, visible
SHOWN = (1 << 1) | (1 << 25) | (1 << 30)


def a11y_address() -> str:
    with open_dbus_connection("SESSION") as session:
        reply = session.send_and_get_reply(
            new_method_call(
                DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"),
                "GetAddress",
            ),
            timeout=10,
        )
    return str(reply.body[0])


class Prebuilt(Message):
    """A reply whose body was serialised once: the liar's list goes out as fast as the bus takes
    it, so the reader, not this process, is what the test measures."""

    def __init__(self, header, body_buf: bytes) -> None:
        super().__init__(header, ())
        self.body_buf = body_buf

    def serialise(self, serial=None, fds=None) -> bytes:
        self.header.body_length = len(self.body_buf)
        head = self.header.serialise(serial=serial)
        return head + b"\0" * padding(len(head), 8) + self.body_buf


class Peer:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        x, y, w, h = (int(v) for v in args.box.split(","))
        self.box = (x, y, w, h)
        self.big = "x" * int(args.mb * 1_000_000) if args.mode == "huge" else ""
        self.conn = open_dbus_connection(a11y_address())
        self.me = self.conn.unique_name
        self.lie = b""
        self.first = 0.0  # busy: when the first call came
        if args.mode == "liar":
            refs = [(self.me, f"{NODE}/{k}") for k in range(args.count)]
            self.lie = parse_signature(list("(a(so))")).serialise((refs,), 0, Endianness.little)

    def embed(self) -> None:
        call = new_method_call(
            DBusAddress(
                ROOT, bus_name="org.a11y.atspi.Registry", interface="org.a11y.atspi.Socket"
            ),
            "Embed",
            "(so)",
            ((self.me, ROOT),),
        )
        # the registry sets our Id (a call without a reply wanted) before it answers: the
        # blocking connection drops that call while it waits for the answer
        reply = self.conn.send_and_get_reply(call, timeout=10)
        if reply.header.message_type == MessageType.error:
            raise SystemExit(f"the registry refused Embed: {reply.body}")

    def serve(self) -> None:
        while True:
            msg = self.conn.receive()
            if msg.header.message_type != MessageType.method_call:
                continue
            if self.args.mode == "silent":
                continue
            if self.args.mode == "busy" and path_of(msg) != ROOT:
                self.first = self.first or time.monotonic()
                if time.monotonic() - self.first < self.args.busy:
                    continue
            path = str(msg.header.fields.get(HeaderFields.path, ""))
            if self.args.mode == "stall" and path.startswith(NODE):
                continue
            try:
                reply = self.answer(msg, path)
            except LookupError as e:
                reply = new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod", "s", (str(e),))
            self.conn.send(reply)

    # what each object is
    def role(self, path: str) -> str:
        if path == ROOT:
            return "application"
        if path == FRAME:
            return "frame"
        return "text" if self.args.mode == "huge" else "label"

    def name(self, path: str) -> str:
        if path == ROOT:
            return "hostile-peer"
        if path == FRAME:
            return self.args.title
        return self.big or f"node {path.rsplit('/', 1)[1]}"

    def children(self, path: str) -> list[str]:
        mode = self.args.mode
        if path == ROOT:
            return [FRAME]
        if mode == "huge":
            return [f"{NODE}/0"] if path == FRAME else []
        if mode in ("liar", "busy"):
            return [f"{NODE}/{k}" for k in range(3)] if path == FRAME else []
        parent = "" if path == FRAME else path.rsplit("/", 1)[1] + "_"
        return [f"{NODE}/{parent}{k}" for k in range(self.args.fanout)]

    def child_count(self, path: str) -> int:
        return len(self.children(path))

    def extents(self, path: str) -> tuple[int, int, int, int]:
        x, y, w, h = self.box
        if path in (ROOT, FRAME):
            return self.box
        return (x + 10, y + 30, max(1, w - 20), 20)

    def text(self, path: str) -> str:
        return self.big or self.name(path)

    def answer(self, msg, path: str):
        iface = msg.header.fields.get(HeaderFields.interface, "")
        member = msg.header.fields.get(HeaderFields.member, "")
        body = msg.body
        if iface == PROPS and member == "Get":
            _, prop = body
            if prop == "Name":
                return new_method_return(msg, "v", (("s", self.name(path)),))
            if prop == "ChildCount":
                return new_method_return(msg, "v", (("i", self.child_count(path)),))
            if prop == "CharacterCount":
                return new_method_return(msg, "v", (("i", len(self.text(path))),))
            raise LookupError(prop)
        if iface == PROPS and member == "Set":
            return new_method_return(msg)
        if member == "GetChildren" and self.lie and path == FRAME:
            return Prebuilt(new_method_return(msg, "a(so)", ([],)).header, self.lie)
        if member == "GetChildren":
            return new_method_return(msg, "a(so)", ([(self.me, p) for p in self.children(path)],))
        if member == "GetChildAtIndex":
            kids = self.children(path)
            k = body[0]
            ref = kids[k] if 0 <= k < len(kids) else "/org/a11y/atspi/null"
            return new_method_return(msg, "(so)", ((self.me, ref),))
        if member == "GetRoleName":
            return new_method_return(msg, "s", (self.role(path),))
        if member == "GetInterfaces":
            ifaces = [ACCESSIBLE, COMPONENT] + ([TEXT] if path.startswith(NODE) else [])
            return new_method_return(msg, "as", (ifaces,))
        if member == "GetState":
            return new_method_return(msg, "au", ([SHOWN & 0xFFFFFFFF, SHOWN >> 32],))
        if member == "GetExtents":
            return new_method_return(msg, "(iiii)", (self.extents(path),))
        if member == "GetText":
            return new_method_return(msg, "s", (self.text(path),))
        if member == "GetOffsetAtPoint":
            return new_method_return(msg, "i", (-1,))
        raise LookupError(f"{iface}.{member}")


def path_of(msg) -> str:
    return str(msg.header.fields.get(HeaderFields.path, ""))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("mode", choices=["endless", "huge", "liar", "silent", "stall", "busy"])
    p.add_argument("--title", default="Hostile Peer")
    p.add_argument("--box", default="100,100,600,400", help="the frame's x,y,width,height")
    p.add_argument("--fanout", type=int, default=8, help="endless: children of every node")
    p.add_argument("--mb", type=float, default=10.0, help="huge: megabytes of text")
    p.add_argument("--count", type=int, default=400_000, help="liar: children listed")
    p.add_argument("--busy", type=float, default=1.0, help="busy: seconds without an answer")
    args = p.parse_args()
    peer = Peer(args)
    peer.embed()
    print("ready", flush=True)
    try:
        peer.serve()
    except (KeyboardInterrupt, ConnectionError, EOFError):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
