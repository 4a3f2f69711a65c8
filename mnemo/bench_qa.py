"""``mnemo bench m3`` and ``mnemo bench screenshotvqa``: the runners wired to the configured
perception, store, agent and judge."""

from __future__ import annotations

import json
from pathlib import Path

from bench.fixtures import cache_dir


def harness(cfg, root: Path, progress):
    from bench.qa import Harness
    from graph.store import Store
    from mnemo.wiring import (
        build_agent,
        build_llm_writer,
        build_perceivers,
        faces_backend_name,
        match_policies,
        text_embedder,
    )
    from pipeline.ingest import ingest

    embedder = text_embedder(cfg.graph)  # one model for every store
    perceivers = build_perceivers(cfg.perception, cfg.llm, keep_images=cfg.memorize.writer == "llm")
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    llm_writer = build_llm_writer(cfg.memorize, cfg.llm)
    # stores are kept between runs; one folder per embedder, whose vectors they hold
    stores = root / cfg.graph.text_embedder
    quiet = lambda m: None  # noqa: E731  (per-clip lines would drown the bench's own)
    return Harness(
        store=lambda key: Store(stores / key, embedder),
        ingest=lambda paths, store, start: ingest(
            paths,
            store,
            perceivers,
            policies,
            clip_s=30.0,
            start=start,
            progress=quiet,
            llm_writer=llm_writer,
        ),
        agent=lambda store: build_agent(cfg.control, cfg.llm, store, cfg.people.me),
    )


def build_judge(cfg, progress):
    from bench.judge import PAPER_MODEL, Judge
    from mnemo.wiring import chat_client

    judge = Judge(chat_client(judge_llm(cfg)))
    if not judge.is_paper_model:
        progress(
            f"warning: the judge is {judge.model!r}, not the paper's {PAPER_MODEL}; accuracy is not "
            "comparable with the published figures"
        )
    return judge


def judge_llm(cfg):
    """The [llm] endpoint with the judge's model (``judge_model``, else the model)."""
    return cfg.llm.model_copy(update={"model": cfg.llm.judge_model or cfg.llm.model})


def llm_endpoint(cfg, stack, progress):
    """(the agent's client, the judge's client): the configured [llm] endpoint (the judge with
    ``judge_model`` where set), or, with none configured, the packaged model served here for as
    long as ``stack`` lasts (both ask it)."""
    from llm.client import ChatClient
    from mnemo.wiring import chat_client, llm_or_packaged

    client = llm_or_packaged(cfg.llm, stack, progress)
    if cfg.llm.base_url:
        return client, chat_client(judge_llm(cfg))
    # its own client, so the judge's tokens are counted apart
    return client, ChatClient(
        client.url.removesuffix("/chat/completions"),
        client.model,
        client.api_key,
        timeout_s=client.timeout_s,
    )


def run_m3_llm(args, cfg, progress) -> tuple[str, dict, int]:
    """``bench m3 --mini --llm``: the mini set answered offline and through the LLM loop, judged."""
    from contextlib import ExitStack
    from dataclasses import replace

    from bench import llm_loop, m3
    from bench.judge import Judge
    from bench.mini_sets import build_m3_mini
    from mnemo.wiring import build_answerers

    if not args.mini:
        raise ValueError("--llm runs on the mini set: bench m3 --mini --llm")
    data = build_m3_mini()
    root = Path(args.store) if args.store else cache_dir() / "bench-stores" / args.name
    with ExitStack() as stack:
        client, judge_client = llm_endpoint(cfg, stack, progress)
        judge = Judge(judge_client)
        wired = harness(cfg, root, progress)
        checks: list[llm_loop.Checked] = []

        def answerer(path: str):
            def build(store):
                offline, agent = build_answerers(cfg.control, store, client)
                if path == "offline":
                    return offline
                checks.append(llm_loop.Checked(agent))
                return checks[-1]

            return build

        asked: dict[str, list] = {}
        tokens = 0
        for path in ("offline", "llm"):
            progress(f"the {path} path …")
            before = sum(client.tokens.values())
            asked[path] = [
                a
                for split in ("robot", "web")
                for a in m3.run(
                    data / f"{split}.json",
                    data,
                    replace(wired, agent=answerer(path)),
                    split,
                    args.limit,
                    judge,
                    progress,
                )["asked"]
            ]
            tokens += sum(client.tokens.values()) - before
    scored = lambda a: not a.expect_not_found and not a.yes_no  # noqa: E731  (as answer_in_context counts)
    recall = {p: [float(a.in_context(10)) for a in rows if scored(a)] for p, rows in asked.items()}
    judged = {
        p: [
            bool(a.verdict.correct)
            for a in rows
            if a.verdict is not None and a.verdict.correct is not None
        ]
        for p, rows in asked.items()
    }
    figures = llm_loop.summary(
        len(asked["llm"]),
        recall,
        judged,
        checks,
        [a.ms / 1000 for a in asked["offline"]],
        tokens,
        judge,
    )
    _details(args.details, asked["llm"], progress)
    text = llm_loop.format_report(
        figures, client.model, "M3-Bench mini (robot and web)", "answer in 10 read"
    )
    return text, figures, 0


