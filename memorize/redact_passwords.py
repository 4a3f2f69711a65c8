"""Passwords, PINs and one-time codes as people say or label them (the ``passwords`` kind of
``memorize.redact``): the value after "password is/was" (said, to the end of the clause, through
what speech recognition does to it), the digits after "PIN:" or "PIN is" (in figures or in words),
and labelled one-time codes ("verification code 123456", "CVV 123", "123456 is your login code").
"""

from __future__ import annotations

import re

from memorize.redact_assignments import is_value, value_end

# said aloud: up to five words after "password is/was", "the password for the bank is", to the
# clause's end; "PIN: 1234", "PIN is 1 2 3 4"
_SAID = re.compile(
    r"(?i)(?<![A-Za-z])(?:pass(?:word|phrase|code)|pwd)(?:\s+(?:for|to|of|on|at)(?:\s+[\w'-]+){1,4}?)?"
    r"(?:'s|\s+(?:is|was)|\s+in(?=(?:\s+[^\s,;]+)?\s+(?!(?:19|20)\d\d\b)[^\s,;]*\d))\s*:?\s*"
    r"(?P<value>[^\s,;]+(?:[.!?]?\s+[^\s,;.!?]+){0,4})"
)
# speech recognition hears "is" as "in" ("the password for the bank in November 35%"): "in" counts
# when a word with a digit follows within two words; and it puts commas inside a spoken password
# ("35%, 7 CDTM", "5 ,720"): what follows a comma goes with the value while it is digits, capitals or symbols
_SAID_TAIL = re.compile(r"(?:\s*,\s*|\s+)(?:\d+|[A-Z0-9%*!#$&@^+=-]{2,})(?=[\s,.;!?]|$)")
_SAID_STOP = {
    "and",
    "but",
    "so",
    "because",
    "then",
    "or",
    "please",
    "ok",
    "okay",
    "right",
    "if",
    "which",
}
_NEW_SENTENCE = {
    "i",
    "i'm",
    "i'll",
    "we",
    "you",
    "he",
    "she",
    "they",
    "it",
    "it's",
    "that",
    "this",
    "there",
    "the",
    "a",
    "an",
    "my",
    "our",
    "your",
    "his",
    "her",
    "their",
    "let's",
    "don't",
    "do",
    "did",
    "what",
    "when",
    "where",
    "how",
    "why",
    "who",
    "yes",
    "no",
    "thanks",
    "thank",
    "bye",
    "see",
    "remember",
    "also",
}
_NOT_SAID = {
    "incorrect",
    "wrong",
    "invalid",
    "required",
    "too",
    "not",
    "expired",
    "reset",
    "changed",
    "updated",
    "saved",
    "case-sensitive",
    "missing",
    "empty",
    "weak",
    "strong",
    "being",
    "now",
    "still",
    "stored",
    "hidden",
    "masked",
    "shown",
    "needed",
    "set",
    "sent",
    "different",
    "same",
    "encrypted",
    "hashed",
    "long",
    "short",
    "protected",
    "managed",
    "in",
    "on",
    "the",
    "a",
    "an",
    "what",
    "easy",
    "hard",
    "something",
    "secure",
    "insecure",
    "your",
    "my",
    "also",
    "just",
    "very",
    "stolen",
    "leaked",
    "hacked",
    "compromised",
    "forgotten",
    "lost",
    "locked",
}
_SPOKEN_DIGIT = r"(?:\d|zero|oh|one|two|three|four|five|six|seven|eight|nine)"
# a PIN in figures or, as speech recognition writes one said aloud, in words ("one two three four")
_PIN = re.compile(
    r"(?i)\bpin(?:\s+(?:code|number))?(?:\s*[:=]\s*|\s+(?:is|was)\s+)"
    rf"(?P<value>\d(?:[\s-]?\d){{2,11}}|{_SPOKEN_DIGIT}(?:(?:,?\s+|-){_SPOKEN_DIGIT}){{2,11}})\b"
)
# one-time codes, labelled ("verification code 123456", "CVV: 123") or after the fact
# ("123456 is your login code"); "error code 404", "zip code 94107" have no such label
_CODE = re.compile(
    r"(?i)(?<![A-Za-z])(?:(?:verification|security|confirmation|login|log-in|sign-in|signin|access|"
    r"auth(?:entication)?|authori[sz]ation|one[- ]time|2fa|mfa|otp|sms|backup|recovery|"
    r"two[- ]factor)\s+(?:code|pin|passcode|number)|otp|totp|2fa|cvv2?|cvc2?)"
    r"(?:\s+(?:is|was))?\s*[:=#]?\s*(?P<value>\d(?:[ -]?\d){2,9})(?!\d)"
)
_CODE_AFTER = re.compile(
    r"(?i)(?<![\w-])(?:G-)?(?P<value>\d{4,8}) is your (?:[\w-]+ ){0,4}?(?:code|otp|pin|passcode)"
)


def _said(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _SAID.finditer(text):
        base = m.start("value")
        words = [
            (base + w.start(), base + w.end(), w.group())
            for w in re.finditer(r"\S+", m.group("value"))
        ]
        first = words[0][2]
        if first.lower().strip(".!?\"'") in _NOT_SAID or not is_value(first.rstrip(".!?")):
            continue
        if first[0] in "\"'":  # quoted: to its closing quote, spaces and all
            out.append((base, value_end(text, base)))
            continue
        # speech recognition puts full stops inside a passphrase ("amber falcon. Copper,"), so the
        # value runs on past one, up to the clause's end: a comma, a joining word, or a new subject
        keep = next(
            (
                i
                for i, w in enumerate(words)
                if i
                and (
                    w[2].lower() in _SAID_STOP
                    or (words[i - 1][2][-1] in ".!?" and w[2].lower().strip("'\"") in _NEW_SENTENCE)
                )
            ),
            len(words),
        )
        end = words[keep - 1][1]
        while end > base + 1 and text[end - 1] in ".!?":
            end -= 1
        while tail := _SAID_TAIL.match(text, end):
            end = tail.end()
        out.append((base, end))
    return out


def password_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of passwords and PINs (kind "password") and one-time codes ("code")."""
    found: list[tuple[int, int, str]] = [(a, b, "password") for a, b in _said(text)]
    found += [(*m.span("value"), "password") for m in _PIN.finditer(text)]
    found += [(*m.span("value"), "code") for p in (_CODE, _CODE_AFTER) for m in p.finditer(text)]
    return found
