"""``mnemo bench locomo --spoken``: LoCoMo conversations spoken aloud, through the whole pipeline.

Unlike ``bench locomo`` (observations made from the text, speakers enrolled by name), here nothing
is known but the audio:

1. each session becomes a 16 kHz WAV spoken by espeak-ng with one voice per speaker
   (``bench/speech_synth.py``; a shared image's caption is not audible, so only the text is spoken),
   its mtime the session's start plus its length, so the recording starts at the session's time;
2. every selected conversation goes into ONE store through ``pipeline.ingest.ingest``, wired as
   ``mnemo ingest`` wires it (by ``mnemo``, handed in as ``Wiring``) (so a question may find another conversation's memories: they map to
   no turn of its own and count as misses);
3. each question whose evidence lies in the rendered sessions runs the offline planner's retrieval,
   and the ranked memories map back to dialogue turns by time overlap in the same WAV
   (``turns_of_memory``), scored as evidence recall@5/10/20 per category (1-4 pooled, 5 apart);
4. the same questions on the text path (``bench.locomo.ingest_conversation``, a store per
   conversation restricted to the same sessions), in the same run;
5. speaker figures from the spoken store: attribution of reference speech time to persons under
   one one-to-one mapping of all real speakers of the store (``attribute``: a person heard in two
   conversations stands for one of their speakers), voice entities per real speaker, speakers named
   right, wrongly or not at all; the ASR word error rate of the stored clip transcripts against
   the spoken turns.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from bench import spoken_names
from bench.datasets.locomo import CATEGORIES, Conversation, load, load_gold
from bench.metrics import edit_distance, normalize_words, recall_at_k
from bench.speech_synth import SpokenSession
from perception.speech.diarize import union_spans

if TYPE_CHECKING:
    from embeddings.base import TextEmbedder
    from graph.store import Store
    from pipeline.ingest import IngestReport

KS = (5, 10, 20)
SUBSTANTIAL = 0.3  # a memory maps to every turn covering this share of the memory or of the turn


# ---- selection ---------------------------------------------------------------------------------


def select(
    conversations: Sequence[Conversation], sessions: int | None = None, count: int | None = None
) -> list[Conversation]:
    """The first ``count`` conversations, each cut to its first ``sessions`` sessions, keeping only
    the questions whose evidence turns all lie in the sessions kept."""
    for flag, value in (("--sessions", sessions), ("--conversations", count)):
        if value is not None and value < 1:
            raise ValueError(f"{flag} must be at least 1 (got {value}); leave it out for all")
    out = []
    for conv in list(conversations)[:count]:
        kept = conv.sessions[:sessions]
        ids = {t.dia_id for s in kept for t in s.turns}
        questions = tuple(q for q in conv.questions if q.evidence and set(q.evidence) <= ids)
        out.append(dataclasses.replace(conv, sessions=kept, questions=questions))
    return out


# ---- memories to turns by time -----------------------------------------------------------------


def turns_of_memory(
    start_ts: float, end_ts: float, turns: Sequence[tuple[str, float, float]]
) -> list[str]:
    """The turns (``(dia_id, start_ts, end_ts)``) a memory spanning ``[start_ts, end_ts]`` speaks
    of: the one it overlaps most first, then every other it overlaps substantially (at least
    ``SUBSTANTIAL`` of the memory or of the turn), by overlap. A memory of an instant maps to the
    turn around it."""
    span = end_ts - start_ts
    if span <= 0:
        return [d for d, a, b in turns if a <= start_ts <= b][:1]
    overlaps = sorted(
        ((min(end_ts, b) - max(start_ts, a), a, d, b - a) for d, a, b in turns),
        key=lambda o: (-o[0], o[1]),
    )
    overlaps = [o for o in overlaps if o[0] > 0]
    return [
        d
        for i, (o, _, d, length) in enumerate(overlaps)
        if i == 0 or o >= SUBSTANTIAL * span or o >= SUBSTANTIAL * length
    ]


def absolute_turns(session: SpokenSession) -> list[tuple[str, float, float]]:
    return [
        (t.dia_id, session.started_ts + t.start_s, session.started_ts + t.end_s)
        for t in session.turns
    ]


def ranked_turns_by_time(
    memories, turns_by_path: dict[str, list[tuple[str, float, float]]]
) -> list[str]:
    """Dialogue turns behind ranked memories, first occurrence first. A memory counts only against
    the turns of its own recording (``source_path``): one of another conversation maps to none."""
    out: dict[str, None] = {}
    for m in memories:
        turns = turns_by_path.get(m.source_path)
        if turns:
            out.update(dict.fromkeys(turns_of_memory(m.start_ts, m.end_ts, turns)))
    return list(out)


# ---- speakers ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribution:
    share: float  # of the heard reference time: attributed to the label mapped to its speaker
    coverage: (
        float  # of the reference time: heard, i.e. under some predicted span (a label or None)
    )
    right_s: float
    heard_s: float
    total_s: float
    mapping: dict[str, str]  # reference speaker -> predicted label (one-to-one)
    overlap_s: dict[tuple[str, str], float]  # (reference speaker, predicted label) -> seconds


def _covered(
    reference: Sequence[tuple[str, float, float]], spans: list[tuple[float, float]]
) -> dict[str, float]:
    """Seconds of each reference speaker's speech under the union of ``spans``."""
    merged = union_spans(spans)
    out: dict[str, float] = {}
    for speaker, a, b in reference:
        covered = sum(max(0.0, min(b, y) - max(a, x)) for x, y in merged)
        if covered > 0:
            out[speaker] = out.get(speaker, 0.0) + covered
    return out


