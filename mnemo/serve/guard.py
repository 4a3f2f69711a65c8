"""The door of ``mnemo serve``: one ASGI middleware in front of every route, before CORS and the
router. In order: the security headers on whatever is answered, the ``Host`` (DNS rebinding) and
a change's ``Origin`` (another site's page), the body's size, then a credential (the token as a
bearer, or the page's session cookie), and a JSON body's syntax. Nothing past it is reached
without a credential, so a route added later is covered without a thought."""

from __future__ import annotations

import ipaddress
import json
import logging
import math
import re
from typing import NamedTuple

from starlette.datastructures import MutableHeaders, QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mnemo.serve.auth import SESSION_COOKIE, TOKEN_ENV, Credentials

log = logging.getLogger(__name__)

MAX_BODY = 1_000_000  # bytes: a question, a filter or a name is far smaller
CHANGES = ("POST", "PUT", "PATCH", "DELETE")
_NAME = r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?"
_HOST = re.compile(rf"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>{_NAME}))(?::(?P<port>[0-9]{{1,5}}))?")
_ORIGIN = re.compile(r"(?P<scheme>https?)://(?P<authority>[^/?#@\\\s]+)")


class Authority(NamedTuple):
    host: str  # lower case, no brackets, no trailing dot
    port: int | None


def parse_authority(value: str) -> Authority | None:
    """``host[:port]`` of a ``Host`` header or an origin, strictly: a DNS name, an IPv4 address or
    a bracketed IPv6 address, and a port; None for anything else (``127.0.0.1:80@evil.example``,
    a path, spaces, two ports). Case does not matter and a trailing dot names the same host
    (``localhost.``), so both are normalised, not refused."""
    match = _HOST.fullmatch(value.strip().lower())
    if not match:
        return None
    port = int(match["port"]) if match["port"] else None
    if port is not None and not 0 < port < 65536:
        return None
    if match["v6"]:
        try:
            return Authority(str(ipaddress.IPv6Address(match["v6"])), port)
        except ValueError:
            return None
    return Authority(match["name"].removesuffix("."), port)


def parse_origin(value: str) -> tuple[str, Authority] | None:
    """(scheme, authority) of an ``Origin`` header; None for ``null`` (a sandboxed frame, a file,
    a redirect across sites) and anything that is not ``http(s)://host[:port]``."""
    match = _ORIGIN.fullmatch(value.strip().lower())
    if not match:
        return None
    authority = parse_authority(match["authority"])
    return (match["scheme"], authority) if authority else None


def normalise_origin(value: str) -> str:
    """A configured web origin as browsers send it (lower case, no default port, no slash);
    ``ValueError`` for ``*``, ``null`` and anything but ``http(s)://host[:port]``."""
    parsed = parse_origin(value.rstrip("/"))
    if value.strip() == "*" or parsed is None:
        raise ValueError(
            f"--cors-origin {value!r} is not allowed: give each web origin that may call the API "
            "with the token, as https://host[:port] (a wildcard would let every site try)"
        )
    scheme, (host, port) = parsed
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}" + (
        f":{port}" if port and port != {"http": 80, "https": 443}[scheme] else ""
    )


def security_headers(csp: str) -> list[tuple[str, str]]:
    """On every response: no framing (the two-click Forget cannot be clickjacked), no script
    but this server's, no referrer (a sign-in link's token stays here), no sniffing."""
    return [
        ("content-security-policy", csp),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cross-origin-resource-policy", "same-origin"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cache-control", "no-store"),
    ]


