"""Token and key formats from a maintained rule set, and the credentials a keyword or a flag names.

mnemo's own rules (``memorize.redact``) were written beside their own corpus. For the formats of
keys and tokens, which services add and change every month, mnemo uses a maintained rule set:
Betterleaks' rules (the gitleaks lineage, some 460 services, each rule with its own entropy floor
and allow-lists), compiled and run by Kingfisher's SDK (``kingfisher-secret-scanner``, pinned; a
Rust engine that scans at well under a millisecond a kilobyte). The rules are read once a process,
on the first text that needs them, from a compiled copy in ``$MNEMO_CACHE/kingfisher-rules``.

``keyword_spans`` adds what scanners only do for a service they know: a value that a credential
keyword or a command-line flag names, whatever the service ("scaleway token 3f9c27ab-…",
``-Password VMware1!``, ``wechat.key = e4a17…``, ``TOLGEE_PAT=tgpat_…``), with or without ``=`` or
``:``; the line formats of credential files (``.pgpass``; ``.netrc``, ``.my.cnf``, ``.pypirc``,
AWS credentials and kubeconfig name theirs by keyword; ``.git-credentials``, ``.npmrc`` and docker's
``config.json`` fall to the URL-password and assignment rules too: ``tests/test_credential_files.py``
tries each whole); and a wallet's recovery phrase (``seed_phrase_spans``). The value must look like
a secret (``secret_like``: long enough, and of mixed kinds of characters or high entropy), so "the
key to the house" or "token ring" stays readable.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache


@lru_cache(maxsize=1)
def _scanner():
    from kingfisher_sdk import Rules, Scanner

    from perception.weights import cache_root

    # the rules compile in about 3 s; compiled once into mnemo's own cache folder, a process loads
    # them in 0.3 s. base64=False: findings inside decoded base64 have no place in the text to redact
    cache = cache_root() / "kingfisher-rules"
    cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    return Scanner(Rules(confidence="low", cache_dir=cache), base64=False)


def token_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each secret value Betterleaks' rules find in ``text`` (the secret itself,
    not the name or keyword around it)."""
    data = text.encode("utf-8", "surrogatepass")
    findings = _scanner().scan(data)
    if not findings:
        return []
    # the engine counts bytes, the text characters: one table for all findings (linear in the text)
    if len(data) == len(text):
        char_at = None
    else:
        char_at = [0] * (len(data) + 1)
        at = 0
        for i, ch in enumerate(text):
            n = len(ch.encode("utf-8", "surrogatepass"))
            for b in range(at, at + n):
                char_at[b] = i
            at += n
        char_at[at] = len(text)
    out = []
    for f in findings:
        start, end = f.location["start_offset"], f.location["end_offset"]
        secret = f.secret.encode("utf-8", "surrogatepass") if f.secret else b""
        found = data.find(secret, start, end) if secret else -1
        if found >= 0:
            start, end = found, found + len(secret)
        out.append((start, end) if char_at is None else (char_at[start], char_at[end]))
    return out


