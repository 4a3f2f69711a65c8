"""``rebinding_origin``: against a real ``mnemo serve``, a rebound DNS name (forged ``Host`` headers),
a foreign page's change (forged ``Origin`` headers) and its CORS preflight; the page's own origin
and the one allowed origin must still be answered.
"""

from __future__ import annotations

from bench.faults.access_kit import (
    CLIPS,
    NAME,
    Fingerprint,
    Server,
    carries_data,
    fresh_store,
    login,
    note,
    raw_get,
    start_serve,
    summary,
)

# ---- rebinding_origin ------------------------------------------------------------------------------

ALLOWED_ORIGIN = "https://notes.example"  # the one --cors-origin the server is started with


def rebound_hosts(port: int | str) -> list[str]:
    """Host headers that a server on 127.0.0.1:``port`` answers for none: another name (a DNS name
    rebound to 127.0.0.1), or a trick of parsing."""
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
    ]


def forged_hosts(port: int, run: int) -> list[str]:
    """Host headers a page whose DNS name was rebound to 127.0.0.1 (or a trick of parsing) sends; a
    few change with each try (``run``)."""
    import random

    r = random.Random(run)
    word = "".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(8))
    return [
        *rebound_hosts(port),
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
