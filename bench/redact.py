"""``mnemo bench redact``: how many planted secrets the redaction keeps out of memory, and how much
ordinary text it takes by mistake, on three corpora reported apart:

- **own**: the generated corpus mnemo's rules were written beside (bench/redact_corpus.py), its
  secrets and its benign items;
- **outside**: secrets written by others, Kingfisher's examples of its own rules, read from the
  installed package at run time (bench/redact_outside.py); absent, with the command that installs
  it, where that package is not installed;
- **look-alikes**: ordinary text that looks like a secret (commits, digests, parcels, ISBNs,
  addresses, versions, image data, URLs, sentences about passwords: bench/redact_lookalikes.py).

Each item of the generated corpus (bench/redact_corpus.py) goes through the points where ingest
redacts, as ingest builds their records: ``Redactor.observations`` on a clip whose spoken turn
(with its words), screen lines, window title, frame caption and clip caption all carry the item,
and ``Redactor.llm_reply`` on what ``LLMWriter.write`` makes of a model's reply that repeats it (the
memorizer redacts that reply before it is kept). A secret is caught when no part of it of
``MIN_PART`` characters (or the whole, when shorter) is left in what would be stored, through
every channel; a benign item is falsely redacted when any channel changes it.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bench.redact_corpus import Item, corpus

MIN_PART = 6
_MARKER = re.compile(r"\[(?:secret|password|code|card|iban|email|phone)\]")
CHANNELS = (
    "transcript",
    "words",
    "screen",
    "window",
    "frame caption",
    "caption",
    "llm episodic",
    "llm fact",
)


@dataclass
class RedactReport:
    secrets: int = 0
    caught: int = 0
    benign: int = 0
    false_redactions: int = 0
    chars: int = 0
    seconds: float = 0.0
    missed: list[tuple[Item, list[str], dict[str, str]]] = field(
        default_factory=list
    )  # item, channels, what stayed
    misses_by_form: Counter = field(default_factory=Counter)
    forms: Counter = field(default_factory=Counter)
    misses_by_channel: Counter = field(default_factory=Counter)
    taken: list[tuple[Item, dict[str, str]]] = field(
        default_factory=list
    )  # benign item, channel -> stored text

    @property
    def figures(self) -> dict:
        return {
            "secrets": self.secrets,
            "caught": self.caught,
            "recall": round(self.caught / self.secrets, 4) if self.secrets else 0.0,
            "benign": self.benign,
            "false_redactions": self.false_redactions,
            "false_redaction_rate": round(self.false_redactions / self.benign, 4)
            if self.benign
            else 0.0,
            "ms_per_kb": round(1000 * self.seconds / max(self.chars / 1024, 1e-9), 3),
            "misses_by_channel": dict(self.misses_by_channel),
        }


class _Reply:
    """The model's side of ``LLMWriter.write``: a reply that quotes what the clip showed and said
    (as a model reading the frames would), validated and turned into memories by the writer itself."""

    model = "scripted"

    def __init__(self, obj: dict) -> None:
        self.obj = obj

    def chat_json(self, messages, validate, schema=None, **kwargs):
        return validate(self.obj)


def _clip(item: Item):
    from perception.records import (
        Clip,
        ClipObservations,
        FrameObservation,
        SourceInfo,
        SpeechTurn,
        TextLine,
        Word,
    )

    source = SourceInfo(
        "/bench/redact.mp4",
        "0" * 64,
        30.0,
        True,
        True,
        datetime(2026, 5, 1, tzinfo=UTC),
        "option",
    )
    clip = Clip(f"redact-{abs(hash(item.text)) % 10**9}", source, 0, 0.0, 30.0)
    said = " ".join(item.lines)  # speech has no line breaks
    words = tuple(Word(w, 0.3 * i, 0.3 * i + 0.25, 0.9) for i, w in enumerate(said.split()))
    turn = SpeechTurn(f"{clip.clip_id}:t0", said, 0.0, 6.0, "en", words, None, "s0")
    lines = tuple(
        TextLine(line, (0, 20 * i, 400, 20 * i + 16), 0.99) for i, line in enumerate(item.lines)
    )
    frame = FrameObservation(
        2.0, text_lines=lines, app="XTerm", window=item.lines[0], caption=item.text
    )
    return ClipObservations(clip, (turn,), (), frames=(frame,), caption=item.text)


def _channels(obs) -> dict[str, str]:
    """Channel -> its text in ``_clip``'s observations: the speech, its words, the screen, the
    window's title and the captions."""
    return {
        "transcript": obs.speech[0].text,
        "words": " ".join(w.text for w in obs.speech[0].words),
        "screen": obs.screen_text,
        "window": obs.frames[0].window,
        "frame caption": obs.frames[0].caption,
        "caption": obs.caption,
    }


