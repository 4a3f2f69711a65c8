"""Keys and tokens in text (the ``secrets`` kind of ``memorize.redact``): detect-secrets' patterns
and the formats it lacks, keys OCR read with digits for letters or in pieces, private key blocks,
passwords in URLs and bearer tokens; with the maintained token rules and credential keywords of
``memorize.token_rules``. Values assigned to a secret's name are ``memorize.redact_assignments``'.

Every rule runs in time linear in the text: the detect-secrets patterns that backtrack
quadratically on long runs are replaced by linear ones (``_QUADRATIC``).
"""

from __future__ import annotations

import re

from memorize.redact_forms import form_spans
from memorize.token_rules import keyword_spans, seed_phrase_spans, token_spans

# detect-secrets detectors left out: a public IP address is not a key; and those whose patterns
# backtrack quadratically on one long line (8 s for the npm one on 50,000 characters): their forms
# are caught by the linear rules below (_JWT, _MORE_SECRETS' npm and sk- keys) and by
# memorize.redact_assignments (_authToken)
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
_JWT = re.compile(r"(?<![A-Za-z0-9-])eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)?")
# private keys, the body with its header (detect-secrets matches the BEGIN line alone), dashes as
# OCR reads them; a block without its END runs to the end of the text, and over a screen's later
# lines (Redactor.lines)
_KEY_HEAD = r"BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?"
KEY_BLOCK = re.compile(
    r"(?<!-)-{0,5} ?" + _KEY_HEAD + r"[ -]{0,6}.*?(?:(?<!-)-{0,5} ?END (?:[A-Z0-9]+ ){0,3}"
    r"PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?|\Z)",
    re.S,
)
KEY_END = re.compile(r"END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?(?: ?-{1,5})?")
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
_BEARER = re.compile(r"(?i)(?<![\w-])bearer:?\s+(?P<value>[A-Za-z0-9._~+/-]+=*)")
# what OCR split off a bearer token ("…R-xf. NrcYdS6R9'"): pieces of token characters with a digit,
# or with a capital after a small letter, that are not a word
_BEARER_TAIL = re.compile(r"\s+(?=[A-Za-z._~+/-]*\d|[A-Z]*[a-z]+[A-Z])[A-Za-z0-9._~+/-]{4,}=*")


def secret_patterns() -> list[tuple[re.Pattern, bool]]:
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


def key_spans(text: str, patterns: list[tuple[re.Pattern, bool]]) -> list[tuple[int, int]]:
    """(start, end) of every key, token, private key block, URL password and bearer token in
    ``text``, by ``patterns`` (``secret_patterns()``) and this module's rules; they may overlap."""
    found: list[tuple[int, int]] = []
    views = [_translated_heads(text, table) for table in (_OCR_LOWER, _OCR_UPPER)]
    for view in dict.fromkeys((text, *views)):
        for pattern, value_group in patterns:
            found += [
                (start, _key_tail(text, end))
                for m in pattern.finditer(view)
                for start, end in [m.span(1 if value_group and m.group(1) else 0)]
            ]
    found += _split_keys(text, patterns)
    found += token_spans(text) + keyword_spans(text) + form_spans(text)
    found += seed_phrase_spans(text)
    found += [(m.start(), m.end()) for m in KEY_BLOCK.finditer(text)]
    found += [m.span("value") for m in _URL_PASSWORD.finditer(text)]
    found += [
        (m.start("value"), _bearer_end(text, m.end("value")))
        for m in _BEARER.finditer(text)
        if len(m.group("value")) >= 16 and re.search(r"\d", m.group("value"))
    ]
    return found