def run(args, cfg, progress) -> tuple[str, dict, int]:
    """(report text, figures, exit code) of ``bench m3`` or ``bench screenshotvqa``."""
    from bench import m3, screenshotvqa
    from bench.mini_sets import build_m3_mini, build_screenshotvqa_mini

    if getattr(args, "llm", False):
        if args.name != "m3":
            raise ValueError("--llm applies to bench locomo and bench m3 --mini")
        return run_m3_llm(args, cfg, progress)
    if getattr(args, "qa", False):
        if getattr(args, "llm", False) or args.judge:
            raise ValueError("--qa runs on its own: without --llm or --judge")
        return run_m3_qa(args, cfg, progress)

    judge = build_judge(cfg, progress) if args.judge else None
    root = Path(args.store) if args.store else cache_dir() / "bench-stores" / args.name
    if args.name == "m3":
        if cfg.perception.clip_s != 30.0:
            progress(
                f"note: M3-Bench clips are 30 s; [perception] clip_s = {cfg.perception.clip_s:g} is ignored here"
            )
        if args.mini:
            data = build_m3_mini()
            sets = [(data / f"{split}.json", data, split) for split in ("robot", "web")]
        else:
            if not args.annotations or not args.videos:
                raise ValueError(
                    "bench m3 needs --annotations robot.json|web.json and --videos DIR (or --mini)"
                )
            sets = [(Path(args.annotations), Path(args.videos), args.split)]
        wired = harness(cfg, root, progress)
        runs, text = {}, []
        for annotations, videos, split in sets:
            try:
                figures = m3.run(annotations, videos, wired, split, args.limit, judge, progress)
            except m3.NoVideos as e:
                return str(e), {"questions": 0, "error": str(e)}, 1
            runs[figures["split"]] = figures
            text.append(m3.format_report(figures))
        _details(args.details, [a for r in runs.values() for a in r["asked"]], progress)
        return "\n\n".join(text), _combined(runs, judge is not None), 0
    if args.mini:
        data = build_screenshotvqa_mini()
    elif args.data:
        data = Path(args.data)
    else:
        raise ValueError(
            "bench screenshotvqa needs --data DIR (qa_pairs.json and a folder per user) or --mini"
        )
    figures = screenshotvqa.run(data, harness(cfg, root, progress), root / "work", judge, progress)
    _details(args.details, figures["asked"], progress)
    return screenshotvqa.format_report(figures), _last_line(figures), 0


def _details(path: str | None, asked: list, progress) -> None:
    if path:
        Path(path).write_text(
            json.dumps([a.to_json() for a in asked], indent=1, ensure_ascii=False), encoding="utf-8"
        )
        progress(f"every question, answer and score: {path}")


_KEYS = (
    "questions",
    "answer_in_context@5",
    "token_f1",
    "containment",
    "leakage",
    "ms_per_query",
    "store_mb",
    "ingest_s",
    "accuracy",
    "ci95",
    "judged",
    "out_of_reach_questions",
    "not_found_ok",
    "yes_no_questions",
)


def _last_line(figures: dict) -> dict:
    out = {k: figures.get(k) for k in _KEYS}
    out["per_type"] = figures.get("per_type", {})
    return out


def _combined(runs: dict[str, dict], judged: bool) -> dict:
    """One split: its figures. Both (``--mini``): the questions of both pooled, and each split's
    own figures under ``splits``."""
    if len(runs) == 1:
        figures = next(iter(runs.values()))
        return _last_line(figures) | {"split": figures["split"], "coverage": figures["coverage"]}
    from bench.qa import summarise

    pooled = summarise([a for r in runs.values() for a in r["asked"]], judged)
    pooled.update(
        store_mb=round(sum(r["store_mb"] for r in runs.values()), 2),
        ingest_s=round(sum(r["ingest_s"] for r in runs.values()), 1),
    )
    return _last_line(pooled) | {"splits": {split: _last_line(r) for split, r in runs.items()}}


QA_MODELS = {"0.5b": "qwen2.5-coder-0.5b-instruct", "1.5b": "qwen2.5-coder-1.5b-instruct"}


def qa_clients(args, cfg, progress):
    """The ``--answerers`` of a ``--qa`` run (default: offline, the packaged 0.5B and 1.5B, and the
    [llm] endpoint when one is configured): (names, {name: client}, the servers started here,
    {name: model})."""
    from bench import locomo_qa
    from llm.client import ChatClient
    from llm.local import LocalServer, reasoning_threads
    from mnemo.llm_cli import model_file
    from mnemo.wiring import chat_client

    names = [n.strip() for n in args.answerers.split(",")] if args.answerers else None
    names = names or ["offline", *QA_MODELS, *(["endpoint"] if cfg.llm.base_url else [])]
    unknown = [n for n in names if n not in locomo_qa.ANSWERERS]
    if unknown:
        raise ValueError(
            f"--answerers: unknown {', '.join(unknown)}; choose from {', '.join(locomo_qa.ANSWERERS)}"
        )
    if "endpoint" in names and not cfg.llm.base_url:
        raise ValueError("--answerers endpoint: no [llm] base_url is configured")
    clients: dict[str, ChatClient] = {}
    servers = []
    models: dict[str, str] = {}
    for name in names:
        if name in QA_MODELS:
            server = LocalServer(model_file(QA_MODELS[name], progress), threads=reasoning_threads())
            servers.append(server)
            clients[name] = ChatClient(server.base_url, server.name, server.api_key, 600.0, 1)
        elif name == "endpoint":
            clients[name] = chat_client(cfg.llm)
        if name in clients:
            models[name] = clients[name].model
            progress(f"{name}: {models[name]}")
    return names, clients, servers, models


