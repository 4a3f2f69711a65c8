"""``bench redact``'s outside corpus: secrets written by others, beside rules mnemo did not write.

Kingfisher (MongoDB's secret scanner) ships each of its own rules with positive examples that its
``rules check`` verifies: 2,033 examples of 1,055 rules in ``kingfisher-bin`` 1.112.0, the last
release that carries them (the 2.x releases run Betterleaks' rules, without examples). They are read
from the installed binary at run time (``kingfisher rules list --format json``), never copied into
mnemo. Each example is a line or a few as they occur in code and configuration
(``DEEPL_API_KEY=279a2e9d-…:fx``); the secret in it is what the rule's pattern captures (its first
group, else the whole match). Rules that are not ``visible`` (Kingfisher reports them only as
context for another rule: a host, a URL, a client id) and captures under ``MIN_SECRET`` characters
are left out: they are not secrets.

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


def items() -> tuple[list[Item], dict]:
    """The outside corpus's items (group "outside", form: the rule id) and what it is made of."""
    out: list[Item] = []
    listed = rules()
    examples = 0
    for rule in listed:
        if not rule.get("visible", True):
            continue
        pattern = _pattern(rule["pattern"])
        for example in rule.get("examples") or ():
            examples += 1
            m = pattern.search(example) if pattern else None
            if m is None:
                continue
            secret = m.group(1) if m.re.groups and m.group(1) else m.group(0)
            if len(secret.strip()) < MIN_SECRET:
                continue
            out.append(Item(rule["id"], "outside", tuple(example.split("\n")), (secret,)))
    about = {
        "package": PACKAGE,
        "version": VERSION,
        "rules": len(listed),
        "examples": sum(len(r.get("examples") or ()) for r in listed),
        "visible_examples": examples,
        "items": len(out),
    }
    return out, about
