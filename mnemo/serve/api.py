"""The REST API and the timeline page of ``mnemo serve`` (FastAPI).

Routes are plain functions: FastAPI runs them on its thread pool, so slow reads (an ``/ask`` that
embeds its question, a frame that ffmpeg decodes) do not hold up the others. With a token every
route, the page and ``/docs`` included, needs it: ``Authorization: Bearer TOKEN``, or the cookie that
signing in on the page (``POST /login``, or opening ``/?token=TOKEN``) sets, so the page's own
requests carry it. Only loopback names and the configured hosts are answered (DNS rebinding), and a
browser's change must come from this server's own page or a configured origin.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from datetime import datetime
from importlib import resources
from typing import Annotated, Literal

from fastapi import Body, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from graph.rows import MEMORY_KINDS
from mnemo.serve.media import MediaGone, clip_media
from mnemo.serve.models import (AskOut, ChangeOut, ClipOut, ForgetIn, ForgetOut, HealthOut, MemoryOut, PeopleOpOut,
                                PersonOut, TimelineOut)
from mnemo.serve.service import BadRequest, MemoryService, NotFound
from perception.errors import MediaError

log = logging.getLogger(__name__)

TOKEN_ENV = "MNEMO_SERVE_TOKEN"
COOKIE = "mnemo_token"
STATIC = ("timeline.js", "timeline.css")


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=2000, examples=["Where is Sheila from?"])
    before: datetime | None = Field(None, description="use only what was known before this time (ISO 8601)")


class NameIn(BaseModel):
    name: str = Field(min_length=1, max_length=200, examples=["Carol"],
                      description="at most 80 characters on one line, without < or >")


class MergeIn(BaseModel):
    a: str = Field(min_length=1, max_length=200, examples=["character_1"],
                   description="a person: id, member id or name")
    b: str = Field(min_length=1, max_length=200, examples=["voice_3"])


class SplitIn(BaseModel):
    members: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1, max_length=100, examples=[["voice_3"]],
        description="the person's voices, faces or characters that are someone else")


PersonId = Annotated[str, Path(max_length=200, description="the person's id, a member id or their name")]


def json_only(request: Request) -> None:
    """Changes come as JSON only: a page on another site can post a form (or text) here without
    asking, but not JSON, which needs a CORS preflight this server does not grant."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPException(415, f"send the change as JSON (Content-Type: application/json), not {kind or 'no body'}")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _error(status: int, message: str, **extra) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status)


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
CHANGES = ("POST", "PUT", "PATCH", "DELETE")


