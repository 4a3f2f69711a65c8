"""``bench redact``'s outside corpus: secrets written by others, beside rules mnemo did not write.

Kingfisher (MongoDB's secret scanner) ships each of its own rules with positive examples that its
``rules check`` verifies: 2,033 examples of 1,055 rules in ``kingfisher-bin`` 1.112.0, the last
release that carries them (the 2.x releases run Betterleaks' rules, without examples). They are read
from the installed binary at run time (``kingfisher rules list --format json``), never copied into
mnemo. Each example is a line or a few as they occur in code and configuration
(``DEEPL_API_KEY=279a2e9d-…:fx``). Rules that are not ``visible`` (Kingfisher reports them only as
context for another rule: a host, a URL, a client id) and examples whose first capture is under
``MIN_SECRET`` characters are left out: they are not secrets.

The secret in an example is what Kingfisher itself takes for the secret of its rule's match
(``secret_parts``), by the rule's own marks: the capture named ``TOKEN``, else the first unnamed
capture (Kingfisher's docs: "the unnamed capture becomes {{ TOKEN }}; named captures are made
available as variables"), passing over captures that the rule names or comments as a user, a host or
an id (``(?# username )``); where the rule has only named captures, those not named as context.
Where that capture is a whole connection string or URL and the rule names its password capture
(``FTP_PASSWORD``, ``password``), or the capture holds a ``user:password@`` or a ``password=``, the
secret is that credential part: a host left readable is not a secret left. In a rule of several
unmarked captures (``.netrc``'s machine, login and password), the secret is the capture that the
text itself labels as the credential (after ``password``, ``secret``, ``key`` or ``token``, or in a
URL's password place); where none is labelled, the first. ``first_capture`` keeps the scoring
before this (the first capture, whatever it holds) so both figures are reported.

A rule whose name says that what it finds is an identifier (its last word "ID" or "Username" and no
"secret" in it, or a URL with no credential word in its name: "Azure Search URL") counts apart, as ``identifiers``:
reported, not counted as secrets missed or caught.

mnemo's token rules (``memorize.token_rules``) are Betterleaks', not Kingfisher's, so these
examples were written beside neither.
"""

from __future__ import annotations

import json
import re
import subprocess
import warnings

from bench.redact_corpus import Item

PACKAGE = "kingfisher-bin"
VERSION = "1.112.0"
MIN_SECRET = 8

# Hyperscan's POSIX classes, which Python's re lacks
_POSIX = {
    "[:alnum:]": "A-Za-z0-9",
    "[:alpha:]": "A-Za-z",
    "[:digit:]": "0-9",
    "[:xdigit:]": "0-9A-Fa-f",
    "[:upper:]": "A-Z",
    "[:lower:]": "a-z",
    "[:space:]": r"\s",
    "[:punct:]": r"!-/:-@\[-`{-~",
}
# a named capture that a rule keeps as context for its secret, not the secret itself
_CONTEXT_NAME = re.compile(
    r"(?i)(?:^|_)(?:id|name|user(?:name)?|host|endpoint|url|uri|scheme|port|reg(?:istry)?|region"
    r"|db|vhost|bind_dn|uuid|akid)$"
)
_CONTEXT_COMMENT = re.compile(r"(?i)\b(?:user(?:name)?|login|host(?:name)?|id)\b")
_PASSWORD_NAME = re.compile(r"(?i)pass(?:word)?$")
# the credential part of a whole connection string or URL
_URL_PASSWORD = re.compile(r"://[^\s/@:]*:(?P<part>[^\s/@]+(?:@[^\s/@]+)*)@")
_URL_KEY = re.compile(r"://(?P<part>[A-Za-z0-9_-]{16,})@")
_KEYED_PASSWORD = re.compile(r"(?i)(?:password|passwd|pwd)\s*=\s*(?P<part>[^;&\s\"']+)")
# what labels a capture as the credential, just before it
_LABEL = re.compile(
    r"(?i)(?:(?:pass(?:word|wd)?|pwd|secret|key|token)[\"']?(?:\s*(?:[:=]|=>)\s*|\s+)[\"']?"
    r"|://[^\s/@:]*:)$"
)
# a named capture that a rule names as its secret
_SECRET_NAME = re.compile(r"(?i)secret|pass|private")
_IDENTIFIER_RULE = re.compile(r"(?i)\b(?:id|username)$")
_URL_RULE = re.compile(r"(?i)\burl$")
_CREDENTIAL_WORD = re.compile(
    r"(?i)key|token|secret|password|credential|webhook|sas|sensitive|auth"
)


class OutsideUnavailable(RuntimeError):
    """The outside corpus's package is not installed (or is another version)."""


def install_hint() -> str:
    return f"pip install '{PACKAGE}=={VERSION}' (in mnemo's bench and test extras)"


