"""The session's accessibility switch: whether applications publish their accessibility tree, and
turning it on for those that wait to be asked (``mnemo capture a11y on|off|status``, ``mnemo doctor``).

GTK 3 (through atk-bridge), GTK 4 and VTE terminals publish their tree on the accessibility bus
whatever the switch says. Qt, Chromium/Electron and Firefox publish one only when the session says
assistive technology is wanted: the property ``org.a11y.Status.IsEnabled`` of at-spi2-core's bus
launcher (``org.a11y.Bus`` at ``/org/a11y/bus`` on the session bus), which the launcher keeps in
GNOME's setting ``org.gnome.desktop.interface toolkit-accessibility``. They read it when they start,
so an application already running needs a restart to notice (measured here: Qt 5.15 and Chromium
156 read it once; Chromium then shows a page's text only with ``--force-renderer-accessibility``).
``ScreenReaderEnabled`` is never set: GNOME starts the Orca screen reader when it is.

Plain jeepney calls with short timeouts, so ``mnemo doctor`` stays quick on a machine whose bus
does not answer. Reading the status starts at-spi2-core's launcher and registry where they are
installed and not yet running, as any GTK application does when it starts.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from perception.capture.a11y_bus import (
    ACCESSIBLE,
    PROPS,
    REGISTRY,
    ROOT,
    object_refs,
    session_bus_address,
)

log = logging.getLogger(__name__)

BUS_NAME = "org.a11y.Bus"
BUS_PATH = "/org/a11y/bus"
STATUS = "org.a11y.Status"
SCHEMA = "org.gnome.desktop.interface"
KEY = "toolkit-accessibility"

CONNECT_S = 1.0  # a bus that does not finish the handshake in this long is not there
CALL_S = 3.0  # one call; the first one may start at-spi2-core's launcher (a few hundred ms)
NAMES_S = 1.0  # all applications' names together; a name not given by then is "?"

INSTALL_SESSION_BUS = (
    "run it inside your desktop session (a terminal there has DBUS_SESSION_BUS_ADDRESS set); "
    "a desktop without a session bus needs one: apt-get install dbus-user-session (or dbus-x11), "
    "then log in again"
)
INSTALL_ATSPI = "apt-get install at-spi2-core (Fedora: dnf install at-spi2-core), then log in again"
TURN_ON = (
    "mnemo capture a11y on, then restart the Qt, Chromium/Electron (with "
    "--force-renderer-accessibility) and Firefox applications already running"
)
# who needs what, said after the switch (docs/capture.md has the table)
RESTART_ON = (
    "applications read the flag when they start: restart the Qt applications, Chromium and "
    "Electron apps (VS Code, Slack, Discord, Signal, ...) and Firefox already running; Chromium "
    "and Electron show a page's text only when started with --force-renderer-accessibility. "
    "GTK applications and VTE terminals (gnome-terminal, xfce4-terminal) publish their tree "
    "without the flag"
)
RESTART_OFF = (
    "Qt, Chromium/Electron and Firefox applications stop publishing their tree when they next "
    "start; GTK applications and VTE terminals go on publishing theirs (NO_AT_BRIDGE=1 in their "
    "environment stops GTK 3's)"
)


class A11yError(Exception):
    """The switch could not be read or set: ``why``, and ``fix`` (what to install or do)."""

    def __init__(self, why: str, fix: str = "") -> None:
        super().__init__(f"{why}; {fix}" if fix else why)
        self.why, self.fix = why, fix


@dataclass(frozen=True)
class A11yStatus:
    """What the session says about its accessibility tree."""

    desktop: str  # "DISPLAY=:0", "WAYLAND_DISPLAY=wayland-0", or "" (no display: a server)
    session_bus: str  # the session bus's address, "" when there is none
    a11y_bus: str  # the accessibility bus's address, "" when there is none
    is_enabled: bool | None  # org.a11y.Status IsEnabled; None where it could not be read
    screen_reader_enabled: bool | None
    registry: bool  # at-spi2's registry answered: the tree can be read
    apps: tuple[str, ...] = ()  # the applications publishing a tree, by the name they give
    why: str = ""  # why the tree cannot be read (or why a part of this is unknown)
    fix: str = ""  # what to do about ``why``

    @property
    def readable(self) -> bool:
        return self.registry

    def as_json(self) -> dict[str, Any]:
        fields = asdict(self)
        del fields["registry"]  # said as "readable"
        return {"readable": self.readable, "app_count": len(self.apps), **fields}


@dataclass(frozen=True)
class SwitchResult:
    on: bool  # IsEnabled as read back after the switch
    gsettings: str  # what became of GNOME's copy of the flag, in words
    gsettings_done: bool  # it holds the new value (or there is no GNOME setting to hold it)
    status: A11yStatus  # the session after the switch
    restart: str  # which applications need a restart to notice

    def as_json(self) -> dict[str, Any]:
        return {
            "is_enabled": self.on,
            "gsettings": self.gsettings,
            "gsettings_done": self.gsettings_done,
            "restart": self.restart,
            "status": self.status.as_json(),
        }


# ---- the session bus


def connect(address: str) -> Any:
    """A jeepney connection to the bus at ``address`` (a bus that does not finish the handshake in
    ``CONNECT_S`` is not there)."""
    from jeepney.io.blocking import open_dbus_connection

    return open_dbus_connection(address, auth_timeout=CONNECT_S)


def _open_session(env: Mapping[str, str] | None) -> tuple[str, Any]:
    address = session_bus_address(env)
    if not address:
        raise A11yError(
            "there is no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set and "
            "$XDG_RUNTIME_DIR/bus does not exist): accessibility lives on a desktop's session bus",
            INSTALL_SESSION_BUS,
        )
    try:
        return address, connect(address)
    except (OSError, RuntimeError, ValueError, KeyError) as e:  # no socket, refused, a tcp: address
        raise A11yError(
            f"the D-Bus session bus at {address} cannot be reached ({type(e).__name__}: {e})",
            INSTALL_SESSION_BUS,
        ) from e


def call(
    conn: Any,
    path: str,
    name: str,
    iface: str,
    method: str,
    sig: str | None = None,
    body: tuple = (),
    timeout_s: float = CALL_S,
) -> tuple:
    """One call's reply body; ``A11yError`` naming the D-Bus error or the timeout."""
    from jeepney import DBusAddress, MessageType, new_method_call
    from jeepney.low_level import HeaderFields

    msg = new_method_call(DBusAddress(path, bus_name=name, interface=iface), method, sig, body)
    try:
        reply = conn.send_and_get_reply(msg, timeout=timeout_s)
    except TimeoutError as e:
        raise A11yError(f"{name} did not answer {iface}.{method} within {timeout_s:g} s") from e
    except (OSError, ConnectionError, EOFError) as e:
        raise A11yError(f"the bus went away during {iface}.{method} ({e})") from e
    if reply.header.message_type == MessageType.error:
        err = str(reply.header.fields.get(HeaderFields.error_name, "an error"))
        said = reply.body[0] if reply.body and isinstance(reply.body[0], str) else ""
        raise _Refused(err, said)
    return tuple(reply.body)


