"""`mnemo serve` against a browser's attacks and another account on the same machine, over real HTTP
to a real uvicorn on loopback: no request answered without the token, a page whose DNS name was
rebound to 127.0.0.1 (a forged Host), a change posted from another origin or from a frame, a CORS
client that carries the token, signing in (a session cookie that is not the token, expires, and a
limit on wrong guesses that another account cannot turn on the owner), a body too large,
malformed input, the token file, and HTTPS."""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from conftest import api_client, run_cli, serving
from control.answer import OfflineAnswerer
from mnemo.serve.api import create_app
from mnemo.serve.auth import SESSION_COOKIE, SESSION_LIFETIME_S, read_token
from mnemo.serve.service import MemoryService

SECRETS = (
    "voice_1",
    "Lisbon",
    "character_1",
)  # what the people store holds: none of it without the token


def _app(store, **options):
    return create_app(MemoryService(store, OfflineAnswerer(store)), **options)


def _clocked_client(store, token: str):
    """A client, not signed in, of an app whose credentials read the time from ``now[0]``; both."""
    app = _app(store, token=token)
    now = [1_900_000_000.0]
    app.state.credentials.clock = lambda: now[0]
    return api_client(app, signed_in=False), now


def test_a_rebound_host_name_reads_nothing_and_changes_need_this_pages_origin(people_store):
    from bench.faults.access_origins import rebound_hosts

    with (
        serving(people_store, hosts=("mnemo.lan",)) as served,
        httpx.Client(base_url=served.url, headers=served.headers) as client,
    ):
        assert client.get("/people").status_code == 200  # Host: 127.0.0.1:PORT
        port = served.url.rsplit(":", 1)[1]
        for host in rebound_hosts(port):
            reply = client.get("/people", headers={"Host": host})
            assert (
                reply.status_code == 421 and "does not answer for host" in reply.json()["error"]
            ), host
            assert not any(s in reply.text for s in SECRETS)
        # the same host written otherwise: case and a trailing dot (the root of DNS) do not matter
        for host in (
            f"localhost:{port}",
            f"[::1]:{port}",
            f"mnemo.lan:{port}",
            f"LOCALHOST.:{port}",
            "MNEMO.LAN.",
            "127.0.0.1",
        ):
            assert client.get("/health", headers={"Host": host}).status_code == 200, host
        rename = {"name": "Mallory"}
        for origin in (
            "http://evil.example",
            "http://127.0.0.1:1",
            "null",
            f"{served.url}/",
            f"{served.url}/x",
            served.url.replace("http:", "https:"),
            f"http://localhost:{port}",
            f"{served.url}@evil.com",
            f"http://evil.com#@127.0.0.1:{port}",
            "http://127.0.0.1",
        ):
            # another site, another server on this machine (port), a sandboxed frame or a file (null),
            # another scheme or name: each is another origin
            forged = client.post("/people/voice_1/name", json=rename, headers={"Origin": origin})
            assert forged.status_code == 403 and "refused" in forged.json()["error"], origin
        assert not any(p.name == "Mallory" for p in people_store.people())
        own = client.post(
            "/people/voice_1/name", json=rename, headers={"Origin": served.url.upper()}
        )
        assert own.status_code == 200  # the page's own request (an origin's case does not matter)
        assert client.post("/people/undo", json={}).status_code == 200  # no Origin: curl, scripts