def overlap_by_label(
    reference: Sequence[tuple[str, float, float]],
    predicted: Sequence[tuple[str | None, float, float]],
) -> dict[tuple[str, str], float]:
    """Seconds of each reference speaker's speech covered by each predicted label's spans (a
    label's spans are united first, so its overlapping memories count once; label None is
    speech heard from nobody known, and is left out)."""
    by_label: dict[str, list[tuple[float, float]]] = {}
    for label, a, b in predicted:
        if label is not None and b > a:
            by_label.setdefault(label, []).append((a, b))
    return {
        (speaker, label): s
        for label, spans in by_label.items()
        for speaker, s in _covered(reference, spans).items()
    }


def assign(overlap: dict[tuple[str, str], float]) -> dict[str, str]:
    """Reference speakers to predicted labels one-to-one, with the most shared time in all
    (Hungarian assignment); a speaker sharing no time with the label left to it maps to none."""
    import numpy as np

    from perception.weights import require

    require(("scipy",), "bench", "the speaker mapping (bench locomo --spoken)")
    from scipy.optimize import linear_sum_assignment

    speakers, labels = sorted({s for s, _ in overlap}), sorted({lab for _, lab in overlap})
    if not labels:
        return {}
    matrix = np.array([[overlap.get((s, lab), 0.0) for lab in labels] for s in speakers])
    rows, cols = linear_sum_assignment(matrix, maximize=True)
    return {speakers[r]: labels[c] for r, c in zip(rows, cols) if matrix[r, c] > 0}


def attribution(
    reference: Sequence[tuple[str, float, float]],
    predicted: Sequence[tuple[str | None, float, float]],
) -> Attribution:
    """Speaker attribution of reference speech (``(speaker, start, end)``, not overlapping each
    other) by predicted speech spans (``(label, start, end)``; label None: heard, but from nobody
    known). Speakers map to labels one-to-one, by the most shared time (Hungarian assignment);
    ``share`` is the part of the heard reference time (under some predicted span) that a span of
    the label mapped to its speaker covers. Reference time under no span at all (a pause the ASR
    cut out, a turn it missed) is not an identity error: ``coverage`` reports it apart."""
    total = sum(max(0.0, b - a) for _, a, b in reference)
    heard = sum(_covered(reference, [(a, b) for _, a, b in predicted if b > a]).values())
    overlap = overlap_by_label(reference, predicted)
    mapping = assign(overlap)
    right = sum(overlap.get((s, lab), 0.0) for s, lab in mapping.items())
    return Attribution(
        right / heard if heard else 0.0,
        heard / total if total else 0.0,
        right,
        heard,
        total,
        mapping,
        overlap,
    )


def voice_of(memory) -> str | None:
    """The voice entity of a speech memory (``<voice_2> said: "…"``); None for anything else, and
    for speech from nobody known (``someone said: "…"``)."""
    if " said: " not in memory.text:
        return None
    return next((e for e in memory.entity_ids if e.startswith("voice_")), None)


def names_heard(
    speakers: Sequence[str], sessions: Sequence[SpokenSession], speech
) -> dict[str, tuple[int, int]]:
    """Per real speaker: (turns whose text says their name, of those the turns where a speech
    memory overlapping the turn in time holds the name as written). Naming can only be as good as
    the ASR's spelling of the names: a name never heard as written cannot be given."""
    import re

    out = {}
    for name in speakers:
        pattern = re.compile(rf"\b{re.escape(name)}\b")
        said = heard = 0
        for s in sessions:
            for t in s.turns:
                if pattern.search(t.text):
                    said += 1
                    a, b = s.started_ts + t.start_s, s.started_ts + t.end_s
                    heard += any(
                        m.source_path == str(s.path)
                        and m.start_ts < b
                        and m.end_ts > a
                        and pattern.search(m.text)
                        for _, m in speech
                    )
        out[name] = (said, heard)
    return out