class _Refused(A11yError):
    def __init__(self, error: str, said: str) -> None:
        super().__init__(f"{error}: {said}" if said else error)
        self.error = error


def registry_children(conn: Any, timeout_s: float = CALL_S) -> list[tuple[str, str]]:
    """The applications at-spi2's registry lists, on a connection to the accessibility bus
    (asking starts the registry where it is not up)."""
    return object_refs(call(conn, ROOT, REGISTRY, ACCESSIBLE, "GetChildren", timeout_s=timeout_s))


def _launcher_error(e: A11yError) -> A11yError:
    """A failed call to ``org.a11y.Bus`` in words: not installed, or what it said."""
    if isinstance(e, _Refused) and e.error in (
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
    ):
        return A11yError(
            f"the session bus has no accessibility bus ({BUS_NAME} is neither running nor "
            "installed to start on demand): at-spi2-core is missing",
            INSTALL_ATSPI,
        )
    return A11yError(f"at-spi2-core's bus launcher ({BUS_NAME}) failed: {e}", INSTALL_ATSPI)


def _flags(conn: Any) -> tuple[bool | None, bool | None]:
    (props,) = call(conn, BUS_PATH, BUS_NAME, PROPS, "GetAll", "s", (STATUS,))
    vals = {k: v[1] for k, v in props.items() if isinstance(v, tuple) and len(v) == 2}
    enabled, reader = vals.get("IsEnabled"), vals.get("ScreenReaderEnabled")
    return (
        enabled if isinstance(enabled, bool) else None,
        reader if isinstance(reader, bool) else None,
    )


# ---- reading


def _desktop(env: Mapping[str, str]) -> str:
    for var in ("WAYLAND_DISPLAY", "DISPLAY"):
        if env.get(var):
            return f"{var}={env[var]}"
    return ""


def status(env: Mapping[str, str] | None = None) -> A11yStatus:
    """The session's switch and who publishes a tree; never raises: what could not be read is
    said in ``why`` (with ``fix``)."""
    env = os.environ if env is None else env
    desktop = _desktop(env)
    try:
        session, conn = _open_session(env)
    except A11yError as e:
        return A11yStatus(desktop, "", "", None, None, False, why=e.why, fix=e.fix)
    with conn:
        try:
            (a11y,) = call(conn, BUS_PATH, BUS_NAME, BUS_NAME, "GetAddress")
            enabled, reader = _flags(conn)
        except A11yError as e:
            return A11yStatus(
                desktop,
                session,
                "",
                None,
                None,
                False,
                why=_launcher_error(e).why,
                fix=INSTALL_ATSPI,
            )
    if not isinstance(a11y, str) or not a11y:
        return A11yStatus(
            desktop,
            session,
            "",
            enabled,
            reader,
            False,
            why=f"{BUS_NAME} names no accessibility bus",
            fix=INSTALL_ATSPI,
        )
    try:
        apps = _applications(a11y)
    except A11yError as e:
        return A11yStatus(
            desktop,
            session,
            a11y,
            enabled,
            reader,
            False,
            why=f"the accessibility bus at {a11y} does not list its applications: {e}",
            fix=f"log in again (at-spi2-core's registry, at-spi2-registryd, is not answering); {INSTALL_ATSPI}",
        )
    return A11yStatus(desktop, session, a11y, enabled, reader, True, apps)


