"""Values assigned to a secret's name (the ``secrets`` and ``passwords`` kinds of
``memorize.redact``): ``DB_PASSWORD=…``, ``"client_secret": "…"``, ``--token …``, ``?api_key=…``,
``Authorization: Basic …``, ``-u user:password``, in env, JSON, YAML, INI, command lines, query
strings and HTTP headers. Which names hold a secret is read from the name's words; masked values
(``********``), placeholders (``${DB_PASSWORD}``) and code that reads a secret are left as they are.
``value_end`` and ``is_value`` are shared with the spoken passwords of
``memorize.redact_passwords``.
"""

from __future__ import annotations

import re

# name = value: a name (env, JSON, YAML, INI, query string, header, --flag) followed by its
# separator; assignments decides from the name's words whether its value is a secret
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

_SEPARATED = re.compile(r"[^a-z0-9]+")


def secret_name(key: str) -> bool:
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


def value_end(text: str, start: int, query: bool = False) -> int:
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


def is_value(value: str) -> bool:
    """A value worth hiding: not a mask, a placeholder, a reference or a flag word."""
    bare = value.strip("\"'`")
    return (
        any(c.isalnum() for c in bare)  # "()" of "credentials = () =>" is code, not a value
        and bare.lower() not in _NOT_VALUES
        and not _PLACEHOLDER.fullmatch(bare)
        and not (bare == value and _CODE_VALUE.fullmatch(value))
    )


def assignments(text: str) -> list[tuple[int, int, str]]:
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
            end = value_end(text, start)
            colon = text.find(":", start, end)
            if (
                colon < 0
                and text.startswith(": ", end)
                and end + 2 < len(text)
                and not text[end + 2].isspace()
            ):
                colon, end = (
                    end + 1,
                    value_end(text, end + 2),
                )  # "-u admin: Lantern19": OCR's space after the colon
            if colon > 0 and is_value(text[colon + 1 : end]):
                out.append((colon + 1, end, "password"))
            pos = max(pos, end)
            continue
        if not secret_name(key):
            continue
        if m.group("q") and m.group("sep") is None:
            continue  # "password" followed by a space in a sentence
        if text.startswith("-", start) and (flag or m.group("space") is not None):
            continue  # the next flag
        query = m.start() > 0 and text[m.start() - 1] in "?&"
        end = value_end(text, start, query)
        value = text[start:end]
        if value.lower() in _SCHEMES or (  # Authorization: Basic dXNlcjpwYXNz, SSWS 00QC…
            key.lower() == "authorization" and value.isalpha() and len(value) <= 12
        ):
            rest = start + len(value)
            while rest < len(text) and text[rest] in " \t":
                rest += 1
            start, end = rest, value_end(text, rest)
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
        if is_value(value):
            words = _KEY_WORDS.findall(key)
            out.append(
                (start, end, "password" if words[-1].lower() in _PASSWORD_NAMES else "secret")
            )
    return out