def naming(
    speakers: Sequence[str], voice_overlap: dict[tuple[str, str], float], people
) -> dict[str, dict]:
    """Per real speaker: the voice entity heard most in their speech time, the person holding it,
    that person's name and a verdict: ``named`` (the real name, case aside), ``wrong`` (another
    name) or ``unnamed``."""
    owner = {e: p for p in people for e in p.ids}
    out = {}
    for speaker in speakers:
        heard = {v: s for (who, v), s in voice_overlap.items() if who == speaker}
        voice = max(sorted(heard), key=lambda v: heard[v]) if heard else None
        person = owner.get(voice) if voice else None
        name = person.name if person is not None else ""
        verdict = (
            "unnamed" if not name else "named" if name.casefold() == speaker.casefold() else "wrong"
        )
        out[speaker] = {
            "voice": voice,
            "person": person.person_id if person is not None else None,
            "name": name,
            "verdict": verdict,
        }
    return out


def speaker_figures(conv: Conversation, sessions: Sequence[SpokenSession], store, people) -> dict:
    """Speech time per (speaker, person), heard time, voice entities and naming for one
    conversation from the spoken store; ``attribute`` turns the first into attribution. Speakers
    are named ``<conversation>/<name>``, so that one mapping serves the whole store."""
    from graph import sql

    paths = [str(s.path) for s in sessions]
    speech = [
        (voice_of(m), m)
        for m in store.memories_where(sql.in_list("source_path", paths))
        if " said: " in m.text
    ]
    reference = [
        (t.speaker, s.started_ts + t.start_s, s.started_ts + t.end_s)
        for s in sessions
        for t in s.turns
    ]
    owner = {e: p.person_id for p in people for e in p.ids}
    # a voice merged into a person with another voice is that person: persons are what a user sees;
    # speech heard from nobody known ("someone said") is heard time no person got
    result = attribution(
        [(f"{conv.key}/{who}", a, b) for who, a, b in reference],
        [(owner.get(v, v) if v else None, m.start_ts, m.end_ts) for v, m in speech],
    )
    voices = sorted({v for v, _ in speech if v}, key=lambda v: int(v.rsplit("_", 1)[-1]))
    named = naming(
        conv.speakers,
        overlap_by_label(reference, [(v, m.start_ts, m.end_ts) for v, m in speech]),
        people,
    )
    for speaker, (said, heard) in names_heard(conv.speakers, sessions, speech).items():
        named[speaker] |= {"name_said": said, "name_heard": heard}
    return {
        "overlap_s": result.overlap_s,
        "speech_coverage": result.coverage,
        "speech_s": result.total_s,
        "heard_s": result.heard_s,
        "voice_entities_total": len(voices),
        "voice_entity_ids": voices,
        # the people those voices are, once merged (union-find over same_person edges): what a user sees
        "voice_people_total": len({owner.get(v, v) for v in voices}),
        "speakers_total": len(conv.speakers),
        "speakers": named,
        **{
            f"speakers_{v}": sum(1 for n in named.values() if n["verdict"] == v)
            for v in ("named", "wrong", "unnamed")
        },
    }


def attribute(rows: list[dict]) -> None:
    """Each conversation's attribution (``speaker_figures`` rows, completed in place) under ONE
    one-to-one mapping of every real speaker of the store to persons: a person heard in two
    conversations stands for one real speaker only, as in a lifelog it is one person."""
    mapping = assign({k: v for r in rows for k, v in r["overlap_s"].items()})
    for r in rows:
        own = {q: lab for q, lab in mapping.items() if any(q == who for who, _ in r["overlap_s"])}
        r["attributed_s"] = sum(r["overlap_s"][(q, lab)] for q, lab in own.items())
        r["attribution"] = r["attributed_s"] / r["heard_s"] if r["heard_s"] else 0.0
        r["mapping"] = {q.split("/", 1)[1]: lab for q, lab in own.items()}
        del r["overlap_s"]  # keyed by tuples: not for the report


def asr_errors(sessions: Sequence[SpokenSession], store) -> tuple[int, int]:
    """(word edits, reference words) of each session's stored clip transcripts, in clip order,
    against the turns spoken in it. Whole sessions are compared, so a turn cut by a clip boundary
    is not counted twice."""
    edits = words = 0
    for s in sessions:
        clips = [
            c
            for c in store.clips_in_range(s.started_ts, s.end_ts, limit=None)
            if c["source_path"] == str(s.path)
        ]
        hypothesis = " ".join(c["transcript"] for c in sorted(clips, key=lambda c: c["offset_s"]))
        reference = normalize_words(" ".join(t.text for t in s.turns))
        edits += edit_distance(reference, normalize_words(hypothesis))
        words += len(reference)
    return edits, words


# ---- scoring -----------------------------------------------------------------------------------


def _scores() -> dict[int, dict[int, list[float]]]:
    return {c: {k: [] for k in KS} for c in CATEGORIES}


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def recall_table(scores: dict[int, dict[int, list[float]]]) -> dict:
    """Recall@k pooled over categories 1-4 (5, adversarial, apart, as ``bench locomo`` does) and per
    category; None where there is no question."""
    main = [c for c in CATEGORIES if c != 5]
    out: dict = {"questions": sum(len(scores[c][KS[0]]) for c in main)}
    for k in KS:
        out[f"recall@{k}"] = _mean([v for c in main for v in scores[c][k]])
    out["per_category"] = {
        str(c): {
            "questions": len(scores[c][KS[0]]),
            **{f"recall@{k}": _mean(scores[c][k]) for k in KS},
        }
        for c in CATEGORIES
    }
    return out