class _BadBody(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _BadBody(f"the number {text[:40]} is out of range: send finite numbers")
    return value


def _no_constant(text: str):
    raise _BadBody(f"{text} is not JSON: send finite numbers")


def check_json(body: bytes) -> str | None:
    """What is wrong with a JSON body, without echoing it; None when it parses to finite values."""
    try:
        json.loads(body, parse_float=_finite, parse_constant=_no_constant)
    except _BadBody as e:
        return str(e)
    except json.JSONDecodeError as e:
        return f"the body is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})"
    except (
        ValueError,
        RecursionError,
    ) as e:  # not UTF-8, an integer of thousands of digits, deep nesting
        return f"the body is not JSON mnemo can read ({type(e).__name__ if isinstance(e, RecursionError) else e})"
    return None


class Guard:
    """The middleware (see the module). ``hosts``: the host names answered (lower case);
    ``cors_origins``: normalised origins that may change memory from a browser; ``login_page``:
    the sign-in form shown at ``/`` without a credential."""

    def __init__(
        self,
        app: ASGIApp,
        credentials: Credentials,
        hosts: frozenset[str],
        cors_origins: tuple[str, ...],
        tls: bool,
        login_page: str,
        csp: str,
        max_body: int = MAX_BODY,
    ) -> None:
        self.app, self.credentials, self.hosts, self.cors_origins = (
            app,
            credentials,
            hosts,
            cors_origins,
        )
        self.scheme, self.login_page, self.max_body = (
            ("https" if tls else "http"),
            login_page,
            max_body,
        )
        self.headers = [(k.encode(), v.encode()) for k, v in security_headers(csp)]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)  # lifespan; no websocket route exists
            return
        cookie: list[str] = []

        async def send_guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(raw=message.setdefault("headers", []))
                for key, value in self.headers:
                    if key.decode() not in headers:
                        headers.raw.append((key, value))
                for set_cookie in cookie:
                    headers.append("set-cookie", set_cookie)
            await send(message)

        refusal = self._refusal(scope)
        if refusal is None and scope["path"] == "/login" and scope["method"] == "POST":
            refusal = await self._login(
                scope, receive, cookie
            )  # the answer, whether signed in or not
        elif refusal is None:
            refusal = self._credential(scope, cookie)
        if refusal is None and scope["method"] in CHANGES:
            body = await self._body(scope, receive)
            if isinstance(body, Response):
                refusal = body
            else:
                receive = _replay(body, receive)
        if refusal is not None:
            await refusal(scope, receive, send_guarded)
            return
        await self.app(scope, receive, send_guarded)

    def _refusal(self, scope: Scope) -> Response | None:
        """421 for a Host this server is not, 403 for a change from another origin, 413 for a body
        announced too large; None to go on."""
        hosts = [v for k, v in scope["headers"] if k == b"host"]
        host = parse_authority(hosts[0].decode("latin-1")) if len(hosts) == 1 else None
        if host is None or host.host not in self.hosts:
            shown = (
                hosts[0].decode("latin-1")[:100]
                if len(hosts) == 1
                else f"{len(hosts)} Host headers"
            )
            return error_response(
                421,
                f"this server does not answer for host {shown!r}; open it as http://127.0.0.1 or "
                "http://localhost, or start it with --allow-host NAME",
            )
        request = Request(scope)
        origin = request.headers.get("origin")
        if (
            origin is not None
            and scope["method"] in CHANGES
            and origin.lower() not in self.cors_origins
        ):
            parsed = parse_origin(origin)
            if parsed is None or _full(*parsed) != _full(
                self.scheme, host
            ):  # null, another site, port or scheme
                return error_response(
                    403,
                    f"a change from {origin[:100]!r} is refused: only this server's own page, or an "
                    "origin given with --cors-origin, may change memory",
                )
        length = request.headers.get("content-length", "0")
        if not length.isdigit():
            return error_response(400, "the Content-Length header is not a number")
        if int(length) > self.max_body:
            return self._too_large()
        return None

    def _too_large(self) -> Response:
        return error_response(
            413,
            f"the request body is over {self.max_body // 1000} kB, more than a question, a filter or "
            "a name needs: refused, and nothing was kept",
        )

    def _credential(self, scope: Scope, cookie: list[str]) -> Response | None:
        """None when the request carries the token or a live session; else 401 (the sign-in form
        at ``/``), or 429 for a wrong token after too many from this address."""
        if (
            self.cors_origins
            and scope["method"] == "OPTIONS"
            and any(k == b"access-control-request-method" for k, _ in scope["headers"])
        ):
            return None  # a CORS preflight carries no credential and reveals nothing
        request = Request(scope)
        page = scope["path"] == "/" and scope["method"] in ("GET", "HEAD")
        auth = request.headers.get("authorization")
        if auth is not None:
            scheme, _, given = auth.partition(" ")
            if scheme.lower() != "bearer":
                return error_response(401, "send the token as 'Authorization: Bearer TOKEN'")
            return self._try_token(scope, given.strip())
        session = request.cookies.get(SESSION_COOKIE)
        if session and self.credentials.session_ok(session):
            return None
        link_token = QueryParams(scope["query_string"]).get("token")
        if page and link_token is not None:  # the sign-in link `mnemo serve` printed
            refused = self._try_token(scope, link_token)
            if refused is None:
                cookie.append(self._session_cookie())
                return None
            return refused if refused.status_code == 429 else self._sign_in(401)
        if page:
            return self._sign_in(401)
        return error_response(
            401,
            (
                "this sign-in has expired: sign in again"
                if session
                else "this server needs its token"
            )
            + f": send 'Authorization: Bearer TOKEN' (the token `mnemo serve` printed, or ${TOKEN_ENV}), "
            "or sign in on the page",
        )

    def _try_token(self, scope: Scope, given: str) -> Response | None:
        """None for the token, however many wrong ones came before: every local account connects
        from 127.0.0.1, so a limit that held up the right token would let any of them lock the
        owner out. A wrong token is 401, or 429 once its address has sent too many: failures
        slow down only further failures, and the token's length is what defeats guessing."""
        if self.credentials.is_token(given):  # constant time
            return None
        who = (scope.get("client") or ("unknown",))[0]
        wait = self.credentials.retry_after(who)
        if wait is not None:
            return error_response(
                429,
                f"too many wrong tokens from {who}: try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self.credentials.failed(who)
        return error_response(401, "wrong token")

    def _sign_in(self, status: int) -> Response:
        return HTMLResponse(self.login_page, status_code=status)

    def _session_cookie(self) -> str:
        response = Response()
        response.set_cookie(
            SESSION_COOKIE,
            self.credentials.new_session(),
            max_age=int(self.credentials.session_lifetime_s),
            path="/",
            httponly=True,
            samesite="strict",
            secure=self.scheme == "https",
        )
        return response.headers["set-cookie"]

    async def _login(self, scope: Scope, receive: Receive, cookie: list[str]) -> Response:
        """``POST /login`` with ``{"token": …}`` as JSON (a cross-site form cannot send JSON):
        200 and a session cookie, 401 for a wrong token; it answers here, no route behind."""
        kind = Request(scope).headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != "application/json":
            return error_response(415, "send the token as JSON (Content-Type: application/json)")
        body = await self._body(scope, receive)
        if isinstance(body, Response):
            return body
        try:
            given = json.loads(body)["token"]
        except (ValueError, RecursionError, TypeError, KeyError, IndexError):
            given = None
        if not isinstance(given, str):
            return error_response(422, 'send {"token": "…"} as JSON')
        refused = self._try_token(scope, given)
        if refused is not None:
            return refused
        cookie.append(self._session_cookie())
        return JSONResponse({"ok": True})

    async def _body(self, scope: Scope, receive: Receive) -> bytes | Response:
        """The whole body, read here up to the limit (a chunked one announces no length), or the
        response refusing it: 413 when too large, 422 when JSON that does not parse."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                break  # the client left
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_body:
                return self._too_large()
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        kind = Request(scope).headers.get("content-type", "").split(";")[0].strip().lower()
        if body and (kind == "application/json" or kind.endswith("+json")):
            wrong = check_json(body)
            if wrong:
                return error_response(422, wrong)
        return body


def _full(scheme: str, authority: Authority) -> tuple[str, str, int]:
    return scheme, authority.host, authority.port or {"http": 80, "https": 443}[scheme]


def _replay(body: bytes, receive: Receive) -> Receive:
    done = False

    async def replayed() -> Message:
        nonlocal done
        if done:
            return await receive()  # a disconnect, while the route runs
        done = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None, **extra
) -> JSONResponse:
    """mnemo serve's one error shape: ``{"error": message, ...extra}`` (the guard's and the routes')."""
    return JSONResponse({"error": message, **extra}, status_code=status, headers=headers)
