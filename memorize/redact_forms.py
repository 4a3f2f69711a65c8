"""Credentials in forms that no keyword right before them names (the ``secrets`` kind of
``memorize.redact``), found by where they stand rather than by a service's format:

- the password or key among a login or connect call's string arguments (``…_connect("host",
  "user", "pass")``, ``…Auth('name', 'token')``, a JSON-RPC ``"method": "…login…"``'s params),
  ``net use … /user:name password``, ``-u user -p password``;
- the default of an environment lookup of a credential's name (``getenv("API_KEY", "…")``);
- an XML element named for a credential (``<consumerSecret>…</consumerSecret>``);
- network devices' numbered secrets (``key 7 0458…``, ``snmp-server community …``);
- a password's hash in crypt(3) or a cracking tool's form (``$6$salt$…``, ``$krb5asrep$23$…``);
- base64 of a private key block or of a JSON web token (``LS0tLS1CRUdJTi…``, ``ZXlK…``);
- a token after a short service prefix, or a UUID after one (``sk_…-…``, ``pat-na2-…``);
- an Ansible Vault's encrypted body after its ``$ANSIBLE_VAULT;`` header (``vault_body``);
- a URL that is itself a capability: a webhook's, or one signed with a ``sig=`` (the whole URL);
- a long random token standing alone, of letters and digits mixed as no word or name mixes them;
- a credential's label on one screen line and its value alone on the next (``label_value``).

Every rule starts only where its run starts or is bounded, so each takes time linear in the text.
"""

from __future__ import annotations

import re

from memorize.redact_assignments import is_value, secret_name
from memorize.token_rules import SETTING, entropy, secret_like