def _ask(planner, conv: Conversation, rank: Callable, scores) -> float:
    """Every question of ``conv`` through ``planner``; the seconds spent on retrieval and mapping."""
    spent = 0.0
    for q in conv.questions:
        t0 = time.perf_counter()
        turns = rank(planner.retrieve(q.question).memories)
        spent += time.perf_counter() - t0
        for k in KS:
            scores[q.category][k].append(recall_at_k(turns, q.evidence, k))
    return spent


def _merge(into, scores) -> None:
    for c in CATEGORIES:
        for k in KS:
            into[c][k] += scores[c][k]


def variant_figures(
    store: Store,
    report: IngestReport,
    ingest_s: float,
    chosen: Sequence[Conversation],
    spoken: dict,
) -> dict:
    """The figures of a store that the spoken sessions of ``chosen`` went into another way
    (``bench.spoken_names.variant``, which hands it the store, its ingest's report and seconds):
    speakers named, wrong and unnamed, ASR WER, name words, audio decoded twice, speed, recall@10."""
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools

    audio_s = sum(s.duration_s for _, rendered in spoken.values() for s in rendered)
    tools = MemoryTools(store)
    planner = OfflinePlanner(tools)
    people = tools.list_people()
    rows, scores = [], _scores()
    edits = words = right = said = asked = 0
    spent = 0.0
    for conv in chosen:
        _, rendered = spoken[conv.key]
        turns_by_path = {str(s.path): absolute_turns(s) for s in rendered}
        spent += _ask(
            planner,
            conv,
            lambda ms, turns_by_path=turns_by_path: ranked_turns_by_time(ms, turns_by_path),
            scores,
        )
        asked += len(conv.questions)
        rows.append(speaker_figures(conv, rendered, store, people))
        e, w = asr_errors(rendered, store)
        r, s = spoken_names.name_words(conv.speakers, rendered, store)
        edits, words, right, said = edits + e, words + w, right + r, said + s
    attribute(rows)
    return {
        **{
            f"speakers_{v}": sum(r[f"speakers_{v}"] for r in rows)
            for v in ("named", "wrong", "unnamed")
        },
        "speakers_total": sum(r["speakers_total"] for r in rows),
        "asr_wer": round(edits / max(1, words), 4),
        "name_word_accuracy": round(right / said, 4) if said else None,
        "name_words": said,
        "second_pass_audio_share": spoken_names.second_pass_share(report, audio_s),
        "ingest_x_realtime": round(audio_s / ingest_s, 2) if ingest_s else None,
        "recall@10": recall_table(scores)["recall@10"],
        "ms_per_query": round(1000 * spent / max(1, asked), 1),
    }


# ---- the owner's questions, and profiles ------------------------------------------------------


def first_person_pairs(
    conv: Conversation, store, text_store, turns_by_path, persons: dict[str, str | None]
) -> dict:
    """The conversation's first speaker as the owner, in the spoken store (the person their voice
    became, as a user would mark it with ``mnemo people me``) and on the text path (enrolled by
    name); each question naming them asked as they would ask it (``bench.first_person``), and
    recall@10 both ways on those questions. A speaker no person stands for cannot be marked: their
    questions are counted apart (``owner_missing``)."""
    from bench import locomo
    from bench.first_person import to_first_person
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph import edit_people

    owner = conv.speakers[0]
    asked = [
        (q, mine)
        for q in conv.questions
        if q.category != 5
        and (mine := to_first_person(q.question, owner, conv.speakers[1:])) != q.question
    ]
    person = persons.get(owner)
    spoken: list[
        tuple[float, float]
    ] = []  # (third-person recall@10, first-person recall@10) a question
    text: list[tuple[float, float]] = []
    out = {
        "conversation": conv.key,
        "owner": owner,
        "person": person,
        "questions": len(asked),
        "spoken": spoken,
        "text": text,
        "owner_missing": 0,
    }
    if person is None:
        out["owner_missing"] = len(asked)
    else:
        if not any(p.owner and p.person_id == person for p in store.people()):
            edit_people.me(store, person)
        planner = OfflinePlanner(MemoryTools(store))
        for q, mine in asked:
            third = ranked_turns_by_time(planner.retrieve(q.question).memories, turns_by_path)
            first = ranked_turns_by_time(planner.retrieve(mine).memories, turns_by_path)
            spoken.append((recall_at_k(third, q.evidence, 10), recall_at_k(first, q.evidence, 10)))
    edit_people.me(text_store, owner)
    planner = OfflinePlanner(MemoryTools(text_store))
    for q, mine in asked:
        third = locomo.ranked_turns(planner.retrieve(q.question).memories, conv.turn_ids)
        first = locomo.ranked_turns(planner.retrieve(mine).memories, conv.turn_ids)
        text.append((recall_at_k(third, q.evidence, 10), recall_at_k(first, q.evidence, 10)))
    return out


