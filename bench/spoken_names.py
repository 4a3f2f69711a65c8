"""Names in ``bench locomo --spoken``: how the speakers' names are written, and the same spoken
sessions ingested again another way, beside the configured run.

- ``name_words``: a speaker's name said in a turn is right when the stored transcript writes it as
  the dialogue does, at the same place (the reference and the transcript aligned word by word).
- ``variant``: the sessions ingested into another store with the conversations' speaker names
  given as a contact list (``--contacts``), or with the speech recogniser as it was before two
  passes (``--one-pass``: tiny.en in float32, no second pass); the same naming, WER, name-word,
  recall and speed figures as the configured run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from difflib import SequenceMatcher
from pathlib import Path
from typing import TYPE_CHECKING

from bench.metrics import normalize_words
from bench.speech_synth import SpokenSession

if TYPE_CHECKING:
    from graph.store import Store
    from pipeline.ingest import IngestReport

VARIANTS = ("contacts", "one_pass")


def _session_transcript(s: SpokenSession, store) -> list[str]:
    clips = [
        c
        for c in store.clips_in_range(s.started_ts, s.end_ts, limit=None)
        if c["source_path"] == str(s.path)
    ]
    return normalize_words(
        " ".join(c["transcript"] for c in sorted(clips, key=lambda c: c["offset_s"]))
    )


def name_words(
    speakers: Sequence[str], sessions: Sequence[SpokenSession], store
) -> tuple[int, int]:
    """(speaker-name words the stored transcripts write as said, speaker-name words said)."""
    names = {w for n in speakers for w in normalize_words(n)}
    right = said = 0
    for s in sessions:
        ref = normalize_words(" ".join(t.text for t in s.turns))
        hyp = _session_transcript(s, store)
        matched: set[int] = set()
        for a, _, size in SequenceMatcher(None, ref, hyp, autojunk=False).get_matching_blocks():
            matched.update(range(a, a + size))
        at = [i for i, w in enumerate(ref) if w in names]
        said += len(at)
        right += sum(i in matched for i in at)
    return right, said


def second_pass_share(report, audio_s: float) -> float:
    """The share of the recordings' audio the second speech pass decoded again."""
    return round(report.stage_s.get("second_pass_audio_s", 0.0) / audio_s, 4) if audio_s else 0.0


def variant(
    kind: str,
    ingest: Callable,
    chosen: list,
    spoken: dict,
    workdir: Path,
    embedder,
    progress: Callable[[str], None],
    measure: Callable[[Store, IngestReport, float], dict],
) -> dict:
    """The spoken sessions ingested into ``workdir/spoken-<kind>`` the ``kind`` way; its figures,
    as ``measure`` (``bench.locomo_spoken.variant_figures``, handed in by its run) takes them from
    the store, the ingest's report and its seconds."""
    from graph.store import Store

    paths = [str(s.path) for _, rendered in spoken.values() for s in rendered]
    contacts = tuple(dict.fromkeys(n for c in chosen for n in c.speakers))
    kwargs = {"contacts": contacts} if kind == "contacts" else {"one_pass": True}
    store = Store(workdir / f"spoken-{kind.replace('_', '-')}", embedder)
    progress(
        f"ingesting the same {len(paths)} recording(s) again "
        + ("with the speakers' names as a contact list" if kind == "contacts" else "in one pass")
    )
    t0 = time.perf_counter()
    report = ingest(paths, store, progress, **kwargs)
    ingest_s = time.perf_counter() - t0
    return {"variant": kind, **measure(store, report, ingest_s)}


def report_lines(f: dict) -> list[str]:
    """The configured run beside the variants, one line each."""
    runs = [("as configured", f), *((v["variant"], v) for v in f.get("variants", ()))]
    lines = [
        "",
        "names: speakers named / wrong / unnamed, ASR WER, name words written as said, audio decoded "
        "twice, ingest x real time, recall@10, ms a question",
    ]
    for label, r in runs:
        acc = r.get("name_word_accuracy")
        lines.append(
            f"  {label:<14} {r['speakers_named']:2d} / {r['speakers_wrong']} / {r['speakers_unnamed']}"
            f"  WER {r['asr_wer']:.3f}  names {'-' if acc is None else f'{acc:.3f}'} of "
            f"{r.get('name_words', 0)}  second pass {r['second_pass_audio_share']:.3f}"
            f"  {r['ingest_x_realtime']}x  recall@10 {r.get('recall@10', r.get('spoken', {}).get('recall@10'))}"
            f"  {r['ms_per_query']:.1f} ms"
        )
    return lines
