"""``mnemo bench NAME``: one sub-command per bench, each with its own arguments (added by an
``add_arguments`` function next to the bench's code, imported only when that bench is named), and
each bench run with the configured models.

The benches themselves live in ``bench/``; those that need the whole pipeline wired are run from
here (``mnemo.bench_qa``, ``mnemo.bench_serve``, ``mnemo.bench_speed``), so ``bench/`` never
imports the composition root, but for ``bench/faults/``, which attacks mnemo as a person runs it.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mnemo.cli_args import LazySubcommands, add_json, add_store, set_handler

KEPT_STORES = "folder of the stores, kept between runs (default: ~/.cache/mnemo/bench-stores/NAME)"


@dataclass(frozen=True)
class Bench:
    """A bench as a sub-command: its help, where its own arguments are added (``"module:function"``,
    None when it has none), what ``--store`` means to it (None: it takes no ``--store``), and its
    runner, which prints the report and returns (figures, exit code)."""

    name: str
    help: str
    run: Callable[..., tuple[dict, int]]
    arguments: str | None = None
    store_help: str | None = None


def add_parser(sub, complete: bool = True) -> None:
    """``bench`` and one sub-parser per bench; with ``complete=False`` a bench's own arguments are
    added only once it is named on the command line."""
    bench = sub.add_parser(
        "bench",
        help="measure accuracy or speed; prints a table (and JSON with --json)",
        description="Each bench prints a table of its figures; with --json the last line of "
        "stdout is one JSON object with them. `mnemo bench NAME --help` lists a "
        "bench's own options.",
    )
    benches = bench.add_subparsers(
        dest="name", required=True, metavar="NAME", action=LazySubcommands
    )
    for b in BENCHES:
        p = benches.add_lazy_parser(
            b.name, b.arguments, help=b.help, description=b.help[:1].upper() + b.help[1:] + "."
        )
        if b.store_help:
            add_store(p, help=b.store_help)
        add_json(p, "print one JSON object with the figures on the last line")
        set_handler(p, partial(cmd_bench, b))
    if complete:
        benches.load_all()


def cmd_bench(bench: Bench, args, cfg) -> int:
    t0 = time.perf_counter()
    figures, code = bench.run(args, cfg, lambda m: print(m, file=sys.stderr, flush=True))
    print(f"\nbench {bench.name} finished in {time.perf_counter() - t0:.1f} s")
    if args.json:
        print(json.dumps(figures))
    return code


def spoken_wiring(cfg):
    """``bench locomo --spoken``'s wiring: the configured models, as ``mnemo ingest`` builds them."""
    from bench.locomo_spoken import Wiring
    from mnemo.wiring import (
        build_llm_writer,
        build_perceivers,
        faces_backend_name,
        match_policies,
        text_embedder,
    )
    from pipeline.ingest import ingest

    def ingest_paths(paths, store, progress, contacts=(), one_pass=False):
        """``one_pass``: speech as mnemo heard it before hints: one pass of tiny.en (float32 on
        the CPU), no hotwords, nothing decoded again."""
        perception = cfg.perception
        if one_pass:
            compute = perception.asr_compute_type
            perception = perception.model_copy(
                update={
                    "asr_hotwords": False,
                    "asr_second_model": "",
                    "asr_compute_type": "float32" if compute == "auto" else compute,
                }
            )
        perceivers = build_perceivers(perception, cfg.llm, keep_images=cfg.memorize.writer == "llm")
        return ingest(
            paths,
            store,
            perceivers,
            match_policies(cfg.memorize, faces_backend_name(cfg.perception)),
            clip_s=cfg.perception.clip_s,
            progress=progress,
            llm_writer=build_llm_writer(cfg.memorize, cfg.llm),
            contacts=contacts,
        )

    return Wiring(
        embedder=text_embedder(cfg.graph),
        ingest=ingest_paths,
        text_policies=match_policies(cfg.memorize, "dlib"),
    )


def _spoken_only(args, bench: str) -> None:
    if not args.spoken and (
        args.sessions is not None
        or args.conversations is not None
        or getattr(args, "contacts", False)
        or getattr(args, "one_pass", False)
    ):
        raise ValueError(
            f"--sessions, --conversations, --contacts and --one-pass apply to `bench {bench} --spoken` only"
        )


