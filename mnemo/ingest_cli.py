"""``mnemo ingest``: recordings, audio and screenshot folders cut into 30 s clips and memorized, in
this process or with perception on Ray workers."""

from __future__ import annotations

import json
import sys
from functools import partial

from mnemo.cli_args import add_duration, add_json, add_store, parse_time, set_handler


def add_parser(sub) -> None:
    p = sub.add_parser(
        "ingest",
        help="cut recordings into 30 s clips and memorize them",
        description="Files and folders (video, audio, screenshot folders) cut into 30 s clips, "
        "perceived and memorized. Running it again skips what is stored. Exit 1 when "
        "no file could be ingested.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="video/audio files or folders")
    add_store(p)
    p.add_argument(
        "--start",
        type=parse_time,
        metavar="TIME",
        help="absolute start of the recording(s), ISO 8601 (default: file metadata, then mtime)",
    )
    p.add_argument(
        "--ray",
        action="store_true",
        help="perception on Ray workers (pip install 'mnemo[ray]'); memorizing stays in clip order",
    )
    p.add_argument(
        "--workers",
        type=int,
        help="--ray: perception workers (default: one per CPU of the cluster)",
    )
    p.add_argument(
        "--address",
        help="--ray: join this cluster (auto, or HOST:PORT) instead of starting a local one",
    )
    add_duration(
        p,
        "--wait",
        "another process writing the store: wait at most this long (e.g. 30s, 5m), then "
        "fail (default: until it is done)",
    )
    add_json(
        p,
        "print one JSON object on the last line: clips stored, skipped and failed, and the files that "
        "failed with why",
    )
    set_handler(p, cmd_ingest)


def report_json(report, store_uri: str | None, error: str | None = None) -> dict:
    """``ingest --json``'s object: what the ``IngestReport`` knows, or an error before any file."""
    if report is None:
        return {"ok": False, "error": error, "store": store_uri}
    return {
        "ok": report.ok,
        "store": store_uri,
        "files_ingested": report.files_ingested,
        "files_failed": [{"path": p, "reason": r} for p, r in report.files_failed],
        "clips_stored": report.clips_new,
        "clips_skipped": report.clips_skipped,
        "clips_failed": [{"clip": c, "reason": r} for c, r in report.clips_failed],
        "memories_new": report.memories_new,
        "redacted": report.redacted,
    }


def cmd_ingest(args, cfg) -> int:
    from graph.store import StoreBusy
    from mnemo.wiring import (
        build_llm_writer,
        build_perceivers,
        build_redactor,
        contact_names,
        faces_backend_name,
        match_policies,
        open_store,
        perceivers_factory,
    )
    from pipeline.ingest import ingest, to_stderr

    store = open_store(cfg.graph, args.store)
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    redactor = build_redactor(cfg.memorize)
    llm_writer = build_llm_writer(cfg.memorize, cfg.llm)
    if args.ray:
        from ray_jobs.ingest import ingest_ray

        try:
            import ray.data  # noqa: F401  (an extra: say how to install it rather than fail inside)
        except ImportError as e:
            print(
                f"error: --ray needs Ray ({e}); install it with: pip install 'mnemo[ray]'",
                file=sys.stderr,
            )
            if args.json:
                print(json.dumps(report_json(None, store.uri, f"--ray needs Ray: {e}")))
            return 2
        run = partial(
            ingest_ray,
            perceivers=perceivers_factory(
                cfg.perception, cfg.llm, keep_images=llm_writer is not None
            ),
            workers=args.workers,
            address=args.address,
        )
    else:
        run = partial(
            ingest,
            perceivers=build_perceivers(
                cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm"
            ),
        )
    try:
        report = run(
            args.paths,
            store,
            policies=policies,
            clip_s=cfg.perception.clip_s,
            start=args.start,
            llm_writer=llm_writer,
            redactor=redactor,
            wait_s=args.wait,
            contacts=contact_names(cfg.people, to_stderr),
        )
    except (StoreBusy, ConnectionError) as e:  # the store in use; no Ray cluster at --address
        print(f"error: {e}", file=sys.stderr)
        if args.json:
            print(json.dumps(report_json(None, store.uri, str(e))))
        return 1
    counts = store.count()
    print(
        f"ingested {len(report.files_ingested)} file(s): {report.clips_new} new clip(s), "
        f"{report.clips_skipped} already stored, {len(report.clips_failed)} failed, "
        f"{report.memories_new} new memories; "
        f"store {store.uri} holds {counts['clips']} clips, {counts['memories']} memories, "
        f"{counts['entities']} entities"
    )
    for worker, clips in report.clips_by_worker.items():
        print(
            f"{worker}: {clips} clip(s) perceived, peak {report.peak_rss_mb.get(worker, 0.0):.0f} MB"
        )
    if report.redacted:
        print(
            "kept out of memory (memorize.redact): "
            + ", ".join(f"{n} {k}(s)" for k, n in sorted(report.redacted.items()))
        )
    for path, reason in report.files_failed:
        print(f"error: {path}: {reason}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                report_json(report, store.uri) | {"store_counts": counts}, ensure_ascii=False
            )
        )
    return 0 if report.ok else 1
