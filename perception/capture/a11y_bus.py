"""Talking to the session's accessibility bus (AT-SPI2 over D-Bus) through jeepney: finding it
(``open_a11y_bus``), sending calls in parts and gathering their replies until a deadline
(``Caller``), and reading replies as the hostile input they are (a name that is no string, a
state that is no number: read as nothing, never raised)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

ACCESSIBLE = "org.a11y.atspi.Accessible"
TEXT = "org.a11y.atspi.Text"
COMPONENT = "org.a11y.atspi.Component"
DOCUMENT = "org.a11y.atspi.Document"
REGISTRY = "org.a11y.atspi.Registry"
ROOT = "/org/a11y/atspi/accessible/root"
PROPS = "org.freedesktop.DBus.Properties"

# calls sent before their replies are read: a level of thousands of nodes goes out in parts, the
# deadline looked at between them
BATCH = 256
WIRE_KEPT = 50_000  # calls kept ready to send (about 150 bytes each); past it, all are built anew


class Unanswered(Exception):
    """The deadline passed before every reply came."""


class Caller:
    """Calls on one connection to the accessibility bus; not thread-safe."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.wire: dict[tuple, bytes] = {}  # a call -> its message, serial aside (``_part``)

    def close(self) -> None:
        try:
            self.conn.close()
        except OSError:
            pass

    def batch(self, calls: list[tuple], deadline: float) -> list[Any]:
        """Send the calls (``BATCH`` at a time) and gather their replies until ``deadline``: a list
        of reply bodies, an Exception where the peer said no. ``Unanswered`` when the deadline
        passes first."""
        out: list[Any] = [None] * len(calls)
        for start in range(0, len(calls), BATCH):
            if time.monotonic() >= deadline:
                raise Unanswered(f"{len(calls) - start} of {len(calls)} calls not sent in time")
            self._part(calls, start, out, deadline)
        return out

    def _part(self, calls: list[tuple], start: int, out: list[Any], deadline: float) -> None:
        from jeepney import DBusAddress, MessageType, new_method_call
        from jeepney.low_level import HeaderFields

        waiting: dict[int, int] = {}
        wire = []
        for i in range(start, min(start + BATCH, len(calls))):
            call = calls[i]
            made = self.wire.get(call)
            if made is None:  # the same calls are made frame after frame: each built once
                name, path, iface, method, sig, body = call
                msg = new_method_call(
                    DBusAddress(path, bus_name=name, interface=iface), method, sig, body
                )
                made = msg.serialise(serial=1)
                if len(self.wire) >= WIRE_KEPT:
                    self.wire.clear()
                self.wire[call] = made
            serial = next(self.conn.outgoing_serial)
            # a message's serial is the header's third word (jeepney writes little-endian)
            wire.append(made[:8] + serial.to_bytes(4, "little") + made[12:])
            waiting[serial] = i
        self.conn.sock.sendall(b"".join(wire))
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Unanswered(f"{len(waiting)} of {len(calls)} calls unanswered")
            try:
                reply = self.conn.receive(timeout=left)
            except TimeoutError:
                raise Unanswered(f"{len(waiting)} of {len(calls)} calls unanswered") from None
            i = waiting.pop(reply.header.fields.get(HeaderFields.reply_serial, -1), -1)
            if i < 0:
                continue  # a signal, or a reply to a call given up on
            if reply.header.message_type == MessageType.error:
                out[i] = RuntimeError(str(reply.header.fields.get(HeaderFields.error_name)))
            else:
                out[i] = reply.body


def session_bus_address(env: Mapping[str, str] | None = None) -> str:
    """The session bus's address as libdbus finds it: ``DBUS_SESSION_BUS_ADDRESS``, else the
    socket systemd's user session keeps in ``$XDG_RUNTIME_DIR/bus``; "" when neither is there."""
    env = os.environ if env is None else env
    if addr := env.get("DBUS_SESSION_BUS_ADDRESS", "").strip():
        return addr
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.exists(os.path.join(runtime, "bus")):
        return f"unix:path={os.path.join(runtime, 'bus')}"
    return ""


def open_a11y_bus() -> Any:
    """A connection to the accessibility bus the session bus names (``org.a11y.Bus``)."""
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    session_address = session_bus_address()
    if not session_address:
        raise ConnectionError("there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)")
    with open_dbus_connection(session_address) as session:
        reply = session.send_and_get_reply(
            new_method_call(
                DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"),
                "GetAddress",
            ),
            timeout=2.0,
        )
    address = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
    if not address:
        raise ConnectionError("the session bus names no accessibility bus")
    return open_dbus_connection(address)


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def reply_str(body: Any) -> str:
    return body[0] if isinstance(body, tuple) and body and isinstance(body[0], str) else ""


def variant_str(body: Any) -> str:
    """A Properties.Get reply holding a string."""
    if isinstance(body, tuple) and body and isinstance(body[0], tuple) and len(body[0]) == 2:
        v = body[0][1]
        return v[:1000] if isinstance(v, str) else ""
    return ""


def states_of(body: Any) -> int:
    words = body[0] if isinstance(body, tuple) and body and isinstance(body[0], list) else []
    if len(words) >= 2 and is_int(words[0]) and is_int(words[1]):
        return words[0] | words[1] << 32
    return 0


def object_refs(body: Any) -> list[tuple[str, str]]:
    """Object references ``(so)`` of a GetChildren-like reply."""
    items = (
        body[0] if isinstance(body, tuple) and body and isinstance(body[0], (list, tuple)) else []
    )
    return [
        (r[0], r[1])
        for r in items
        if isinstance(r, tuple)
        and len(r) == 2
        and isinstance(r[0], str)
        and isinstance(r[1], str)
        and r[1] != "/org/a11y/atspi/null"
    ]
