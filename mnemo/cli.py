"""The ``mnemo`` command: ingest, ask, demo, bench."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from datetime import datetime
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

    ask = sub.add_parser("ask", help="answer a question from memory, with citations")
    ask.add_argument("question")
    ask.add_argument("--store", help="store directory (default: graph.store, ./mnemo-data)")
    ask.add_argument("--before", type=_parse_time, help="use only what was known before this time (ISO 8601)")
    ask.add_argument("--json", action="store_true", help="print one JSON object on the last line")

    demo = sub.add_parser("demo", help="offline demo on real media: build, ingest, ask")
    demo.add_argument("--store", help="store directory (default: a fresh one in the cache)")

    from mnemo.capture_cli import add_parsers
    from mnemo.forget_cli import add_parser as add_forget_parser
    from mnemo.status_cli import add_parser as add_status_parser
    from mnemo.people_cli import add_parsers as add_people_parsers
    from mnemo.serve.cli import add_parsers as add_serve_parsers

    add_parsers(sub)
    add_serve_parsers(sub)
    add_people_parsers(sub)
    add_forget_parser(sub)
    add_status_parser(sub)

    bench = sub.add_parser("bench", help="measure accuracy or speed; prints a table (and JSON with --json)")
    bench.add_argument("name", choices=["perception", "ocr", "store", "locomo", "speed", "capture", "m3", "screenshotvqa",
                                        "serve"],
                       help="perception: ASR, speakers, faces, OCR on real media; ocr: screen text "
                            "with its word boundaries on terminal, page and dialog screens rendered under Xvfb; store: hybrid search at scale; "
                            "locomo: evidence recall of retrieval on LoCoMo conversations; speed: ingest of a "
                            "5-minute recording, sequential and on Ray, against ASR alone; capture: the screenshot daemon on "
                            "an Xvfb desktop with a scripted session and live ingestion; m3: M3-Bench "
                            "questions on its videos; screenshotvqa: MIRIX's ScreenshotVQA layout; serve: /ask and /search "
                            "latency of mnemo serve at 1, 4 and 16 clients on the demo store and a large one")
    bench.add_argument("--json", action="store_true", help="print one JSON object with the figures on the last line")
    bench.add_argument("--memories", type=int, default=1_000_000,
                       help="store, serve: how many synthetic memories (serve: 0 for the demo store alone)")
    bench.add_argument("--store", help="store: directory for the bench store (default: a temporary one); m3, "
                       "screenshotvqa, serve: folder of the stores, kept between runs "
                       "(default: ~/.cache/mnemo/bench-stores/NAME)")
    bench.add_argument("--data", help="locomo: a LoCoMo file in the upstream locomo10.json format; "
                       "screenshotvqa: a folder with qa_pairs.json and one folder of screenshots per user")
    bench.add_argument("--workers", type=int, help="speed: Ray perception workers (default: one per CPU)")
    bench.add_argument("--annotations", help="m3: robot.json or web.json from the M3-Agent release")
    bench.add_argument("--videos", help="m3: folder holding the videos (as the annotations' video_path, or by file name)")
    bench.add_argument("--split", choices=["robot", "web"], help="m3: the split (default: from the file name)")
    bench.add_argument("--limit", type=int, help="m3: only the first N videos found")
    bench.add_argument("--judge", action="store_true",
                       help="m3, screenshotvqa: score answers with the paper's judge prompt on the [llm] endpoint "
                            "([llm] judge_model, default [llm] model)")
    bench.add_argument("--mini", action="store_true",
                       help="m3, screenshotvqa: the small sets built from real media, with hand-written questions")
    bench.add_argument("--details", help="m3, screenshotvqa: write every question, answer and score to this JSON file")
    bench.add_argument("--baselines", action="store_true",
                       help="locomo: also score BM25, dense (MiniLM) and their fusion over the same turns")
    bench.add_argument("--spoken", action="store_true",
                       help="locomo: speak the conversations with espeak-ng (one voice per speaker) and run them "
                            "through the whole pipeline into one store; needs espeak-ng and sox")
    bench.add_argument("--sessions", type=int, help="locomo --spoken: only the first N sessions of each conversation")
    bench.add_argument("--cpus", help="ocr: also read bands of the screens under QEMU's emulation of these x86-64 CPU "
                       "models, comma-separated (Haswell: AVX2, no AVX-512; Nehalem: no AVX), and compare the text "
                       "with the native reading (needs qemu-user; about 150 times slower than native)")
    bench.add_argument("--conversations", type=int, help="locomo --spoken: only the first N conversations")
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
        perceivers = perceivers_factory(cfg.perception, cfg.llm, keep_images=llm_writer is not None)
        report = ingest_ray(args.paths, store, perceivers, policies, clip_s=cfg.perception.clip_s, start=args.start,
                            llm_writer=llm_writer, workers=args.workers, address=args.address, redactor=redactor)
    else:
        perceivers = build_perceivers(cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm")
        report = ingest(args.paths, store, perceivers, policies, clip_s=cfg.perception.clip_s, start=args.start,
                        llm_writer=llm_writer, redactor=redactor)
    counts = store.count()
    print(f"ingested {len(report.files_ingested)} file(s): {report.clips_new} new clip(s), "
          f"{report.clips_skipped} already stored, {len(report.clips_failed)} failed, "
          f"{report.memories_new} new memories; "
          f"store {store.uri} holds {counts['clips']} clips, {counts['memories']} memories, "
          f"{counts['entities']} entities")
    if report.redacted:
        print("kept out of memory (memorize.redact): " + ", ".join(f"{n} {k}(s)" for k, n in sorted(report.redacted.items())))
    for path, reason in report.files_failed:
        print(f"error: {path}: {reason}", file=sys.stderr)
    return 0 if report.ok else 1


def print_answer(answer, as_json: bool) -> None:
    print(f"Q: {answer.question}")
    print(f"A: {answer.answer}")
    for c in answer.citations:
        print(f"   cites clip {c.clip_id} of {c.source} at {c.start_s:.1f}-{c.end_s:.1f} s")
    if as_json:
        print(json.dumps(answer.to_json(), ensure_ascii=False))


def cmd_ask(args, cfg) -> int:
    from mnemo.wiring import build_agent, open_store

    store = open_store(cfg.graph, args.store)
    if store.count()["memories"] == 0:
        print(f"error: the store {store.uri} holds no memories; run `mnemo ingest PATH --store {store.uri}` first",
              file=sys.stderr)
        return 1
    answerer = build_agent(cfg.control, cfg.llm, store)
    before = args.before.timestamp() if args.before else None
    print_answer(answerer.ask(args.question, before_ts=before), args.json)
    return 0


def cmd_bench(args, cfg) -> int:
    from mnemo.wiring import match_policies, text_embedder

    t0 = time.perf_counter()
    progress = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.name == "locomo":
        import tempfile

        from bench import locomo
        from graph.store import Store

        if not args.data:
            raise ValueError("bench locomo needs --data PATH (a LoCoMo file in the locomo10.json format)")
        if args.spoken:
            from bench import locomo_spoken

            if args.baselines:
                raise ValueError("--baselines scores the text bench; run `bench locomo --baselines` without --spoken")
            with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-spoken-") as tmp:
                figures = locomo_spoken.run(cfg, args.data, Path(tmp), args.sessions, args.conversations,
                                            progress=progress)
            print(locomo_spoken.format_report(figures))
            figures = locomo_spoken.summary(figures)
        else:
            if args.sessions is not None or args.conversations is not None:
                raise ValueError("--sessions and --conversations apply to `bench locomo --spoken` only")
            embedder = text_embedder(cfg.graph)  # one model for every conversation's store
            dense = embedder if cfg.graph.text_embedder == "minilm" else text_embedder(cfg.graph, "minilm")
            with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-") as tmp:
                figures = locomo.run(args.data, lambda sid: Store(Path(tmp) / "stores" / sid, embedder),
                                     match_policies(cfg.memorize, "dlib"), progress=progress,
                                     baselines_embedder=dense if args.baselines else None,
                                     workdir=Path(tmp) / "baselines")
            print(locomo.format_report(figures))
    elif args.name in ("m3", "screenshotvqa"):
        from mnemo import bench_qa

        text, figures, code = bench_qa.run(args, cfg, progress)
        print(f"error: {text}" if code else text, file=sys.stderr if code else sys.stdout)
        if code:
            if args.json:
                print(json.dumps(figures))
            return code
    elif args.name == "serve":
        from bench import serve
        from mnemo import bench_serve

        figures = bench_serve.run(cfg, args.memories, args.store, progress)
        print(serve.format_report(figures))
        figures = serve.summary(figures)
    elif args.name == "speed":
        import tempfile

        from bench import speed

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-speed-") as tmp:
            figures = speed.run(cfg, Path(tmp), args.workers, progress=progress)
        print(speed.format_report(figures))
        figures = speed.summary(figures)
    elif args.name == "capture":
        import tempfile

        from bench import capture

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-capture-") as tmp:
            figures = capture.run(Path(tmp), progress=progress)
        print(capture.format_report(figures))
        figures = capture.summary(figures)
    elif args.name == "store":
        import tempfile

        from bench import store as bench_store

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-store-") as tmp:  # the configured embedder's dimension
            figures = bench_store.run(Path(args.store or tmp), args.memories, text_embedder(cfg.graph), progress=progress)
        print(bench_store.format_report(figures))
    elif args.name == "ocr":
        from bench import ocr as bench_ocr
        from mnemo.wiring import build_ocr

        reader = build_ocr(cfg.perception)
        if reader is None:
            raise ValueError("bench ocr needs an OCR backend; set [perception] ocr_backend = \"rapidocr\"")
        report = bench_ocr.run(reader, progress=progress)
        print(bench_ocr.format_report(report))
        figures = report.figures
        if args.cpus:
            from bench import ocr_cpus
            from bench.ocr_screens import screen_folder

            cpus = tuple(c.strip() for c in args.cpus.split(",") if c.strip())
            comparison = ocr_cpus.compare(reader, screen_folder(), cpus, progress=progress)
            print("\nthe same screen bands read natively and on emulated CPUs:\n" + comparison.report())
            figures = {**figures, **comparison.figures()}
    else:
        from bench import perception as bench_perception
        from mnemo.wiring import build_perceivers, faces_backend_name

        perceivers = build_perceivers(cfg.perception, cfg.llm)
        face_policy, _ = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
        report = bench_perception.run(perceivers, face_policy.threshold, progress=progress)
        print(bench_perception.format_report(report))
        figures = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in report.figures.items()}
    print(f"\nbench {args.name} finished in {time.perf_counter() - t0:.1f} s")
    if args.json:
        print(json.dumps(figures))
    return 0


def main(argv: list[str] | None = None) -> int:
    umask = os.umask(0o077)  # what mnemo writes (stores, capture, caches of it) is the user's alone
    try:
        return _main(argv)
    finally:
        os.umask(umask)


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    from mnemo.config import load_config
    from perception.errors import stage_errors

    try:
        cfg = load_config()
        if cfg.capture.key_file:  # one capture key for this command and its children (capture, ingest, serve)
            os.environ.setdefault("MNEMO_CAPTURE__KEY_FILE", str(Path(cfg.capture.key_file).expanduser()))
        if args.command == "ingest":
            return cmd_ingest(args, cfg)
        if args.command == "ask":
            return cmd_ask(args, cfg)
        if args.command == "bench":
            return cmd_bench(args, cfg)
        if args.command in ("capture", "watch"):
            from mnemo.capture_cli import cmd_capture, cmd_watch

            return (cmd_capture if args.command == "capture" else cmd_watch)(args, cfg)
        if args.command == "people":
            from mnemo.people_cli import cmd_people

            return cmd_people(args, cfg)
        if args.command == "status":
            from mnemo.status_cli import cmd_status

            return cmd_status(args, cfg)
        if args.command == "forget":
            from mnemo.forget_cli import cmd_forget

            return cmd_forget(args, cfg)
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
