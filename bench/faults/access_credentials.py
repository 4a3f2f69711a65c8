"""``no_credential``: every route of a real ``mnemo serve`` without a valid credential, the limit on
guessing one, then the token file's modes, and a loose one refused; the right token must still open
each route.
"""

from __future__ import annotations

import os
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path

from bench.faults import mnemo_argv
from bench.faults.access_kit import (
    CLIPS,
    NAME,
    WAIT_S,
    Fingerprint,
    Server,
    carries_data,
    child_env,
    free_port,
    fresh_store,
    login,
    note,
    start_serve,
    summary,
)

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
