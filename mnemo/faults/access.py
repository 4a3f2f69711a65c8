"""Fault scenarios: who may read or change memory. Each attack is made for real against the real
servers on a small store of people and memories: ``mnemo serve`` in its own process on 127.0.0.1
(real HTTP with httpx), ``mnemo mcp`` over stdio through the MCP SDK's client, and a folder's
``./mnemo.toml`` read by a child process run in that folder.

A leak is an answer that carries the store's data (a name, memory text, a clip id, the store's path),
a change to the store that was not the user's, a looser setting that took effect, or a key sent to
where a folder's file pointed. Every scenario also checks that the door opens for the right key (the
token, the page's own origin, the preview's nonce, the user's own config): a guard that refuses
everything would survive an attack and be useless, so that counts as a try that did not end as it
should (``ok=False``).

Each scenario takes ``prelude``: Python source a child runs before mnemo's CLI starts. The bench
passes none; tests pass one that breaks the guard under test, to see the scenario report it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

from mnemo.faults.access_kit import (
    CLIPS,
    EVERYTHING,
    NAME,
    T0,
    WAIT_S,
    Fingerprint,
    Server,
    carries_data,
    child_env,
    clip_id,
    free_port,
    fresh_store,
    login,
    mnemo_argv,
    note,
    raw_get,
    start_serve,
    summary,
)

log = logging.getLogger(__name__)


# ---- rebinding_origin ------------------------------------------------------------------------------

ALLOWED_ORIGIN = "https://notes.example"  # the one --cors-origin the server is started with


def forged_hosts(port: int, run: int) -> list[str]:
    """Host headers a page whose DNS name was rebound to 127.0.0.1 (or a trick of parsing) sends; a
    few change with each try (``run``)."""
    import random

    r = random.Random(run)
    word = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
    return [
        "evil.example",
        f"attacker.example:{port}",
        "127.0.0.1.nip.io",
        f"127.0.0.1.nip.io:{port}",
        "",
        f"127.0.0.1:{port}@evil.com",
        "127.0.0.1.evil.com",
        f"127.0.0.1:{port}:1",
        "127.0.0.1:0",
        "127.0.0.1:99999",
        "[::ffff:127.0.0.1]",
        f"127.0.0.1:{port}/x",
        f"evil.com#@127.0.0.1:{port}",
        "127.0.0.1 evil.com",
        f"localhost.{word}.example:{port}",
        f"{word}.rebind.network:{port}",
        f"mnemo.lan.{word}.example",
        f"0x7f000001:{port}",
        f"2130706433:{port}",
        f"127.1:{port}",
        f"{'127.0.0.1.nip.io'.upper() if run % 2 else 'EVIL.EXAMPLE.'}:{port}",
    ]


def forged_origins(url: str, port: int) -> list[str]:
    """Origins of a change that are not this server's page: another site, another server on this
    machine (port), a sandboxed frame or a file (null), another scheme or name, tricks of parsing."""
    return [
        "http://evil.example",
        "http://127.0.0.1:1",
        f"http://127.0.0.1:{port + 1}",
        "null",
        f"{url}/",
        f"{url}/x",
        url.replace("http:", "https:"),
        f"http://localhost:{port}",
        f"{url}@evil.com",
        f"http://evil.com#@127.0.0.1:{port}",
        "http://127.0.0.1",
        f"http://[::1]:{port}",
        "file://",
        ALLOWED_ORIGIN.replace("notes", "notes.evil"),
        ALLOWED_ORIGIN.replace("https", "http"),
    ]


def rebinding_origin(ctx, tally, prelude: str = "") -> None:
    """A rebound DNS name, a foreign page's change and its CORS preflight, against a real server."""
    import httpx

    where = fresh_store(ctx)
    seen = Fingerprint(where)
    server = start_serve(
        ctx.workdir,
        where,
        "--cors-origin",
        ALLOWED_ORIGIN,
        "--allow-host",
        "mnemo.lan",
        prelude=prelude,
    )
    stopped = False
    try:
        with httpx.Client(base_url=server.url, timeout=30) as client:
            cookie = login(client, server)
            for run in range(
                ctx.runs
            ):  # one server: each try sends other forms of the forged hosts
                wrong: list[str] = []
                leaks = _rebound_hosts(client, server, seen, run, wrong)
                leaks += _forged_origins(client, server, seen, cookie, wrong)
                leaks += _preflights(client, server, cookie, wrong)
                ok = not [
                    w
                    for w in wrong
                    if w.startswith(("the server's own", "the page's own", "the allowed"))
                ]
                orphans = 0
                if run == ctx.runs - 1:
                    stopped = True
                    if not server.stop():
                        orphans = 1
                        wrong.append("mnemo serve did not stop on SIGTERM")
                tally.run(leaks=leaks, orphans=orphans, ok=ok, note=note(run, wrong))
    finally:
        if not stopped:
            server.stop()


