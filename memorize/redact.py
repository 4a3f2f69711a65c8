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
backtrack quadratically on long runs are replaced by linear ones (``_QUADRATIC``).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from functools import cached_property

from memorize.token_rules import keyword_spans, seed_phrase_spans, token_spans

KINDS = ("secrets", "cards", "ibans", "passwords", "emails", "phones")
DEFAULT_KINDS = ("secrets", "cards", "ibans", "passwords")

# detect-secrets detectors left out: a public IP address is not a key; and those whose patterns
# backtrack quadratically on one long line (8 s for the npm one on 50,000 characters): their forms
# are caught by the linear rules below (_JWT, _MORE_SECRETS' npm and sk- keys, _assignments' _authToken)
_NOT_SECRETS = {"IPPublicDetector"}
_QUADRATIC = {"JwtTokenDetector", "NpmDetector", "OpenAIDetector"}
# detectors whose first group is the secret value itself (the rest is its context, kept readable)
_VALUE_GROUP = {
    "BasicAuthDetector",
    "AWSKeyDetector",
    "CloudantDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "SoftlayerDetector",
}

# keys and tokens detect-secrets 1.5 does not know, or knows only by a prefix (Stripe keys are now
# ~100 characters: its pattern took the first 32); each starts only where its run starts
_MORE_SECRETS = tuple(
    re.compile(p)
    for p in (
        r"(?<![\w-])sk-(?:proj-|svcacct-|admin-|ant-[a-z]+\d*-)?[A-Za-z0-9_-]{32,}",  # OpenAI, Anthropic
        r"(?<!\w)github_pat_[A-Za-z0-9_]{40,}",
        r"(?<![\w-])AIza[0-9A-Za-z_-]{35}(?![\w-])",  # GitHub, Google
        r"(?<!\w)hf_[A-Za-z0-9]{30,}(?!\w)",
        r"(?<!\w)npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",  # Hugging Face, npm
        r"(?<!\w)[rs]k_(?:live|test)_[0-9a-zA-Z]{20,}",
        r"(?<!\w)shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",  # Stripe, Shopify
        r"(?<!\w)dop_v1_[a-f0-9]{64}",
        r"(?<![\w-])(?i:GOCSPX)-[A-Za-z0-9_-]{28}",
        r"(?<![\w.])hvs\.[A-Za-z0-9_-]{24,}",
        r"(?<!\w)dapi[a-f0-9]{32}(?!\w)",
        r"(?<![\w-])AGE-SECRET-KEY-1[0-9A-Z]{58}",
        r"(?<![\w-])xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]+",
    )
)
# a JWT, signature included (detect-secrets' lazy match stopped before it), starting only where a
# token starts so a long run of "eyJ" is read once
_JWT = re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?")
# private keys, the body with its header (detect-secrets matches the BEGIN line alone), dashes as
# OCR reads them; a block without its END runs to the end of the text, and over a screen's later
# lines (Redactor.lines)
_KEY_HEAD = r"BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?"
_KEY_BLOCK = re.compile(
    r"(?<!-)-{0,5} ?" + _KEY_HEAD + r"[ -]{0,6}.*?(?:(?<!-)-{0,5} ?END (?:[A-Z0-9]+ ){0,3}"
    r"PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?|\Z)",
    re.S,
)
_KEY_END = re.compile(r"END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?")
# a password in a URL: detect-secrets' BasicAuth wants a user and no "!", "$", "&", "@" … in the
# password; here it runs to the last "@" before the host
# (OCR's word spacing may put a space after the colon: "postgresql://app: Saffron07&V@db")
_URL_PASSWORD = re.compile(
    r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/@:]*: ?(?P<value>[^\s/]+)@"
)
# OCR reads 0 for O and o, 1 for I and l, 5 for S in a key's prefix ("x0xp-…", "G0CSPX-…"): key patterns
# also run on the text with those digits read as letters in each token's prefix (the same length, so
# spans carry over; a key's body keeps its digits: "x0xp-1954…" must stay "xoxp-1954…")
_TOKEN_HEAD = re.compile(r"(?<![\w-])[A-Za-z0-9]{2,6}(?=[-_])")  # the prefix, to its "-" or "_"
_OCR_LOWER = str.maketrans("015", "ols")
_OCR_UPPER = str.maketrans("015", "OIS")
_SPLIT_KEY = re.compile(
    r"(?i)(?<![\w-])(?:sk-|xox[a-z]-|gh[pousr]_|github_pat_|glpat-|hf_|npm_|aiza|gocspx-|akia)"
    r"[\w-]*(?: [\w-]+){1,16}"
)
# what OCR splits off the end of a long key ("…HNGj2q-I RCP saNtE FBA A | pbcopy"): short pieces of
# key characters that are not a lower-case word
_KEY_TAIL = re.compile(r" (?P<piece>[A-Za-z0-9_-]{1,8})(?=\s|$)")
_BEARER = re.compile(r"(?i)(?<![\w-])bearer\s+(?P<value>[A-Za-z0-9._~+/-]+=*)")
# what OCR split off a bearer token ("…R-xf. NrcYdS6R9'"): pieces of token characters with a digit,
# or with a capital after a small letter, that are not a word
_BEARER_TAIL = re.compile(r"\s+(?=[A-Za-z._~+/-]*\d|[A-Z]*[a-z]+[A-Z])[A-Za-z0-9._~+/-]{4,}=*")
# name = value: a name (env, JSON, YAML, INI, query string, header, --flag) followed by its
# separator; _assignments decides from the name's words whether its value is a secret
_ASSIGN = re.compile(
    r"(?<![\w.-])(?P<flag>--?)?(?P<key>[A-Za-z_][\w.-]*)(?P<q>[\"']?)"
    r"(?:[ \t]*(?P<sep>:=|=>|=|:)[ \t]*|(?P<space>[ \t]+))"
)
# the rest of a quoted value whose opening quote OCR did not read: words up to a closing quote
# that ends the line or a clause
_LOST_QUOTE = re.compile(r"(?: [^\s\"'=:,;]+){1,6}[\"'](?=[\s,;}]|$)")
_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SECRET_NAMES = {
    "password",
    "passwd",
    "pwd",
    "pass",
    "passphrase",
    "passcode",
    "secret",
    "token",
    "apikey",
    "credential",
    "credentials",
    "authorization",
    "auth",
    "sessionid",
    "csrftoken",
}
_PASSWORD_NAMES = {"password", "passwd", "pwd", "pass", "passphrase", "passcode"}
_KEY_OWNERS = {
    "api",
    "access",
    "secret",
    "private",
    "auth",
    "signing",
    "encryption",
    "master",
    "account",
    "license",
    "client",
    "app",
    "service",
    "subscription",
    "consumer",
    "admin",
    "webhook",
}
_SCHEMES = {"basic", "bearer", "token", "digest", "negotiate", "ntlm", "apikey", "sso-key"}
_NOT_VALUES = {
    "true",
    "false",
    "null",
    "none",
    "nil",
    "yes",
    "no",
    "required",
    "optional",
    "hidden",
    "redacted",
    "masked",
    "unset",
    "empty",
    "n/a",
    "na",
    "undefined",
    "string",
    "str",
    "bool",
    "int",
}
_PLACEHOLDER = re.compile(
    r"[*•●·xX#_.\-]{3,}|\$\{.*|\$[A-Z_][A-Z0-9_]*|\{\{.*|<[^>]*>?|%\(.*\)s|\[[^\]]*\]?"
)
_CODE_VALUE = re.compile(
    r"[\w.]+[(\[].*"
)  # os.environ["KEY"], getpass(): code that reads the secret
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
# starts only where a run of an address's characters starts: "\b" let it start again after every "."
_EMAIL = re.compile(r"(?<![\w.%+-])[\w.%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b")

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


