"""``mnemo bench NAME``: the bench command's options, and each bench run with the configured models.

The benches themselves live in ``bench/``; those that need the whole pipeline wired are run from
here (``mnemo.bench_qa``, ``mnemo.bench_serve``, ``mnemo.bench_speed``), so ``bench/`` never
imports the composition root.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def add_parser(sub) -> None:
    bench = sub.add_parser("bench", help="measure accuracy or speed; prints a table (and JSON with --json)")
    bench.add_argument("name", choices=["perception", "ocr", "store", "locomo", "digest", "profile", "speed", "day", "capture",
                                        "m3", "screenshotvqa", "serve", "redact", "faults"],
                       help="perception: ASR, speakers, faces, OCR on real media; ocr: screen text "
                            "with its word boundaries on terminal, page and dialog screens rendered under Xvfb; store: hybrid search at scale; "
                            "locomo: evidence recall of retrieval on LoCoMo conversations; digest: day digests of "
                            "LoCoMo conversations against their event_summary and session_summary; profile: each LoCoMo speaker's "
                            "profile against the dataset's observation facts about them; speed: ingest of a "
                            "5-minute recording, sequential and on Ray, against ASR alone; day: the cost of an hour of an ordinary day "
                            "(a quarter speech), with and without the gates that skip empty content; capture: the screenshot daemon on "
                            "an Xvfb desktop with a scripted session and live ingestion; m3: M3-Bench "
                            "questions on its videos; screenshotvqa: MIRIX's ScreenshotVQA layout; serve: /ask and /search "
                            "latency of mnemo serve at 1, 4 and 16 clients on the demo store and a large one; redact: recall and false "
                            "redactions of the configured redaction on generated secrets and look-alikes; faults: kills, full disks, bad "
                            "input and attacks, and what each lost, orphaned or leaked")
    bench.add_argument("--json", action="store_true", help="print one JSON object with the figures on the last line")
    bench.add_argument("--memories", type=int, default=1_000_000,
                       help="store, serve: how many synthetic memories (serve: 0 for the demo store alone)")
    bench.add_argument("--store", help="store: directory for the bench store (default: a temporary one); "
                       "locomo --spoken: a new folder to keep the spoken store in (spoken/), to look at with "
                       "`mnemo people --store DIR/spoken`; m3, "
                       "screenshotvqa, serve: folder of the stores, kept between runs "
                       "(default: ~/.cache/mnemo/bench-stores/NAME)")
    bench.add_argument("--data", help="locomo, digest, profile: a LoCoMo file in the upstream locomo10.json format; "
                       "screenshotvqa: a folder with qa_pairs.json and one folder of screenshots per user")
    bench.add_argument("--blocks", type=int, help="day: six-minute blocks of the day recording (default 10: an hour)")
    bench.add_argument("--workers", type=int, help="speed: Ray perception workers (default: one per CPU)")
    bench.add_argument("--annotations", help="m3: robot.json or web.json from the M3-Agent release")
    bench.add_argument("--videos", help="m3: folder holding the videos (as the annotations' video_path, or by file name)")
    bench.add_argument("--split", choices=["robot", "web"], help="m3: the split (default: from the file name)")
    bench.add_argument("--limit", type=int, help="m3: only the first N videos found; locomo --llm: only the first N "
                       "questions; digest --llm: the LLM writes only the first N days")
    bench.add_argument("--llm", action="store_true",
                       help="locomo, m3 --mini: the LLM control loop beside the offline answerer on the same questions, "
                            "judged; digest: each day also written by the LLM from the digest's cited moments, scored "
                            "alike (the [llm] endpoint, or without one the packaged model served here)")
    bench.add_argument("--judge", action="store_true",
                       help="m3, screenshotvqa: score answers with the paper's judge prompt on the [llm] endpoint "
                            "([llm] judge_model, default [llm] model)")
    bench.add_argument("--mini", action="store_true",
                       help="m3, screenshotvqa: the small sets built from real media, with hand-written questions")
    bench.add_argument("--details", help="m3, screenshotvqa: write every question, answer and score to this JSON file")
    bench.add_argument("--baselines", action="store_true",
                       help="locomo: also score BM25, dense (MiniLM) and their fusion over the same turns")
    bench.add_argument("--first-person", action="store_true",
                       help="locomo: mark each conversation's first speaker as the owner and ask their questions "
                            "also as they would (\"What did I …\"): recall@10 both ways")
    bench.add_argument("--spoken", action="store_true",
                       help="locomo, profile: speak the conversations with espeak-ng (one voice per speaker) and run "
                            "them through the whole pipeline into one store; needs espeak-ng and sox")
    bench.add_argument("--sessions", type=int, help="locomo --spoken, profile --spoken: only the first N sessions of "
                       "each conversation")
    bench.add_argument("--cpus", help="ocr: also read bands of the screens under QEMU's emulation of these x86-64 CPU "
                       "models, comma-separated (Haswell: AVX2, no AVX-512; Nehalem: no AVX), and compare the text "
                       "with the native reading (needs qemu-user; about 150 times slower than native)")
    bench.add_argument("--conversations", type=int, help="locomo --spoken, profile --spoken: only the first N "
                       "conversations")
    bench.add_argument("--runs", type=int, default=3, help="faults: tries of each scenario that can differ between "
                       "tries (default 3)")
    bench.add_argument("--scenarios", help="faults: only these scenarios, comma-separated (default: all)")


def spoken_wiring(cfg):
    """``bench locomo --spoken``'s wiring: the configured models, as ``mnemo ingest`` builds them."""
    from bench.locomo_spoken import Wiring
    from mnemo.wiring import build_llm_writer, build_perceivers, faces_backend_name, match_policies, text_embedder
    from pipeline.ingest import ingest

    def ingest_paths(paths, store, progress):
        perceivers = build_perceivers(cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm")
        return ingest(paths, store, perceivers, match_policies(cfg.memorize, faces_backend_name(cfg.perception)),
                      clip_s=cfg.perception.clip_s, progress=progress, llm_writer=build_llm_writer(cfg.memorize, cfg.llm))

    return Wiring(embedder=text_embedder(cfg.graph), ingest=ingest_paths,
                  text_policies=match_policies(cfg.memorize, "dlib"))


def cmd_bench(args, cfg) -> int:
    from mnemo.wiring import match_policies, text_embedder

    t0 = time.perf_counter()
    code = 0
    progress = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.name == "locomo":
        import tempfile

        from bench import locomo
        from graph.store import Store

        if not args.data:
            raise ValueError("bench locomo needs --data PATH (a LoCoMo file in the locomo10.json format)")
        if args.llm:
            with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-llm-") as tmp:
                text, figures = llm_bench(args, cfg, Path(tmp), progress)
            print(text)
        elif args.spoken:
            from bench import locomo_spoken

            if args.baselines:
                raise ValueError("--baselines scores the text bench; run it without --spoken")
            with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-spoken-") as tmp:
                workdir = Path(args.store) if args.store else Path(tmp)
                if (workdir / "spoken").exists():
                    raise ValueError(f"{workdir / 'spoken'} exists: bench locomo --spoken --store needs a new folder "
                                     "(a store from an earlier run would mix with this one)")
                figures = locomo_spoken.run(spoken_wiring(cfg), args.data, workdir, args.sessions,
                                            args.conversations, progress=progress, first_person=args.first_person)
            print(locomo_spoken.format_report(figures))
            figures = locomo_spoken.summary(figures)
        else:
            if args.sessions is not None or args.conversations is not None:
                raise ValueError("--sessions and --conversations apply to `bench locomo --spoken` and `bench profile --spoken` only")
            embedder = text_embedder(cfg.graph)  # one model for every conversation's store
            dense = embedder if cfg.graph.text_embedder == "minilm" else text_embedder(cfg.graph, "minilm")
            with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-") as tmp:
                figures = locomo.run(args.data, lambda sid: Store(Path(tmp) / "stores" / sid, embedder),
                                     match_policies(cfg.memorize, "dlib"), progress=progress,
                                     baselines_embedder=dense if args.baselines else None,
                                     workdir=Path(tmp) / "baselines", first_person=args.first_person)
            print(locomo.format_report(figures))
    elif args.name == "profile" and args.spoken:
        import tempfile

        from bench import locomo_spoken

        if args.llm:
            raise ValueError("bench profile has no --llm: profiles are extractive")
        if not args.data:
            raise ValueError("bench profile needs --data PATH (a LoCoMo file in the locomo10.json format)")
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-profile-spoken-") as tmp:
            figures = locomo_spoken.run(spoken_wiring(cfg), args.data, Path(tmp), args.sessions, args.conversations,
                                        progress=progress, profiles=True)
        print(locomo_spoken.format_report(figures))
        figures = locomo_spoken.summary(figures)
    elif args.name in ("digest", "profile"):
        import importlib
        import tempfile

        from graph.store import Store

        if not args.data:
            raise ValueError(f"bench {args.name} needs --data PATH (a LoCoMo file in the locomo10.json format)")
        from contextlib import ExitStack

        bench_module = importlib.import_module(f"bench.{args.name}")
        embedder = text_embedder(cfg.graph)
        with tempfile.TemporaryDirectory(prefix=f"mnemo-bench-{args.name}-") as tmp, ExitStack() as stack:
            extra = {}
            if args.llm:
                if args.name != "digest":
                    raise ValueError("--llm applies to bench locomo, digest and m3 --mini")
                from control.digest_llm import write
                from mnemo.wiring import llm_or_packaged

                client = llm_or_packaged(cfg.llm, stack, progress)
                extra = {"writer": lambda digest: write(digest, client), "writer_days": args.limit}
            figures = bench_module.run(args.data, lambda key: Store(Path(tmp) / key, embedder),
                                       match_policies(cfg.memorize, "dlib"), progress=progress, **extra)
        print(bench_module.format_report(figures))
    elif args.name in ("m3", "screenshotvqa"):
        from mnemo import bench_qa

        text, figures, code = bench_qa.run(args, cfg, progress)
        print(f"error: {text}" if code else text, file=sys.stderr if code else sys.stdout)
        if code:
            if args.json:
                print(json.dumps(figures))
            return code
    elif args.name == "redact":
        from bench import redact
        from mnemo.wiring import build_redactor

        report = redact.run(redactor=build_redactor(cfg.memorize), progress=progress)
        print(redact.format_report(report))
        figures = report.figures
    elif args.name == "faults":
        import tempfile

        from mnemo import faults

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-faults-") as tmp:
            tallies = faults.run(cfg, Path(tmp), args.runs, args.scenarios, progress=progress)
        print(faults.format_report(tallies))
        figures = faults.summary(tallies)
        code = 0 if figures["survived"] == figures["runs"] else 1  # a script can tell a failed try from the code
    elif args.name == "serve":
        from bench import serve
        from mnemo import bench_serve

        figures = bench_serve.run(cfg, args.memories, args.store, progress)
        print(serve.format_report(figures))
        figures = serve.summary(figures)
    elif args.name == "speed":
        import tempfile

        from bench import speed
        from mnemo import bench_speed

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-speed-") as tmp:
            figures = bench_speed.run(cfg, Path(tmp), args.workers, progress=progress)
        print(speed.format_report(figures))
        figures = speed.summary(figures)
    elif args.name == "day":
        import tempfile

        from bench import day
        from bench.day_media import BLOCKS
        from mnemo import bench_day

        if args.blocks is not None and args.blocks < 1:
            raise ValueError(f"--blocks must be at least 1 (got {args.blocks})")
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-day-") as tmp:
            figures = day.complete(bench_day.run(cfg, Path(tmp), args.blocks or BLOCKS, progress=progress))
        print(day.format_report(figures))
        figures = day.summary(figures)
    elif args.name == "capture":
        import tempfile

        from bench import capture
        from mnemo.wiring import build_ocr

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-capture-") as tmp:  # the OCR reads the stored frames
            figures = capture.run(Path(tmp), ocr=build_ocr(cfg.perception), progress=progress)
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
    return code


def llm_bench(args, cfg, tmp: Path, progress) -> tuple[str, dict]:
    """``bench locomo --llm``: the configured [llm] endpoint, or the packaged model served here for
    the run (``bench_qa.llm_endpoint``); the judge asks the same endpoint."""
    from contextlib import ExitStack

    from bench import llm_loop
    from bench.judge import Judge
    from graph.store import Store
    from mnemo.bench_qa import llm_endpoint
    from mnemo.wiring import build_answerers, match_policies, text_embedder

    with ExitStack() as stack:
        client, judge_client = llm_endpoint(cfg, stack, progress)
        embedder = text_embedder(cfg.graph)

        def answerers(store):
            return *build_answerers(cfg.control, store, client), client

        figures = llm_loop.run(args.data, lambda sid: Store(tmp / sid, embedder), match_policies(cfg.memorize, "dlib"),
                               answerers, Judge(judge_client), args.limit, progress)
        return llm_loop.format_report(figures, client.model), figures
