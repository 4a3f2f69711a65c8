"""Secrets and personal numbers kept out of memory: found in what was said and shown, and replaced
by a marker (``[card]``) before anything of a clip is stored.

What is found, by kind (``KINDS``; ``DEFAULT_KINDS`` are on unless configured otherwise):

- ``secrets``: API keys and tokens, by the patterns of Yelp's detect-secrets (AWS, GitHub, GitLab,
  Slack, Stripe, OpenAI, JWT, private key headers, …) and a few newer formats it lacks;
- ``cards``: 13 to 19 digits (spaces or dashes between groups) that begin as issuers' numbers do
  (2 to 6) and pass the Luhn check;
- ``ibans``: IBANs whose checksum holds (python-stdnum);
- ``passwords``: the value after "password:", "password =", "password is", "pwd:", "PIN:" (typed or said);
- ``emails`` and ``phones`` (libphonenumber, numbers valid for ``phone_region`` or with a +country
  prefix): off by default, since a lifelog is full of addresses a user wants to find again.

Checksums keep ordinary numbers (order numbers, timestamps, hashes) from being taken for cards or
IBANs; ``mnemo bench redact`` counts what the project's own OCR and speech fixtures lose.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import cached_property

KINDS = ("secrets", "cards", "ibans", "passwords", "emails", "phones")
DEFAULT_KINDS = ("secrets", "cards", "ibans", "passwords")

_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
# how card numbers are written in groups (Visa/Mastercard 4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19-digit
# cards 4-4-4-4-3); digits grouped otherwise (an IBAN's, a phone's) are not a card
_CARD_GROUPS = {(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 1), (4, 4, 4, 3), (4, 4, 4, 2)}
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_PASSWORD = re.compile(r"(?i)\b(?:pass(?:word|wd|phrase)?|pwd|pin(?: code)?)(?:\s*[:=]\s*|\s+is\s+)"
                       r"(?P<value>[^\s,;]+)")
_EMAIL = re.compile(r"\b[\w.%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")
# keys detect-secrets 1.5 does not know: OpenAI project and service keys, GitHub fine-grained
# tokens, Google API keys, Hugging Face tokens
_MORE_SECRETS = (re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
                 re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}"), re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
                 re.compile(r"\bhf_[A-Za-z0-9]{30,}\b"))
# detect-secrets' detectors that are not secrets here: a public IP address is not a key
_NOT_SECRETS = {"IPPublicDetector"}


def _secret_patterns() -> list[re.Pattern]:
    import importlib
    import pkgutil

    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    out = []
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for name in dir(module):
            cls = getattr(module, name)
            if (isinstance(cls, type) and issubclass(cls, RegexBasedDetector) and cls.__module__ == module.__name__
                    and name not in _NOT_SECRETS):
                try:
                    out.extend(cls().denylist)
                except TypeError:  # abstract
                    continue
    return out + list(_MORE_SECRETS)


class Redactor:
    def __init__(self, kinds: tuple[str, ...] | list[str] = DEFAULT_KINDS, phone_region: str = "US") -> None:
        unknown = set(kinds) - set(KINDS)
        if unknown:
            raise ValueError(f"unknown redaction kind(s) {sorted(unknown)}; choose from {', '.join(KINDS)}")
        self.kinds = tuple(kinds)
        self.phone_region = phone_region

    @cached_property
    def _secrets(self) -> list[re.Pattern]:
        return _secret_patterns()

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of what must go, without overlaps, in order."""
        found: list[tuple[int, int, str]] = []
        if "secrets" in self.kinds:
            found += [(m.start(), m.end(), "secret") for p in self._secrets for m in p.finditer(text)]
        if "cards" in self.kinds:
            from stdnum import luhn

            for m in _CARD.finditer(text):
                groups = tuple(len(g) for g in re.split(r"[ -]", m.group()))
                if len(groups) > 1 and groups not in _CARD_GROUPS:
                    continue
                digits = re.sub(r"[ -]", "", m.group())
                # issuers' numbers begin with 2 to 6 (Mastercard, Amex, Visa, Discover, …)
                if 13 <= len(digits) <= 19 and digits[0] in "23456" and len(set(digits)) > 1 and luhn.is_valid(digits):
                    found.append((m.start(), m.end(), "card"))
        if "ibans" in self.kinds:
            from stdnum import iban

            found += [(m.start(), m.end(), "iban") for m in _IBAN.finditer(text) if iban.is_valid(m.group())]
        if "passwords" in self.kinds:
            found += [(m.start("value"), m.end("value"), "password") for m in _PASSWORD.finditer(text)]
        if "emails" in self.kinds:
            found += [(m.start(), m.end(), "email") for m in _EMAIL.finditer(text)]
        if "phones" in self.kinds:
            import phonenumbers

            found += [(m.start, m.end, "phone") for m in phonenumbers.PhoneNumberMatcher(text, self.phone_region)]
        out: list[tuple[int, int, str]] = []
        for start, end, kind in sorted(found, key=lambda s: (s[0], -s[1])):
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
        for start, end, kind in reversed(spans):
            text = text[:start] + f"[{kind}]" + text[end:]
            if counts is not None:
                counts[kind] += 1
        return text

    def observations(self, obs):
        """The clip's observations with speech, words, screen text and caption redacted, and the
        counts by kind. Words that held a redacted span become its marker."""
        counts: Counter = Counter()
        speech = []
        for turn in obs.speech:
            text = self.text(turn.text, counts)
            words = turn.words
            if text != turn.text and words:
                words = self._words(words)
            speech.append(replace(turn, text=text, words=words) if text != turn.text else turn)
        frames = []
        for frame in obs.frames:
            lines = tuple(replace(line, text=t) if (t := self.text(line.text, counts)) != line.text else line
                          for line in frame.text_lines)
            frames.append(replace(frame, text_lines=lines) if lines != frame.text_lines else frame)
        caption = self.text(obs.caption, counts)
        if not counts:
            return obs, counts
        note = "redacted before storing: " + ", ".join(f"{n} {k}(s)" for k, n in sorted(counts.items()))
        return replace(obs, speech=tuple(speech), frames=tuple(frames), caption=caption,
                       notes=obs.notes + (note,)), counts

    def _words(self, words):
        """Words whose characters (joined by spaces) fall in a redacted span take its marker; a
        span over several words keeps the marker on the first and drops the rest."""
        joined, starts = "", []
        for w in words:
            starts.append(len(joined) + (1 if joined else 0))
            joined += (" " if joined else "") + w.text
        spans = self.spans(joined)
        out, used = [], set()
        for w, start in zip(words, starts):
            end = start + len(w.text)
            hit = next((i for i, (a, b, _k) in enumerate(spans) if start < b and end > a), None)
            if hit is None:
                out.append(w)
            elif hit not in used:
                used.add(hit)
                out.append(replace(w, text=f"[{spans[hit][2]}]"))
        return tuple(out)