# a login or connect call: which string argument is the secret depends on the verb
_CALL = re.compile(
    r"(?:(?<![A-Za-z])|(?<=[a-z0-9])(?=[A-Z]))"  # a word's start, or a camelCase part's
    r"(?P<verb>(?i:connect|log[io]n|bind|auth(?:enticate)?|credentials?))"
    r"(?P<rest>\w{0,30})\s*\(\s*(?P<args>[^()\n]{1,400})\)"
)
_RPC = re.compile(
    r"(?i)\"method\"\s*:\s*\"(?P<verb>[^\"\n]{0,60}?(?:log[io]n|auth)[^\"\n]{0,60})\""
    r"\s*,\s*\"params\"\s*:\s*\[(?P<args>[^\[\]]{1,400})\]"
)
_ARG = re.compile(
    r"\s*(?:(?P<q>[\"'])(?P<lit>(?:\\.|(?!(?P=q))[^\\\n]){0,300})(?P=q)|[^,]*)\s*(?:,|$)"
)
_PLACEHOLDER_VAR = re.compile(r"%[A-Za-z_]\w*%|\$\w+|\$\{.*\}|#\{.*\}")
_NET_USE = re.compile(
    r"(?i)\bnet\s+use\b[^\n]{0,200}?\s/u(?:ser)?:\S+\s+(?P<value>[^\s/*\"'][^\s\"']{3,200})"
)
_USER_PASS = re.compile(
    r"(?<![\w-])-(?:u|U|-user(?:name)?)[\s=]+[^\s-]\S{0,100}\s+-(?:p|-password)[\s=]+[\"']?"
    r"(?P<value>[^\s\"'-][^\s\"']{2,200})"
)
_ENV_DEFAULT = re.compile(
    r"(?i)(?<![\w.])(?:os\.)?(?:getenv|environ\.get|env|ENV\.fetch|config)\s*\(\s*[\"'](?P<name>[\w.-]{1,80})"
    r"[\"']\s*,\s*[\"'](?P<value>[^\"'\n]{4,4000})[\"']"
)
_XML = re.compile(
    r"(?i)<(?P<tag>[\w:.-]{0,40}?(?:pass(?:word|wd)?|secret|token|key|credentials?)[\w.-]{0,20})>"
    r"\s*(?:<value>)?(?P<value>[^<\s]{4,4000})\s*<"
)
_NOT_SECRET_TAG = re.compile(
    r"(?i)public|(?:id|name|type|url|uri|file|path|size|length|usage|format)$"
)
_NUMBERED = re.compile(
    r"(?i)(?<![\w-])(?:snmp-server\s+community|(?:password|secret|key|community)\s+[0-7])"
    r"\s+(?P<value>[^\s\"']{4,200})"
)
_HASH = re.compile(
    r"(?<![\w$])\$(?:\d{1,2}[a-z]?|y|gy|apr1|md5|sha\d{0,3}|pbkdf2(?:-sha\d+)?|argon2(?:id|i|d)"
    r"|scrypt|krb5[a-z]{0,8}|dcc2?|mscash2?)\$(?P<rest>[^\s\"']{8,4000})"
)
_ENCODED = re.compile(r"(?<![A-Za-z0-9+/])(?:LS0tLS1CRUdJTi|ZXlK)[A-Za-z0-9+/]{36,8000}={0,2}")
_VAULT = re.compile(r"\$ANSIBLE_VAULT;[^\n]{0,100}?(?P<body>(?:\s+[0-9a-fA-F]{16,200})+)")
_VAULT_LINE = re.compile(r"\s*[0-9a-fA-F]{2,200}\s*")
_UUID = r"[0-9A-Za-z]{8}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{4}-[0-9A-Za-z]{12}"
_PREFIXED_UUID = re.compile(
    r"(?<![\w.-])(?P<prefix>[A-Za-z]{2,8})(?:[_-][A-Za-z0-9]{1,4})?[_-]" + _UUID + r"(?![\w-])"
)
# what names a record rather than a key: a UUID after these is an id ("pvc-…", "req_…")
_ID_PREFIXES = {
    "id", "uuid", "guid", "req", "request", "order", "user", "usr", "session", "sess", "job",
    "task", "run", "trace", "span", "msg", "message", "event", "evt", "obj", "object", "file",
    "img", "image", "doc", "pvc", "vol", "volume", "pod", "node", "ns", "tx", "txn", "acct",
    "account", "item", "build", "test", "device", "dev", "app", "tenant", "org", "project",
    "proj", "sub", "pub", "ref", "row", "record", "client", "instance", "vm", "disk", "snap",
}  # fmt: skip
_CAPABILITY = re.compile(
    r"(?i)/(?:webhooks?|webhookb2|hooks)/(?=[^\s\"'<>]{16})(?=[^\s\"'<>]*\d)"
    r"|[?&](?:sig|signature|x-amz-signature|x-goog-signature|code)=(?=[A-Za-z0-9%+/=_-]{16})"
)
_URL_STOP = " \t\n\"'<>`()[]{},;"
# a token standing alone: not inside a URL, a query, a path or an assignment (rules above and
# token_rules read those with their names)
# and not base64 with "+" or "/" (a public key's or a certificate's body, an image), nor a
# publishable key (pk_…, pub-…)
_BARE = re.compile(
    r"(?<![\w+/=.~:-])(?!pk[_-]|pub)[A-Za-z0-9][A-Za-z0-9_~.-]{30,300}={0,2}(?![\w+/=~.:-])"
)
# what stands before a long run that is public: a key's type, a digest's, an encoding's
_PUBLIC_BEFORE = re.compile(
    r"(?i)(?:ssh-[\w@.-]+|ecdsa-[\w-]+|base64,|sha\d*[-:]|md5[-:]|(?:PUBLIC KEY|CERTIFICATE)-*"
    r"|public\w*[\"']?\s*[>:=]\s*[\"']?)\s?$"
)
_CLASS = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    "A" * 26 + "a" * 26 + "0" * 10,
)
_LABEL = re.compile(
    r"(?i)^\s*[\w .-]{0,40}?(?:key|secret|token|password|passwd|pwd|passphrase|credentials?)"
    r"\s*[:=]?\s*$"
)
_VALUE_LINE = re.compile(r"^\s*[\"'`]?(?P<value>[^\s\"'`]{8,4000}?)[\"'`]?[,;]?\s*$")


def _args(text: str) -> list[tuple[int, int] | None]:
    """Each comma-separated argument of ``text``: the span of its string literal's content, or None
    for what is not a literal (a variable, a number, a call)."""
    out: list[tuple[int, int] | None] = []
    pos = 0
    while pos < len(text) and (m := _ARG.match(text, pos)) is not None and m.end() > pos:
        out.append(m.span("lit") if m.group("q") else None)
        pos = m.end()
    return out


def _call_spans(text: str) -> list[tuple[int, int]]:
    """The secret among a login or connect call's string arguments: a connect's third (host, user,
    password), a login's, bind's or auth's second (user, password), or its only one where the verb
    names a key or token (``login_with_api_key("…")``)."""
    out = []
    for m in (*_CALL.finditer(text), *_RPC.finditer(text)):
        args = _args(m.group("args"))
        verb = m.group("verb").lower() + (m.groupdict().get("rest") or "").lower()
        if "connect" in verb:
            index = 2
        elif len(args) == 1 and ("key" in verb or "token" in verb):
            index = 0
        else:
            index = 1
        span = args[index] if len(args) > index else None
        if span is not None and all(args[: index + 1]):
            a, b = span
            value = m.group("args")[a:b]
            if is_value(value) and not _PLACEHOLDER_VAR.fullmatch(value) and len(value) >= 4:
                out.append((m.start("args") + a, m.start("args") + b))
    return out


