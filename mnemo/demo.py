"""``mnemo demo``: the offline main job on real media made by others.

Builds the Diane-and-Sheila recording (see ``bench.demo_media``), ingests it into a fresh store,
and answers questions whose answers are in the media, with clip/time citations.
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TYPE_CHECKING

from mnemo.cli_args import add_store, set_handler

if TYPE_CHECKING:
    from mnemo.config import MnemoConfig

QUESTIONS = (
    "Where is Sheila from?",
    "Where does Diane live?",
    "What do they call Sheila down there?",
)


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="offline demo on real media: build, ingest, ask")
    add_store(p, help="store directory (default: a fresh one in the cache)")
    set_handler(p, cmd_demo)


def cmd_demo(args, cfg: MnemoConfig) -> int:
    return run_demo(cfg, args.store)


def ingest_demo(cfg: MnemoConfig, store, **ingest_kwargs):
    """The demo recording (built on first use) ingested into ``store`` with the configured models;
    the ``IngestReport``."""
    from bench.demo_media import build_demo_recording
    from mnemo.wiring import build_llm_writer, build_perceivers, faces_backend_name, match_policies
    from pipeline.ingest import ingest

    recording = build_demo_recording()
    perceivers = build_perceivers(cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm")
    return ingest(
        [str(recording)],
        store,
        perceivers,
        match_policies(cfg.memorize, faces_backend_name(cfg.perception)),
        clip_s=cfg.perception.clip_s,
        llm_writer=build_llm_writer(cfg.memorize, cfg.llm),
        **ingest_kwargs,
    )


def run_demo(cfg: MnemoConfig, store_dir: str | None = None) -> int:
    from bench.fixtures import cache_dir
    from mnemo.ask_cli import print_answer
    from mnemo.wiring import build_agent, open_store

    t0 = time.perf_counter()
    print(
        "building the demo recording from pyannote's sample.wav and insightface's t1.jpg …",
        file=sys.stderr,
    )
    if store_dir is None:
        store_dir = str(cache_dir() / "demo" / "store")
        shutil.rmtree(store_dir, ignore_errors=True)  # the demo starts from an empty memory
    store = open_store(cfg.graph, store_dir)
    report = ingest_demo(cfg, store)
    if not report.ok:
        print(
            f"error: the demo recording could not be ingested: {report.files_failed}",
            file=sys.stderr,
        )
        return 1
    counts = store.count()
    print(
        f"\nmemory: {counts['clips']} clips, {counts['memories']} memories, {counts['entities']} entities "
        f"in {store.uri}\n"
    )
    answerer = build_agent(cfg.control, cfg.llm, store, cfg.people.me)
    for question in QUESTIONS:
        print_answer(answerer.ask(question), as_json=False)
        print()
    print(f"demo finished in {time.perf_counter() - t0:.1f} s")
    return 0