def pool_first_person(rows: list[dict]) -> dict:
    def both(pairs):
        return {
            "questions": len(pairs),
            "third_person_recall@10": _mean([t for t, _ in pairs]),
            "first_person_recall@10": _mean([f for _, f in pairs]),
        }

    return {
        "spoken": both([p for r in rows for p in r["spoken"]]),
        "text": both([p for r in rows for p in r["text"]]),
        "owner_missing": sum(r["owner_missing"] for r in rows),
        "owners": {r["conversation"]: {"speaker": r["owner"], "person": r["person"]} for r in rows},
    }


def profile_figures(
    conv: Conversation, store, text_store, gold, persons: dict[str, str | None]
) -> dict:
    """Each speaker's profile, from the spoken store (the person their voice became; none: nothing
    stated) and from the text path, against the dataset's observation facts about them in the
    rendered sessions (``bench.profile.score``)."""
    from bench.profile import score
    from control.profile import build

    names = {n.lower() for n in conv.speakers} | {n.lower()[:3] for n in conv.speakers}
    kept = {s.index for s in conv.sessions}
    profiles: list[dict] = []
    out = {"conversation": conv.key, "people": profiles}
    for speaker in conv.speakers:
        facts = [
            fact for i in sorted(kept) for who, fact, _ in gold[i].observations if who == speaker
        ]
        if not facts:
            continue
        person = persons.get(speaker)
        spoken = (
            score(build(store, person), facts, names)
            if person is not None
            else [False] * len(facts)
        )
        text = score(build(text_store, speaker), facts, names)
        profiles.append(
            {
                "speaker": speaker,
                "person": person,
                "facts": len(facts),
                "spoken": spoken,
                "text": text,
            }
        )
    return out


def pool_profiles(rows: list[dict]) -> dict:
    people = [p for r in rows for p in r["people"]]
    return {
        "people": len(people),
        "facts": sum(p["facts"] for p in people),
        "fact_recall": _mean([h for p in people for h in p["spoken"]]),
        "text_fact_recall": _mean([h for p in people for h in p["text"]]),
        "unmapped_people": sum(p["person"] is None for p in people),
        "per_person": [
            {
                "conversation": r["conversation"],
                "speaker": p["speaker"],
                "person": p["person"],
                "facts": p["facts"],
                "fact_recall": _mean(p["spoken"]),
                "text_fact_recall": _mean(p["text"]),
            }
            for r in rows
            for p in r["people"]
        ],
    }


# ---- the run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Wiring:
    """What the run needs from the composition root: the configured models, wired as ``mnemo ingest``
    wires them."""

    embedder: TextEmbedder  # the text embedder of every store of the run
    ingest: Callable[
        [list[str], Store, Callable[[str], None]], IngestReport
    ]  # (paths, store, progress);
    # builds the perceivers itself, so their loading is inside the ingest timing as in `mnemo ingest`
    text_policies: (
        tuple  # the (face, voice) MatchPolicy pair of the text path, as `bench locomo` uses
    )


