"""The ``mnemo`` command: the top-level parser, each command's sub-parser from its own ``*_cli``
module (each sets its handler), and ``main``, which runs the handler the arguments chose."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

log = logging.getLogger("mnemo")

EXIT_CODES = """\
exit codes:
  0  done
  1  a failure at run time (nothing could be ingested, the store is busy, a check or fault run failed)
  2  a usage error: unknown command or flag, a bad value, or input mnemo refuses (no such store,
     person or folder; a damaged archive); nothing was changed
  3  capture status: no capture daemon is running (as systemctl status says of a stopped unit)"""


class _Version(argparse.Action):
    """``--version``: looked up only when asked, so building the parser reads no package metadata."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"mnemo {version()}")
        parser.exit()


def version() -> str:
    """The installed distribution's version, else the source tree's ``mnemo.__version__``."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("mnemo")
    except PackageNotFoundError:
        from mnemo import __version__

        return __version__


def build_parser(*, complete: bool = True) -> argparse.ArgumentParser:
    """The whole ``mnemo`` parser, every command a real sub-parser with its help and handler; no side
    effects. ``complete=False`` leaves each bench's own arguments to be added when that bench is
    named on the command line (``cli_args.LazySubcommands``), which is what ``main`` uses so that
    ``--help`` imports no bench code; the reference pages read the complete one."""
    from mnemo import (
        ask_cli,
        bench_cli,
        capture_cli,
        demo,
        digest_cli,
        doctor,
        export_cli,
        forget_cli,
        ingest_cli,
        llm_cli,
        models_cli,
        people_cli,
        status_cli,
    )
    from mnemo.serve import cli as serve_cli

    p = argparse.ArgumentParser(
        prog="mnemo",
        description="Recordings in, a memory you can question out.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    p.add_argument("--version", action=_Version, help="print mnemo's version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    ingest_cli.add_parser(sub)
    ask_cli.add_parser(sub)
    demo.add_parser(sub)
    capture_cli.add_parsers(sub)
    serve_cli.add_parsers(sub)
    people_cli.add_parsers(sub)
    digest_cli.add_parsers(sub)
    forget_cli.add_parser(sub)
    status_cli.add_parser(sub)
    llm_cli.add_parser(sub)
    models_cli.add_parser(sub)
    doctor.add_parser(sub)
    export_cli.add_parsers(sub)
    bench_cli.add_parser(sub, complete=complete)
    return p


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose:
        logging.getLogger("mnemo").setLevel(logging.INFO)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub is reachable; never wait on one


def main(argv: list[str] | None = None) -> int:
    from mnemo.layout_guard import warn_if_shadowed

    warn_if_shadowed()  # another distribution's llm/graph/bench/...: said before any of them is imported
    from perception.malloc import limit_malloc

    umask = os.umask(0o077)  # what mnemo writes (stores, capture, caches of it) is the user's alone
    limit_malloc()  # before the models start their threads
    try:
        return _main(argv)
    finally:
        os.umask(umask)


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser(complete=False).parse_args(argv)
    except (
        SystemExit
    ) as e:  # --help, --version, or a usage error (2): main returns its code, as for any other
        return 0 if e.code is None else e.code if isinstance(e.code, int) else 2
    _configure_logging(args.verbose)
    if not args.needs_config:
        return args.func(args)
    from mnemo.config import load_config
    from perception.errors import stage_errors

    try:
        cfg = load_config()
        if (
            cfg.capture.key_file
        ):  # one capture key for this command and its children (capture, ingest, serve)
            os.environ.setdefault(
                "MNEMO_CAPTURE__KEY_FILE", str(Path(cfg.capture.key_file).expanduser())
            )
        return args.func(args, cfg)
    except (
        Exception
    ) as e:  # bad input or a failed stage, said in one line: OSError, ValueError, cv2.error, ...
        if not isinstance(e, stage_errors()):
            raise
        log.debug("failed", exc_info=True)
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