def _applications(address: str) -> tuple[str, ...]:
    """The registry's children (each application publishing a tree, as ``atspi.py`` finds them),
    by the name each gives; asked of all at once, a silent one named "?"."""
    from jeepney import DBusAddress, MessageType, new_method_call
    from jeepney.low_level import HeaderFields

    try:
        conn = connect(address)
    except (OSError, RuntimeError, ValueError) as e:
        raise A11yError(f"cannot connect ({type(e).__name__}: {e})") from e
    with conn:
        try:
            refs = registry_children(conn)
        except _Refused as e:
            raise A11yError(str(e)) from e
        names = ["?"] * len(refs)
        waiting: dict[int, int] = {}
        for i, (name, path) in enumerate(refs):
            msg = new_method_call(
                DBusAddress(path, bus_name=name, interface=PROPS), "Get", "ss", (ACCESSIBLE, "Name")
            )
            serial = next(conn.outgoing_serial)
            conn.send(msg, serial=serial)
            waiting[serial] = i
        deadline = time.monotonic() + NAMES_S
        while waiting and (left := deadline - time.monotonic()) > 0:
            try:
                reply = conn.receive(timeout=left)
            except TimeoutError:
                break
            i = waiting.pop(reply.header.fields.get(HeaderFields.reply_serial, -1), -1)
            body = reply.body
            if (
                i >= 0
                and reply.header.message_type != MessageType.error
                and body
                and isinstance(body[0], tuple)
                and len(body[0]) == 2
                and isinstance(body[0][1], str)
            ):
                names[i] = body[0][1][:200] or "(no name)"
    return tuple(names)


# ---- switching


def switch(on: bool, env: Mapping[str, str] | None = None) -> SwitchResult:
    """Set the session's ``IsEnabled`` to ``on`` (read back), and GNOME's ``toolkit-accessibility``
    where gsettings and its schema are installed. ``A11yError`` says what is missing."""
    env = os.environ if env is None else env
    _, conn = _open_session(env)
    with conn:
        # Set before anything else is asked of the launcher: where it is not running yet, this call
        # starts it, and an application that waits for it (Qt) reads the flag the moment it appears
        try:
            call(conn, BUS_PATH, BUS_NAME, PROPS, "Set", "ssv", (STATUS, "IsEnabled", ("b", on)))
            enabled, _ = _flags(conn)
        except A11yError as e:
            raise _launcher_error(e) from e
    if enabled is not on:
        raise A11yError(
            f"{BUS_NAME} took IsEnabled = {str(on).lower()} but reads back {enabled}: its "
            f"setting is locked or not kept (a dconf lock on {SCHEMA} {KEY}?)",
            INSTALL_ATSPI,
        )
    said, done = _gsettings(on, env)
    return SwitchResult(on, said, done, status(env), RESTART_ON if on else RESTART_OFF)


def _gsettings(on: bool, env: Mapping[str, str]) -> tuple[str, bool]:
    """GNOME's copy of the flag (at-spi2-core's launcher writes it too, where it can): set with
    the gsettings tool, read back. Returns what happened in words, and whether it holds ``on``."""
    value = "true" if on else "false"
    exe = shutil.which("gsettings", path=env.get("PATH"))
    if exe is None:
        return (
            f"{SCHEMA} {KEY} not set: no gsettings command here (GNOME's copy of the flag; "
            "apt-get install libglib2.0-bin to have it set too)",
            True,
        )

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [exe, *args], capture_output=True, text=True, timeout=10, env=dict(env)
        )

    try:
        keys = run("list-keys", SCHEMA)
        if keys.returncode != 0 or KEY not in keys.stdout.split():
            return (
                f"{SCHEMA} {KEY} not set: its schema is not installed (GNOME's copy of the flag; "
                "apt-get install gsettings-desktop-schemas to have it set too)",
                True,
            )
        done = run("set", SCHEMA, KEY, value)
        got = run("get", SCHEMA, KEY)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{SCHEMA} {KEY} not set: gsettings failed ({e})", False
    if done.returncode != 0:
        return f"{SCHEMA} {KEY} not set: gsettings said {done.stderr.strip()[:300]!r}", False
    # GLib's memory backend keeps nothing: chosen, or fallen back to (with a warning) without dconf
    if env.get("GSETTINGS_BACKEND") == "memory" or "memory" in done.stderr.lower():
        return (
            f"{SCHEMA} {KEY} not kept: GSettings has no dconf here (apt-get install "
            "dconf-gsettings-backend); the session's flag above is what applications read",
            True,
        )
    if got.stdout.strip() != value:
        return f"{SCHEMA} {KEY} set to {value} but reads back {got.stdout.strip()!r}", False
    return f"{SCHEMA} {KEY} set to {value} (kept across logins by dconf)", True
