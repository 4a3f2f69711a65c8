"""``mnemo serve`` and ``mnemo mcp``: argument parsing and start-up."""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from pathlib import Path

from mnemo.cli_args import add_store, set_handler

log = logging.getLogger(__name__)


def add_parsers(sub) -> None:
    from mnemo.serve.confirm import NONCE_LIFETIME_S

    serve = sub.add_parser(
        "serve", help="REST API and timeline page over a store (FastAPI + uvicorn)"
    )
    add_store(serve)
    set_handler(serve, cmd_serve)
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; any other needs $MNEMO_SERVE_TOKEN)",
    )
    serve.add_argument(
        "--port", type=int, default=8765, help="port (default 8765; 0: any free one)"
    )
    serve.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (https://host[:port]) allowed to call the API from a browser with the "
        "token (repeatable; none by default; '*' is refused)",
    )
    serve.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name this server answers to besides localhost, the loopback addresses and "
        "--host (repeatable): any other Host header is refused (DNS rebinding)",
    )
    serve.add_argument(
        "--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM), with --tls-key"
    )
    serve.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    mcp = sub.add_parser(
        "mcp",
        help="MCP server over stdio: ask, search, list_people, profile, read_clip, timeline, "
        "digest, name_person, merge_people, split_person, undo_people_change, and forget where the "
        "client can ask its user to confirm (or with --allow-forget)",
    )
    add_store(mcp)
    set_handler(mcp, cmd_mcp)
    mcp.add_argument(
        "--allow-forget",
        action="store_true",
        help="offer the forget tool, which deletes memory for good, also to a client that cannot "
        "ask its user (MCP elicitation); a client that can always gets it, and the server asks the "
        "user to confirm. Off by default: recorded text (a page on screen, a transcript) is "
        "written by others and could tell an agent to delete memory. With it, such a client's "
        "forget takes two calls: a preview that returns a nonce, and the same filter with that "
        f"nonce (good once, for {NONCE_LIFETIME_S:.0f} s) after the user agreed. Without it, "
        "forget with `mnemo forget` in a terminal",
    )


def open_service(cfg, store_dir: str | None):
    """The service over an existing store; ``FileNotFoundError`` saying what to do when there is none.
    Concurrent requests' query embeddings are computed in batches."""
    from embeddings.batching import BatchingEmbedder
    from graph.store import Store
    from mnemo.serve.service import MemoryService
    from mnemo.wiring import build_agent, chat_client, text_embedder

    where = store_dir or cfg.graph.store
    if "://" not in str(where) and not Path(where).is_dir():
        raise FileNotFoundError(
            f"no store at {where}: run `mnemo ingest PATH --store {where}` first, "
            "or pass --store DIR"
        )
    store = Store(where, BatchingEmbedder(text_embedder(cfg.graph)))
    answerer = build_agent(cfg.control, cfg.llm, store, cfg.people.me)
    writer = chat_client(cfg.llm) if cfg.llm.base_url else None
    if writer is None and cfg.control.agent == "local":  # the reasoning model writes digests too
        writer = answerer.client
    return MemoryService(store, answerer, cfg.people.me, writer)


def _bind(host: str, port: int) -> socket.socket:
    """The listening address, taken before the token file is written: a second server on a busy
    port fails here, without replacing the first one's token file."""
    family, kind, proto, _, address = socket.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(
            2048
        )  # connections wait in the backlog from now on, not refused until uvicorn starts
    except OSError as e:
        sock.close()
        raise OSError(
            e.errno,
            f"cannot listen on {host}:{port} ({e.strerror}): is another server there? "
            "Choose another --port",
        ) from e
    return sock


class _Stopped(Exception):
    """SIGTERM, which uvicorn raises again once it has stopped: turned into this so the token file
    is removed on the way out."""


def _stop(_signum, _frame):
    raise _Stopped


