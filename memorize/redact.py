"""Secrets and personal numbers kept out of memory: found in what was said and shown, and replaced
by a marker (``[card]``) before anything of a clip is stored, and again in what an LLM writer
wrote about the clip (it sees the frames themselves, where a secret may still be legible).

What is found, by kind (``KINDS``; ``DEFAULT_KINDS`` are on unless configured otherwise):

- ``secrets``: API keys and tokens, by the patterns of Yelp's detect-secrets (AWS, GitHub, GitLab,
  Slack, Stripe, …) and the formats it lacks; values assigned to a secret's name in env, JSON,
  YAML, INI, command-line flags, query strings and HTTP headers (``DB_PASSWORD=…``,
  ``"client_secret": "…"``, ``--token …``, ``Authorization: Basic …``); passwords in URLs; private
  key blocks, whole, on one line or over several lines of a screen;
- ``cards``: 13 to 19 digits that begin as an issuer's numbers do, pass the Luhn check and are
  written as people write or read them (4-4-4-4 with spaces, dashes or dots, 4-6-5, one run, or
  one, two or three digits at a time, in figures or in words), found inside longer runs too;
- ``ibans``: IBANs in any case whose checksum and country format hold (python-stdnum);
- ``passwords``: the value after "password is/was" (said, to the end of the clause), the digits
  after "PIN:" or "PIN is", and labelled one-time codes ("verification code 123456", "CVV 123");
- ``emails`` and ``phones`` (libphonenumber, numbers valid for ``phone_region`` or with a +country
  prefix): off by default, since a lifelog is full of addresses a user wants to find again.

Checksums and issuers' prefixes keep ordinary numbers (order numbers, timestamps, byte counts) from
being taken for cards or IBANs; masked values (``********``) and placeholders (``${DB_PASSWORD}``)
are left as they are. ``tests/test_redact.py`` counts what the defaults take from the project's own
conversations, transcripts and screens (nothing), and ``mnemo bench redact`` (bench/redact.py)
measures recall and false redactions on a generated corpus.

Every rule runs in time linear in the text: a loop over a class of characters starts only where a
run of that class starts (a lookbehind) or is bounded, and the detect-secrets patterns that
backtrack quadratically on long runs are replaced by linear ones (``redact_keys._QUADRATIC``).

This module is the entry point (``Redactor``, ``KINDS``): it runs the rule families of its sibling
modules over speech, screens and an LLM writer's reply, and merges what they find. The families:
keys and tokens (``redact_keys``, with ``token_rules``), values given to a secret's name
(``redact_assignments``), cards and IBANs (``redact_numbers``), and passwords, PINs and codes as
said or labelled (``redact_passwords``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import cached_property

from memorize.redact_assignments import assignments
from memorize.redact_forms import label_value, vault_body
from memorize.redact_keys import KEY_BLOCK, KEY_END, key_spans, secret_patterns
from memorize.redact_numbers import cards, ibans
from memorize.redact_passwords import password_spans

KINDS = ("secrets", "cards", "ibans", "passwords", "emails", "phones")
DEFAULT_KINDS = ("secrets", "cards", "ibans", "passwords")
# starts only where a run of an address's characters starts: "\b" let it start again after every "."
_EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")


class Redactor:
    def __init__(
        self, kinds: tuple[str, ...] | list[str] = DEFAULT_KINDS, phone_region: str = "US"
    ) -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(
                f"unknown redaction kind(s) {sorted(unknown)}; choose from {', '.join(KINDS)}"
            )
        self.kinds = tuple(kinds)
        self.phone_region = phone_region

    @cached_property
    def _secrets(self) -> list[tuple[re.Pattern, bool]]:
        return secret_patterns()

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of what must go, without overlaps, in order."""
        found: list[tuple[int, int, str]] = []
        if "secrets" in self.kinds:
            found += [(a, b, "secret") for a, b in key_spans(text, self._secrets)]
        if "secrets" in self.kinds or "passwords" in self.kinds:
            found += [s for s in assignments(text) if f"{s[2]}s" in self.kinds]
        if "cards" in self.kinds:
            found += [(a, b, "card") for a, b in cards(text)]
        if "ibans" in self.kinds:
            found += [(a, b, "iban") for a, b in ibans(text)]
        if "passwords" in self.kinds:
            found += password_spans(text)
        if "emails" in self.kinds:
            found += [(m.start(), m.end(), "email") for m in _EMAIL.finditer(text)]
        if "phones" in self.kinds:
            import phonenumbers

            found += [
                (m.start, m.end, "phone")
                for m in phonenumbers.PhoneNumberMatcher(text, self.phone_region)
            ]
        out: list[tuple[int, int, str]] = []
        for start, end, kind in sorted(found, key=lambda s: (s[0], -s[1])):
            if start >= end:
                continue
            if out and start < out[-1][1]:  # inside or across the one before: one span
                out[-1] = (out[-1][0], max(out[-1][1], end), out[-1][2])
            else:
                out.append((start, end, kind))
        return out

    def text(self, text: str, counts: Counter | None = None) -> str:
        """``text`` with what must go replaced by ``[kind]``; ``counts`` adds up the kinds."""
        if not text:
            return text
        spans = self.spans(text)
        parts, last = [], 0
        for start, end, kind in spans:
            parts += [text[last:start], f"[{kind}]"]
            last = end
            if counts is not None:
                counts[kind] += 1
        return "".join(parts) + text[last:] if spans else text

    def lines(self, lines: list[str], counts: Counter | None = None) -> list[str]:
        """Lines of one screen, in reading order: each redacted, and those between a private key's
        BEGIN line and its END line (OCR reads a key block as many lines) replaced whole."""
        out, inside, vault = [], False, False
        for i, line in enumerate(lines):
            if inside and "secrets" in self.kinds:
                end = KEY_END.search(line)
                if end is None:
                    out.append("[secret]")
                    continue
                inside = False
                line = "[secret]" + line[end.end() :]
            vault = "secrets" in self.kinds and i > 0 and vault_body(lines[i - 1], line, vault)
            if vault:  # an Ansible Vault's body, line by line
                out.append("[secret]")
                if counts is not None:
                    counts["secret"] += 1
                continue
            redacted = self.text(line, counts)
            # a settings page's label on one line, its value alone on the next ("API Secret")
            if i and "secrets" in self.kinds and (span := label_value(lines[i - 1], line)):
                if redacted == line:
                    redacted = line[: span[0]] + "[secret]" + line[span[1] :]
                    if counts is not None:
                        counts["secret"] += 1
            if "secrets" in self.kinds:
                begins = [m for m in KEY_BLOCK.finditer(line)]
                inside = bool(begins) and not KEY_END.search(line, begins[-1].start())
            out.append(redacted)
        return out

    def observations(self, obs):
        """The clip's observations with speech, words, screen text (OCR's and the accessibility
        tree's lines alike), window titles, addresses and captions redacted, and the counts by
        kind. Words that held a redacted span become its marker."""
        counts: Counter = Counter()
        speech = []
        for turn in obs.speech:
            text = self.text(turn.text, counts)
            words = turn.words
            if text != turn.text and words:
                words = self._words(words)
            speech.append(replace(turn, text=text, words=words) if text != turn.text else turn)
        frames = []
        for frame in obs.frames:  # its text lines, caption and (screenshots) window title, address
            texts = self.lines([line.text for line in frame.text_lines], counts)
            lines = tuple(
                replace(line, text=t) if t != line.text else line
                for line, t in zip(frame.text_lines, texts)
            )
            caption, window = self.text(frame.caption, counts), self.text(frame.window, counts)
            url = self.text(frame.url, counts)
            if (
                lines != frame.text_lines
                or caption != frame.caption
                or window != frame.window
                or url != frame.url
            ):
                frame = replace(frame, text_lines=lines, caption=caption, window=window, url=url)
            frames.append(frame)
        caption = self.text(obs.caption, counts)
        if not counts:
            return obs, counts
        note = "redacted before storing: " + ", ".join(
            f"{n} {k}(s)" for k, n in sorted(counts.items())
        )
        return replace(
            obs,
            speech=tuple(speech),
            frames=tuple(frames),
            caption=caption,
            notes=obs.notes + (note,),
        ), counts

    def llm_reply(self, memories):
        """An LLM writer's memories (``memorize.writer_llm.LLMClipMemories``) with its sentences and
        facts redacted, and the counts by kind: the model reads the frames themselves, and a key
        legible on screen, or a card it spelled out from the words, would reach memory through it."""
        from graph.rows import content_id

        counts: Counter = Counter()
        episodic = []
        for m in memories.episodic:
            text = self.text(m.text, counts)
            episodic.append(
                m
                if text == m.text
                else replace(m, text=text, memory_id=content_id(m.clip_id, "llm", "episodic", text))
            )
        facts = [
            (subject, self.text(relation, counts), self.text(value, counts), evidence)
            for subject, relation, value, evidence in memories.facts
        ]
        if not counts:
            return memories, counts
        return replace(memories, episodic=episodic, facts=facts), counts

    def _words(self, words):
        """Words whose characters (joined by spaces) fall in a redacted span take its marker; a
        span over several words keeps the marker on the first and drops the rest."""
        joined, starts = "", []
        for w in words:
            starts.append(len(joined) + (1 if joined else 0))
            joined += (" " if joined else "") + w.text
        spans = self.spans(joined)
        out, used, k = [], set(), 0
        for w, start in zip(words, starts):
            end = start + len(w.text)
            while k < len(spans) and spans[k][1] <= start:
                k += 1
            hit = k if k < len(spans) and spans[k][0] < end else None
            if hit is None:
                out.append(w)
            elif hit not in used:
                used.add(hit)
                out.append(replace(w, text=f"[{spans[hit][2]}]"))
        return tuple(out)