# a credential's name as a word or as the last part of an identifier (DB_PASSWORD, apiKey,
# wechat.key, TOLGEE_PAT), then what may stand between it and the value
_KEYWORD = re.compile(
    r"(?i)(?:(?<=[\w.-])[_.-]|(?<![\w])|(?<=[a-z0-9])(?=(?-i:[A-Z]))"
    # a compound: secretkey, seckey, authtoken, cpassword
    r"|(?<=[a-z])(?=(?:key|token|secret|password)(?![a-z])))"
    r"(?P<name>pass(?:word|wd|phrase|code)?|pwd|secret|token|api[_-]?key|key|pat|auth|credentials?"
    r"|private[_-]?key|access[_-]?key|client[_-]?secret|certificate|bearer|hec)"
    r"(?![a-z])[\w.-]{0,12}?(?: \d{1,2})?"  # a suffix: _id, 1, .value, " 2" (Unseal Key 2)
    # a subscript's closing quote and bracket: api_key['api-secret-key'] = …
    # a value on the next line of YAML or code ("access_token:\n    'ya29…'")
    r"\\?[\"']?\]?\s{0,3}(?:[:=]{1,2}>?|=>|\s)[ \t]{0,3}(?:\n[ \t]{0,12})?\\?(?P<quote>[\"'`]?)"
    r"(?P<value>[^\s\"'`,;]{6,4000})"
)
_CALL_VALUE = re.compile(r"[\w.]+[(\[]")
_UUID_VALUE = re.compile(r"[0-9A-Za-z]{8}(?:-[0-9A-Za-z]{4}){3}-[0-9A-Za-z]{12}")
_PASSWORD_NAME = re.compile(r"(?i)pass(?:word|wd|phrase|code)?|pwd")
_NETRC_LOGIN = re.compile(r"(?i)\blogin\s+\S+\s+$")
# a name whose value is on the next line: after ":" or "=" ("access_token:\n  'ya29…'"), or after a
# label's line of words alone ("API Secret\n…"); not after a line that only ends with the name
# ("# host:port:db:user:password\n…"), nor where the next line is a setting of its own (.my.cnf's
# "password=\nhost=db…": no value, the client asks for one)
_LABEL_LINE = re.compile(r"[\w .-]{0,40}")
# (a name, ":" or "=", and something after it on the line: a base64 value's "=" ends its line)
SETTING = re.compile(r"[A-Za-z_][\w.-]{0,60}[ \t]*[:=](?=[ \t]*[^\s:=])")
# a service's token that the rule set does not know: a short lower-case prefix, "_" or "-", and a
# long random body ("jina_c1758c6f…", "org_9ce0e9…", "secret-test-IJ7z…"); not a publishable key
# (pk_live_…, pub-…), which is meant to be seen
_PREFIXED = re.compile(
    r"(?<![\w.-])(?!pk[_-]|pub)[A-Za-z][A-Za-z0-9]{1,15}(?:[._-][A-Za-z0-9]{1,15}){0,3}[._-]"
    r"(?P<body>[A-Za-z0-9]{16,300}(?:[_-]+[A-Za-z0-9]+)*={0,2})(?![\w+/=.-])"
)
_HEX = re.compile(r"[0-9a-fA-F]{32,}")
# a password in code and commands: PowerShell's SecureString and credential, SQL's IDENTIFIED BY,
# schtasks' /rp, and an XML element named for a password (<password>…</password>, unattend.xml's
# <AdministratorPassword><Value>…</Value>)
_IN_CODE = re.compile(
    r"(?i)(?:ConvertTo-SecureString\s+(?:-String\s+)?|NetworkCredential\]?::new\(\s*[\"'][^\"']*[\"']\s*,\s*"
    r"|NetworkCredential\(\s*[\"'][^\"']*[\"']\s*,\s*|IDENTIFIED\s+BY\s+)[\"'](?P<value>[^\"'\s]{4,200})[\"']"
    r"|(?<![\w-])/rp\s+(?P<rp>[^\s\"']{4,200})"
    r"|<(?P<tag>\w*password\w*)>\s*(?:<value>)?(?P<xml>[^<\s]{4,200})\s*<"
)
# a .pgpass line: host:port:database:user:password
_PGPASS = re.compile(r"(?m)^[^\s:]+:(?:\d{1,5}|\*):[^\s:]+:[^\s:]+:(?P<value>\S{4,200})$")
_BASIC = re.compile(r"(?<![\w-])(?i:basic)\s+(?P<value>[A-Za-z0-9+/]{12,}={0,2})(?![\w+/=])")
_URL_TOKEN = re.compile(r"://(?P<value>[A-Za-z0-9_-]{16,200}):?@")
_FLAG = re.compile(
    r"(?i)(?<![\w-])(?:--?(?:password|passwd|pass|pwd|token|secret|api-?key|auth-token|key)"
    r"|-p)(?:=|\s+)[\"']?(?P<value>[^\s\"']{4,200})"
    r"|(?<![\w-])-p(?P<attached>[^\s\"'-][^\s\"']{3,199})"  # mysql -pSECRET
)


def entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())


def secret_like(value: str, flagged: bool = False) -> bool:
    """Whether ``value`` reads as a secret rather than a word: at least 8 characters (4 after a
    password flag) of letters with digits or symbols, or 16 and more of high entropy."""
    if value.lower() in {"true", "false", "null", "none", "required", "optional", "<redacted>"}:
        return False
    # a path (PWD=/home/ana), an address, a placeholder (${TOKEN}, %s, <your-key>), a mask (****)
    if re.match(r"(?:[/~.]*/|[a-z]+://|[$%<{*])", value) or set(value) <= set("*x•#."):
        return False
    kinds = sum(bool(re.search(p, value)) for p in (r"[a-z]", r"[A-Z]", r"\d", r"[^A-Za-z0-9]"))
    if flagged and len(value) >= 4 and kinds >= 2:
        return True
    if len(value) >= 8 and re.search(r"\d", value) and re.search(r"[A-Za-z]", value):
        return kinds >= 2 and entropy(value) >= 2.5
    return len(value) >= 16 and entropy(value) >= 3.5