def _secret_patterns() -> list[tuple[re.Pattern, bool]]:
    """detect-secrets' patterns, each with whether its first group is the value, and ours."""
    import importlib
    import pkgutil

    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    out: list[tuple[re.Pattern, bool]] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"detect_secrets.plugins.{info.name}")
        for name in dir(module):
            cls = getattr(module, name)
            if (
                isinstance(cls, type)
                and issubclass(cls, RegexBasedDetector)
                and cls.__module__ == module.__name__
                and name not in _NOT_SECRETS | _QUADRATIC
            ):
                try:
                    out.extend((p, name in _VALUE_GROUP and p.groups > 0) for p in cls().denylist)
                except TypeError:  # abstract
                    continue
    return out + [(p, False) for p in (*_MORE_SECRETS, _JWT)]


def _issuer_prefixes() -> dict[int, tuple[str, ...]]:
    by_length: dict[int, tuple[str, ...]] = {}
    for prefixes, lengths in _ISSUERS:
        for n in lengths:
            by_length[n] = by_length.get(n, ()) + prefixes
    return by_length


_ISSUER_PREFIXES = _issuer_prefixes()


def _cards(text: str) -> list[tuple[int, int]]:
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


def _ibans(text: str) -> list[tuple[int, int]]:
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


_SEPARATED = re.compile(r"[^a-z0-9]+")