def rules() -> list[dict]:
    """Kingfisher's rules with their examples, as the installed binary lists them."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(PACKAGE)
        import kingfisher
    except (PackageNotFoundError, ImportError):
        raise OutsideUnavailable(f"{PACKAGE} is not installed: {install_hint()}") from None
    if found != VERSION:
        raise OutsideUnavailable(
            f"{PACKAGE} {found} is installed; the outside corpus is {VERSION}'s: {install_hint()}"
        )
    listed = subprocess.run(
        [kingfisher.get_binary_path(), "rules", "list", "--format", "json", "--no-update-check"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(listed.stdout)


def _pattern(text: str) -> re.Pattern | None:
    for posix, plain in _POSIX.items():
        text = text.replace(posix, plain)
    try:
        with (
            warnings.catch_warnings()
        ):  # "possible nested set": Hyperscan's syntax, read as re does
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(text)
    except re.error:  # one rule of 1,055 uses a construct Python's re does not have
        return None


def _comments(source: str) -> dict[int, str]:
    """Capture number -> the ``(?# … )`` comment that follows it in the pattern's text (before the
    next capture opens): how a rule says what a capture holds."""
    out: dict[int, str] = {}
    i, n, opened, last_closed, stack, in_class = 0, len(source), 0, 0, [], False
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif source.startswith("(?#", i):
            end = source.find(")", i)
            if last_closed and last_closed not in out:
                out[last_closed] = source[i + 3 : end]
            i = end + 1
            continue
        elif c == "(":
            capturing = not source.startswith("(?", i) or source.startswith(("(?P<", "(?<"), i)
            capturing = capturing and not source.startswith(("(?<=", "(?<!"), i)
            if capturing:
                opened += 1
                last_closed = 0  # a comment after a new capture opens is not the old one's
            stack.append(opened if capturing else 0)
        elif c == ")" and stack:
            group = stack.pop()
            last_closed = group or last_closed
        i += 1
    return out


def secret_parts(pattern: re.Pattern, m: re.Match) -> tuple[str, ...]:
    """What Kingfisher takes for the secret of ``m`` (module doc): one text, or the several named
    captures that together are it."""
    names = {index: name for name, index in pattern.groupindex.items()}
    comments = _comments(pattern.pattern)
    matched = [i for i in range(1, pattern.groups + 1) if m.group(i)]

    def context(i: int) -> bool:
        return bool(
            (i in names and _CONTEXT_NAME.search(names[i]))
            or _CONTEXT_COMMENT.search(comments.get(i, ""))
        )

    token = pattern.groupindex.get("TOKEN")
    if token and m.group(token):
        passwords = [i for i in matched if i in names and _PASSWORD_NAME.search(names[i])]
        if passwords:  # a whole connection string: its password is the credential
            return tuple(m.group(i) for i in passwords)
        return _credential_part(m.group(token))
    secret_named = [i for i in matched if i in names and _SECRET_NAME.search(names[i])]
    if secret_named:
        return tuple(m.group(i) for i in secret_named)
    unnamed = [i for i in matched if i not in names and not context(i)]
    if len(unnamed) > 1 and not names and not comments:
        labelled = [i for i in unnamed if _LABEL.search(m.string[m.start() : m.start(i)])]
        if labelled:
            return (m.group(labelled[0]),)
    if unnamed:
        return _credential_part(m.group(unnamed[0]))
    named = [i for i in matched if not context(i)]
    if named:
        return tuple(m.group(i) for i in named)
    return _credential_part(m.group(0)) if not matched else (m.group(matched[0]),)


def _credential_part(capture: str) -> tuple[str, ...]:
    """A whole URL's or connection string's credential: the password in ``user:password@`` or
    after ``password=``, a token as a URL's user; else the capture itself."""
    for form in (_URL_PASSWORD, _KEYED_PASSWORD, _URL_KEY):
        if (found := form.search(capture)) is not None and len(found.group("part")) >= 4:
            return (found.group("part"),)
    return (capture,)


def first_capture(pattern: re.Pattern, m: re.Match) -> tuple[str, ...]:
    """The scoring before ``secret_parts``: the first capture, else the whole match."""
    return (m.group(1) if m.re.groups and m.group(1) else m.group(0),)


def is_identifier_rule(name: str) -> bool:
    """Whether a rule's name says it finds an identifier, not a secret (module doc)."""
    name = name.strip()
    return bool(
        (
            _IDENTIFIER_RULE.search(name) and "secret" not in name.lower()
        )  # Vault's "Secret ID" is one
        or (_URL_RULE.search(name) and not _CREDENTIAL_WORD.search(name))
    )


def items(scoring=secret_parts) -> tuple[list[Item], dict]:
    """The outside corpus's items (group "outside", or "identifier" for a rule whose name says it
    finds one; form: the rule id) and what it is made of. ``scoring``: ``secret_parts`` or, for the
    figure before it, ``first_capture``."""
    out: list[Item] = []
    listed = rules()
    examples = 0
    for rule in listed:
        if not rule.get("visible", True):
            continue
        pattern = _pattern(rule["pattern"])
        group = "identifier" if is_identifier_rule(rule["name"]) else "outside"
        for example in rule.get("examples") or ():
            examples += 1
            m = pattern.search(example) if pattern else None
            if m is None or pattern is None:
                continue
            if len(first_capture(pattern, m)[0].strip()) < MIN_SECRET:
                continue  # the same examples under either scoring: a short first capture is no secret
            secrets = tuple(s for s in scoring(pattern, m) if s.strip())
            out.append(Item(rule["id"], group, tuple(example.split("\n")), secrets))
    about = {
        "package": PACKAGE,
        "version": VERSION,
        "rules": len(listed),
        "examples": sum(len(r.get("examples") or ()) for r in listed),
        "visible_examples": examples,
        "items": len(out),
    }
    return out, about
