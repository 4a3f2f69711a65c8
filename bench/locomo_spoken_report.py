"""The report of ``bench locomo --spoken``: the JSON line (``summary``: the pooled figures, then each
conversation's; the owner's questions or the profiles first when they were measured) and the text
report (``format_report``)."""

from __future__ import annotations

from bench import spoken_names
from bench.datasets.locomo import CATEGORIES
from bench.locomo_spoken_recall import KS


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