def _rebound_hosts(client, server: Server, seen: Fingerprint, run: int, wrong: list[str]) -> int:
    """Reads and a change under each forged Host, with the token: counted when answered or made."""
    leaks = 0
    own = client.get("/people", headers=server.bearer)
    if own.status_code != 200 or NAME not in own.text:
        wrong.append(f"the server's own host was not answered with the data ({own.status_code})")
    answered = []
    for host in forged_hosts(server.port, run):
        before = seen.now()
        read = client.get("/people", headers={**server.bearer, "Host": host})
        change = client.post(
            "/people/voice_2/name",
            json={"name": "Mallory"},
            headers={**server.bearer, "Host": host},
        )
        for reply in (read, change):
            if reply.status_code < 400 or carries_data(reply.text, server.store):
                leaks += 1
                answered.append(f"{reply.request.method} with Host {host!r}: {reply.status_code}")
        if seen.now() != before:
            leaks += 1
            answered.append(f"Host {host!r} changed the store")
    two = raw_get(
        server.port,
        f"GET /people HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nHost: evil.example\r\n"
        f"Authorization: Bearer {server.token}\r\nConnection: close\r\n\r\n",
    )
    if not two.startswith("HTTP/1.1 4") or carries_data(two, server.store):
        leaks += 1
        answered.append(f"two Host headers: {two.splitlines()[0] if two else 'nothing'}")
    wrong += summary("requests under a forged Host answered or obeyed", answered)
    return leaks


def _forged_origins(
    client, server: Server, seen: Fingerprint, cookie: str, wrong: list[str]
) -> int:
    """Changes from each foreign origin, sent as that page's browser would (the session cookie, JSON
    as if a preflight had been granted): a rename, a merge, and a forget carrying a nonce the user's
    own preview got. Counted when the store changed."""
    leaks, made = 0, []
    as_browser = {"Cookie": f"mnemo_session={cookie}"}
    for origin in forged_origins(server.url, server.port):
        preview = client.post("/forget", json={"clip": CLIPS[0]}, headers=server.bearer).json()
        nonce = preview.get("nonce") or "no-preview-nonce"
        for path, body in (
            ("/people/voice_1/name", {"name": "Mallory"}),
            ("/people/merge", {"a": "voice_1", "b": "voice_2"}),
            ("/forget", {"clip": CLIPS[0], "nonce": nonce}),
            ("/people/undo", {}),
        ):
            before = seen.now()
            reply = client.post(path, json=body, headers={**as_browser, "Origin": origin})
            if seen.now() != before:
                leaks += 1
                made.append(f"{path} from {origin!r} was made ({reply.status_code})")
            elif reply.status_code < 400:
                leaks += 1
                made.append(f"{path} from {origin!r} was answered {reply.status_code}")
    wrong += summary("changes from another origin made or answered", made)
    before = seen.now()
    mine = client.post(
        "/people/voice_2/name",
        json={"name": "Tamsin"},
        headers={**as_browser, "Origin": server.url.upper()},
    )
    if mine.status_code != 200 or seen.now() == before:
        wrong.append(f"the page's own origin could not change memory ({mine.status_code})")
    else:
        client.post("/people/undo", json={}, headers=server.bearer)
    page = client.get("/", headers=as_browser)  # what a foreign page framing this one would load
    framing = page.headers.get("content-security-policy", "")
    if page.status_code != 200:
        wrong.append(f"the page's own page did not open with its cookie ({page.status_code})")
    elif (
        "frame-ancestors 'none'" not in framing
        or page.headers.get("x-frame-options", "").upper() != "DENY"
    ):
        leaks += 1
        wrong.append(
            "the page may be framed by another site (no frame-ancestors 'none' / X-Frame-Options DENY)"
        )
    return leaks


