"""Secrets and personal numbers kept out of memory: found in what was said and shown, and replaced
by a marker (``[card]``) before anything of a clip is stored.

What is found, by kind (``KINDS``; ``DEFAULT_KINDS`` are on unless configured otherwise):

- ``secrets``: API keys and tokens, by the patterns of Yelp's detect-secrets (AWS, GitHub, GitLab,
  Slack, Stripe, OpenAI, JWT, private key headers, …) and a few newer formats it lacks;
- ``cards``: 13 to 19 digits, grouped as cards are (4-4-4-4, 4-6-5, …) or not at all, that begin
  as issuers' numbers do (2 to 6) and pass the Luhn check, found inside longer runs of digits too;
- ``ibans``: IBANs whose checksum holds (python-stdnum), with whatever follows them left alone;
- ``passwords``: the token after "password:" or "password =" (typed), up to five words after
  "password is/was" (said), the digits after "PIN:" or "PIN is";
- ``emails`` and ``phones`` (libphonenumber, numbers valid for ``phone_region`` or with a +country
  prefix): off by default, since a lifelog is full of addresses a user wants to find again.

Checksums keep ordinary numbers (order numbers, timestamps, hashes) from being taken for cards or
IBANs; ``tests/test_redact.py`` counts what the defaults take from the project's own conversations,
transcripts and screens (nothing).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import cached_property

KINDS = ("secrets", "cards", "ibans", "passwords", "emails", "phones")
DEFAULT_KINDS = ("secrets", "cards", "ibans", "passwords")

_CARD = re.compile(r"(?<![\w-])\d+(?:[ -]\d+)*(?![\w-])")  # a run of digit groups; _cards looks inside
# how card numbers are written in groups (Visa/Mastercard 4-4-4-4, Amex 4-6-5, Diners 4-6-4, 19-digit
# cards 4-4-4-4-3); digits grouped otherwise (an IBAN's, a phone's) are not a card
_CARD_GROUPS = {(4, 4, 4, 4), (4, 6, 5), (4, 6, 4), (4, 4, 4, 4, 3), (4, 4, 4, 1), (4, 4, 4, 3), (4, 4, 4, 2)}
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
# the value after "password:" / "password = " (one token, as typed), or after "password is/was",
# "password's" (up to five words, as said, to the end of the clause); "PIN: 1234" and "PIN is 1 2 3 4"
_SECRET_WORD = r"(?:password|passwd|passphrase|passcode|pwd)"
_PASSWORD = (re.compile(r"(?i)\b" + _SECRET_WORD + r"\s*[:=]\s*(?P<value>[^\s,;]+)"),
             re.compile(r"(?i)\b" + _SECRET_WORD + r"(?:'s|\s+(?:is|was))\s*:?\s*(?P<value>[^\s,;.!?]+"
                        r"(?:\s+[^\s,;.!?]+){0,4})"),
             re.compile(r"(?i)\bpin(?:\s+(?:code|number))?(?:\s*[:=]\s*|\s+(?:is|was)\s+)(?P<value>\d(?:[\s-]?\d){2,11})\b"))
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


def _cards(text: str) -> list[tuple[int, int]]:
    """Card numbers: the longest run of digit groups inside each candidate that is grouped as cards
    are and passes the checks (so "4111 1111 1111 1111 123" or "… 12/27" still give the card)."""
    from stdnum import luhn

    out = []
    for m in _CARD.finditer(text):
        groups = [g.span() for g in re.finditer(r"\d+", m.group())][:40]
        best = None
        for i in range(len(groups)):
            for j in range(len(groups) - 1, i - 1, -1):
                part = m.group()[groups[i][0]:groups[j][1]]
                sizes = tuple(b - a for a, b in groups[i:j + 1])
                digits = re.sub(r"[ -]", "", part)
                # issuers' numbers begin with 2 to 6 (Mastercard, Amex, Visa, Discover, …)
                if (13 <= len(digits) <= 19 and (len(sizes) == 1 or sizes in _CARD_GROUPS) and digits[0] in "23456"
                        and len(set(digits)) > 1 and luhn.is_valid(digits)):
                    if best is None or len(digits) > best[2]:
                        best = (m.start() + groups[i][0], m.start() + groups[j][1], len(digits))
                    break
        if best:
            out.append(best[:2])
    return out


def _ibans(text: str) -> list[tuple[int, int]]:
    """IBANs whose checksum holds: the longest valid prefix of each candidate (an IBAN followed by
    "BIC COBADEFF" or "EUR" is still found)."""
    from stdnum import iban

    out = []
    for m in _IBAN.finditer(text):
        for end in range(m.end(), m.start() + 14, -1):
            if text[end - 1] != " " and iban.is_valid(text[m.start():end]):
                out.append((m.start(), end))
                break
    return out


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
            found += [(a, b, "card") for a, b in _cards(text)]
        if "ibans" in self.kinds:
            found += [(a, b, "iban") for a, b in _ibans(text)]
        if "passwords" in self.kinds:
            found += [(m.start("value"), m.end("value"), "password") for p in _PASSWORD for m in p.finditer(text)]
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
        """The clip's observations with speech, words, screen text, window titles and captions
        redacted, and the counts by kind. Words that held a redacted span become its marker."""
        counts: Counter = Counter()
        speech = []
        for turn in obs.speech:
            text = self.text(turn.text, counts)
            words = turn.words
            if text != turn.text and words:
                words = self._words(words)
            speech.append(replace(turn, text=text, words=words) if text != turn.text else turn)
        frames = []
        for frame in obs.frames:  # its text lines, its caption and (screenshots) its window title
            lines = tuple(replace(line, text=t) if (t := self.text(line.text, counts)) != line.text else line
                          for line in frame.text_lines)
            caption, window = self.text(frame.caption, counts), self.text(frame.window, counts)
            if lines != frame.text_lines or caption != frame.caption or window != frame.window:
                frame = replace(frame, text_lines=lines, caption=caption, window=window)
            frames.append(frame)
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