def run(
    wired: Wiring,
    path: str | Path,
    workdir: Path,
    sessions: int | None = None,
    conversations: int | None = None,
    progress: Callable[[str], None] = lambda m: None,
    render_root: Path | None = None,
    first_person: bool = False,
    profiles: bool = False,
    variants: Sequence[str] = (),
) -> dict:
    """Render, ingest into one store under ``workdir``, ask, and measure (see the module doc).
    ``first_person``: also the owner's questions asked both ways (``first_person_pairs``);
    ``profiles``: also each speaker's profile against the dataset's observation facts
    (``profile_figures``); both spoken and on the text path, in the same run. ``variants``: the
    same sessions ingested again other ways (``bench.spoken_names``), in the same run."""
    from bench import locomo
    from bench.speech_synth import render_conversation
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph.store import Store

    chosen = select(load(path), sessions, conversations)
    if not chosen:
        raise ValueError(f"{path} holds no conversation")
    spoken = {}
    for i, conv in enumerate(
        chosen
    ):  # the i-th conversation of the file: its voice pair stays the same
        voices, rendered = render_conversation(conv, i, render_root, progress)
        spoken[conv.key] = (voices, rendered)
    paths = [str(s.path) for _, rendered in spoken.values() for s in rendered]
    audio_s = sum(s.duration_s for _, rendered in spoken.values() for s in rendered)

    embedder = wired.embedder
    store = Store(workdir / "spoken", embedder)
    progress(f"ingesting {len(paths)} recording(s), {audio_s:.1f} s of audio, into {store.uri}")
    t0 = time.perf_counter()  # as `mnemo ingest` runs: backends built, models loaded on first use
    report = wired.ingest(paths, store, progress)
    ingest_s = time.perf_counter() - t0
    if report.files_failed or report.clips_failed:
        failed = [f"{p}: {why}" for p, why in report.files_failed + report.clips_failed]
        raise RuntimeError("the spoken sessions did not ingest cleanly: " + "; ".join(failed))

    tools = MemoryTools(store)
    planner = OfflinePlanner(tools)
    people = tools.list_people()
    text_policies = wired.text_policies
    pooled, pooled_text = _scores(), _scores()
    per_conv, query_s, text_query_s, asked = [], 0.0, 0.0, 0
    fp_rows: list[dict] = []
    profile_rows: list[dict] = []
    gold = load_gold(path) if profiles else {}
    for conv in chosen:
        voices, rendered = spoken[conv.key]
        turns_by_path = {str(s.path): absolute_turns(s) for s in rendered}
        scores, text_scores = _scores(), _scores()
        spent = _ask(
            planner,
            conv,
            lambda ms, turns_by_path=turns_by_path: ranked_turns_by_time(ms, turns_by_path),
            scores,
        )

        text_store = Store(workdir / "text" / conv.key, embedder)
        locomo.ingest_conversation(conv, text_store, text_policies)
        known = conv.turn_ids
        text_spent = _ask(
            OfflinePlanner(MemoryTools(text_store)),
            conv,
            lambda ms, known=known: locomo.ranked_turns(ms, known),
            text_scores,
        )
        edits, words = asr_errors(rendered, store)
        right, said = spoken_names.name_words(conv.speakers, rendered, store)
        row = {
            "name_words_right": right,
            "name_words": said,
            "conversation": conv.key,
            "sessions": len(rendered),
            "audio_s": round(sum(s.duration_s for s in rendered), 1),
            "voices": {k: v.name for k, v in voices.items()},
            "spoken": recall_table(scores),
            "text": recall_table(text_scores),
            "asr_edits": edits,
            "asr_words": words,
            "asr_wer": round(edits / max(1, words), 4),
            "ms_per_query": round(1000 * spent / max(1, len(conv.questions)), 1),
            "text_ms_per_query": round(1000 * text_spent / max(1, len(conv.questions)), 1),
            **speaker_figures(conv, rendered, store, people),
        }
        per_conv.append(row)
        persons = {
            speaker: n["person"] for speaker, n in row["speakers"].items()
        }  # as a user would see them
        if first_person:
            fp_rows.append(first_person_pairs(conv, store, text_store, turns_by_path, persons))
        if profiles:
            profile_rows.append(profile_figures(conv, store, text_store, gold[conv.key], persons))
        _merge(pooled, scores)
        _merge(pooled_text, text_scores)
        query_s, text_query_s, asked = (
            query_s + spent,
            text_query_s + text_spent,
            asked + len(conv.questions),
        )
        progress(
            f"{conv.key}: {len(conv.questions)} questions, spoken recall@10 {row['spoken']['recall@10']}, "
            f"text {row['text']['recall@10']}"
        )

    attribute(per_conv)
    speech_s, heard_s = sum(r["speech_s"] for r in per_conv), sum(r["heard_s"] for r in per_conv)
    speakers = sum(r["speakers_total"] for r in per_conv)
    extra: dict[str, object] = {}
    if first_person:
        extra["first_person"] = pool_first_person(fp_rows)
    if profiles:
        extra["profiles"] = pool_profiles(profile_rows)
    if variants:
        measure = partial(variant_figures, chosen=chosen, spoken=spoken)
        extra["variants"] = [
            spoken_names.variant(
                v, wired.ingest, chosen, spoken, workdir, embedder, progress, measure
            )
            for v in variants
        ]
    said = sum(r["name_words"] for r in per_conv)
    return {
        **extra,
        "conversations": per_conv,
        "spoken": recall_table(pooled),
        "text": recall_table(pooled_text),
        "audio_s": round(audio_s, 1),
        "ingest_s": round(ingest_s, 1),
        "ingest_x_realtime": round(audio_s / ingest_s, 2) if ingest_s else None,
        "clips": report.clips_new,
        "memories": store.count()["memories"],
        "ms_per_query": round(1000 * query_s / max(1, asked), 1),
        "text_ms_per_query": round(1000 * text_query_s / max(1, asked), 1),
        "attribution": round(sum(r["attributed_s"] for r in per_conv) / heard_s, 4)
        if heard_s
        else 0.0,
        "speech_coverage": round(heard_s / speech_s, 4) if speech_s else 0.0,
        "speakers_total": speakers,
        **{
            f"speakers_{v}": sum(r[f"speakers_{v}"] for r in per_conv)
            for v in ("named", "wrong", "unnamed")
        },
        "voice_entities_total": sum(r["voice_entities_total"] for r in per_conv),
        "voice_people_total": sum(r["voice_people_total"] for r in per_conv),
        "names_said": sum(n["name_said"] for r in per_conv for n in r["speakers"].values()),
        "names_heard": sum(n["name_heard"] for r in per_conv for n in r["speakers"].values()),
        "asr_wer": round(
            sum(r["asr_edits"] for r in per_conv) / max(1, sum(r["asr_words"] for r in per_conv)), 4
        ),
        "name_word_accuracy": round(sum(r["name_words_right"] for r in per_conv) / said, 4)
        if said
        else None,
        "name_words": said,
        "second_pass_audio_share": spoken_names.second_pass_share(report, audio_s),
        "people": len(people),
    }