def run_locomo(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import locomo
    from graph.store import Store
    from mnemo.wiring import match_policies, text_embedder

    _spoken_only(args, "locomo")
    if args.qa:
        if args.llm or args.spoken or args.baselines:
            raise ValueError("--qa runs on its own: without --llm, --spoken or --baselines")
        from mnemo.bench_qa import run_locomo_qa

        with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-qa-") as tmp:
            text, figures = run_locomo_qa(args, cfg, Path(tmp), progress)
        print(text)
        return figures, 0
    if args.answerers or args.details:
        raise ValueError("--answerers and --details apply to --qa")
    if args.llm:
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-llm-") as tmp:
            text, figures = llm_bench(args, cfg, Path(tmp), progress)
        print(text)
        return figures, 0
    if args.spoken:
        if args.baselines:
            raise ValueError("--baselines scores the text bench; run it without --spoken")
        return _spoken(args, cfg, progress, "locomo"), 0
    embedder = text_embedder(cfg.graph)  # one model for every conversation's store
    dense = embedder if cfg.graph.text_embedder == "minilm" else text_embedder(cfg.graph, "minilm")
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-locomo-") as tmp:
        figures = locomo.run(
            args.data,
            lambda sid: Store(Path(tmp) / "stores" / sid, embedder),
            match_policies(cfg.memorize, "dlib"),
            progress=progress,
            baselines_embedder=dense if args.baselines else None,
            workdir=Path(tmp) / "baselines",
            first_person=args.first_person,
        )
    print(locomo.format_report(figures))
    return figures, 0


def _spoken(args, cfg, progress, bench: str) -> dict:
    """``bench locomo --spoken`` or ``bench profile --spoken``: the conversations spoken and run
    through the whole pipeline; the summary figures."""
    import tempfile

    from bench import locomo_spoken

    with tempfile.TemporaryDirectory(prefix=f"mnemo-bench-{bench}-spoken-") as tmp:
        workdir = Path(tmp)
        if bench == "locomo" and args.store:
            workdir = Path(args.store)
            if (workdir / "spoken").exists():
                raise ValueError(
                    f"{workdir / 'spoken'} exists: bench locomo --spoken --store needs a new folder "
                    "(a store from an earlier run would mix with this one)"
                )
        extra = (
            {
                "first_person": args.first_person,
                "variants": [v for v in ("contacts", "one_pass") if getattr(args, v)],
            }
            if bench == "locomo"
            else {"profiles": True}
        )
        figures = locomo_spoken.run(
            spoken_wiring(cfg),
            args.data,
            workdir,
            args.sessions,
            args.conversations,
            progress=progress,
            **extra,
        )
    print(locomo_spoken.format_report(figures))
    return locomo_spoken.summary(figures)


def _conversations(bench: str, args, cfg, progress, **extra) -> dict:
    """``bench digest`` or ``bench profile`` (text): each LoCoMo conversation in its own store."""
    import importlib
    import tempfile

    from graph.store import Store
    from mnemo.wiring import match_policies, text_embedder

    bench_module = importlib.import_module(f"bench.{bench}")
    embedder = text_embedder(cfg.graph)
    with tempfile.TemporaryDirectory(prefix=f"mnemo-bench-{bench}-") as tmp:
        figures = bench_module.run(
            args.data,
            lambda key: Store(Path(tmp) / key, embedder),
            match_policies(cfg.memorize, "dlib"),
            progress=progress,
            **extra,
        )
    print(bench_module.format_report(figures))
    return figures


def run_profile(args, cfg, progress) -> tuple[dict, int]:
    _spoken_only(args, "profile")
    if args.spoken:
        if args.reason:
            raise ValueError("--reason writes the text bench's profiles; run it without --spoken")
        return _spoken(args, cfg, progress, "profile"), 0
    if not args.reason:
        return _conversations("profile", args, cfg, progress), 0
    from contextlib import ExitStack

    from control.profile_llm import to_write, write
    from mnemo.wiring import reasoning_client

    with ExitStack() as stack:
        client, server = reasoning_client(cfg.control, cfg.llm, progress)
        if server is not None:
            stack.callback(server.close)
        extra = {
            "writer": lambda store, who: write(to_write(store, who), client),
            "writer_people": args.limit,
        }
        return _conversations("profile", args, cfg, progress, **extra), 0


def run_digest(args, cfg, progress) -> tuple[dict, int]:
    from contextlib import ExitStack

    with ExitStack() as stack:
        extra = {}
        if args.llm or args.reason:
            from control.digest_llm import write
            from mnemo.wiring import llm_or_packaged, reasoning_client

            if args.reason:
                client, server = reasoning_client(cfg.control, cfg.llm, progress)
                if server is not None:
                    stack.callback(server.close)
            else:
                client = llm_or_packaged(cfg.llm, stack, progress)
            extra = {"writer": lambda digest: write(digest, client), "writer_days": args.limit}
        return _conversations("digest", args, cfg, progress, **extra), 0


def run_qa(args, cfg, progress) -> tuple[dict, int]:
    """``bench m3`` and ``bench screenshotvqa``; a failure says why on stderr, without a report."""
    from mnemo import bench_qa

    text, figures, code = bench_qa.run(args, cfg, progress)
    print(f"error: {text}" if code else text, file=sys.stderr if code else sys.stdout)
    return figures, code


def run_redact(args, cfg, progress) -> tuple[dict, int]:
    from bench import redact
    from mnemo.wiring import build_redactor

    reports = redact.run_all(redactor=build_redactor(cfg.memorize), progress=progress)
    print(redact.format_all(reports))
    return redact.figures_of(reports), 0


def run_faults(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import faults

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-faults-") as tmp:
        tallies = faults.run(cfg, Path(tmp), args.runs, args.scenarios, progress=progress)
    print(faults.format_report(tallies))
    figures = faults.summary(tallies)
    return figures, 0 if figures["survived"] == figures[
        "runs"
    ] else 1  # a script can tell a failed try by the code


def run_serve(args, cfg, progress) -> tuple[dict, int]:
    from bench import serve
    from mnemo import bench_serve

    figures = bench_serve.run(cfg, args.memories, args.store, progress)
    print(serve.format_report(figures))
    return serve.summary(figures), 0


def run_speed(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import speed
    from mnemo import bench_speed

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-speed-") as tmp:
        figures = bench_speed.run(cfg, Path(tmp), args.workers, progress=progress)
    print(speed.format_report(figures))
    return speed.summary(figures), 0


def run_day(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import day
    from bench.day_media import BLOCKS
    from mnemo import bench_day

    if args.blocks is not None and args.blocks < 1:
        raise ValueError(f"--blocks must be at least 1 (got {args.blocks})")
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-day-") as tmp:
        figures = day.complete(
            bench_day.run(cfg, Path(tmp), args.blocks or BLOCKS, progress=progress)
        )
    print(day.format_report(figures))
    return day.summary(figures), 0


def _capture_with_sound(args, cfg, ocr, progress) -> tuple[dict, int]:
    """``bench capture --audio``: the session without sound, then with the call heard; what the
    sound adds (CPU, peak RSS) is the difference of the two runs on this machine."""
    import tempfile

    from bench import capture
    from bench.capture_sound import CallSound, file_wer
    from bench.pulse_server import missing_tools
    from mnemo.wiring import build_perceivers

    if args.wayland:
        raise ValueError("--audio runs on X11 only; leave out --wayland")
    if why := missing_tools():
        raise ValueError(f"--audio needs a PulseAudio server here: {why}")
    runs = {}
    for heard in (False, True):
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-capture-") as tmp:
            sound = CallSound(Path(tmp)) if heard else None
            try:
                runs[heard] = capture.run(
                    Path(tmp),
                    ocr=ocr,
                    progress=progress,
                    minutes=args.minutes,
                    keep=args.keep,
                    sound=sound,
                    apps=not args.terminals,
                )
                runs[heard] |= _pages_found(cfg, runs[heard])
                if sound is not None:
                    asr = build_perceivers(cfg.perception, cfg.llm).asr
                    runs[heard] |= file_wer(sound, asr)
            finally:
                if sound is not None:
                    sound.close()
    figures = runs[True] | {
        "audio_cpu_pct_added": round(runs[True]["cpu_pct"] - runs[False]["cpu_pct"], 2),
        "audio_rss_mb_added": round(runs[True]["rss_mb"] - runs[False]["rss_mb"], 1),
        "cpu_pct_without_audio": runs[False]["cpu_pct"],
    }
    print(capture.format_report(figures), flush=True)
    return capture.summary(figures) | {"cpu_pct_without_audio": runs[False]["cpu_pct"]}, 0


def _pages_found(cfg, figures: dict) -> dict:
    """``bench capture`` on the apps' desktop: whether the store's search finds each page read."""
    from bench.capture_apps import pages_found
    from mnemo.wiring import open_store

    if not figures.get("pages_read"):
        return {}
    store = open_store(cfg.graph, figures.pop("store"))
    pages = figures.pop("pages_read")

    def search(query: str) -> list[str]:
        return [h.memory.text for h in store.search(query, k=10)]

    found, missed = pages_found(search, pages)
    by_sentence, _ = pages_found(search, pages, by="sentence")
    return {"pages_found": found, "pages_missed": missed, "pages_found_by_sentence": by_sentence}


def run_capture(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import capture
    from mnemo.wiring import build_ocr

    if args.minutes is not None and args.minutes <= 0:
        raise ValueError(f"--minutes must be more than 0 (got {args.minutes:g})")
    ocr = build_ocr(cfg.perception)  # reads the stored frames
    if args.audio:
        return _capture_with_sound(args, cfg, ocr, progress)
    runs = {}
    for wayland in (False, True) if args.wayland else (False,):
        with tempfile.TemporaryDirectory(prefix="mnemo-bench-capture-") as tmp:
            figures = capture.run(
                Path(tmp),
                ocr=ocr,
                progress=progress,
                wayland=wayland,
                minutes=args.minutes,
                keep=args.keep,
                apps=not args.terminals,
            )
            figures |= _pages_found(cfg, figures)
        print(capture.format_report(figures), flush=True)
        runs[figures["desktop"]] = figures
    if args.wayland:
        print(capture.compare(runs["x11"], runs["sway"]))
        return {k: capture.summary(v) for k, v in runs.items()}, 0
    return capture.summary(runs["x11"]), 0


def run_store(args, cfg, progress) -> tuple[dict, int]:
    import tempfile

    from bench import store as bench_store
    from mnemo.wiring import text_embedder

    with tempfile.TemporaryDirectory(
        prefix="mnemo-bench-store-"
    ) as tmp:  # the configured embedder's dimension
        figures = bench_store.run(
            Path(args.store or tmp), args.memories, text_embedder(cfg.graph), progress=progress
        )
    print(bench_store.format_report(figures))
    return figures, 0


def run_ocr(args, cfg, progress) -> tuple[dict, int]:
    from bench import ocr as bench_ocr
    from mnemo.wiring import build_ocr

    reader = build_ocr(cfg.perception)
    if reader is None:
        raise ValueError(
            'bench ocr needs an OCR backend; set [perception] ocr_backend = "rapidocr"'
        )
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
    return figures, 0


def run_perception(args, cfg, progress) -> tuple[dict, int]:
    from bench import perception as bench_perception
    from mnemo.wiring import build_perceivers, faces_backend_name, match_policies

    perceivers = build_perceivers(cfg.perception, cfg.llm)
    face_policy, _ = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    report = bench_perception.run(perceivers, face_policy.threshold, progress=progress)
    print(bench_perception.format_report(report))
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in report.figures.items()}, 0


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

        figures = llm_loop.run(
            args.data,
            lambda sid: Store(tmp / sid, embedder),
            match_policies(cfg.memorize, "dlib"),
            answerers,
            Judge(judge_client),
            args.limit,
            progress,
        )
        return llm_loop.format_report(figures, client.model), figures


BENCHES = (
    Bench("perception", "ASR, speakers, faces and OCR on real media", run_perception),
    Bench(
        "ocr",
        "screen text with its word boundaries on terminal, page and dialog screens rendered under Xvfb",
        run_ocr,
        "bench.ocr:add_arguments",
    ),
    Bench(
        "store",
        "hybrid search at scale",
        run_store,
        "bench.store:add_arguments",
        "directory for the bench store (default: a temporary one)",
    ),
    Bench(
        "locomo",
        "evidence recall of retrieval on LoCoMo conversations",
        run_locomo,
        "bench.locomo:add_arguments",
        "--spoken: a new folder to keep the spoken store in (spoken/), to look at with "
        "`mnemo people --store DIR/spoken`",
    ),
    Bench(
        "digest",
        "day digests of LoCoMo conversations against their event_summary and session_summary",
        run_digest,
        "bench.digest:add_arguments",
    ),
    Bench(
        "profile",
        "each LoCoMo speaker's profile against the dataset's observation facts about them",
        run_profile,
        "bench.profile:add_arguments",
    ),
    Bench(
        "speed",
        "ingest of a 5-minute recording, sequential and on Ray, against ASR alone",
        run_speed,
        "bench.speed:add_arguments",
    ),
    Bench(
        "day",
        "the cost of an hour of an ordinary day (a quarter speech), with and without the gates that skip "
        "empty content",
        run_day,
        "bench.day:add_arguments",
    ),
    Bench(
        "capture",
        "the screenshot daemon on an Xvfb desktop (and with --wayland a headless sway) with a "
        "scripted session and live ingestion",
        run_capture,
        "bench.capture:add_arguments",
    ),
    Bench("m3", "M3-Bench questions on its videos", run_qa, "bench.m3:add_arguments", KEPT_STORES),
    Bench(
        "screenshotvqa",
        "MIRIX's ScreenshotVQA layout",
        run_qa,
        "bench.screenshotvqa:add_arguments",
        KEPT_STORES,
    ),
    Bench(
        "serve",
        "/ask and /search latency of mnemo serve at 1, 4 and 16 clients on the demo store and a large one",
        run_serve,
        "bench.serve:add_arguments",
        KEPT_STORES,
    ),
    Bench(
        "redact",
        "recall and false redactions of the configured redaction on generated secrets and look-alikes",
        run_redact,
    ),
    Bench(
        "faults",
        "kills, full disks, bad input and attacks, and what each lost, orphaned or leaked",
        run_faults,
        "bench.faults:add_arguments",
    ),
)