def cmd_serve(args, cfg) -> int:
    import uvicorn

    from mnemo.serve.api import create_app, is_loopback
    from mnemo.serve.auth import (
        TOKEN_ENV,
        UnsafeTokenFile,
        check_token_file,
        new_token,
        remove_token_file,
        weak_token,
        write_token_file,
    )
    from mnemo.serve.guard import normalise_origin

    configured = os.environ.get(TOKEN_ENV, "").strip() or None
    if configured is not None and (why := weak_token(configured)):
        print(
            f"error: ${TOKEN_ENV} is too easy to guess: {why} (make one with: python -c "
            '"import secrets; print(secrets.token_urlsafe(32))"); nothing was started',
            file=sys.stderr,
        )
        return 2
    if not is_loopback(args.host) and configured is None:
        print(
            f"error: --host {args.host} is reachable from other machines; set {TOKEN_ENV} to a secret token "
            "first (every request must then send it), or keep the default --host 127.0.0.1",
            file=sys.stderr,
        )
        return 2
    try:
        origins = tuple(normalise_origin(o) for o in args.cors_origin)
        if args.port:
            check_token_file(args.port)  # before loading anything: refused with nothing changed
    except (ValueError, UnsafeTokenFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    tls = bool(args.tls_cert or args.tls_key)
    if tls and not (
        args.tls_cert
        and args.tls_key
        and Path(args.tls_cert).is_file()
        and Path(args.tls_key).is_file()
    ):
        print(
            "error: HTTPS needs both --tls-cert FILE and --tls-key FILE, and both must exist",
            file=sys.stderr,
        )
        return 2
    service = open_service(cfg, args.store)
    health = service.health()
    if not health.memories:
        log.warning(
            "the store %s holds no memories yet; new clips appear as they are ingested",
            health.store,
        )
    service.store.embedder.embed(["warm up"])  # load the text model now, not on the first question
    wildcard = args.host in ("0.0.0.0", "::", "")
    hosts = tuple(args.allow_host) + (() if wildcard else (args.host,))
    token = configured or new_token()
    app = create_app(service, token=token, cors_origins=origins, hosts=hosts, tls=tls)
    sock = _bind(args.host, args.port)
    port = sock.getsockname()[1]
    try:
        token_file = write_token_file(port, token)
    except UnsafeTokenFile as e:
        sock.close()
        print(f"error: {e}", file=sys.stderr)
        return 2
    shown = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "::": "[::1]"}.get(args.host) or (
        f"[{args.host}]" if ":" in args.host else args.host
    )
    url = f"{'https' if tls else 'http'}://{shown}:{port}/"
    signin = f"sign in with ${TOKEN_ENV}" if configured else f"sign in: {url}?token={token}"
    print(
        f"serving {health.store} ({health.clips} clips, {health.memories} memories) at {url}\n"
        f"  {signin}\n  the token is in {token_file} while the server runs (API schema at /openapi.json)"
        + (
            "\n  bound to every address: name this machine with --allow-host NAME to be reached by it"
            if wildcard
            else ""
        ),
        file=sys.stderr,
        flush=True,
    )
    verbose = logging.getLogger("mnemo").isEnabledFor(logging.DEBUG)
    # no access log unless -v: its lines would carry the search queries. No proxy headers: uvicorn
    # would take the client's address from X-Forwarded-For on any loopback connection, so another
    # account's process could give each wrong token a new address and never meet the guess limit
    config = uvicorn.Config(
        app,
        host=args.host,
        port=port,
        log_level="info" if verbose else "warning",
        access_log=verbose,
        proxy_headers=False,
        **({"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key} if tls else {}),
    )
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        remove_token_file(token_file, token)
        sock.close()
    return 0


def cmd_mcp(args, cfg) -> int:
    from mnemo.serve.mcp_server import build_server

    service = open_service(cfg, args.store)
    build_server(service, allow_forget=args.allow_forget).run("stdio")
    return 0