def summary(f: dict) -> dict:
    """The JSON line: the pooled figures, then each conversation's."""
    spoken, text = f["spoken"], f["text"]
    out = {"questions": spoken["questions"]}
    for k in KS:
        out[f"recall@{k}"] = spoken[f"recall@{k}"]
        out[f"text_recall@{k}"] = text[f"recall@{k}"]
    out["multi_hop_recall@10"] = spoken["per_category"]["1"]["recall@10"]
    out["text_multi_hop_recall@10"] = text["per_category"]["1"]["recall@10"]
    out["per_category"] = {
        c: {
            "questions": row["questions"],
            **{f"recall@{k}": row[f"recall@{k}"] for k in KS},
            **{f"text_recall@{k}": text["per_category"][c][f"recall@{k}"] for k in KS},
        }
        for c, row in spoken["per_category"].items()
    }
    speakers = f["speakers_total"]
    out |= {
        "speakers_total": speakers,
        "speakers_named": f["speakers_named"],
        "speakers_wrong": f["speakers_wrong"],
        "speakers_unnamed": f["speakers_unnamed"],
        "voice_entities": round(f["voice_entities_total"] / speakers, 3) if speakers else None,
        "voice_entities_total": f["voice_entities_total"],
        "voice_people": round(f["voice_people_total"] / speakers, 3) if speakers else None,
        "attribution": f["attribution"],
        "speech_coverage": f["speech_coverage"],
        "asr_wer": f["asr_wer"],
        "names_heard_share": round(f["names_heard"] / f["names_said"], 4)
        if f["names_said"]
        else None,
        "name_word_accuracy": f["name_word_accuracy"],
        "second_pass_audio_share": f["second_pass_audio_share"],
        "ms_per_query": f["ms_per_query"],
        "text_ms_per_query": f["text_ms_per_query"],
        "ingest_x_realtime": f["ingest_x_realtime"],
        "ingest_s": f["ingest_s"],
        "audio_s": f["audio_s"],
        "clips": f["clips"],
        "memories": f["memories"],
        "people": f["people"],
    }
    if "variants" in f:
        out["variants"] = {v["variant"]: v for v in f["variants"]}
    out["per_conversation"] = {
        r["conversation"]: {
            "sessions": r["sessions"],
            "audio_s": r["audio_s"],
            "questions": r["spoken"]["questions"],
            "recall@10": r["spoken"]["recall@10"],
            "text_recall@10": r["text"]["recall@10"],
            "multi_hop_recall@10": r["spoken"]["per_category"]["1"]["recall@10"],
            "attribution": round(r["attribution"], 4),
            "speech_coverage": round(r["speech_coverage"], 4),
            "voice_entities_total": r["voice_entities_total"],
            "voice_people_total": r["voice_people_total"],
            "speakers_total": r["speakers_total"],
            "speakers_named": r["speakers_named"],
            "speakers_wrong": r["speakers_wrong"],
            "asr_wer": r["asr_wer"],
            "speakers": r["speakers"],
            "ms_per_query": r["ms_per_query"],
        }
        for r in f["conversations"]
    }
    if "profiles" in f:  # bench profile --spoken: the profile figures lead
        p = f["profiles"]
        out = {
            "people": p["people"],
            "facts": p["facts"],
            "fact_recall": p["fact_recall"],
            "text_fact_recall": p["text_fact_recall"],
            "unmapped_people": p["unmapped_people"],
            "per_person": p["per_person"],
            "spoken_bench": out,
        }
    if "first_person" in f:  # the compared questions lead: they are what this run measures
        fp = f["first_person"]
        out = {
            "questions": fp["spoken"]["questions"],
            "first_person_recall@10": fp["spoken"]["first_person_recall@10"],
            "third_person_recall@10": fp["spoken"]["third_person_recall@10"],
            "text_questions": fp["text"]["questions"],
            "text_first_person_recall@10": fp["text"]["first_person_recall@10"],
            "text_third_person_recall@10": fp["text"]["third_person_recall@10"],
            "owner_missing": fp["owner_missing"],
            "owners": fp["owners"],
            "all_questions": out,
        }
    return out


def _fig(value) -> str:
    return "    -" if value is None else f"{value:5.3f}"