def _preflights(client, server: Server, cookie: str, wrong: list[str]) -> int:
    """CORS from foreign origins: neither a preflight nor a read may be granted to them."""
    leaks, granted_to = 0, []
    asks = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type",
    }
    for origin in forged_origins(server.url, server.port):
        pre = client.options("/people/voice_1/name", headers={"Origin": origin, **asks})
        read = client.get(
            "/people", headers={"Origin": origin, "Cookie": f"mnemo_session={cookie}"}
        )
        for what, reply in (("preflight", pre), ("read", read)):
            granted = reply.headers.get("access-control-allow-origin")
            if granted in (origin, "*") or (what == "preflight" and reply.status_code < 300):
                leaks += 1
                granted_to.append(
                    f"{what} from {origin!r} ({reply.status_code}, allow-origin {granted})"
                )
    wrong += summary("CORS grants to foreign origins", granted_to)
    allowed = client.options("/ask", headers={"Origin": ALLOWED_ORIGIN, **asks})
    if allowed.headers.get("access-control-allow-origin") != ALLOWED_ORIGIN:
        wrong.append(
            f"the allowed --cors-origin's preflight was not granted ({allowed.status_code})"
        )
    return leaks


# ---- no_credential -------------------------------------------------------------------------------

EXTRA_PATHS = (
    "/docs",
    "/redoc",
    "/docs/oauth2-redirect",
    "/mcp",
    "/sse",
    "/messages/",
    "/nowhere",
    "/static/",
)
PATH_VALUES = {"person": "voice_1", "clip_id": CLIPS[0], "name": "timeline.js"}
QUERY_VALUES = {"q": "Lisbon"}  # a required query parameter: what a route needs to answer
BODIES: dict[
    str, dict[str, object]
] = {  # plausible bodies of the routes that take one; a route added later gets its model's examples
    "/ask": {"question": "Who went to Lisbon?"},
    "/forget": {"clip": CLIPS[0]},
    "/people/merge": {"a": "voice_1", "b": "voice_2"},
    "/people/undo": {},
    "/people/{person}/name": {"name": "Mallory"},
    "/people/{person}/split": {"members": ["face_1"]},
    "/login": {"token": "not-the-token"},
}