def _stored(item: Item, redactor) -> tuple[dict[str, str], dict[str, str], float]:
    """(channel -> what went in, channel -> what would be stored, seconds the redactor took). The
    seconds are the redactor's alone: making the clip's records and the writer's reply around it is
    the bench's own work, a third of the time when it was counted."""
    from memorize.writer_llm import LLMWriter

    obs = _clip(item)
    before = _channels(obs)
    t0 = time.perf_counter()
    red, _ = redactor.observations(obs)
    seconds = time.perf_counter() - t0
    after = _channels(red)
    sentence = "<voice_1> reads out: " + " ".join(item.lines)
    reply = {
        "episodic": [sentence[:590]],
        "semantic": (
            [{"subject": "voice_1", "relation": "mentioned", "value": item.lines[0]}]
            if len(item.lines[0]) <= 200 and "|" not in item.lines[0]
            else []
        ),
        "same_person": [],
    }
    written = LLMWriter(_Reply(reply), images=False).write(obs, {"s0": "voice_1"}, {})
    t0 = time.perf_counter()
    red_llm, _ = redactor.llm_reply(written)
    seconds += time.perf_counter() - t0
    before["llm episodic"], after["llm episodic"] = (
        written.episodic[0].text,
        red_llm.episodic[0].text,
    )
    if written.facts:
        before["llm fact"], after["llm fact"] = written.facts[0][2], red_llm.facts[0][2]
    return before, after, seconds


def _parts(secret: str) -> list[str]:
    n = min(MIN_PART, len(secret))
    return sorted({secret[i : i + n] for i in range(len(secret) - n + 1)})


def _left(secret: str, before: str, after: str) -> str:
    """A part of ``secret`` found more often in ``after`` than the text around the secret held it
    (so a "2026" of the template does not count as a PIN's); "" when none."""
    around = before.replace(secret, "\0")
    after = _MARKER.sub("\0", after)  # "[secret]" is mnemo's word, not a part of the secret left
    for part in _parts(secret):
        if part.strip() and after.count(part) > around.count(part):
            return part
    return ""


def run(
    items: list[Item] | None = None,
    benign_items: list[Item] | None = None,
    redactor=None,
    progress=lambda _m: None,
) -> RedactReport:
    from memorize.redact import Redactor

    if items is None or benign_items is None:
        items, benign_items = corpus()  # the own corpus
    redactor = redactor or Redactor()
    redactor.spans("warm up")  # loads detect-secrets' plugins outside the timing
    report = RedactReport()
    for item in items:
        report.secrets += 1
        report.forms[item.form] += 1
        before, after, seconds = _stored(item, redactor)
        report.seconds += seconds
        report.chars += sum(len(t) for t in before.values())
        stayed = {}
        for channel in before:
            spoken = channel in (
                "transcript",
                "words",
                "llm episodic",
            )  # a screen's line breaks, as spaces
            for secret in item.secrets:
                left = _left(secret, before[channel], after[channel])
                if not left and spoken and "\n" in item.text:
                    left = _left(secret.replace("\n", " "), before[channel], after[channel])
                if left:
                    stayed[channel] = left
        if stayed:
            report.missed.append((item, sorted(stayed), stayed))
            report.misses_by_form[item.form] += 1
            report.misses_by_channel.update(stayed.keys())
        else:
            report.caught += 1
    for item in benign_items:
        report.benign += 1
        before, after, seconds = _stored(item, redactor)
        report.seconds += seconds
        report.chars += sum(len(t) for t in before.values())
        changed = {c: after[c] for c in before if after[c] != before[c]}
        if changed:
            report.false_redactions += 1
            report.taken.append((item, changed))
    progress(
        f"{report.secrets} secrets and {report.benign} benign items through {len(CHANNELS)} channels"
    )
    return report