def _recall_lines(spoken: dict, text: dict) -> list[str]:
    lines = ["category          questions   spoken @5   @10   @20 |  text @5   @10   @20"]
    rows = [
        (f"{c} {name}", spoken["per_category"][str(c)], text["per_category"][str(c)])
        for c, name in CATEGORIES.items()
    ]
    rows.append(("1-4 overall", spoken, text))
    for label, s, t in rows:
        lines.append(
            f"{label:<17} {s['questions']:9d}   "
            + " ".join(_fig(s[f"recall@{k}"]) for k in KS)
            + " |    "
            + " ".join(_fig(t[f"recall@{k}"]) for k in KS)
        )
    return lines


def _speaker_line(r: dict) -> str:
    speakers = r["speakers_total"]
    ratio = r["voice_entities_total"] / speakers if speakers else 0.0
    return (
        f"speakers {speakers}: attribution {r['attribution']:.3f} (of the speech time under a speech memory, "
        f"{r['speech_coverage']:.1%} of it), voice entities {r['voice_entities_total']} "
        f"({ratio:.2f} per speaker) in {r['voice_people_total']} people, named {r['speakers_named']} / "
        f"wrong {r['speakers_wrong']} / unnamed {r['speakers_unnamed']}; ASR WER {r['asr_wer']:.3f}"
    )


def format_report(f: dict) -> str:
    lines = [
        "LoCoMo spoken aloud (espeak-ng, one voice per speaker) through `mnemo ingest` into one store; "
        "memories map to turns by time.",
        "Beside it, the text path (speakers enrolled by name) on the same questions.",
        "",
    ]
    for r in f["conversations"]:
        voices = ", ".join(f"{k}: {v}" for k, v in r["voices"].items())
        lines += [
            f"{r['conversation']} ({voices}), {r['sessions']} session(s), {r['audio_s']:.1f} s of audio",
            *_recall_lines(r["spoken"], r["text"]),
            _speaker_line(r),
            "  voice heard most -> its person (name, verdict): "
            + "; ".join(
                f"{s}: {n['voice'] or 'no voice'} -> {n['person'] or 'nobody'} ({n['name'] or 'unnamed'}, "
                f"{n['verdict']})"
                for s, n in r["speakers"].items()
            ),
            "  name said in / heard as written in (ASR): "
            + "; ".join(
                f"{s}: {n['name_said']} / {n['name_heard']} turns" for s, n in r["speakers"].items()
            ),
            "  attributed to (one mapping for the whole store): "
            + "; ".join(f"{s}: {r['mapping'].get(s) or 'nobody'}" for s in r["speakers"]),
            f"{r['ms_per_query']:.1f} ms per question (text path {r['text_ms_per_query']:.1f} ms)",
            "",
        ]
    lines += [
        f"pooled over {len(f['conversations'])} conversation(s)",
        *_recall_lines(f["spoken"], f["text"]),
        _speaker_line(f),
        f"{f['ms_per_query']:.1f} ms per question (text path {f['text_ms_per_query']:.1f} ms) on a store of "
        f"{f['memories']} memories, {f['people']} people",
        f"ingest: {f['audio_s']:.1f} s of audio in {f['clips']} clips took {f['ingest_s']:.1f} s "
        f"({f['ingest_x_realtime']}x real time, models loaded inside the timing)",
        *spoken_names.report_lines(f),
    ]
    if "first_person" in f:
        fp = f["first_person"]
        lines += [
            "",
            "the first speaker of each conversation as the owner (spoken: the person their voice became, "
            "marked as a user would); their questions asked as they would ask them:",
            "                  questions   third person @10   first person @10",
        ]
        for way in ("spoken", "text"):
            r = fp[way]
            lines.append(
                f"  {way:<14} {r['questions']:11d}   {_fig(r['third_person_recall@10']):>16}   "
                f"{_fig(r['first_person_recall@10']):>16}"
            )
        lines.append(
            "  owners: "
            + "; ".join(
                f"{k}: {o['speaker']} -> {o['person'] or 'no person'}"
                for k, o in fp["owners"].items()
            )
            + (
                f" ({fp['owner_missing']} question(s) of owners no person stands for: not compared)"
                if fp["owner_missing"]
                else ""
            )
        )
    if "profiles" in f:
        p = f["profiles"]
        lines += [
            "",
            f"profiles against the observation facts of the spoken sessions: {p['people']} people, "
            f"{p['facts']} fact(s)",
            f"  fact recall: spoken {_fig(p['fact_recall'])}, text path {_fig(p['text_fact_recall'])}"
            + (
                f" ({p['unmapped_people']} speaker(s) no person stands for: their facts count as not stated)"
                if p["unmapped_people"]
                else ""
            ),
        ]
        lines += [
            f"    {r['conversation']} {r['speaker']} ({r['person'] or 'no person'}): spoken "
            f"{_fig(r['fact_recall'])}, text {_fig(r['text_fact_recall'])} of {r['facts']} fact(s)"
            for r in p["per_person"]
        ]
    return "\n".join(lines)