SEED_WORDS = 12  # the shortest BIP-39 recovery phrase
_WORD = re.compile(r"[A-Za-z]+")
_BETWEEN_SEED = re.compile(
    r"[\s,;.:)(\d-]*"
)  # spaces, line breaks, numbering ("1. abandon 2. ability")


@lru_cache(maxsize=1)
def _bip39() -> frozenset[str]:
    from mnemonic import Mnemonic

    return frozenset(Mnemonic("english").wordlist)


def seed_phrase_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each wallet recovery phrase: ``SEED_WORDS`` or more words of BIP-39's English
    list in a row (its 2,048 words hold no "the", "a", "and", "of" or "is", so ordinary prose does
    not run twelve of them together)."""
    words = _bip39()
    out: list[tuple[int, int]] = []
    run: list[tuple[int, int]] = []
    last_end = 0
    for m in _WORD.finditer(text):
        joined = _BETWEEN_SEED.fullmatch(text[last_end : m.start()]) is not None
        if m.group().lower() in words and (not run or joined):
            run.append(m.span())
        else:
            if len(run) >= SEED_WORDS:
                out.append((run[0][0], run[-1][1]))
            run = [m.span()] if m.group().lower() in words else []
        last_end = m.end()
    if len(run) >= SEED_WORDS:
        out.append((run[0][0], run[-1][1]))
    return out


def keyword_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each secret-like value a credential keyword or flag names (module doc), and
    of the forms no rule set names a service for: a prefixed random token, HTTP Basic credentials and
    a token as a URL's user."""
    out = [
        m.span("value")
        for m in _PGPASS.finditer(text)
        if secret_like(m.group("value"), flagged=True)
    ]
    for m in _IN_CODE.finditer(text):
        group = next(g for g in ("value", "rp", "xml") if m.group(g))
        if secret_like(m.group(group), flagged=True):
            out.append(m.span(group))
    out += [
        m.span("value")
        for p in (_BASIC, _URL_TOKEN)
        for m in p.finditer(text)
        if secret_like(m.group("value"))
    ]
    out += [
        m.span()
        for m in _PREFIXED.finditer(text)
        if secret_like(m.group("body"))
        # 32 random hex digits reach 3.4 and more; other alphabets 3.5
        and entropy(m.group("body")) >= (3.0 if _HEX.fullmatch(m.group("body")) else 3.5)
        and re.search(r"\d", m.group("body"))
        and re.search(r"[A-Za-z]", m.group("body"))
    ]
    for m in _FLAG.finditer(text):
        group = "value" if m.group("value") else "attached"
        if secret_like(m.group(group).rstrip(".,;)"), flagged=True):
            out.append(m.span(group))
    pos = 0
    # one search after another, the next from the value of one not taken: "PublicKey = [Server's
    # public key]\nPresharedKey = …" must still read the second name with its own value
    while (k := _KEYWORD.search(text, pos)) is not None:
        pos = k.start("value")
        if (
            text[max(0, k.start("name") - 7) : k.start("name")]
            .lower()
            .rstrip(" _-")
            .endswith("public")
        ):
            continue  # a public key is meant to be seen
        value = k.group("value").rstrip(".,;)")
        if _CALL_VALUE.match(value):
            continue  # code that makes the credential: TSC.PersonalAccessTokenAuth(…
        # a password's quoted literal (Gradle's ``password "…"``), a line that is only a password
        # and its value (.netrc's), and a UUID after a credential's name are secrets at any entropy
        password = _PASSWORD_NAME.fullmatch(k.group("name")) is not None
        look = max(0, k.start("name") - 200)  # bounded: a long line read once, not once a name
        before = text[text.rfind("\n", look, k.start("name")) + 1 or look : k.start("name")]
        gap = text[k.end("name") : k.start("value")]
        if "\n" in gap and (
            SETTING.match(text, k.start("value"))
            or not (re.search("[:=]", gap) or _LABEL_LINE.fullmatch(before))
        ):
            continue
        flagged = password and (
            bool(k.group("quote")) or not before.strip() or _NETRC_LOGIN.search(before) is not None
        )
        if secret_like(value, flagged=flagged) or _UUID_VALUE.fullmatch(value):
            out.append((k.start("value"), k.start("value") + len(value)))
            pos = k.end()
    return out
