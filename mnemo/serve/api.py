"""The REST API and the timeline page of ``mnemo serve`` (FastAPI).

Routes are plain functions: FastAPI runs them on its thread pool, so slow reads (an ``/ask`` that
embeds its question, a frame that ffmpeg decodes) do not hold up the others. Every route, the page
and ``/openapi.json`` included, needs the server's token (``Authorization: Bearer TOKEN``) or the
session cookie that signing in on the page (``POST /login``, or opening ``/?token=TOKEN``) sets:
``mnemo.serve.guard`` checks it, with the host, the origin of a change and the body's size, before
any route. There are no ``/docs``: FastAPI's pages load Swagger UI's scripts from a CDN into this
origin, and none are installed locally.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import logging
import re
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Body, Depends, FastAPI, HTTPException, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from graph.rows import MemoryKind
from mnemo.serve import models
from mnemo.serve.auth import TOKEN_ENV, Credentials, new_token
from mnemo.serve.errors import BadRequest, NotFound
from mnemo.serve.guard import Guard, error_response, normalise_origin, security_headers
from mnemo.serve.media import MediaGone, clip_media
from mnemo.serve.service import MemoryService
from mnemo.serve.thumbs import drop_forgotten
from perception.errors import MediaError

log = logging.getLogger(__name__)

__all__ = ["TOKEN_ENV", "create_app", "is_loopback"]
STATIC = ("timeline.js", "timeline.css")


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=2000, examples=["Where is Sheila from?"])
    before: datetime | None = Field(
        None, description="use only what was known before this time (ISO 8601)"
    )
    quick: bool = Field(
        False,
        description="the quick offline answer (a quotation, at once) even where answers are "
        "reasoned (health's reasoning: true)",
    )


class NameIn(BaseModel):
    name: str = Field(
        min_length=1,
        max_length=200,
        examples=["Carol"],
        description="at most 80 characters on one line, without < or >",
    )


class MergeIn(BaseModel):
    a: str = Field(
        min_length=1,
        max_length=200,
        examples=["character_1"],
        description="a person: id, member id or name",
    )
    b: str = Field(min_length=1, max_length=200, examples=["voice_3"])


class SplitIn(BaseModel):
    members: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        min_length=1,
        max_length=100,
        examples=[["voice_3"]],
        description="the person's voices, faces or characters that are someone else",
    )


PersonId = Annotated[
    str, Path(max_length=200, description="the person's id, a member id or their name")
]


def json_only(request: Request) -> None:
    """Changes and questions come as JSON only: a page on another site can post a form (or text)
    here without asking, but not JSON, which needs a CORS preflight this server does not grant."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise HTTPException(
            415, f"send the body as JSON (Content-Type: application/json), not {kind or 'no body'}"
        )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


def content_security_policy(page: str) -> str:
    """Only this server's scripts, styles, pictures and sounds, and no framing; the sign-in
    page's inline script and style are allowed by their hashes."""

    def hashes(tag: str) -> str:
        return " ".join(
            f"'sha256-{base64.b64encode(hashlib.sha256(m.encode()).digest()).decode()}'"
            for m in re.findall(rf"<{tag}>(.*?)</{tag}>", page, re.DOTALL)
        )

    return (
        f"default-src 'none'; script-src 'self' {hashes('script')}; style-src 'self' {hashes('style')}; "
        "img-src 'self'; media-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
        "frame-ancestors 'none'"
    )