def _secret_name(key: str) -> bool:
    """Whether a name holds a secret by its last word(s): DB_PASSWORD, apiKey, X-Auth-Token,
    aws_secret_access_key, secret_key_base; not max_tokens, token_type, primary_key, PWD=/home/…"""
    words = [w.lower() for w in _KEY_WORDS.findall(key)]
    if not words:
        return False
    # the last word between separators too: OCR mixes case inside a word (DB_PASSwORD), which the
    # camelCase split cuts in two
    if (
        words[-1] in _SECRET_NAMES
        or key.lower() in _SECRET_NAMES
        or _SEPARATED.split(key.lower())[-1] in _SECRET_NAMES
    ):
        return True
    if words[-1] == "key" and len(words) > 1 and words[-2] in _KEY_OWNERS:
        return True
    return words[-3:] == ["secret", "key", "base"]


def _value_end(text: str, start: int, query: bool = False) -> int:
    """Where the value starting at ``start`` ends: its closing quote (backslash escapes skipped),
    else the end of the token (in a query string, at the next "&")."""
    if start < len(text) and text[start] in "\"'`":
        quote, i, stop = text[start], start + 1, min(len(text), start + 1000)
        while i < stop and text[i] not in (quote, "\n"):
            i += 2 if text[i] == "\\" else 1
        if i < stop and text[i] == quote:
            return i + 1
        if (
            i < len(text) and text[i] == "\n" or i == len(text)
        ):  # no closing quote: the value was wrapped
            return i
    i = start
    stops = ",;&\"'}]" if query else ",;\"'}]"
    while i < len(text) and not text[i].isspace() and text[i] not in stops:
        i += 1
    while i > start and text[i - 1] in ".:)":  # a sentence's end, not the value's
        i -= 1
    return i


def _is_value(value: str) -> bool:
    """A value worth hiding: not a mask, a placeholder, a reference or a flag word."""
    bare = value.strip("\"'`")
    return (
        bool(bare)
        and bare.lower() not in _NOT_VALUES
        and not _PLACEHOLDER.fullmatch(bare)
        and not (bare == value and _CODE_VALUE.fullmatch(value))
    )


def _split_keys(text: str, patterns) -> list[tuple[int, int]]:
    """Keys OCR read in pieces ("sk-ant-api03-Tb NJ kh bi j Kul J-vXNPbav2sGOgP8jg…"): a key's prefix
    followed by pieces, one of them long, that a key pattern matches once the spaces are taken out."""
    out = []
    for m in _SPLIT_KEY.finditer(text):
        if max(len(p) for p in m.group().split(" ")) < 16:
            continue  # "sk-learn is a library": words, not a key's pieces
        joined = m.group().replace(" ", "")
        best = max(
            (k.end() for pattern, _ in patterns for k in [pattern.match(joined)] if k), default=0
        )
        if best >= 20:
            kept, end = 0, m.start()
            while kept < best:  # back from the joined string to the text
                kept += text[end] != " "
                end += 1
            out.append((m.start(), _key_tail(text, end)))
    return out


def _translated_heads(text: str, table: dict[int, int]) -> str:
    """``text`` with each token's head (``_TOKEN_HEAD``) mapped through ``table``."""
    return _TOKEN_HEAD.sub(lambda m: m.group().translate(table), text)


def _key_tail(text: str, end: int) -> int:
    """The end of a service key found ending at ``end``, with what OCR split off its end."""
    while (m := _KEY_TAIL.match(text, end)) and not (
        m.group("piece").isalpha() and m.group("piece").islower()
    ):
        end = m.end()
    return end


def _bearer_end(text: str, end: int) -> int:
    while tail := _BEARER_TAIL.match(text, end):
        end = tail.end()
    return end


