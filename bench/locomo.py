"""``mnemo bench locomo``: LoCoMo conversations through memorization and the offline planner's
retrieval, scored by recall of the evidence turns; with ``--baselines``, BM25, dense and fused
rankings over the same turns.

Each session becomes a recording of speech by its two speakers, enrolled by name with a fixed voice
each: identities are perfect here, so the figures measure memory and retrieval, not speaker
recognition.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.datasets.locomo import CATEGORIES, Conversation, Session, load
from bench.metrics import recall_at_k

WORDS_PER_S = 2.5  # spoken pace used to lay turns out in time (150 words a minute)
PAUSE_S = 1.0


def session_clips(conv: Conversation, session: Session, clip_s: float = 30.0):
    """A session as a recording of speech: turns laid out at a speaking pace from the session's
    start, each by its named speaker (a fixed voice per speaker), cut into ``clip_s`` clips. A
    shared image becomes a frame carrying its caption."""
    import hashlib

    import numpy as np

    from perception.records import Clip, ClipObservations, FrameObservation, SourceInfo, SpeechTurn

    voices = {name: np.eye(8, dtype=np.float32)[i] for i, name in enumerate(conv.speakers)}
    timed, t = [], 0.0
    for turn in session.turns:
        duration = max(1.0, len(turn.text.split()) / WORDS_PER_S)
        timed.append((turn, t, t + duration))
        t += duration + PAUSE_S
    sha = hashlib.sha256(f"{conv.sample_id}/{session.index}".encode()).hexdigest()
    source = SourceInfo(
        f"locomo/{conv.key}/session_{session.index}",
        sha,
        max(t, clip_s),
        True,
        False,
        session.started_at,
        "option",
    )
    out = []
    for k in range(int(np.ceil(max(t, 1.0) / clip_s))):
        lo, hi = k * clip_s, (k + 1) * clip_s
        inside = [(turn, a, b) for turn, a, b in timed if lo <= a < hi]
        if not inside:
            continue
        clip = Clip(f"{sha[:16]}-{k}", source, k, lo, clip_s)
        speech = tuple(
            SpeechTurn(
                turn.dia_id,
                turn.text,
                a - lo,
                b - lo,
                "en",
                (),
                voices.get(turn.speaker),
                f"s{conv.speakers.index(turn.speaker)}" if turn.speaker in voices else "",
            )
            for turn, a, b in inside
        )
        frames = tuple(
            FrameObservation(a - lo, caption=turn.image_caption, source_id=turn.dia_id)
            for turn, a, _ in inside
            if turn.image_caption
        )
        out.append(ClipObservations(clip, speech, (), frames=frames))
    return out, voices


def ingest_conversation(conv: Conversation, store, policies) -> int:
    """Memorize every session in time order; returns the number of memories written."""
    from memorize.memorizer import Memorizer, clip_row

    memorizer = Memorizer(store, *policies)
    written_total = 0
    for session in conv.sessions:
        clips, voices = session_clips(conv, session)
        for name, voice in voices.items():
            memorizer.enrol(name, voice, session.started_at.timestamp())
        for obs in clips:
            written = memorizer.memorize(obs)
            store.commit_clip(
                clip_row(obs), written.memories, written.entities, written.edges, written.updated
            )
            written_total += len(written.memories)
    store.refresh_indexes()
    return written_total


def ranked_turns(memories, known: set[str]) -> list[str]:
    """Dialogue turns behind ranked memories, through provenance, first occurrence first."""
    out: list[str] = []
    for memory in memories:
        for item in memory.provenance:
            if item in known and item not in out:
                out.append(item)
    return out


def run(
    path: str | Path,
    make_store,
    policies,
    ks: tuple[int, ...] = (5, 10, 20),
    candidates: int = 50,
    progress=lambda m: None,
    baselines_embedder=None,
    workdir: Path | None = None,
    first_person: bool = False,
) -> dict:
    """Ingest each conversation into its own store (``make_store(sample_id)``), ask every question
    through the offline planner's retrieval, and score recall@k over categories 1-4 (5 apart).
    ``first_person``: the first speaker is marked as the owner, and each question naming them is
    also asked as they would ask it (``bench.first_person``); recall@10 both ways, on those questions."""
    import time

    from bench.first_person import to_first_person
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph import edit_people

    conversations = load(path)
    scores: dict[int, dict[int, list[float]]] = {c: {k: [] for k in ks} for c in CATEGORIES}
    base: dict[str, list[float]] = {
        "bm25": [],
        "dense": [],
        "fusion": [],
    }  # recall@10 over categories 1-4
    ingest_s = query_s = 0.0
    asked = 0
    pairs: list[
        tuple[float, float]
    ] = []  # (third-person, first-person) recall@10 of the owner's questions
    for conv in conversations:
        store = make_store(conv.key)
        t0 = time.perf_counter()
        n = ingest_conversation(conv, store, policies)
        ingest_s += time.perf_counter() - t0
        progress(
            f"{conv.sample_id}: {sum(len(s.turns) for s in conv.sessions)} turns in {len(conv.sessions)} "
            f"sessions -> {n} memories in {time.perf_counter() - t0:.1f} s"
        )
        if first_person:
            edit_people.me(store, conv.speakers[0])  # enrolled by name
        planner = OfflinePlanner(MemoryTools(store), candidates=candidates)
        known = conv.turn_ids
        for q in conv.questions:
            if not q.evidence:
                continue
            t0 = time.perf_counter()
            turns = ranked_turns(planner.retrieve(q.question).memories, known)
            query_s += time.perf_counter() - t0
            asked += 1
            for k in ks:
                scores[q.category][k].append(recall_at_k(turns, q.evidence, k))
            mine = (
                to_first_person(q.question, conv.speakers[0], conv.speakers[1:])
                if first_person
                else q.question
            )
            if mine != q.question and q.category != 5:
                own = ranked_turns(planner.retrieve(mine).memories, known)
                pairs.append((recall_at_k(turns, q.evidence, 10), recall_at_k(own, q.evidence, 10)))
        if (
            baselines_embedder is not None
        ):  # after the planner's questions, so as not to disturb their timing
            rankings = baseline_rankings(
                conv, baselines_embedder, workdir or Path(store.uri).parent
            )
            for name, per_question in rankings.items():
                base[name] += [
                    recall_at_k(r, q.evidence, 10)
                    for r, q in zip(per_question, [q for q in conv.questions if q.evidence])
                    if q.category != 5
                ]
    main = [c for c in CATEGORIES if c != 5]
    figures: dict = {"questions": sum(len(scores[c][ks[0]]) for c in main)}
    for k in ks:
        pooled = [v for c in main for v in scores[c][k]]
        figures[f"recall@{k}"] = round(sum(pooled) / max(1, len(pooled)), 4)
    figures["per_category"] = {
        str(c): {f"recall@{k}": round(sum(scores[c][k]) / max(1, len(scores[c][k])), 4) for k in ks}
        | {"questions": len(scores[c][ks[0]])}
        for c in CATEGORIES
    }
    figures["ms_per_query"] = round(1000 * query_s / max(1, asked), 1)
    figures["ingest_s"] = round(ingest_s, 1)
    if baselines_embedder is not None:
        figures["baselines"] = {
            name: {"recall@10": round(sum(v) / max(1, len(v)), 4)} for name, v in base.items()
        }
    if first_person:  # the compared questions lead: they are what this run measures
        figures = {
            "questions": len(pairs),
            "first_person_recall@10": round(sum(f for _, f in pairs) / max(1, len(pairs)), 4),
            "third_person_recall@10": round(sum(t for t, _ in pairs) / max(1, len(pairs)), 4),
            "all_questions": figures,
        }
    return figures


def baseline_rankings(
    conv: Conversation, embedder, workdir: Path, depth: int = 20
) -> dict[str, list[list[str]]]:
    """Per question (in order), the turns ranked by BM25 (LanceDB's full-text index), by dense
    cosine similarity (``embedder``), and by their reciprocal-rank fusion: the issue's baselines,
    over the same turns (speaker, text and any image caption)."""
    import lancedb
    import numpy as np
    import pyarrow as pa
    from lancedb.index import FTS

    turns = [t for s in conv.sessions for t in s.turns]
    texts = [
        f"{t.speaker}: {t.text}" + (f" [image: {t.image_caption}]" if t.image_caption else "")
        for t in turns
    ]
    db = lancedb.connect(workdir)
    rows = pa.table({"dia_id": [t.dia_id for t in turns], "text": texts})
    try:  # "overwrite" on a table not there yet makes Lance log a warning, so it is only the fallback
        table = db.create_table(conv.key, rows, mode="create")
    except ValueError:  # there from an earlier run in this folder
        table = db.create_table(conv.key, rows, mode="overwrite")
    table.create_index("text", config=FTS(), replace=True)
    vectors = embedder.embed(texts)
    questions = [q for q in conv.questions if q.evidence]
    qvecs = embedder.embed([q.question for q in questions])
    out: dict[str, list[list[str]]] = {"bm25": [], "dense": [], "fusion": []}
    for q, qv in zip(questions, qvecs):
        terms = " ".join(re.findall(r"[A-Za-z0-9']+", q.question))
        bm25 = (
            [r["dia_id"] for r in table.search(terms, query_type="fts").limit(depth).to_list()]
            if terms
            else []
        )
        dense = [turns[i].dia_id for i in np.argsort(-(vectors @ qv))[:depth]]
        fused: dict[str, float] = {}
        for ranking in (bm25, dense):
            for rank, dia_id in enumerate(ranking, start=1):
                fused[dia_id] = fused.get(dia_id, 0.0) + 1.0 / (60 + rank)
        out["bm25"].append(bm25)
        out["dense"].append(dense)
        out["fusion"].append(sorted(fused, key=lambda doc: fused[doc], reverse=True))
    return out


def format_report(figures: dict) -> str:
    if "first_person_recall@10" in figures:
        return "\n".join(
            [
                format_report(figures["all_questions"]),
                f"first person: the first speaker marked as the owner; {figures['questions']} of their "
                "questions asked both ways (categories 1-4)",
                f"  recall@10 asked as they would ask it ({'What did I …'!r}): "
                f"{figures['first_person_recall@10']:.3f}",
                f"  recall@10 asked about them by name ({'What did Caroline …'!r}): "
                f"{figures['third_person_recall@10']:.3f}",
            ]
        )
    lines = [
        "LoCoMo evidence recall: speakers are enrolled by name with perfect identities (no speaker recognition)",
        "category          questions  recall@5  recall@10  recall@20",
    ]
    for c, name in CATEGORIES.items():
        row = figures["per_category"][str(c)]
        lines.append(
            f"{c} {name:<15} {row['questions']:9d}  {row['recall@5']:8.3f}  {row['recall@10']:9.3f}  "
            f"{row['recall@20']:9.3f}"
        )
    lines.append(
        f"1-4 overall       {figures['questions']:9d}  {figures['recall@5']:8.3f}  {figures['recall@10']:9.3f}  "
        f"{figures['recall@20']:9.3f}"
    )
    lines.append(
        f"{figures['ms_per_query']:.1f} ms per question (retrieval), ingest {figures['ingest_s']:.1f} s"
    )
    for name, row in figures.get("baselines", {}).items():
        lines.append(
            f"baseline {name:<8} recall@10 {row['recall@10']:.3f} (categories 1-4, same turns)"
        )
    return "\n".join(lines)


def add_data_argument(parser) -> None:
    """``--data``: the LoCoMo file the LoCoMo benches (locomo, profile, digest) read."""
    parser.add_argument(
        "--data",
        required=True,
        metavar="PATH",
        help="a LoCoMo file in the upstream locomo10.json format",
    )


def add_spoken_arguments(parser) -> None:
    """``--spoken`` and what limits it: the conversations spoken aloud and ingested as recordings."""
    parser.add_argument(
        "--spoken",
        action="store_true",
        help="speak the conversations with espeak-ng (one voice per speaker) and run them through "
        "the whole pipeline; needs espeak-ng and sox",
    )
    parser.add_argument(
        "--sessions",
        type=int,
        metavar="N",
        help="--spoken: only the first N sessions of each conversation",
    )
    parser.add_argument(
        "--conversations", type=int, metavar="N", help="--spoken: only the first N conversations"
    )


def add_arguments(parser) -> None:
    """``mnemo bench locomo``'s own options (``--spoken``: ``bench.locomo_spoken``; ``--llm``: ``bench.llm_loop``)."""
    add_data_argument(parser)
    parser.add_argument(
        "--baselines",
        action="store_true",
        help="also score BM25, dense (MiniLM) and their fusion over the same turns",
    )
    parser.add_argument(
        "--first-person",
        action="store_true",
        help="mark each conversation's first speaker as the owner and ask their questions also as "
        'they would ("What did I …"): recall@10 both ways',
    )
    parser.add_argument(
        "--llm",
        action="store_true",
        help="the LLM control loop beside the offline answerer on the same questions, judged (the "
        "[llm] endpoint, or without one the packaged model served here)",
    )
    parser.add_argument(
        "--qa",
        action="store_true",
        help="answers scored by LoCoMo's own metric (token F1; adversarial: answered 'not in "
        "memory'): the offline answer beside the packaged 0.5B and 1.5B reasoning (and the [llm] "
        "endpoint when one is configured), each served here",
    )
    parser.add_argument(
        "--answerers",
        metavar="LIST",
        help="--qa: which, comma-separated, of offline, 0.5b, 1.5b, endpoint (default: all there are)",
    )
    parser.add_argument(
        "--details",
        metavar="FILE",
        help="--qa: write every question, each answerer's answer, score, seconds and steps to this "
        "JSON file",
    )
    parser.add_argument(
        "--limit",
        type=int,
        metavar="N",
        help="--llm: only the first N questions; --qa: N questions per conversation, a sample "
        "stratified by category",
    )
    add_spoken_arguments(parser)
    parser.add_argument(
        "--contacts",
        action="store_true",
        help="--spoken: also ingest the sessions again with the conversations' speaker names given "
        "as a contact list, and show both runs' naming figures side by side",
    )
    parser.add_argument(
        "--one-pass",
        action="store_true",
        help="--spoken: also ingest the sessions again with one speech pass as before (tiny.en in "
        "float32, no second pass), beside",
    )
