"""Who spoke, and what was heard, in ``bench locomo --spoken``'s store: attribution of the reference
speech time to persons (one one-to-one mapping for the whole store), voice entities per real speaker,
speakers named right, wrongly or not at all, and the ASR word error rate of the clip transcripts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.datasets.locomo import Conversation
from bench.metrics import edit_distance, normalize_words
from bench.speech_synth import SpokenSession
from perception.speech.diarize import union_spans


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