def _assignments(text: str) -> list[tuple[int, int, str]]:
    """Values given to a secret's name: ``DB_PASSWORD=…``, ``"password": "two words"``,
    ``secret_key: …``, ``--token …``, ``?api_key=…``, ``Authorization: Basic …`` (the credential,
    not its scheme), ``-u user:password``; a password's kind is "password", the rest "secret"."""
    out, pos = [], 0
    # one search after another, each after the value before: "password:password:…" reads each value once
    while (m := _ASSIGN.search(text, pos)) is not None:
        pos = m.end()
        key, flag = m.group("key"), m.group("flag")
        if m.group("space") is not None and not flag:
            continue  # "password hunter2" in prose is not an assignment; "--password hunter2" is
        start = m.end()
        if flag and key in ("u", "user") and m.group("space") is not None:
            end = _value_end(text, start)
            colon = text.find(":", start, end)
            if (
                colon < 0
                and text.startswith(": ", end)
                and end + 2 < len(text)
                and not text[end + 2].isspace()
            ):
                colon, end = (
                    end + 1,
                    _value_end(text, end + 2),
                )  # "-u admin: Lantern19": OCR's space after the colon
            if colon > 0 and _is_value(text[colon + 1 : end]):
                out.append((colon + 1, end, "password"))
            pos = max(pos, end)
            continue
        if not _secret_name(key):
            continue
        if m.group("q") and m.group("sep") is None:
            continue  # "password" followed by a space in a sentence
        if text.startswith("-", start) and (flag or m.group("space") is not None):
            continue  # the next flag
        query = m.start() > 0 and text[m.start() - 1] in "?&"
        end = _value_end(text, start, query)
        value = text[start:end]
        if value.lower() in _SCHEMES:  # Authorization: Basic dXNlcjpwYXNz
            rest = start + len(value)
            while rest < len(text) and text[rest] in " \t":
                rest += 1
            start, end = rest, _value_end(text, rest)
            value = text[start:end]
        if (
            m.group("sep")
            and not value.startswith(('"', "'"))
            and (close := _LOST_QUOTE.match(text, end))
        ):
            end = (
                close.end()
            )  # 'password: maple comet tundra"': OCR lost the opening quote of words
            value = text[start:end]
        pos = max(pos, end)
        if key in ("PWD", "pwd") and value.startswith(("/", "~")):
            continue  # the shell's working directory
        if _is_value(value):
            words = _KEY_WORDS.findall(key)
            out.append(
                (start, end, "password" if words[-1].lower() in _PASSWORD_NAMES else "secret")
            )
    return out


def _said(text: str) -> list[tuple[int, int]]:
    out = []
    for m in _SAID.finditer(text):
        base = m.start("value")
        words = [
            (base + w.start(), base + w.end(), w.group())
            for w in re.finditer(r"\S+", m.group("value"))
        ]
        first = words[0][2]
        if first.lower().strip(".!?\"'") in _NOT_SAID or not _is_value(first.rstrip(".!?")):
            continue
        if first[0] in "\"'":  # quoted: to its closing quote, spaces and all
            out.append((base, _value_end(text, base)))
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
        return _secret_patterns()

    def spans(self, text: str) -> list[tuple[int, int, str]]:
        """(start, end, kind) of what must go, without overlaps, in order."""
        found: list[tuple[int, int, str]] = []
        if "secrets" in self.kinds:
            views = [_translated_heads(text, table) for table in (_OCR_LOWER, _OCR_UPPER)]
            for view in dict.fromkeys((text, *views)):
                for pattern, value_group in self._secrets:
                    found += [
                        (start, _key_tail(text, end), "secret")
                        for m in pattern.finditer(view)
                        for start, end in [m.span(1 if value_group and m.group(1) else 0)]
                    ]
            found += [(a, b, "secret") for a, b in _split_keys(text, self._secrets)]
            found += [(a, b, "secret") for a, b in token_spans(text) + keyword_spans(text)]
            found += [(a, b, "secret") for a, b in seed_phrase_spans(text)]
            found += [(m.start(), m.end(), "secret") for m in _KEY_BLOCK.finditer(text)]
            found += [(*m.span("value"), "secret") for m in _URL_PASSWORD.finditer(text)]
            found += [
                (m.start("value"), _bearer_end(text, m.end("value")), "secret")
                for m in _BEARER.finditer(text)
                if len(m.group("value")) >= 16 and re.search(r"\d", m.group("value"))
            ]
        if "secrets" in self.kinds or "passwords" in self.kinds:
            found += [s for s in _assignments(text) if f"{s[2]}s" in self.kinds]
        if "cards" in self.kinds:
            found += [(a, b, "card") for a, b in _cards(text)]
        if "ibans" in self.kinds:
            found += [(a, b, "iban") for a, b in _ibans(text)]
        if "passwords" in self.kinds:
            found += [(a, b, "password") for a, b in _said(text)]
            found += [(*m.span("value"), "password") for m in _PIN.finditer(text)]
            found += [
                (*m.span("value"), "code") for p in (_CODE, _CODE_AFTER) for m in p.finditer(text)
            ]
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
        out, inside = [], False
        for line in lines:
            if inside and "secrets" in self.kinds:
                end = _KEY_END.search(line)
                if end is None:
                    out.append("[secret]")
                    continue
                inside = False
                line = "[secret]" + line[end.end() :]
            redacted = self.text(line, counts)
            if "secrets" in self.kinds:
                begins = [m for m in _KEY_BLOCK.finditer(line)]
                inside = bool(begins) and not _KEY_END.search(line, begins[-1].start())
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