def test_a_configured_origin_calls_with_the_token_and_the_page_signs_in_without_it_in_the_url(
    people_store,
):
    origin = "https://notes.example"
    with (
        serving(people_store, token="tok-3141", cors_origins=(origin,)) as served,
        httpx.Client(base_url=served.url) as client,
    ):
        preflight = client.options(
            "/ask",
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,content-type",
            },
        )
        assert (
            preflight.status_code == 200
            and preflight.headers["access-control-allow-origin"] == origin
        )
        asked = client.post(
            "/ask",
            json={"question": "Who went to Lisbon?"},
            headers={"Origin": origin, "Authorization": "Bearer tok-3141"},
        )
        assert asked.status_code == 200 and asked.headers["access-control-allow-origin"] == origin
        assert (
            client.post("/ask", json={"question": "x"}, headers={"Origin": origin}).status_code
            == 401
        )
        # the page: a sign-in form, the token posted as JSON, an HttpOnly SameSite=Strict cookie back
        assert client.get("/").status_code == 401
        assert client.post("/login", json={"token": "wrong"}).status_code == 401
        assert (
            client.post("/login", data={"token": "tok-3141"}).status_code == 415
        )  # a cross-site form cannot
        signed = client.post("/login", json={"token": "tok-3141"})
        cookie = signed.headers["set-cookie"].lower()
        assert signed.status_code == 200 and "httponly" in cookie and "samesite=strict" in cookie
        assert "secure" not in cookie  # plain HTTP: a Secure cookie would never come back
        page = client.get("/")
        assert page.status_code == 200 and "timeline.js" in page.text


def test_nothing_is_answered_without_a_credential(people_store):
    """Every route of the app's router (a route added later is walked too), every method, with no
    credential, a wrong one, a forged or expired session cookie, or the token in a query: 401."""
    app = _app(people_store, token="tok-route-walk")
    client = api_client(app, signed_in=False)
    credentials = app.state.credentials
    expired_at = [0.0]
    credentials.clock = lambda: expired_at[0]
    expired = credentials.new_session()  # made at time 0, expired long ago
    credentials.clock = time.time
    valid = credentials.new_session()
    forged = re.sub(
        r"^\d+", str(int(time.time()) + 10**6), valid
    )  # a later expiry, the signature kept
    walked = []
    for route in app.routes:
        path = re.sub(r"{[^}]+}", "voice_1", route.path)
        for method in sorted(route.methods or ()):
            walked.append(f"{method} {path}")
            for label, extra in (
                ("none", {}),
                ("query", {"params": {"token": "tok-route-walk"}}),
                ("wrong", {"headers": {"Authorization": "Basic dG9rLXJvdXRlLXdhbGs="}}),
                ("expired", {"headers": {"Cookie": f"{SESSION_COOKIE}={expired}"}}),
                ("forged", {"headers": {"Cookie": f"{SESSION_COOKIE}={forged}"}}),
                (
                    "non-ascii",
                    {
                        "headers": {
                            "Cookie": f"{SESSION_COOKIE}=9999999999.abc.\xe9".encode("latin-1")
                        }
                    },
                ),
            ):
                if label == "query" and path == "/":
                    continue  # the sign-in link: a credential there, and only there
                client.cookies.clear()
                body = {"json": {}} if method in ("POST", "PUT", "PATCH", "DELETE") else {}
                reply = client.request(method, path, **body, **extra)
                assert reply.status_code == 401, (method, path, label, reply.status_code)
                assert not any(s in reply.text for s in SECRETS), (method, path, label)
                if path == "/" and method == "GET" and label != "wrong":
                    assert 'id="login"' in reply.text  # the sign-in form, nothing of the memory
    assert {
        "GET /health",
        "POST /ask",
        "GET /openapi.json",
        "POST /forget",
        "GET /media/voice_1",
        "GET /static/voice_1",
        "GET /",
    } <= set(walked) and len(walked) >= 15, walked
    for path in ("/docs", "/redoc", "/nowhere"):  # unknown paths too: what exists is not revealed
        assert client.get(path).status_code == 401
    signed = api_client(
        app
    )  # with the token: no Swagger page (its scripts come from a CDN), the schema
    assert signed.get("/docs").status_code == 404 and signed.get("/redoc").status_code == 404
    assert signed.get("/openapi.json").json()["info"]["title"] == "mnemo"
    assert signed.get("/health").status_code == 200
    with api_client(
        app, signed_in=False
    ) as browser:  # the sign-in link: the page and a session cookie
        assert browser.get("/", params={"token": "tok-route-walk"}).status_code == 200
        assert browser.get("/people").status_code == 200


