"""Card numbers and IBANs in text (the ``cards`` and ``ibans`` kinds of ``memorize.redact``).

Cards: 13 to 19 digits that begin as an issuer's numbers do, pass the Luhn check and are written as
people write or read them (4-4-4-4 with spaces, dashes or dots, 4-6-5, one run, or one, two or three
digits at a time, in figures or in words), found inside longer runs too. IBANs: in any case, whose
checksum and country format hold (python-stdnum), or that follow an "IBAN" label. Checksums and
issuers' prefixes keep ordinary numbers (order numbers, timestamps, byte counts) from being taken
for either.
"""

from __future__ import annotations

import re

# cards: digit groups in figures or words, one token each; a group is cut where two tokens are
# further apart than a separator (" ", "-", ".", ", ")
_DIGIT_TOKEN = re.compile(
    r"(?i)(?<!\w)(?:\d+|zero|oh|one|two|three|four|five|six|seven|eight|nine)(?!\w)"
)
_DIGIT_WORDS = {
    "zero": "0",
    "oh": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
}
_GAP = re.compile(r"(?:[ .-]|, ?| - )")
# how card numbers are written in groups of four or more (Visa/Mastercard 4-4-4-4, Amex 4-6-5,
# Diners 4-6-4, 19-digit cards 4-4-4-4-3); groups of one to three digits (read aloud) may end short
_CARD_GROUPS = {
    (4, 4, 4, 4),
    (4, 6, 5),
    (4, 6, 4),
    (4, 4, 4, 4, 3),
    (4, 4, 4, 1),
    (4, 4, 4, 3),
    (4, 4, 4, 2),
}
# issuers' prefixes and lengths (ISO/IEC 7812 as the networks publish them; python-stdnum checks
# the Luhn digit only): an order number or a timestamp that passes Luhn rarely begins as these do
_ISSUERS = (
    (("4",), range(13, 20)),
    (tuple(str(n) for n in range(51, 56)), (16,)),
    (tuple(str(n) for n in range(2221, 2721)), (16,)),
    (("34", "37"), (15,)),
    (("300", "301", "302", "303", "304", "305", "36", "38", "39"), range(14, 20)),
    (tuple(str(n) for n in range(3528, 3590)), range(16, 20)),
    (("6011", "64", "65"), range(16, 20)),
    (("62",), range(16, 20)),
    (("60", "81", "82", "508"), (16,)),  # UnionPay, RuPay
    (
        ("5018", "5020", "5038", "5893", "6304", "6759", "6761", "6762", "6763"),
        range(13, 20),
    ),  # Maestro
    (("2200", "2201", "2202", "2203", "2204"), range(16, 20)),
)
_UNITS = re.compile(
    r"\s?(?:bytes?|[KMGT]i?B|B|ms|µs|us|ns|s|sec|seconds|ticks|rows|records|tokens|px)\b"
)
_IBAN = re.compile(r"(?i)(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
_IBAN_LABEL = re.compile(r"(?i)\biban(?:\s+(?:no|number|nr))?\.?\s*[:#]?\s*$")
_AFTER_IBAN = {
    "bic",
    "swift",
    "eur",
    "usd",
    "gbp",
    "chf",
    "and",
    "the",
    "to",
    "for",
    "by",
    "on",
    "at",
    "pay",
    "ref",
}


def _issuer_prefixes() -> dict[int, tuple[str, ...]]:
    by_length: dict[int, tuple[str, ...]] = {}
    for prefixes, lengths in _ISSUERS:
        for n in lengths:
            by_length[n] = by_length.get(n, ()) + prefixes
    return by_length


_ISSUER_PREFIXES = _issuer_prefixes()


def cards(text: str) -> list[tuple[int, int]]:
    """Card numbers: in each run of digit groups, the longest stretch grouped as cards are that
    passes the checks (so "ID 2024 4111 1111 1111 1111" or "… 12/27" still give the card).
    Linear: every start looks at most 19 groups ahead."""
    from stdnum import luhn

    runs: list[list[tuple[int, int, str]]] = []
    for m in _DIGIT_TOKEN.finditer(text):
        token = m.group()
        digits = token if token[0].isdigit() else _DIGIT_WORDS[token.lower()]
        if runs and _GAP.fullmatch(text, runs[-1][-1][1], m.start()):
            runs[-1].append((m.start(), m.end(), digits))
        else:
            runs.append([(m.start(), m.end(), digits)])
    out = []
    for run in runs:
        if sum(len(d) for *_, d in run) < 13:
            continue
        i = 0
        while i < len(run):
            sizes: tuple[int, ...] = ()
            best, digits = None, ""
            # groups of one to three digits (read aloud) all alike but the last, which may be shorter
            first, uniform = len(run[i][2]), len(run[i][2]) <= 3
            for j in range(
                i, len(run) if run[i][2][0] in "2345689" else i
            ):  # no issuer begins with 0, 1 or 7
                size = len(run[j][2])
                digits += run[j][2]
                sizes += (size,)
                if len(digits) > 19:
                    break
                grouped = j == i or (uniform and size <= first) or sizes in _CARD_GROUPS
                uniform = uniform and size == first
                if (
                    len(digits) >= 13
                    and grouped
                    and digits.startswith(_ISSUER_PREFIXES.get(len(digits), ("-",)))
                    and len(set(digits)) > 1
                    and luhn.is_valid(digits)
                    and not (j == i and _UNITS.match(text, run[j][1]))
                ):  # 4503599627370496 bytes
                    best = j
            if best is None:
                i += 1
            else:
                out.append((run[i][0], run[best][1]))
                i = best + 1
    return out


def ibans(text: str) -> list[tuple[int, int]]:
    """IBANs whose checksum and country format hold, in any case: the longest valid prefix of each
    candidate (an IBAN followed by "BIC COBADEFF" or "EUR" is still found). After an "IBAN" label
    the checksum is not asked for: OCR reads O for 0 and I for 1 in a real one (bench faults'
    planted screens: ``CH80 3449 3E7O IIZG ...``), and a labelled IBAN that fails it is a misread one."""
    from stdnum import iban

    out = []
    for m in _IBAN.finditer(text):
        for end in range(m.end(), m.start() + 14, -1):
            if text[end - 1] != " " and iban.is_valid(text[m.start() : end].upper()):
                out.append((m.start(), end))
                break
        else:
            if _IBAN_LABEL.search(text[max(0, m.start() - 16) : m.start()]):
                out.append((m.start(), m.start() + _labelled_iban_length(m.group())))
    return out


def _labelled_iban_length(candidate: str) -> int:
    """How much of a labelled candidate is the IBAN: its first group, then groups of up to four
    characters or groups holding a digit (the greedy pattern also takes "please pay" or "BIC")."""
    groups = candidate.split(" ")
    end = len(groups[0])
    for group in groups[1:]:
        if (
            not group
            or group.lower() in _AFTER_IBAN
            or (len(group) > 4 and not any(c.isdigit() for c in group))
        ):
            break
        end += 1 + len(group)
    return end