def create_app(
    service: MemoryService,
    token: str | None = None,
    cors_origins: tuple[str, ...] = (),
    hosts: tuple[str, ...] = (),
    tls: bool = False,
) -> FastAPI:
    """The app over ``service``. ``token``: needed on every request (None: a random one, in
    ``app.state.token``); there is no app without one. ``cors_origins``: web origins allowed to
    call the API from a browser with the token (none by default; never ``*``). ``hosts``: names
    this server answers to besides the loopback ones (the bound address, a name of this machine):
    any other ``Host`` is refused, so a page whose DNS name was rebound to 127.0.0.1 reads nothing.
    A change (POST …) from a browser must come from this server's own page or a ``cors_origins``
    one. ``tls``: served over HTTPS (the session cookie is then ``Secure``)."""
    app = FastAPI(
        title="mnemo",
        version="0.1.0",
        docs_url=None,
        redoc_url=None,
        description="Ask and browse a mnemo memory: answers with citations, hybrid search, people, "
        "clips and their media, a timeline. Every request needs the server's token: "
        "'Authorization: Bearer TOKEN'.",
    )
    app.state.token = token = token or new_token()
    origins = tuple(normalise_origin(o) for o in cors_origins)
    if origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
            allow_credentials=True,
        )
    login_page = _static("login.html")
    csp = content_security_policy(login_page)
    app.state.credentials = Credentials(token)
    names = frozenset(h.lower().strip("[]").removesuffix(".") for h in (*LOOPBACK_NAMES, *hosts))
    # added last, so it runs first: before CORS and every route
    app.add_middleware(
        Guard,
        credentials=app.state.credentials,
        hosts=names,
        cors_origins=origins,
        tls=tls,
        login_page=login_page,
        csp=csp,
    )

    drop_forgotten(service.store)  # pictures of clips a `mnemo forget` removed while no server ran

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError):
        problems = []
        for e in exc.errors():
            where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            got = e.get("input")
            shown = (
                f" (got {got!r})"
                if isinstance(got, (str, int, float)) and len(repr(got)) <= 80
                else ""
            )
            problems.append(f"{where}: {e.get('msg', 'invalid')}{shown}")
        return error_response(
            422, "; ".join(problems) or "invalid request", detail=jsonable(exc.errors())
        )

    @app.exception_handler(NotFound)
    async def not_found(_request: Request, exc: NotFound):
        return error_response(404, str(exc))

    @app.exception_handler(BadRequest)
    async def bad_request(_request: Request, exc: BadRequest):
        return error_response(422, str(exc))

    @app.exception_handler(Exception)  # answered outside the guard: it adds the headers itself
    async def failed(request: Request, exc: Exception):
        ref = secrets.token_hex(4)
        log.error("%s %s failed (error %s)", request.method, request.url.path, ref, exc_info=exc)
        return JSONResponse(
            {"error": f"the server failed; its log has the details (error {ref})"},
            status_code=500,
            headers=dict(security_headers(csp)),
        )

    @app.get(
        "/health",
        response_model=models.HealthOut,
        summary="store counts; 200 while the store opens",
    )
    def health():
        return service.health()

    @app.post(
        "/ask",
        response_model=models.AskOut,
        summary="answer a question from memory, with citations",
        dependencies=[Depends(json_only)],
    )
    def ask(body: Annotated[AskIn, Body()]):
        return service.ask(body.question, body.before, quick=body.quick)

    @app.get(
        "/search",
        response_model=list[models.MemoryOut],
        summary="hybrid search (vector + full text) over memories",
    )
    def search(
        q: Annotated[str, Query(min_length=1, max_length=2000, description="what to look for")],
        kind: Annotated[MemoryKind | None, Query()] = None,
        person: Annotated[
            str | None, Query(description="a name or an id (character_1, voice_2)")
        ] = None,
        start: Annotated[
            datetime | None, Query(alias="from", description="ISO 8601 or epoch seconds")
        ] = None,
        end: Annotated[datetime | None, Query(alias="to")] = None,
        before: Annotated[
            datetime | None, Query(description="only what was known before this time")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=100)] = 10,
    ):
        return service.search(q, kind, person, start, end, before, limit)

    @app.get(
        "/people",
        response_model=list[models.PersonOut],
        summary="the people in memory: names and where they came from, voices, faces, clips, a quote",
    )
    def people():
        return service.people()

    @app.get(
        "/people/history",
        response_model=list[models.PeopleOpOut],
        summary="the user's changes to people, oldest first",
    )
    def people_history():
        return service.people_history()

    @app.get(
        "/people/{person}/profile",
        response_model=models.ProfileOut,
        summary="what memory holds about a person: facts with their clips and what they superseded, and "
        "the salient things they said of themself; `me` for you",
    )
    def profile(person: PersonId):
        return service.profile(None if person == "me" else person)

    change: dict[str, Any] = {
        "response_model": models.ChangeOut,
        "dependencies": [Depends(json_only)],
    }

    @app.post("/people/merge", summary="make two people one", **change)
    def merge_people(body: Annotated[MergeIn, Body()]):
        return service.merge_people(body.a, body.b)

    @app.post(
        "/people/undo",
        summary="reverse the latest change to people still in force (body: {})",
        **change,
    )
    def undo_people_change():
        return service.undo_people_change()

    @app.post(
        "/people/{person}/name",
        summary="name a person; wins over names heard in recordings",
        **change,
    )
    def name_person(person: PersonId, body: Annotated[NameIn, Body()]):
        return service.name_person(person, body.name)

    @app.post(
        "/people/{person}/me",
        summary='mark this person as you, the owner ("I" in questions; body: {})',
        **change,
    )
    def mark_owner(person: PersonId):
        return service.mark_owner(person)

    @app.post(
        "/people/{person}/split",
        summary="take voices, faces or characters out of a person",
        **change,
    )
    def split_person(person: PersonId, body: Annotated[SplitIn, Body()]):
        return service.split_person(person, body.members)

    @app.post(
        "/forget",
        response_model=models.ForgetOut,
        dependencies=[Depends(json_only)],
        summary="forget clips, a time range, a recording, an app, a person or a text: without a nonce "
        "only what would go and a nonce; with that nonce and the same filter, forget",
    )
    def forget(body: Annotated[models.ForgetIn, Body()]):
        return service.forget(body)

    @app.get(
        "/clips/{clip_id}",
        response_model=models.ClipOut,
        summary="a clip: transcript, screen text, memories",
    )
    def clip(clip_id: Annotated[str, Path(max_length=200)]):
        return service.clip(clip_id)

    @app.get(
        "/timeline",
        response_model=models.TimelineOut,
        summary="clips and their memories in a time range",
    )
    def timeline(
        start: Annotated[
            datetime | None, Query(alias="from", description="default: 24 h before `to`")
        ] = None,
        end: Annotated[
            datetime | None, Query(alias="to", description="default: the newest clip")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=5000)] = 500,
    ):
        return service.timeline(start, end, limit)

    @app.get(
        "/digest/{period}",
        response_model=models.DigestOut,
        summary="what a day or its week held: when, with whom, windows, the salient moments citing clips",
    )
    def digest(
        period: Literal["day", "week"],
        day: Annotated[
            date | None, Query(alias="date", description="YYYY-MM-DD; default: today")
        ] = None,
        tz: Annotated[
            str | None, Query(max_length=64, description="IANA zone; default: the server's")
        ] = None,
        written: Annotated[
            bool,
            Query(
                description="also the account the [llm] endpoint writes from the "
                "moments (422 without one)"
            ),
        ] = False,
    ):
        return service.digest(period, day, tz, written)

    # no copy in the browser's cache: it would outlive a forget of the clip
    private = {"Cache-Control": "no-store"}

    @app.get(
        "/media/{clip_id}",
        summary="the clip's frame (JPEG) or audio (WAV) from the original file",
        responses={200: {"content": {"image/jpeg": {}, "audio/wav": {}}}},
    )
    def media(
        clip_id: Annotated[str, Path(max_length=200)],
        kind: Annotated[Literal["frame", "audio"], Query()] = "frame",
        at: Annotated[
            float | None, Query(ge=0, description="seconds into the clip (frame)")
        ] = None,
    ):
        row = service.clip_row(clip_id)
        with _media_served():
            out = clip_media(row, kind, at)
        return Response(out.data, media_type=out.media_type, headers=private)

    pictures: dict[int | str, dict[str, Any]] = {200: {"content": {"image/jpeg": {}}}}

    @app.get(
        "/thumb/{clip_id}",
        summary="a small JPEG of the clip's frame (a video's middle, a screenshot), "
        "cut on demand and cached in the store; 404 for audio or a track",
        responses=pictures,
    )
    def thumb(
        clip_id: Annotated[str, Path(max_length=200)],
        at: Annotated[
            float | None, Query(ge=0, description="seconds into the clip; default its middle")
        ] = None,
    ):
        with _media_served(f"clip {clip_id} has no picture: "):
            return Response(
                service.thumbnail(clip_id, at), media_type="image/jpeg", headers=private
            )

    @app.get(
        "/face/{person}",
        summary="a square JPEG of the person's face, cut from the clip that shows it "
        "longest and cached in the store; 404 for a voice without a face",
        responses=pictures,
    )
    def face(person: PersonId):
        with _media_served(f"no face of {person} to show: "):
            return Response(service.face(person), media_type="image/jpeg", headers=private)

    @app.exception_handler(StarletteHTTPException)  # ours, and the router's own 404 and 405
    async def http_error(_request: Request, exc: StarletteHTTPException):
        return error_response(exc.status_code, str(exc.detail))

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


@contextmanager
def _media_served(gone: str = "") -> Iterator[None]:
    """Media that cannot be served: 404 when it is gone (``gone`` before the reason), 500 when it
    could not be decoded."""
    try:
        yield
    except MediaGone as e:
        raise HTTPException(404, f"{gone}{e}") from e
    except MediaError as e:
        raise HTTPException(500, str(e)) from e


def _static(name: str) -> str:
    return resources.files("mnemo.serve").joinpath("static", name).read_text(encoding="utf-8")


def jsonable(errors: Sequence[dict]) -> list[dict]:
    """Validation errors as JSON (their ``ctx`` may hold exceptions), without the ``input``: a
    body of a megabyte is not echoed back."""
    return [
        {
            k: (v if k != "ctx" else {c: str(x)[:200] for c, x in v.items()})
            for k, v in e.items()
            if k not in ("url", "input")
        }
        for e in errors
    ]