def _answerer(name: str, offline, clients: dict):
    from control.reason import Reasoner

    return offline if name == "offline" else Reasoner(offline.planner, clients[name])


def _write_details(args, asked: list, progress) -> None:
    if args.details:
        Path(args.details).write_text(
            json.dumps(asked, indent=1, ensure_ascii=False), encoding="utf-8"
        )
        progress(f"every question, answer and score: {args.details}")


def run_locomo_qa(args, cfg, tmp: Path, progress) -> tuple[str, dict]:
    """``bench locomo --qa``: LoCoMo's answer metric for the offline answer and the reasoned ones
    (``bench.locomo_qa``); each packaged model is served here once for the run."""
    from bench import locomo_qa
    from graph.store import Store
    from mnemo.wiring import build_answerers, match_policies, text_embedder

    names, clients, servers, models = qa_clients(args, cfg, progress)
    embedder = text_embedder(cfg.graph)

    def answerers(store):
        offline, _ = build_answerers(cfg.control, store)
        return {name: (_answerer(name, offline, clients), clients.get(name)) for name in names}

    try:
        figures = locomo_qa.run(
            args.data,
            lambda sid: Store(tmp / sid, embedder),
            match_policies(cfg.memorize, "dlib"),
            answerers,
            args.limit,
            progress,
        )
    finally:
        for server in servers:
            server.close()
    _write_details(args, figures.pop("asked"), progress)
    return locomo_qa.format_report(figures, models), figures


class _Recorded:
    """An answerer whose every answer is kept by question, with its seconds and prompt tokens, for
    a runner (``bench.m3``) that keeps only the answer's text."""

    def __init__(self, answerer, client, sink: dict) -> None:
        self.answerer, self.client, self.sink = answerer, client, sink

    def ask(self, question: str, before_ts: float | None = None):
        import time

        before = self.client.tokens["prompt_tokens"] if self.client else None
        t0 = time.perf_counter()
        answer = self.answerer.ask(question, before_ts=before_ts)
        tokens = self.client.tokens["prompt_tokens"] - before if self.client else None
        self.sink[question] = (answer, time.perf_counter() - t0, tokens)
        return answer


def run_m3_qa(args, cfg, progress) -> tuple[str, dict, int]:
    """``bench m3 --mini --qa``: the mini set's questions asked of the offline answer and of the
    reasoned ones, each scored by LoCoMo's token F1 against the annotated answer (no judge)."""
    from dataclasses import replace

    from bench import locomo_qa, m3
    from bench.locomo_f1 import score
    from bench.mini_sets import build_m3_mini
    from mnemo.wiring import build_answerers

    if not args.mini:
        raise ValueError("--qa runs on the mini set: bench m3 --mini --qa")
    data = build_m3_mini()
    root = Path(args.store) if args.store else cache_dir() / "bench-stores" / args.name
    names, clients, servers, models = qa_clients(args, cfg, progress)
    wired = harness(cfg, root, progress)
    tallies: dict[str, locomo_qa.Tally] = {}
    rows: dict[str, dict] = {}
    try:
        for name in names:
            kept: dict[str, tuple] = {}

            def agent(store, name=name, kept=kept):
                offline, _ = build_answerers(cfg.control, store, None, cfg.people.me)
                return _Recorded(_answerer(name, offline, clients), clients.get(name), kept)

            tally = tallies.setdefault(name, locomo_qa.Tally())
            for split in ("robot", "web"):
                progress(f"{name}: the {split} split …")
                figures = m3.run(
                    data / f"{split}.json",
                    data,
                    replace(wired, agent=agent),
                    split,
                    args.limit,
                    None,
                    progress,
                )
                for a in figures["asked"]:
                    answer, seconds, tokens = kept[a.question]
                    f1 = score(a.answer, a.gold, 4)  # a free answer: LoCoMo's single-hop rule
                    tally.add(4, f1, answer, seconds, tokens)
                    row = rows.setdefault(
                        a.question_id,
                        {"split": split, "question": a.question, "gold": a.gold, "answers": {}},
                    )
                    row["answers"][name] = {
                        "answer": a.answer,
                        "f1": round(f1, 4),
                        "seconds": round(seconds, 2),
                        "steps": list(answer.steps),
                    }
    finally:
        for server in servers:
            server.close()
    out = {
        "questions": len(rows),
        "qa": {name: t.figures() for name, t in tallies.items()},
    }
    _write_details(args, list(rows.values()), progress)
    return locomo_qa.format_report(out, models, "M3-Bench mini (robot and web)"), out, 0