def test_the_session_cookie_is_not_the_token_and_expires(people_store):
    client, now = _clocked_client(people_store, "tok-session-1")
    signed = client.post("/login", json={"token": "tok-session-1"})
    assert signed.status_code == 200
    header = signed.headers["set-cookie"]
    value = client.cookies[SESSION_COOKIE]
    assert "tok-session-1" not in header and "tok-session-1" not in value
    assert f"Max-Age={SESSION_LIFETIME_S}" in header and SESSION_LIFETIME_S == 12 * 3600
    assert client.get("/people").status_code == 200
    now[0] += SESSION_LIFETIME_S - 60
    assert client.get("/people").status_code == 200
    now[0] += 61  # past its expiry: the server checks it, whatever the browser keeps
    reply = client.get("/people")
    assert reply.status_code == 401 and "expired" in reply.json()["error"]
    other = api_client(
        _app(people_store, token="tok-session-2"), signed_in=False
    )  # a restart with a new token
    other.cookies.set(SESSION_COOKIE, value)
    assert other.get("/people").status_code == 401


def test_wrong_tokens_are_limited_per_address(people_store):
    client, now = _clocked_client(people_store, "tok-limit")
    for guess in range(4):
        assert client.post("/login", json={"token": f"guess-{guess}"}).status_code == 401
    assert (
        client.get("/health", headers={"Authorization": "Bearer guess-4"}).status_code == 401
    )  # counts too
    for attempt in (
        client.post("/login", json={"token": "guess-5"}),
        client.get("/health", headers={"Authorization": "Bearer guess-6"}),
        client.get("/", params={"token": "guess-7"}),
    ):
        assert attempt.status_code == 429 and 0 < int(attempt.headers["retry-after"]) <= 60, (
            attempt.text
        )
        assert "too many wrong tokens" in attempt.json()["error"]
    # the right token is never held up: only wrong ones are limited, or they would lock it out
    assert client.get("/health", headers={"Authorization": "Bearer tok-limit"}).status_code == 200
    assert client.get("/", params={"token": "tok-limit"}).status_code == 200
    client.cookies.clear()
    assert client.post("/login", json={"token": "tok-limit"}).status_code == 200
    assert client.post("/login", json={"token": "guess-8"}).status_code == 429
    now[0] += 61
    assert client.post("/login", json={"token": "guess-9"}).status_code == 401


_GUESSER = """
import sys, httpx
with httpx.Client(base_url=sys.argv[1], timeout=30) as client:
    for i in range(1_000_000):
        reply = client.post("/login", json={"token": f"guess-{i}"})
        print(reply.status_code, flush=True)
"""