def _host_of(value: str) -> str:
    """The host of a ``Host`` header or of an origin's authority, without port or brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def create_app(service: MemoryService, token: str | None = None, cors_origins: tuple[str, ...] = (),
               hosts: tuple[str, ...] = (), tls: bool = False) -> FastAPI:
    """The app over ``service``. ``token``: required on every request when set. ``cors_origins``:
    web origins allowed to call the API from a browser (none by default). ``hosts``: names this
    server answers to besides the loopback ones (the bound address, a name of this machine): any
    other ``Host`` is refused, so a page whose DNS name was rebound to 127.0.0.1 reads nothing.
    A change (POST …) from a browser must come from this server's own page or a ``cors_origins``
    one. ``tls``: served over HTTPS (the token cookie is then ``Secure``)."""
    app = FastAPI(title="mnemo", version="0.1.0",
                  description="Ask and browse a mnemo memory: answers with citations, hybrid search, people, "
                              "clips and their media, a timeline.")
    allowed = {h.lower().strip("[]") for h in (*LOOPBACK_NAMES, *hosts)}
    if cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["Authorization", "Content-Type"], allow_credentials=True)

    @app.middleware("http")
    async def check_token(request: Request, call_next):
        if (token is None or (request.method == "OPTIONS" and "access-control-request-method" in request.headers)
                or (request.url.path == "/login" and request.method == "POST")):
            return await call_next(request)  # a CORS preflight carries no credentials and reveals nothing
        auth = request.headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else request.cookies.get(COOKIE, "")
        from_query = request.query_params.get("token", "")
        if not hmac.compare_digest(given.encode(), token.encode()) and not (
                request.url.path == "/" and hmac.compare_digest(from_query.encode(), token.encode())):
            if request.url.path == "/" and request.method == "GET":
                return HTMLResponse(_static("login.html"), status_code=401)
            return _error(401, f"this server needs its token: send 'Authorization: Bearer ${TOKEN_ENV}', "
                               "or sign in on the page")
        response = await call_next(request)
        if from_query:  # the page was opened with its token: its own requests carry it from now on
            response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=tls)
        return response

    @app.middleware("http")  # added last, so it runs first: before the token and before CORS
    async def check_host_and_origin(request: Request, call_next):
        host = _host_of(request.headers.get("host", ""))
        if host not in allowed:
            return _error(421, f"this server does not answer for host {host!r}; open it as http://127.0.0.1 or "
                               "http://localhost, or start it with --allow-host NAME")
        origin = request.headers.get("origin")
        if origin and request.method in CHANGES and origin not in cors_origins:
            scheme, _, authority = origin.partition("://")
            if _host_of(authority) not in allowed or authority.lower() != request.headers.get("host", "").lower():
                return _error(403, f"a change from {origin} is refused: only this server's own page, or an "
                                   "origin given with --cors-origin, may change memory")
        return await call_next(request)

    @app.post("/login", include_in_schema=False, dependencies=[Depends(json_only)])
    async def login(request: Request):
        """The page's sign-in: the token in a JSON body, answered with an HttpOnly cookie."""
        try:
            given = str((await request.json()).get("token", ""))
        except ValueError:
            given = ""
        if token is None or not hmac.compare_digest(given.encode(), token.encode()):
            return _error(401, "wrong token")
        response = JSONResponse({"ok": True})
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=tls)
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        problems = []
        for e in exc.errors():
            where = ".".join(str(x) for x in e.get("loc", ()) if x != "body")
            problems.append(f"{where}: {e.get('msg', 'invalid')}" + (f" (got {e['input']!r})"
                                                                     if "input" in e and e["input"] is not None else ""))
        return _error(422, "; ".join(problems) or "invalid request", detail=jsonable(exc.errors()))

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, exc: NotFound):
        return _error(404, str(exc))

    @app.exception_handler(BadRequest)
    async def bad_request(_request: Request, exc: BadRequest):
        return _error(422, str(exc))

    @app.exception_handler(Exception)
    async def failed(request: Request, exc: Exception):
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
        return _error(500, f"the server failed ({type(exc).__name__}: {exc}); its log has the details")

    @app.get("/health", response_model=HealthOut, summary="store counts; 200 while the store opens")
    def health():
        return service.health()

    @app.post("/ask", response_model=AskOut, summary="answer a question from memory, with citations")
    def ask(body: Annotated[AskIn, Body()]):
        return service.ask(body.question, body.before)

    @app.get("/search", response_model=list[MemoryOut], summary="hybrid search (vector + full text) over memories")
    def search(q: Annotated[str, Query(min_length=1, max_length=2000, description="what to look for")],
               kind: Annotated[Literal[MEMORY_KINDS] | None, Query()] = None,
               person: Annotated[str | None, Query(description="a name or an id (character_1, voice_2)")] = None,
               start: Annotated[datetime | None, Query(alias="from", description="ISO 8601 or epoch seconds")] = None,
               end: Annotated[datetime | None, Query(alias="to")] = None,
               before: Annotated[datetime | None, Query(description="only what was known before this time")] = None,
               limit: Annotated[int, Query(ge=1, le=100)] = 10):
        return service.search(q, kind, person, start, end, before, limit)

    @app.get("/people", response_model=list[PersonOut],
             summary="the people in memory: names and where they came from, voices, faces, clips, a quote")
    def people():
        return service.people()

    @app.get("/people/history", response_model=list[PeopleOpOut], summary="the user's changes to people, oldest first")
    def people_history():
        return service.people_history()

    change = {"response_model": ChangeOut, "dependencies": [Depends(json_only)]}

    @app.post("/people/merge", summary="make two people one", **change)
    def merge_people(body: Annotated[MergeIn, Body()]):
        return service.merge_people(body.a, body.b)

    @app.post("/people/undo", summary="reverse the latest change to people still in force (body: {})", **change)
    def undo_people_change():
        return service.undo_people_change()

    @app.post("/people/{person}/name", summary="name a person; wins over names heard in recordings", **change)
    def name_person(person: PersonId, body: Annotated[NameIn, Body()]):
        return service.name_person(person, body.name)

    @app.post("/people/{person}/split", summary="take voices, faces or characters out of a person", **change)
    def split_person(person: PersonId, body: Annotated[SplitIn, Body()]):
        return service.split_person(person, body.members)

    @app.post("/forget", response_model=ForgetOut, dependencies=[Depends(json_only)],
              summary="forget clips, a time range, a recording, an app, a person or a text: without a nonce "
                      "only what would go and a nonce; with that nonce and the same filter, forget")
    def forget(body: Annotated[ForgetIn, Body()]):
        return service.forget(body)

    @app.get("/clips/{clip_id}", response_model=ClipOut, summary="a clip: transcript, screen text, memories")
    def clip(clip_id: Annotated[str, Path(max_length=200)]):
        return service.clip(clip_id)

    @app.get("/timeline", response_model=TimelineOut, summary="clips and their memories in a time range")
    def timeline(start: Annotated[datetime | None, Query(alias="from", description="default: 24 h before `to`")] = None,
                 end: Annotated[datetime | None, Query(alias="to", description="default: the newest clip")] = None,
                 limit: Annotated[int, Query(ge=1, le=5000)] = 500):
        return service.timeline(start, end, limit)

    @app.get("/media/{clip_id}", summary="the clip's frame (JPEG) or audio (WAV) from the original file",
             responses={200: {"content": {"image/jpeg": {}, "audio/wav": {}}}})
    def media(clip_id: Annotated[str, Path(max_length=200)],
              kind: Annotated[Literal["frame", "audio"], Query()] = "frame",
              at: Annotated[float | None, Query(ge=0, description="seconds into the clip (frame)")] = None):
        row = service.clip_row(clip_id)
        try:
            out = clip_media(row, kind, at)
        except MediaGone as e:
            raise HTTPException(404, str(e)) from e
        except MediaError as e:
            raise HTTPException(500, str(e)) from e
        return Response(out.data, media_type=out.media_type, headers={"Cache-Control": "private, max-age=3600"})

    @app.exception_handler(StarletteHTTPException)  # ours, and the router's own 404 and 405
    async def http_error(_request: Request, exc: StarletteHTTPException):
        return _error(exc.status_code, str(exc.detail))

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def page():
        return HTMLResponse(_static("index.html"), headers={"Cache-Control": "no-store"})

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str):
        if name not in STATIC:
            raise HTTPException(404, f"no static file {name!r}")
        kind = "text/javascript" if name.endswith(".js") else "text/css"
        return Response(_static(name), media_type=kind)

    return app


def _static(name: str) -> str:
    return resources.files("mnemo.serve").joinpath("static", name).read_text(encoding="utf-8")


def jsonable(errors: list[dict]) -> list[dict]:
    """Validation errors as JSON (their ``ctx`` may hold exceptions)."""
    return [{k: (v if k != "ctx" else {c: str(x) for c, x in v.items()}) for k, v in e.items() if k != "url"}
            for e in errors]