def run_all(redactor=None, progress=lambda _m: None) -> dict:
    """The three corpora (module doc): ``{"own", "outside", "look_alikes"}`` reports, and under
    ``"outside_corpus"`` what the outside one is made of (or why it is missing)."""
    from bench import redact_lookalikes, redact_outside
    from memorize.redact import Redactor

    redactor = redactor or Redactor()
    out: dict = {"own": run(redactor=redactor, progress=progress)}
    try:
        outside, about = redact_outside.items()
        before, _ = redact_outside.items(redact_outside.first_capture)
    except redact_outside.OutsideUnavailable as e:
        out["outside"], out["outside_corpus"] = None, {"missing": str(e)}
    else:
        progress(
            f"outside corpus: {about['items']} examples of {about['package']} {about['version']}"
        )
        out["outside"] = run([i for i in outside if i.group == "outside"], [], redactor, progress)
        out["outside_identifiers"] = run(
            [i for i in outside if i.group == "identifier"], [], redactor, progress
        )
        # the scoring before redact_outside.secret_parts, every example's first capture a secret
        out["outside_first_capture"] = run(before, [], redactor, progress)
        out["outside_corpus"] = about
    out["look_alikes"] = run([], redact_lookalikes.items(), redactor, progress)
    return out


def figures_of(reports: dict) -> dict:
    """One JSON object: the own corpus's figures at the top (as before), the other two beside."""
    own = reports["own"].figures
    outside = reports["outside"]
    look = reports["look_alikes"].figures
    return {
        **own,
        "outside": {
            **reports["outside_corpus"],
            **(
                {
                    **{k: outside.figures[k] for k in ("secrets", "caught", "recall", "ms_per_kb")},
                    "identifiers": {
                        "items": reports["outside_identifiers"].secrets,
                        "redacted": reports["outside_identifiers"].caught,
                    },
                    "first_capture": {
                        k: reports["outside_first_capture"].figures[k]
                        for k in ("secrets", "caught", "recall")
                    },
                }
                if outside is not None
                else {}
            ),
        },
        "look_alikes": {k: look[k] for k in ("benign", "false_redactions", "false_redaction_rate")},
    }


def format_all(reports: dict) -> str:
    """The report of each corpus, headed by its name."""
    about = reports["outside_corpus"]
    parts = ["own corpus (written beside mnemo's rules):", format_report(reports["own"])]
    if reports["outside"] is None:
        parts += ["\noutside corpus: not measured: " + about["missing"]]
    else:
        parts += [
            f"\noutside corpus ({about['package']} {about['version']}: {about['rules']} rules, "
            f"{about['examples']} positive examples, {about['items']} of visible rules, "
            f"{reports['outside'].secrets} secrets and {reports['outside_identifiers'].secrets} "
            "identifiers; the secret is what the rule marks as one, a connection string's password):",
            format_report(reports["outside"], list_missed=40),
            f"identifiers (rules named for an id, a user name or a plain URL; not counted above): "
            f"{reports['outside_identifiers'].caught} of {reports['outside_identifiers'].secrets} "
            "redacted",
            f"scored as before (each example's first capture, whole connection strings included): "
            f"{reports['outside_first_capture'].caught} of {reports['outside_first_capture'].secrets} "
            f"(recall {reports['outside_first_capture'].figures['recall']:.4f})",
        ]
    parts += [
        "\nlook-alikes (ordinary text that looks like a secret):",
        format_report(reports["look_alikes"]),
    ]
    return "\n".join(parts)


def format_report(report: RedactReport, list_missed: int = 0) -> str:
    f = report.figures
    lines = []
    if report.secrets:
        lines.append(
            f"secrets caught: {report.caught} of {report.secrets} (recall {f['recall']:.4f}), every "
            f"channel ({', '.join(CHANNELS)})"
        )
    if report.benign:
        lines.append(
            f"benign items changed: {report.false_redactions} of {report.benign} "
            f"(false-redaction rate {f['false_redaction_rate']:.4f})"
        )
    lines.append(f"time: {f['ms_per_kb']:.3f} ms per KB of text redacted")
    if report.missed and list_missed:  # many forms of one item each: the items themselves
        lines.append(f"\nmissed (the first {list_missed}):")
        for item, channels, stayed in report.missed[:list_missed]:
            lines.append(f"  {item.form}: {item.text[:100]!r} -> {stayed[channels[0]]!r}")
    elif report.missed:
        lines.append("\nmissed, by form (misses/items):")
        for form, n in report.misses_by_form.most_common():
            lines.append(f"  {form}: {n}/{report.forms[form]}")
        lines.append("what stayed (first of each form):")
        seen = set()
        for item, channels, stayed in report.missed:
            if item.form not in seen:
                seen.add(item.form)
                lines.append(
                    f"  {item.form}: {item.text[:120]!r} -> {stayed[channels[0]]!r} in {', '.join(channels)}"
                )
    if report.taken:
        lines.append("\nbenign text changed:")
        for item, changed in report.taken:
            channel, text = next(iter(changed.items()))
            lines.append(f"  {item.form}: {item.text[:100]!r} -> {text[:100]!r} ({channel})")
    return "\n".join(lines)