def routes(store_path: Path) -> list[tuple[str, str, dict | None, dict]]:
    """(method, path, body, required query) of every route the app has, walked from its router (a route added later
    is tried too), plus paths it should not have (Swagger, an MCP over HTTP)."""
    import re

    from starlette.routing import Mount, Route, WebSocketRoute

    from mnemo.serve.api import create_app
    from mnemo.serve.service import MemoryService

    app = create_app(
        MemoryService(Fingerprint(store_path).store, None), token="only-to-list-the-routes"
    )
    out: list[tuple[str, str, dict | None, dict]] = []
    for route in app.routes:
        if not isinstance(
            route, (Route, Mount, WebSocketRoute)
        ):  # (every route this app has is one)
            continue
        path = re.sub(r"{([^}:]+)(:[^}]*)?}", lambda m: PATH_VALUES.get(m[1], CLIPS[0]), route.path)
        for method in sorted(getattr(route, "methods", None) or ("GET",)):
            body: dict | None = None
            if method in ("POST", "PUT", "PATCH", "DELETE"):
                body = BODIES.get(route.path)
                field = getattr(route, "body_field", None)
                if body is None and field is not None:
                    schema = (
                        field.type_.model_json_schema()
                        if hasattr(field.type_, "model_json_schema")
                        else {}
                    )
                    body = {
                        k: (v.get("examples") or [""])[0]
                        for k, v in schema.get("properties", {}).items()
                    }
                body = body if body is not None else {}
            dependant = getattr(route, "dependant", None)
            params = {
                q.alias: QUERY_VALUES.get(q.alias, "Lisbon")
                for q in getattr(dependant, "query_params", ())
                if q.field_info.is_required()
            }
            out.append((method, path, body, params))
    return (
        out
        + [("GET", p, None, {}) for p in EXTRA_PATHS]
        + [("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {})]
    )


def _credentials(server: Server, cookie: str, run: int) -> list[tuple[str, dict, dict]]:
    """(label, headers, query) of requests that carry no valid credential; the token in the query
    goes in another parameter each try (``run``)."""
    from mnemo.serve.auth import Credentials

    old = Credentials(
        server.token, clock=lambda: 0.0
    ).new_session()  # signed right, expired in 1970
    later = f"{int(time.time()) + 10**6}.{cookie.split('.', 1)[1]}"  # a later expiry, the signature kept
    other = Credentials(server.token + "x").new_session()  # signed with another token (a restart)
    name = ("token", "access_token", "api_key", "key")[run % 4]
    return [
        ("none", {}, {}),
        (f"the token in ?{name}=", {}, {name: server.token}),
        ("wrong bearer", {"Authorization": "Bearer not-the-token"}, {}),
        ("basic", {"Authorization": "Basic " + server.token}, {}),
        ("token as a cookie", {"Cookie": f"mnemo_session={server.token}"}, {}),
        ("expired cookie", {"Cookie": f"mnemo_session={old}"}, {}),
        ("forged cookie", {"Cookie": f"mnemo_session={later}"}, {}),
        ("another token's cookie", {"Cookie": f"mnemo_session={other}"}, {}),
    ]


def no_credential(ctx, tally, prelude: str = "") -> None:
    """Every route without a valid credential, then the token file's modes, and a loose one refused."""
    import httpx

    where = fresh_store(ctx)
    seen = Fingerprint(where)
    walked = routes(where)
    server = start_serve(ctx.workdir, where, prelude=prelude)
    stopped = False
    try:
        with httpx.Client(
            base_url=server.url,
            timeout=30,
            transport=httpx.HTTPTransport(local_address="127.0.0.2"),
        ) as client:
            cookie = login(client, server)
            for run in range(
                ctx.runs
            ):  # one server; each try puts the token in another query parameter
                leaks, orphans, wrong = 0, 0, []
                before = seen.now()
                own = client.get("/people", headers=server.bearer)
                if own.status_code != 200 or NAME not in own.text:
                    wrong.append(
                        f"the token itself was refused ({own.status_code}): the scenario can tell nothing"
                    )
                leaks += _token_file(server, wrong)
                leaks += guess_limit(server, wrong)
                leaks += _walk(server, walked, _credentials(server, cookie, run), run, wrong)
                if seen.now() != before:
                    leaks += 1
                    wrong.append("requests without a credential changed the store")
                if (
                    run == ctx.runs - 1
                ):  # the last try also stops the server and tries loose token files
                    stopped = True
                    if not server.stop():
                        orphans += 1
                        wrong.append("mnemo serve did not stop on SIGTERM")
                    if server.token_file.exists():
                        orphans += 1
                        wrong.append(f"the token file {server.token_file} outlived its server")
                    from concurrent.futures import ThreadPoolExecutor

                    with ThreadPoolExecutor(
                        2
                    ) as pool:  # two children at once: each waits on its start
                        leaks += sum(
                            pool.map(
                                lambda loose, wrong=wrong: _loose_token_file(
                                    ctx.workdir, where, loose, prelude, wrong
                                ),
                                ("file", "folder"),
                            )
                        )
                ok = not any(w.startswith("the token itself") for w in wrong)
                tally.run(leaks=leaks, orphans=orphans, ok=ok, note=note(run, wrong))
    finally:
        if not stopped:
            server.stop()


def _walk(server: Server, walked, credentials, run: int, wrong: list[str]) -> int:
    """Each route with each credential that is not one: counted when 2xx or carrying data. Each kind
    of credential comes from its own loopback address (127.0.R.K), so the limit on wrong tokens,
    which is per address, refuses one kind's guesses without hiding how the others are answered."""
    import httpx

    leaks, answered = 0, []
    for kind, (label, headers, query) in enumerate(credentials):
        source = f"127.0.{run % 250 + 1}.{kind + 2}"
        with httpx.Client(
            base_url=server.url, timeout=30, transport=httpx.HTTPTransport(local_address=source)
        ) as client:
            for method, path, body, params in walked:
                if query.get("token") and path == "/" and method == "GET":
                    continue  # the sign-in link: a credential there, and only there
                reply = client.request(
                    method,
                    path,
                    headers=headers,
                    params={**params, **query},
                    **({"json": body} if body is not None else {}),
                )
                found = carries_data(reply.text, server.store)
                if found or 200 <= reply.status_code < 300:
                    leaks += 1
                    answered.append(
                        f"{method} {path} with {label}: {reply.status_code}"
                        + (f" carrying {found[:2]}" if found else "")
                    )
                client.cookies.clear()
    wrong += summary("requests without a valid credential answered", answered)
    return leaks


def guess_limit(server: Server, wrong: list[str]) -> int:
    """Wrong tokens from one process, each claiming another client address (X-Forwarded-For, as a
    proxy would write it): past the limit they must be refused (429), whatever address they claim
    (only the right token passes the limit, so a wrong one past it gets nothing but 429). Counted:
    the guesses past the limit answered otherwise."""
    import httpx

    from mnemo.serve.auth import MAX_FAILURES

    # from 127.0.0.1, the address uvicorn's proxy headers trust by default (the scenario's own requests
    # come from 127.0.0.2, the walk's from others: a limit reached here holds up neither)
    with httpx.Client(
        base_url=server.url, timeout=30, transport=httpx.HTTPTransport(local_address="127.0.0.1")
    ) as client:
        codes = [
            client.get(
                "/health",
                headers={
                    "Authorization": f"Bearer guess-{i}",
                    "X-Forwarded-For": f"198.51.100.{i + 1}",
                },
            ).status_code
            for i in range(MAX_FAILURES + 4)
        ]
    judged = sum(code != 429 for code in codes[MAX_FAILURES:])
    if judged:
        wrong.append(
            f"{judged} wrong tokens past the limit of {MAX_FAILURES} were not refused, each claiming another "
            f"address in X-Forwarded-For ({codes})"
        )
    return judged


def _token_file(server: Server, wrong: list[str]) -> int:
    """The running server's token file: its own, 0600 in a 0700 folder, holding the token."""
    leaks = 0
    for path, mode in ((server.token_file, 0o600), (server.token_file.parent, 0o700)):
        st = os.lstat(path)
        if (
            stat.S_IMODE(st.st_mode) & 0o077
            or stat.S_ISLNK(st.st_mode)
            or st.st_uid != os.geteuid()
        ):
            leaks += 1
            wrong.append(
                f"{path} is open to others (mode {stat.S_IMODE(st.st_mode):o}, needs {mode:o})"
            )
    if server.token_file.read_text().strip() != server.token:
        wrong.append("the token file does not hold the server's token")
    return leaks


def _loose_token_file(
    workdir: Path, store: Path, loose: str, prelude: str, wrong: list[str]
) -> int:
    """``mnemo serve`` where its token file (or folder) could be read by others: it must refuse to
    start and leave the file as it was."""
    port = free_port()
    env = child_env(workdir / f"loose-{loose}")
    folder = Path(env["XDG_RUNTIME_DIR"]) / "mnemo"
    folder.mkdir(mode=0o700, exist_ok=True)
    folder.chmod(0o755 if loose == "folder" else 0o700)
    path = folder / f"serve-{port}.token"
    path.write_text("old\n")
    path.chmod(0o644 if loose == "file" else 0o600)
    before = os.lstat(path)
    proc = subprocess.Popen(
        mnemo_argv(["serve", "--store", str(store), "--port", str(port)], prelude),
        env=env,
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline, serving = time.monotonic() + WAIT_S, False
    while proc.poll() is None and time.monotonic() < deadline and not serving:
        time.sleep(0.3)
        with socket.socket() as s:
            serving = (
                s.connect_ex(("127.0.0.1", port)) == 0
            )  # it took the port: it is starting to serve
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    err = ("it went on to serve: " if serving else "") + proc.communicate()[1]
    after = os.lstat(path) if os.path.lexists(path) else None
    kept = (
        after is not None
        and (after.st_mode, after.st_mtime_ns) == (before.st_mode, before.st_mtime_ns)
        and path.read_text() == "old\n"
    )
    if proc.returncode == 2 and "open to other users" in err and kept:
        return 0
    wrong.append(
        f"a token {loose} others could read was not refused (exit {proc.returncode}, "
        f"{'kept' if kept else 'changed'}): {err.strip()[-200:]}"
    )
    return 1


# ---- mcp_one_call_forget -------------------------------------------------------------------------

SHORT_NONCES = (
    "import time as _t, mnemo.serve.confirm as _c\n"
    "_c.Confirmations.__init__.__defaults__ = (2.0, _t.monotonic)"
)  # a nonce expires in 2 s


def mcp_one_call_forget(ctx, tally, prelude: str = "") -> None:
    """``mnemo mcp`` over stdio: forget off by default; with ``--allow-forget`` only a preview's own
    nonce forgets, and only what it previewed. Three servers (forget off, on, on with nonces that
    expire in 2 s) serve all tries; try ``i`` aims at clip ``i`` of a store with one clip more."""
    import asyncio

    where = fresh_store(ctx, ctx.runs + 1)
    tries = asyncio.run(
        asyncio.wait_for(_mcp_tries(ctx.workdir, where, ctx.runs, prelude), 300 + 60 * ctx.runs)
    )
    for run, (leaks, lost, wrong) in enumerate(tries):
        ok = not any(w.startswith("the right way") for w in wrong)
        tally.run(leaks=leaks, lost=lost, ok=ok, note=note(run, wrong))


def _mcp_server(workdir: Path, store: Path, prelude: str, *options: str):
    from mcp import StdioServerParameters

    argv = mnemo_argv(["mcp", "--store", str(store), *options], prelude)
    return StdioServerParameters(
        command=argv[0], args=argv[1:], env=child_env(workdir), cwd=str(workdir)
    )


async def _mcp_tries(
    workdir: Path, store: Path, runs: int, prelude: str
) -> list[tuple[int, int, list[str]]]:
    import asyncio

    from mcp import Client

    seen = Fingerprint(store)
    last = clip_id(runs)  # no try aims at it: it must stay
    tries, missing = [], set()

    async def refused(client, label: str, request: dict, wrong: list[str]) -> int:
        held = seen.held()
        reply = await client.call_tool("forget", {"request": request})
        gone = held - seen.held()
        if gone or not reply.is_error:
            wrong.append(f"{label}: {'deleted ' + str(gone) if gone else 'not refused'}")
            return max(gone, 1)
        return 0

    async def forget(client, request: dict) -> dict:
        return (await client.call_tool("forget", {"request": request})).structured_content or {}

    def span(index: int) -> dict:
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        return {"from": iso(T0 + 30 * index), "to": iso(T0 + 30 * index + 29)}

    async with (
        Client(_mcp_server(workdir, store, prelude), read_timeout_seconds=120) as off,
        Client(
            _mcp_server(workdir, store, prelude, "--allow-forget"), read_timeout_seconds=120
        ) as on,
        Client(
            _mcp_server(workdir, store, f"{prelude}\n{SHORT_NONCES}", "--allow-forget"),
            read_timeout_seconds=120,
        ) as short,
    ):
        for run in range(runs):
            target, wrong = clip_id(run), []
            leaks = lost = 0
            if "forget" in {t.name for t in (await off.list_tools()).tools}:
                leaks += 1
                wrong.append("forget is offered without --allow-forget")
            one_calls: list[dict[str, object]] = [
                {**EVERYTHING, "confirm": True},
                {"clip": target, "confirm": True},
                {"clip": target, "nonce": "made-up-nonce-0123456789abcdef"},
            ]
            one_call = one_calls[run % 3]
            leaks += await refused(off, "one call, forget off", one_call, wrong)
            leaks += await refused(
                on, "confirm=true, no nonce", {**EVERYTHING, "confirm": True}, wrong
            )
            leaks += await refused(
                on,
                "a made-up nonce",
                {"clip": target, "nonce": "made-up-nonce-0123456789abcdef"},
                wrong,
            )
            first = (await forget(on, span(run))).get("nonce") or "none"
            leaks += await refused(
                on, "another range's nonce", {**EVERYTHING, "nonce": first}, wrong
            )
            leaks += await refused(on, "a spent nonce", {**span(run), "nonce": first}, wrong)
            held = seen.held()
            preview = await forget(on, {"clip": target})
            done = await on.call_tool(
                "forget", {"request": {"clip": target, "nonce": preview.get("nonce") or ""}}
            )
            gone, expected = (
                held - seen.held(),
                preview.get("clips", 0) + preview.get("memories", 0),
            )
            if done.is_error or not expected or gone != expected:
                wrong.append(
                    f"the right way (preview, then its nonce) forgot {gone}, not the {expected} previewed"
                )
                lost += max(gone - expected, 0)
            leaks += await refused(
                on, "a used nonce", {"clip": last, "nonce": preview.get("nonce") or "none"}, wrong
            )
            late = (await forget(short, {"clip": last})).get("nonce") or "none"
            await asyncio.sleep(2.5)
            leaks += await refused(short, "an expired nonce", {"clip": last, "nonce": late}, wrong)
            seen.store.catch_up()
            kept = [
                c
                for c in (*(clip_id(i) for i in range(run + 1, runs)), last)
                if c not in missing and not seen.store.has_clip(c)
            ]
            missing.update(kept)
            if kept:
                lost += len(kept)
                wrong.append(f"{', '.join(kept)} forgotten, which no request named")
            tries.append((leaks, lost, wrong))
    return tries


# ---- hostile_config ------------------------------------------------------------------------------

COLLECTOR_SECRET_ENV = "MNEMO_FAULT_COLLECTED_KEY"


def _choices(annotation, default) -> list:
    """Other values a setting of this type can take (Literal choices, booleans, a text)."""
    from typing import Literal, get_args, get_origin

    args = [a for a in get_args(annotation) if a is not type(None)]
    if get_origin(annotation) is Literal:
        return list(args)
    if args and get_origin(args[0]) is Literal:  # Optional[Literal[...]]
        return list(get_args(args[0]))
    if annotation is bool:
        return [True, False]
    if annotation is str or str in args:
        return [default, "/tmp/mnemo-hostile-folder", "http://collector.example/v1"]
    return [default]


def hostile_values(variant: int = 0) -> dict[str, tuple[object, object]]:
    """For each setting a folder's ``mnemo.toml`` may not loosen (``PROJECT_RULES``, walked, so a
    setting added later is tried): (the trusted value, a looser one), by the rule's meaning; the
    trusted value is set in the user's own config where the default leaves nothing to loosen."""
    from pydantic import BaseModel

    from mnemo.config import ADD, FREE, LOWER, LOWER_CAP, PROJECT_RULES, RAISE, TRUSTED, MnemoConfig

    out = {}
    for key, rule in PROJECT_RULES.items():
        if rule is FREE:
            continue
        section, name = key.split(".")
        # every section of MnemoConfig is a model of its own (pydantic types an annotation as optional)
        section_model = cast("type[BaseModel]", MnemoConfig.model_fields[section].annotation)
        field = section_model.model_fields[name]
        default = field.get_default(call_default_factory=True)
        positive = any(type(m).__name__ == "Gt" for m in field.metadata)
        if rule is ADD:
            trusted = default or ["mnemo-fault-kept"]
            looser = [[], trusted[1:]][variant % 2]
        elif rule is LOWER:
            trusted, looser = default, [default * 10 + 1, default + 0.5][variant % 2]
        elif rule is LOWER_CAP:
            trusted = default or 5.0
            looser = [0.0, trusted * 10][variant % 2]
        elif rule is RAISE:
            trusted, looser = (
                default,
                ([default / 10] if positive else [0.0, default / 10])[
                    variant % (1 + (not positive))
                ],
            )
        elif rule is TRUSTED:
            trusted = default
            looser = next(c for c in _choices(field.annotation, default) if c != default)
        else:  # may only be one value: trusted is that value, looser any other
            choices = _choices(field.annotation, default)
            trusted = next(c for c in choices if rule.stricter(object(), c) == (c, False))
            looser = next(c for c in choices if c != trusted)
        out[key] = (trusted, looser)
    return out


def toml_text(settings: dict[str, object]) -> str:
    sections: dict[str, list[str]] = {}
    for path, value in settings.items():
        section, key = path.split(".")
        sections.setdefault(section, []).append(
            f"{key} = {json.dumps(value)}"
        )  # JSON scalars and lists are TOML
    return "".join(f"[{s}]\n" + "\n".join(lines) + "\n" for s, lines in sections.items())


LOAD = (
    "from mnemo.cli import _configure_logging\n_configure_logging(False)\n"
    "from mnemo.config import load_config\nprint(load_config().model_dump_json())"
)


def hostile_config(ctx, tally, prelude: str = "") -> None:
    """A downloaded folder's ``./mnemo.toml`` that loosens every guarded setting at once, read by a
    child run in that folder; then one that points the LLM (and the user's key) at a collector."""
    store = fresh_store(ctx)  # only read, by `mnemo ask`
    for run in range(ctx.runs):
        home = ctx.workdir / f"try-{run}"
        folder = home / "downloaded"
        folder.mkdir(parents=True)
        env = child_env(home)
        values = hostile_values(run)
        user = Path(env["XDG_CONFIG_HOME"]) / "mnemo" / "mnemo.toml"
        user.parent.mkdir(parents=True, exist_ok=True)
        from mnemo.config import MnemoConfig

        defaults = (
            MnemoConfig.model_construct()
        )  # no source read: the defaults, which the user need not write
        user.write_text(
            toml_text(
                {
                    k: t
                    for k, (t, _) in values.items()
                    if t != getattr(getattr(defaults, k.split(".")[0]), k.split(".")[1])
                }
            )
        )
        (folder / "mnemo.toml").write_text(
            toml_text({**{k: v for k, (_, v) in values.items()}, "control.top_k": 7})
        )
        child = subprocess.run(
            [sys.executable, "-c", f"{prelude}\n{LOAD}"],
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        leaks, wrong = 0, []
        if child.returncode != 0:
            tally.run(
                ok=False,
                note=f"try {run + 1}: loading the config failed: {child.stderr.strip()[-300:]}",
            )
            continue
        cfg = json.loads(child.stdout.strip().splitlines()[-1])
        if cfg["control"]["top_k"] != 7:
            wrong.append(
                "the folder's mnemo.toml was not read at all (its free top_k = 7 did not hold)"
            )
        took, silent = [], []
        for key, (trusted, looser) in values.items():
            section, name = key.split(".")
            if cfg[section][name] != trusted:
                leaks += 1
                took.append(f"[{section}] {name} = {looser!r}")
            elif f"[{section}] {name} = " not in child.stderr:
                silent.append(f"[{section}] {name}")
        wrong += summary(f"looser settings of {len(values)} took effect", took, 6)
        wrong += summary("looser settings ignored without a warning naming them", silent, 6)
        sent, said = _key_sent_elsewhere(store, folder, prelude)
        leaks += sent
        wrong += said
        ok = not (silent or [w for w in wrong if "not read at all" in w or "mnemo ask" in w])
        tally.run(leaks=leaks, ok=ok, note=note(run, wrong))


def _key_sent_elsewhere(store: Path, folder: Path, prelude: str) -> tuple[int, list[str]]:
    """``mnemo ask`` run in a folder whose ``mnemo.toml`` sends the LLM's calls, with the user's key,
    to a collector on this machine: leaks are the calls that reached it and the keys among them."""
    import http.server
    import secrets
    import threading

    got: list[tuple[str, str]] = []

    class Collector(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the standard library's name)
            body = self.rfile.read(int(self.headers.get("content-length") or 0)).decode(
                "utf-8", "replace"
            )
            got.append((self.headers.get("authorization") or "", body))
            self.send_response(503)
            self.end_headers()

        do_GET = do_POST  # noqa: N815

        def log_message(self, *_args):
            pass

    collector = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    keys = {
        "OPENAI_API_KEY": "sk-user-" + secrets.token_hex(8),
        COLLECTOR_SECRET_ENV: "aws-" + secrets.token_hex(8),
    }
    (folder / "mnemo.toml").write_text(
        toml_text(
            {
                "llm.base_url": f"http://127.0.0.1:{collector.server_address[1]}/v1",
                "llm.api_key_env": COLLECTOR_SECRET_ENV,
                "llm.allow_plain_http_key": True,
                "llm.model": "m",
                "llm.max_retries": 0,
                "llm.timeout_s": 10.0,
                "control.agent": "llm",
                "memorize.writer": "llm",
                "perception.caption_backend": "vlm",
            }
        )
    )
    env = child_env(folder.parent, **keys)
    try:
        child = subprocess.run(
            mnemo_argv(["ask", "Who went to Lisbon?", "--store", str(store)], prelude),
            env=env,
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=180,
        )
    finally:
        collector.shutdown()
        collector.server_close()
    wrong = []
    if got:
        wrong.append(f"{len(got)} call(s) reached the folder's LLM endpoint")
    stolen = [k for k in keys.values() if any(k in auth or k in body for auth, body in got)]
    if stolen:
        wrong.append(f"{len(stolen)} API key(s) reached it")
    if child.returncode != 0 and not got:
        wrong.append(
            f"mnemo ask failed in the folder (exit {child.returncode}): {child.stderr.strip()[-200:]}"
        )
    return (1 if got else 0) + len(stolen), wrong


SCENARIOS = {
    "rebinding_origin": rebinding_origin,
    "no_credential": no_credential,
    "mcp_one_call_forget": mcp_one_call_forget,
    "hostile_config": hostile_config,
}
