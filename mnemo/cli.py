"""The ``mnemo`` command: its parser and ingest; each other command in its own ``*_cli`` module (``demo``: ``mnemo.demo``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from datetime import datetime
from functools import partial
from pathlib import Path

log = logging.getLogger("mnemo")


def _parse_time(value: str) -> datetime:
    try:
        ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO 8601 time; write e.g. 2026-11-20T10:00:00+01:00") from None
    return ts if ts.tzinfo else ts.astimezone()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mnemo", description="Recordings in, a memory you can question out.")
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    ing = sub.add_parser("ingest", help="cut recordings into 30 s clips and memorize them")
    ing.add_argument("paths", nargs="+", metavar="PATH", help="video/audio files or folders")
    ing.add_argument("--store", help="store directory (default: graph.store, ./mnemo-data)")
    ing.add_argument("--start", type=_parse_time,
                     help="absolute start of the recording(s), ISO 8601 (default: file metadata, then mtime)")
    ing.add_argument("--ray", action="store_true",
                     help="perception on Ray workers (pip install 'mnemo[ray]'); memorizing stays in clip order")
    ing.add_argument("--workers", type=int, help="--ray: perception workers (default: one per CPU of the cluster)")
    ing.add_argument("--address", help="--ray: join this cluster (auto, or HOST:PORT) instead of starting a local one")
    ing.add_argument("--wait", type=float, metavar="SECONDS",
                     help="another process writing the store: wait at most this long, then fail (default: until it is done)")

    ask = sub.add_parser("ask", help="answer a question from memory, with citations")
    ask.add_argument("question")
    ask.add_argument("--store", help="store directory (default: graph.store, ./mnemo-data)")
    ask.add_argument("--before", type=_parse_time, help="use only what was known before this time (ISO 8601)")
    ask.add_argument("--json", action="store_true", help="print one JSON object on the last line")

    demo = sub.add_parser("demo", help="offline demo on real media: build, ingest, ask")
    demo.add_argument("--store", help="store directory (default: a fresh one in the cache)")

    from mnemo.bench_cli import add_parser as add_bench_parser
    from mnemo.capture_cli import add_parsers
    from mnemo.digest_cli import add_parsers as add_digest_parsers
    from mnemo.doctor import add_parser as add_doctor_parser
    from mnemo.export_cli import add_parsers as add_export_parsers
    from mnemo.forget_cli import add_parser as add_forget_parser
    from mnemo.llm_cli import add_parser as add_llm_parser
    from mnemo.models_cli import add_parser as add_models_parser
    from mnemo.status_cli import add_parser as add_status_parser
    from mnemo.people_cli import add_parsers as add_people_parsers
    from mnemo.serve.cli import add_parsers as add_serve_parsers

    add_parsers(sub)
    add_serve_parsers(sub)
    add_people_parsers(sub)
    add_digest_parsers(sub)
    add_forget_parser(sub)
    add_status_parser(sub)
    add_llm_parser(sub)
    add_models_parser(sub)
    add_doctor_parser(sub)
    add_export_parsers(sub)

    add_bench_parser(sub)
    return p


def _configure_logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    if not verbose:
        logging.getLogger("mnemo").setLevel(logging.INFO)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub is reachable; never wait on one


def cmd_ingest(args, cfg) -> int:
    from mnemo.wiring import (build_llm_writer, build_perceivers, build_redactor, faces_backend_name, match_policies,
                              open_store, perceivers_factory)
    from graph.store import StoreBusy
    from pipeline.ingest import ingest

    store = open_store(cfg.graph, args.store)
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    redactor = build_redactor(cfg.memorize)
    llm_writer = build_llm_writer(cfg.memorize, cfg.llm)
    if args.ray:
        from ray_jobs.ingest import ingest_ray

        try:
            import ray.data  # noqa: F401  (an extra: say how to install it rather than fail inside)
        except ImportError as e:
            print(f"error: --ray needs Ray ({e}); install it with: pip install 'mnemo[ray]'", file=sys.stderr)
            return 2
        run = partial(ingest_ray, perceivers=perceivers_factory(cfg.perception, cfg.llm, keep_images=llm_writer is not None),
                      workers=args.workers, address=args.address)
    else:
        run = partial(ingest, perceivers=build_perceivers(cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm"))
    try:
        report = run(args.paths, store, policies=policies, clip_s=cfg.perception.clip_s, start=args.start,
                     llm_writer=llm_writer, redactor=redactor, wait_s=args.wait)
    except StoreBusy as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    counts = store.count()
    print(f"ingested {len(report.files_ingested)} file(s): {report.clips_new} new clip(s), "
          f"{report.clips_skipped} already stored, {len(report.clips_failed)} failed, "
          f"{report.memories_new} new memories; "
          f"store {store.uri} holds {counts['clips']} clips, {counts['memories']} memories, "
          f"{counts['entities']} entities")
    for worker, clips in report.clips_by_worker.items():
        print(f"{worker}: {clips} clip(s) perceived, peak {report.peak_rss_mb.get(worker, 0.0):.0f} MB")
    if report.redacted:
        print("kept out of memory (memorize.redact): " + ", ".join(f"{n} {k}(s)" for k, n in sorted(report.redacted.items())))
    for path, reason in report.files_failed:
        print(f"error: {path}: {reason}", file=sys.stderr)
    return 0 if report.ok else 1


def main(argv: list[str] | None = None) -> int:
    from pipeline.process import limit_malloc

    umask = os.umask(0o077)  # what mnemo writes (stores, capture, caches of it) is the user's alone
    limit_malloc()  # before the models start their threads
    try:
        return _main(argv)
    finally:
        os.umask(umask)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    if args.command == "doctor":  # before the config loads: a config that does not load is one of its checks
        from mnemo.doctor import cmd_doctor

        return cmd_doctor(args)
    from mnemo.config import load_config
    from perception.errors import stage_errors

    try:
        cfg = load_config()
        if cfg.capture.key_file:  # one capture key for this command and its children (capture, ingest, serve)
            os.environ.setdefault("MNEMO_CAPTURE__KEY_FILE", str(Path(cfg.capture.key_file).expanduser()))
        if args.command == "ingest":
            return cmd_ingest(args, cfg)
        if args.command == "ask":
            from mnemo.ask_cli import cmd_ask

            return cmd_ask(args, cfg)
        if args.command == "bench":
            from mnemo.bench_cli import cmd_bench

            return cmd_bench(args, cfg)
        if args.command in ("capture", "watch"):
            from mnemo.capture_cli import cmd_capture, cmd_watch

            return (cmd_capture if args.command == "capture" else cmd_watch)(args, cfg)
        if args.command == "people":
            from mnemo.people_cli import cmd_people

            return cmd_people(args, cfg)
        if args.command in ("day", "week"):
            from mnemo.digest_cli import cmd_digest

            return cmd_digest(args, cfg)
        if args.command == "status":
            from mnemo.status_cli import cmd_status

            return cmd_status(args, cfg)
        if args.command == "forget":
            from mnemo.forget_cli import cmd_forget

            return cmd_forget(args, cfg)
        if args.command in ("export", "import", "backup"):
            from mnemo.export_cli import cmd_archive

            return cmd_archive(args, cfg)
        if args.command == "llm":
            from mnemo.llm_cli import cmd_llm

            return cmd_llm(args, cfg)
        if args.command == "models":
            from mnemo.models_cli import cmd_models

            return cmd_models(args, cfg)
        if args.command in ("serve", "mcp"):
            from mnemo.serve.cli import cmd_mcp, cmd_serve

            return (cmd_serve if args.command == "serve" else cmd_mcp)(args, cfg)
        from mnemo.demo import run_demo

        return run_demo(cfg, args.store)
    except (OSError, RuntimeError, ValueError, *stage_errors()) as e:  # stage_errors: cv2.error too
        log.debug("failed", exc_info=True)
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