def test_another_account_guessing_cannot_lock_the_owner_out(people_store) -> None:
    """Another process on the machine (127.0.0.1, like the owner) posts wrong tokens to /login
    without pause: they are refused with 429 past the limit, while the owner's right token, on
    the page and as a bearer, still signs in at once, again and again during the attack."""
    from mnemo.serve.auth import MAX_FAILURES

    with serving(people_store, token="tok-owner-7") as served:
        guesser = subprocess.Popen(
            [sys.executable, "-c", _GUESSER, served.url],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        try:
            codes: list[int] = []

            def read(n: int) -> None:  # the guesser's answers, in order
                assert guesser.stdout is not None
                while len(codes) < n:
                    line = guesser.stdout.readline()
                    assert line, f"the guessing process stopped: {codes[-5:]}"
                    codes.append(int(line))

            read(MAX_FAILURES + 20)  # past the limit: the owner's address is limited now
            with httpx.Client(base_url=served.url, timeout=30) as owner:
                for _ in range(3):
                    started = time.monotonic()
                    signed = owner.post("/login", json={"token": "tok-owner-7"})
                    took = time.monotonic() - started
                    assert signed.status_code == 200, signed.text
                    assert took < 2.0, f"the right token waited {took:.2f} s"
                    assert owner.get("/people").status_code == 200  # the session it set
                    owner.cookies.clear()
                    bearer = {"Authorization": "Bearer tok-owner-7"}
                    assert owner.get("/people", headers=bearer).status_code == 200
                    wrong = owner.post("/login", json={"token": "tok-owner-8"})
                    assert wrong.status_code == 429 and int(wrong.headers["retry-after"]) > 0
                    seen = len(codes)
                    read(seen + 10)  # the attack goes on between the owner's sign-ins
            assert guesser.poll() is None
        finally:
            guesser.terminate()
            guesser.wait(10)
    assert 200 not in codes
    assert codes[:MAX_FAILURES] == [401] * MAX_FAILURES, codes[: MAX_FAILURES + 1]
    assert set(codes[MAX_FAILURES:]) == {429}, "wrong tokens past the limit must be refused"


def test_security_headers_on_every_answer(people_store):
    with serving(people_store) as served, httpx.Client(base_url=served.url) as client:
        replies = [
            client.get("/"),
            client.get("/health"),
            client.get("/health", headers={"Host": "evil.example"}),
            client.get(served.signin),
            client.get("/static/timeline.js", headers=served.headers),
            client.get("/nowhere", headers=served.headers),
            client.post(
                "/ask", content=b"{", headers={**served.headers, "Content-Type": "application/json"}
            ),
        ]
        assert [r.status_code for r in replies] == [401, 401, 421, 200, 200, 404, 422]
        for reply in replies:
            csp = reply.headers["content-security-policy"]
            assert (
                "frame-ancestors 'none'" in csp
                and "script-src 'self'" in csp
                and "default-src 'none'" in csp
            )
            assert "unsafe-inline" not in csp and "http" not in csp  # no script from anywhere else
            assert (
                reply.headers["x-frame-options"] == "DENY"
                and reply.headers["x-content-type-options"] == "nosniff"
            )
            assert reply.headers["referrer-policy"] == "no-referrer"


def _leaks(reply, store) -> list[str]:
    words = [
        str(store.uri),
        "Traceback",
        "Error:",
        "ValueError",
        "TypeError",
        "AttributeError",
        "OverflowError",
        "JSONDecodeError",
        "KeyError",
        "Exception",
    ]
    return [w for w in words if w in reply.text]


def test_a_huge_body_is_refused_and_not_echoed(people_store):
    with (
        serving(people_store) as served,
        httpx.Client(base_url=served.url, headers=served.headers) as client,
    ):
        marker = b"ZQXJ" * 12_500_000  # 50 MB
        reply = client.post(
            "/ask",
            content=b'{"question": "' + marker + b'"}',
            headers={"Content-Type": "application/json"},
        )
        assert reply.status_code == 413 and "over 1000 kB" in reply.json()["error"]
        assert len(reply.content) < 1000 and b"ZQXJ" not in reply.content

        def chunks():  # no Content-Length: counted as it comes
            yield b'{"question": "'
            for _ in range(30):
                yield b"ZQXJ" * 25_000

        reply = client.post(
            "/forget", content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert reply.status_code == 413 and b"ZQXJ" not in reply.content
        reply = client.post(
            "/ask", json={"question": "ZQXJ" * 200_000}
        )  # 800 kB: read, refused by the model
        assert (
            reply.status_code == 422 and len(reply.content) < 1000 and b"ZQXJ" not in reply.content
        )
        assert (
            client.post(
                "/login", content=marker, headers={"Content-Type": "application/json"}
            ).status_code
            == 413
        )
    assert people_store.count()["clips"] == 2


def test_malformed_input_is_a_4xx_naming_no_path_nor_exception(people_store):
    json_type = {"Content-Type": "application/json"}
    with (
        serving(people_store) as served,
        httpx.Client(base_url=served.url, headers=served.headers) as client,
    ):
        for path, body, headers, status, says in (
            ("/forget", b'{"older_than_days": 1e400}', json_type, 422, "out of range"),
            ("/forget", b'{"older_than_days": 1e308}', json_type, 422, "older_than_days"),
            ("/forget", b'{"older_than_days": NaN}', json_type, 422, "finite"),
            ("/forget", b'{"older_than_days": -Infinity}', json_type, 422, "finite"),
            ("/ask", b"Where is Sheila from?", {"Content-Type": "text/plain"}, 415, "JSON"),
            ("/ask", b"Where is Sheila from?", json_type, 422, "not valid JSON"),
            ("/ask", b'{"question": "\xff"}', json_type, 422, "JSON"),
            ("/ask", b"[" * 100_000, json_type, 422, "JSON"),
            ("/ask", b'{"question": ' + b"9" * 5000 + b"}", json_type, 422, "JSON"),
            ("/ask", b'["x"]', json_type, 422, "body: "),
            ("/people/merge", b'{"a": ["x"], "b": {}}', json_type, 422, "a: "),
            ("/login", b'["x"]', json_type, 422, "token"),
            ("/login", b'{"token": 1e400}', json_type, 422, "out of range"),
            ("/login", b'{"token": ["x"]}', json_type, 422, "token"),
            ("/login", b"tok", json_type, 422, "JSON"),
        ):
            reply = client.post(path, content=body, headers=headers)
            assert reply.status_code == status and says in reply.json()["error"], (
                path,
                body[:40],
                reply.text,
            )
            assert not _leaks(reply, people_store), (
                path,
                body[:40],
                _leaks(reply, people_store),
                reply.text,
            )
    assert people_store.count()["clips"] == 2


def test_a_server_failure_says_nothing_of_it_but_logs_it(people_store, caplog):
    service = MemoryService(people_store, OfflineAnswerer(people_store))

    def broken():
        raise OSError(f"[Errno 5] Input/output error: '{people_store.uri}/clips.lance'")

    service.people = broken
    client = api_client(create_app(service), raise_server_exceptions=False)
    with caplog.at_level("ERROR", logger="mnemo.serve.api"):
        reply = client.get("/people")
    assert reply.status_code == 500 and "its log has the details" in reply.json()["error"]
    assert not _leaks(reply, people_store) and "OSError" not in reply.text
    assert (
        reply.headers["x-frame-options"] == "DENY"
        and "frame-ancestors 'none'" in reply.headers["content-security-policy"]
    )
    ref = re.search(r"error ([0-9a-f]{8})", reply.json()["error"])[1]
    assert any(
        ref in r.getMessage() and r.exc_info and str(people_store.uri) in str(r.exc_info[1])
        for r in caplog.records
    )


def test_a_wildcard_cors_origin_is_refused(people_store, capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    for origin in ("*", "null", "https://notes.example/path", "notes.example"):
        with pytest.raises(ValueError, match="is not allowed"):
            _app(people_store, cors_origins=(origin,))
        code, _, err = run_cli(
            capsys, "serve", "--store", str(people_store.uri), "--cors-origin", origin
        )
        assert code == 2 and "is not allowed" in err and "wildcard" in err, err
    assert not (tmp_path / "run").exists()


# ---- the token `mnemo serve` makes, in a file only the user can read -----------------------------


def _private_run_dir(tmp_path) -> dict:
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(run),
        "MNEMO_GRAPH__TEXT_EMBEDDER": "hash",
        "HF_HUB_OFFLINE": "1",
    }
    env.pop("MNEMO_SERVE_TOKEN", None)
    return env


@pytest.mark.slow  # starts `mnemo serve` in a child process
def test_serve_makes_a_token_prints_a_sign_in_link_and_removes_the_token_file(
    people_store, tmp_path, monkeypatch
):
    env = _private_run_dir(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "mnemo", "serve", "--store", str(people_store.uri), "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        said, deadline = "", time.monotonic() + 120
        while "the token is in" not in said and time.monotonic() < deadline and proc.poll() is None:
            said += proc.stderr.readline()
        link = re.search(r"sign in: (http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))", said)
        assert link, said
        url, port, token = link[1].split("/?")[0], int(link[2]), link[3]
        assert len(token) >= 40
        path = tmp_path / "run" / "mnemo" / f"serve-{port}.token"
        assert str(path) in said
        assert (
            stat.S_IMODE(path.stat().st_mode) == 0o600
            and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        )
        assert path.read_text().strip() == token
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
        assert read_token(port) == token  # as the user's own commands find it
        assert httpx.get(url + "/health").status_code == 401
        assert (
            httpx.get(url + "/health", headers={"Authorization": f"Bearer {token}"}).status_code
            == 200
        )
        with httpx.Client() as browser:
            assert (
                browser.get(link[1]).status_code == 200
                and browser.get(url + "/people").status_code == 200
            )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
        assert not path.exists()  # removed at shutdown
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("what", ["loose file", "loose folder", "another user's file", "a link"])
def test_serve_refuses_a_token_file_others_could_read_and_changes_nothing(
    what, capsys, tmp_path, monkeypatch
):
    from mnemo.bench_serve import free_port

    _private_run_dir(tmp_path)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.delenv("MNEMO_SERVE_TOKEN", raising=False)
    port = free_port()
    folder = tmp_path / "run" / "mnemo"
    folder.mkdir(mode=0o755 if what == "loose folder" else 0o700)
    folder.chmod(0o755 if what == "loose folder" else 0o700)
    path = folder / f"serve-{port}.token"
    if what == "a link":
        (tmp_path / "elsewhere").write_text("old\n")
        path.symlink_to(tmp_path / "elsewhere")
    else:
        path.write_text("old\n")
        path.chmod(0o644 if what == "loose file" else 0o600)
    if what == "another user's file":
        if os.geteuid() != 0:
            pytest.skip("making a file another user's needs root")
        os.chown(path, 65534, 65534)
    before = os.lstat(path)
    code, _, err = run_cli(
        capsys, "serve", "--store", str(tmp_path / "missing"), "--port", str(port)
    )
    says = {
        "loose file": "open to other users (mode 644",
        "loose folder": "open to other users (mode 755",
        "another user's file": "belongs to user id 65534",
        "a link": "symbolic link",
    }[what]
    assert code == 2 and says in err and "changed nothing" in err, err
    after = os.lstat(path)
    assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (
        before.st_mode,
        before.st_uid,
        before.st_mtime_ns,
    )
    assert path.read_text() == "old\n"
    with pytest.raises(PermissionError, match=says.split(" (")[0]):
        read_token(port)  # the user's own commands do not trust it either


def _self_signed(tmp_path):
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def test_https_serves_with_a_secure_cookie(people_store, tmp_path):
    _self_signed(tmp_path)
    with serving(
        people_store,
        (str(tmp_path / "cert.pem"), str(tmp_path / "key.pem")),
        token="tok-2718",
        tls=True,
    ) as served:
        url = served.url
        assert url.startswith("https://")
        import ssl

        trust = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        with httpx.Client(base_url=url, verify=trust) as client:
            signed = client.post("/login", json={"token": "tok-2718"})
            assert signed.status_code == 200 and "secure" in signed.headers["set-cookie"].lower()
            assert (
                client.get("/health", headers={"Authorization": "Bearer tok-2718"}).json()["status"]
                == "ok"
            )
        with pytest.raises(httpx.HTTPError):
            httpx.get(url.replace("https://", "http://") + "/health", timeout=5)