def _url_bounds(text: str, at: int) -> tuple[int, int]:
    """The URL around ``at``: from its scheme (or, with none, the start of the word: a bare query
    string) to the first character a URL does not hold."""
    start = at
    while start > 0 and at - start < 2000 and text[start - 1] not in _URL_STOP:
        start -= 1
    end = at
    while end < len(text) and end - at < 4000 and text[end] not in _URL_STOP:
        end += 1
    scheme = text.find("://", start, at)
    if scheme >= 0:  # "WEBHOOK_URL=https://…": the URL starts at its scheme
        start = scheme
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "+.-"):
            start -= 1
    return start, end


def _capabilities(text: str) -> list[tuple[int, int]]:
    """Webhook URLs and signed URLs or query strings, whole: the URL is the credential."""
    out: list[tuple[int, int]] = []
    for m in _CAPABILITY.finditer(text):
        if out and m.start() < out[-1][1]:
            continue  # inside the URL already taken
        start, end = _url_bounds(text, m.start())
        if m.group().startswith("/") and "://" not in text[start : m.start()]:
            continue  # ".git/hooks/pre-commit": a path, not a webhook
        out.append((start, end))
    return out


def _prefixed_uuids(text: str) -> list[tuple[int, int]]:
    return [
        m.span()
        for m in _PREFIXED_UUID.finditer(text)
        if m.group("prefix").lower() not in _ID_PREFIXES
    ]


def _random_token(token: str) -> bool:
    """Whether ``token`` reads as random: letters and digits (both cases, or not hex) with high
    entropy, switching between upper case, lower case and digits as often as random characters do
    (a third of the time and more), where a name or a word does it once a word."""
    core = "".join(c for c in token if c.isalnum())
    classes = core.translate(_CLASS)
    if len(core) < 28 or classes.count("0") < 2 or len(set(classes)) < 2:
        return False
    if "A" not in classes or "a" not in classes:  # one case: hex is a digest, not a key
        if re.fullmatch(r"[0-9a-fA-F]+", core) or entropy(core) < 4.2:
            return False
    switches = sum(a != b for a, b in zip(classes, classes[1:]))
    return switches >= 0.3 * len(core) and entropy(core) >= 4.0


def _bare_tokens(text: str) -> list[tuple[int, int]]:
    return [
        m.span()
        for m in _BARE.finditer(text)
        if _random_token(m.group())
        and not _PUBLIC_BEFORE.search(text[max(0, m.start() - 24) : m.start()])
    ]


def vault_body(previous: str, line: str, inside: bool) -> bool:
    """Whether screen ``line`` is a line of an Ansible Vault's hex body: after the header line, or
    after a body line (``inside``)."""
    return (inside or previous.lstrip().startswith("$ANSIBLE_VAULT;")) and bool(
        _VAULT_LINE.fullmatch(line)
    )


def form_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each credential this module's forms find (module doc); they may overlap."""
    out = _call_spans(text) + _capabilities(text) + _prefixed_uuids(text) + _bare_tokens(text)
    for m in (*_NET_USE.finditer(text), *_USER_PASS.finditer(text)):
        value = m.group("value")
        if is_value(value) and not _PLACEHOLDER_VAR.fullmatch(value):
            out.append(m.span("value"))
    for m in _ENV_DEFAULT.finditer(text):
        if secret_name(m.group("name")) and is_value(m.group("value")):
            out.append(m.span("value"))
    for m in _XML.finditer(text):
        if not _NOT_SECRET_TAG.search(m.group("tag")) and secret_like(
            m.group("value"), flagged=True
        ):
            out.append(m.span("value"))
    for m in _NUMBERED.finditer(text):
        if secret_like(m.group("value"), flagged=True):
            out.append(m.span("value"))
    for m in _HASH.finditer(text):
        rest = m.group("rest")  # a salt and a hash ("abc$…"), or a hash of letters and digits
        if "$" in rest or (
            re.search(r"\d", rest) and re.search(r"[A-Za-z]", rest) and entropy(rest) >= 3.0
        ):
            out.append(m.span())
    out += [m.span() for m in _ENCODED.finditer(text)]
    out += [m.span("body") for m in _VAULT.finditer(text)]
    return out


def label_value(label: str, line: str) -> tuple[int, int] | None:
    """The span of ``line``'s value where ``label`` (the line before it on a screen) is only a
    credential's name ("API Secret", "access_token:") and ``line`` only a secret-like value."""
    if len(label) > 60 or not _LABEL.match(label):
        return None
    m = _VALUE_LINE.match(line)
    if m is None or not secret_like(m.group("value")) or SETTING.match(m.group("value")):
        return None  # not a value, or a setting of its own (.my.cnf's "password=\nhost=db…")
    return m.span("value")
