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

This module selects the conversations and runs the bench; its parts live by job:
``locomo_spoken_recall`` (memories to turns, recall), ``locomo_spoken_speakers`` (attribution,
naming, ASR errors), ``locomo_spoken_owner`` (the owner's questions, profiles),
``locomo_spoken_report`` (the JSON line and the text report) and ``spoken_names`` (name words, the
variants).
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
from bench.datasets.locomo import Conversation, load, load_gold
from bench.locomo_spoken_owner import (
    first_person_pairs,
    pool_first_person,
    pool_profiles,
    profile_figures,
)
from bench.locomo_spoken_recall import (
    absolute_turns,
    ask,
    empty_scores,
    merge_scores,
    ranked_turns_by_time,
    recall_table,
)
from bench.locomo_spoken_report import format_report, summary
from bench.locomo_spoken_speakers import asr_errors, attribute, speaker_figures

if TYPE_CHECKING:
    from embeddings.base import TextEmbedder
    from graph.store import Store
    from pipeline.ingest import IngestReport

# the bench's face: `mnemo bench locomo --spoken` wires, runs and reports through these
__all__ = ["Wiring", "format_report", "run", "select", "summary", "variant_figures"]


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
    rows, scores = [], empty_scores()
    edits = words = right = said = asked = 0
    spent = 0.0
    for conv in chosen:
        _, rendered = spoken[conv.key]
        turns_by_path = {str(s.path): absolute_turns(s) for s in rendered}
        spent += ask(
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
    pooled, pooled_text = empty_scores(), empty_scores()
    per_conv, query_s, text_query_s, asked = [], 0.0, 0.0, 0
    fp_rows: list[dict] = []
    profile_rows: list[dict] = []
    gold = load_gold(path) if profiles else {}
    for conv in chosen:
        voices, rendered = spoken[conv.key]
        turns_by_path = {str(s.path): absolute_turns(s) for s in rendered}
        scores, text_scores = empty_scores(), empty_scores()
        spent = ask(
            planner,
            conv,
            lambda ms, turns_by_path=turns_by_path: ranked_turns_by_time(ms, turns_by_path),
            scores,
        )

        text_store = Store(workdir / "text" / conv.key, embedder)
        locomo.ingest_conversation(conv, text_store, text_policies)
        known = conv.turn_ids
        text_spent = ask(
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
        merge_scores(pooled, scores)
        merge_scores(pooled_text, text_scores)
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
