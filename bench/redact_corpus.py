"""The corpus of ``mnemo bench redact``: secrets planted in the forms people meet them, and benign
text that looks like them, generated from templates and seeded random values (never real secrets).

Each secret form is a template and a value maker; the value is the exact substring that must not
survive. Keys have their services' real shapes (prefixes, lengths, alphabets), cards pass Luhn with
real issuers' prefixes, IBANs carry valid check digits (python-stdnum). Benign forms are what a
screen or a conversation holds that shares a secret's shape: hashes, UUIDs, versions, order and
tracking numbers, timestamps, masked fields, placeholders.
"""

from __future__ import annotations

import base64
import random
import string
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

ALNUM = string.ascii_letters + string.digits
WORDS = (
    "maple",
    "sunrise",
    "harbor",
    "violet",
    "granite",
    "pepper",
    "falcon",
    "orchid",
    "comet",
    "willow",
    "copper",
    "lantern",
    "meadow",
    "tundra",
    "saffron",
    "cobalt",
    "juniper",
    "pebble",
    "thistle",
    "ember",
)
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")


@dataclass(frozen=True)
class Item:
    form: str  # the template's name, e.g. "env AWS secret"
    group: str  # env, json, yaml, ini, cli, header, url, key-block, service-key, card, iban, code, said; or benign
    lines: tuple[str, ...]  # one line, or a screen's lines (a key block as OCR reads it)
    secrets: tuple[str, ...]  # exact substrings that must not survive; () for a benign item

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _password(rng: random.Random) -> str:
    return (
        rng.choice(WORDS).capitalize()
        + _s(rng, string.digits, 2)
        + rng.choice("!#%@$&*")
        + _s(rng, ALNUM, 5)
    )


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    from stdnum import luhn

    body = prefix + _s(rng, string.digits, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


_ISSUERS = (
    ("4", 16),
    ("4", 16),
    ("51", 16),
    ("55", 16),
    ("2221", 16),
    ("2720", 16),
    ("34", 15),
    ("37", 15),
    ("6011", 16),
    ("65", 16),
    ("3530", 16),
    ("36", 14),
    ("62", 19),
    ("4", 13),
)
_LAYOUT = {16: (4, 4, 4, 4), 15: (4, 6, 5), 14: (4, 6, 4), 19: (4, 4, 4, 4, 3), 13: (4, 4, 4, 1)}


def _card(rng: random.Random) -> str:
    prefix, length = rng.choice(_ISSUERS)
    return _luhn_complete(prefix, length, rng)


def _grouped(digits: str, sizes, sep: str) -> str:
    out, i = [], 0
    for n in sizes:
        out.append(digits[i : i + n])
        i += n
    if i < len(digits):
        out.append(digits[i:])
    return sep.join(out)


_IBAN_FORMATS = {
    "DE": "18n",
    "GB": "4a14n",
    "FR": "10n11c2n",
    "ES": "20n",
    "IT": "1a10n12c",
    "NL": "4a10n",
    "BE": "12n",
    "CH": "5n12c",
    "PL": "24n",
    "AT": "16n",
}


def _iban(rng: random.Random) -> str:
    """A checksum-valid IBAN of a real country's format, compact and upper case."""
    import re

    from stdnum import iban

    country = rng.choice(sorted(_IBAN_FORMATS))
    while (
        True
    ):  # some countries' account numbers carry their own check digits (BE, FR, IT, ES): draw again
        bban = ""
        for n, kind in re.findall(r"(\d+)([anc])", _IBAN_FORMATS[country]):
            alphabet = {
                "n": string.digits,
                "a": string.ascii_uppercase,
                "c": string.ascii_uppercase + string.digits,
            }[kind]
            bban += _s(rng, alphabet, int(n))
        number = country + iban.calc_check_digits(country + "00" + bban) + bban
        if iban.is_valid(number):
            return number


def _invalid_iban(rng: random.Random) -> str:
    """A valid IBAN with its check digits changed: the shape, not the checksum."""
    number = _iban(rng)
    return number[:2] + f"{(int(number[2:4]) + 1 + rng.randrange(90)) % 97 + 2:02d}" + number[4:]


def _jwt(rng: random.Random) -> str:
    def seg(obj: str) -> str:
        return base64.urlsafe_b64encode(obj.encode()).decode().rstrip("=")

    return (
        seg('{"alg":"HS256","typ":"JWT"}')
        + "."
        + seg(f'{{"sub":"{rng.randrange(10**9)}","exp":{rng.randrange(2**31)}}}')
        + "."
        + _s(rng, ALNUM + "-_", 43)
    )


B64 = ALNUM + "+/"
# service keys in their published shapes
KEYS: dict[str, Callable[[random.Random], str]] = {
    "AWS access key id": lambda r: "AKIA" + _s(r, string.ascii_uppercase + "234567", 16),
    "GitHub classic token": lambda r: "ghp_" + _s(r, ALNUM, 36),
    "GitHub fine-grained token": lambda r: (
        "github_pat_" + _s(r, ALNUM, 22) + "_" + _s(r, ALNUM, 59)
    ),
    "GitLab token": lambda r: "glpat-" + _s(r, ALNUM + "-_", 20),
    "Slack bot token": lambda r: (
        f"xoxb-{r.randrange(10**11, 10**12)}-{r.randrange(10**12, 10**13)}-" + _s(r, ALNUM, 24)
    ),
    "Slack user token": lambda r: (
        f"xoxp-{r.randrange(10**11, 10**12)}-{r.randrange(10**11, 10**12)}-"
        + _s(r, "0123456789abcdef", 32)
    ),
    "Stripe live key": lambda r: "sk_live_51" + _s(r, ALNUM, 97),
    "Stripe restricted key": lambda r: "rk_live_" + _s(r, ALNUM, 24),
    "OpenAI project key": lambda r: "sk-proj-" + _s(r, ALNUM + "-_", 120),
    "Anthropic key": lambda r: "sk-ant-api03-" + _s(r, ALNUM + "-_", 93) + "AA",
    "Google API key": lambda r: "AIza" + _s(r, ALNUM + "-_", 35),
    "Hugging Face token": lambda r: "hf_" + _s(r, ALNUM, 34),
    "npm token": lambda r: "npm_" + _s(r, ALNUM, 36),
    "SendGrid key": lambda r: "SG." + _s(r, ALNUM + "-_", 22) + "." + _s(r, ALNUM + "-_", 43),
    "PyPI token": lambda r: "pypi-AgEIcHlwaS5vcmc" + _s(r, ALNUM + "-_", 80),
    "Shopify token": lambda r: "shpat_" + _s(r, "0123456789abcdef", 32),
    "DigitalOcean token": lambda r: "dop_v1_" + _s(r, "0123456789abcdef", 64),
    "Google OAuth client secret": lambda r: "GOCSPX-" + _s(r, ALNUM + "-_", 28),
    "Vault token": lambda r: "hvs." + _s(r, ALNUM + "-_", 90),
    "Telegram bot token": lambda r: f"{r.randrange(10**8, 10**9)}:" + _s(r, ALNUM + "-_", 35),
    "Databricks token": lambda r: "dapi" + _s(r, "0123456789abcdef", 32),
    "JWT": _jwt,
}
KEY_SENTENCES = (
    "{v}",
    "I pasted {v} into the chat by mistake",
    "key is {v} for staging",
    "echo {v} | pbcopy",
    "new token: {v}",
)

# (form, group, template, value maker): {v} in the template is the secret
_Form = tuple[str, str, str, Callable[[random.Random], str]]
FORMS: list[_Form] = [
    ("env AWS secret", "env", "export AWS_SECRET_ACCESS_KEY={v}", lambda r: _s(r, B64, 40)),
    ("env DB_PASSWORD", "env", "DB_PASSWORD={v}", _password),
    ("env quoted token", "env", 'export API_TOKEN="{v}"', lambda r: _s(r, ALNUM, 32)),
    (
        "env Django SECRET_KEY",
        "env",
        "SECRET_KEY = '{v}'",
        lambda r: (
            "django-insecure-"
            + _s(r, string.ascii_lowercase + string.digits + "!@#$%^&*(-_=+)", 50)
        ),
    ),
    ("env dotted password", "env", "spring.datasource.password={v}", _password),
    (
        "json password with spaces",
        "json",
        '{{"username": "ana", "password": "{v}"}}',
        lambda r: " ".join(r.sample(WORDS, 3)),
    ),
    ("json client_secret", "json", '"client_secret": "{v}",', lambda r: _s(r, ALNUM + "-_", 40)),
    ("json apiKey", "json", '{{"apiKey":"{v}"}}', lambda r: _s(r, "0123456789abcdef", 32)),
    ("yaml password", "yaml", "  password: {v}", _password),
    ("yaml secret_key quoted", "yaml", 'secret_key: "{v}"', lambda r: _s(r, ALNUM, 40)),
    ("ini password", "ini", "password = {v}", _password),
    ("ini aws credentials", "ini", "aws_secret_access_key = {v}", lambda r: _s(r, B64, 40)),
    ("cli --password", "cli", "mysql -u root --password={v} shop", _password),
    ("cli --token space", "cli", "gh auth login --token {v}", lambda r: _s(r, ALNUM, 36)),
    ("cli curl -u", "cli", "curl -u admin:{v} https://api.example.com/v1/items", _password),
    (
        "header Basic",
        "header",
        "Authorization: Basic {v}",
        lambda r: base64.b64encode(f"ana:{_password(r)}".encode()).decode(),
    ),
    (
        "header Bearer opaque",
        "header",
        "Authorization: Bearer {v}",
        lambda r: _s(r, ALNUM, 8) + _s(r, string.digits, 2) + _s(r, ALNUM, 30),
    ),
    (
        "header bearer lowercase",
        "header",
        "curl -H 'authorization: bearer {v}'",
        lambda r: _s(r, ALNUM + "._-", 48) + "9",
    ),
    ("header X-API-Key", "header", "X-API-Key: {v}", lambda r: _s(r, ALNUM, 32)),
    (
        "header cookie session",
        "header",
        "Cookie: sessionid={v}; theme=dark",
        lambda r: _s(r, string.ascii_lowercase + string.digits, 32),
    ),
    (
        "url credentials",
        "url",
        "https://ana:{v}@git.example.com/team/repo.git",
        lambda r: _s(r, ALNUM, 14),
    ),
    ("url postgres", "url", "psql postgresql://app:{v}@db.internal:5432/prod", _password),
    ("url redis no user", "url", "REDIS_URL=redis://:{v}@cache:6379/0", _password),
    (
        "url query api_key",
        "url",
        "GET https://api.example.com/v2/search?q=boats&api_key={v}&page=2",
        lambda r: _s(r, ALNUM, 32),
    ),
    (
        "url query access_token",
        "url",
        "https://graph.example.com/me?access_token={v}",
        lambda r: _s(r, ALNUM, 60),
    ),
    ("npmrc authToken", "service-key", "//registry.npmjs.org/:_authToken={v}", KEYS["npm token"]),
    (
        "OTP verification",
        "code",
        "Your verification code is {v}",
        lambda r: _s(r, string.digits, 6),
    ),
    (
        "OTP after",
        "code",
        "G-{v} is your Google verification code.",
        lambda r: _s(r, string.digits, 6),
    ),
    ("OTP label", "code", "OTP: {v}", lambda r: _s(r, string.digits, 6)),
    (
        "2FA spaced",
        "code",
        "2FA code: {v}",
        lambda r: _s(r, string.digits, 3) + " " + _s(r, string.digits, 3),
    ),
    ("CVV", "code", "CVV {v}", lambda r: _s(r, string.digits, 3)),
    ("PIN typed", "code", "PIN: {v}", lambda r: _s(r, string.digits, 4)),
    ("PIN said", "code", "my PIN is {v}", lambda r: " ".join(_s(r, string.digits, 4))),
    ("login code said", "code", "the login code is {v}", lambda r: _s(r, string.digits, 6)),
    (
        "said password",
        "said",
        "my password is {v}",
        lambda r: r.choice(WORDS) + _s(r, string.digits, 3),
    ),
    (
        "said wifi password words",
        "said",
        "the wifi password is {v}",
        lambda r: " ".join(r.sample(WORDS, 3)),
    ),
    ("said password for", "said", "the password for the bank is {v}, don't tell anyone", _password),
    (
        "said passcode for",
        "said",
        "the passcode for the gate is {v}",
        lambda r: _s(r, string.digits, 4),
    ),
    (
        "said password's",
        "said",
        "the router password's {v}.",
        lambda r: r.choice(WORDS) + _s(r, string.digits, 2),
    ),
    (
        "typed password quoted spaces",
        "said",
        'password: "{v}"',
        lambda r: " ".join(r.sample(WORDS, 4)),
    ),
    (
        "passphrase single-quoted",
        "said",
        "passphrase: '{v}'",
        lambda r: " ".join(r.sample(WORDS, 2)),
    ),
]
CARD_FORMS: list[tuple[str, Callable[[str], str]]] = [
    ("card spaces", lambda d: _grouped(d, _LAYOUT[len(d)], " ")),
    ("card dashes", lambda d: _grouped(d, _LAYOUT[len(d)], "-")),
    ("card dots", lambda d: _grouped(d, _LAYOUT[len(d)], ".")),
    ("card run", lambda d: d),
    ("card digit by digit", lambda d: " ".join(d)),
    ("card in pairs", lambda d: _grouped(d, [2] * 10, " ")),
    ("card in words", lambda d: " ".join(DIGIT_WORDS[int(c)] for c in d)),
    ("card comma groups", lambda d: _grouped(d, _LAYOUT[len(d)], ", ")),
]
CARD_SENTENCES = ("card number {v}", "Pay with {v} exp 12/27", "my card is {v}", "{v}")
IBAN_FORMS: list[tuple[str, Callable[[str], str]]] = [
    ("IBAN spaced", lambda i: _grouped(i, [4] * 9, " ")),
    ("IBAN compact", lambda i: i),
    ("IBAN lowercase spaced", lambda i: _grouped(i, [4] * 9, " ").lower()),
    ("IBAN lowercase compact", lambda i: i.lower()),
]
IBAN_SENTENCES = ("IBAN: {v}", "please transfer to {v} by Friday", "{v} BIC COBADEFFXXX")
KEY_BLOCK_KINDS = (
    "OPENSSH PRIVATE KEY",
    "RSA PRIVATE KEY",
    "EC PRIVATE KEY",
    "PRIVATE KEY",
    "PGP PRIVATE KEY BLOCK",
)


def _planted(form: str, group: str, template: str, value: str) -> Item:
    """One line: ``template`` (``{{``, ``}}`` for braces) with the secret ``value`` for ``{v}``."""
    line = template.replace("{{", "{").replace("}}", "}").replace("{v}", value)
    return Item(form, group, (line,), (value,))


def _written(
    rng: random.Random,
    per_form: int,
    forms: Sequence[tuple[str, Callable[[str], str]]],
    group: str,
    sentences: tuple[str, ...],
    draw: Callable[[random.Random], str],
) -> list[Item]:
    """``per_form`` numbers drawn for each form, written its way, in ``sentences`` in turn."""
    return [
        _planted(form, group, sentences[k % len(sentences)], write(draw(rng)))
        for form, write in forms
        for k in range(per_form)
    ]


def secrets(rng: random.Random, per_form: int = 3) -> list[Item]:
    items = [
        _planted(form, group, template, make(rng))
        for form, group, template, make in FORMS
        for _ in range(per_form)
    ]
    items += [
        _planted(
            name, "service-key", KEY_SENTENCES[(k + len(name)) % len(KEY_SENTENCES)], make(rng)
        )
        for name, make in KEYS.items()
        for k in range(per_form)
    ]
    items += _written(rng, per_form, CARD_FORMS, "card", CARD_SENTENCES, _card)
    items += _written(rng, per_form, IBAN_FORMS, "iban", IBAN_SENTENCES, _iban)
    for kind in KEY_BLOCK_KINDS:
        body = [_s(rng, B64, 64) for _ in range(4)] + [_s(rng, B64, 20) + "=="]
        begin, end = f"-----BEGIN {kind}-----", f"-----END {kind}-----"
        items.append(
            Item(
                f"key block on one line ({kind})",
                "key-block",
                (" ".join([begin, *body, end]),),
                tuple(body),
            )
        )
        items.append(
            Item(f"key block over lines ({kind})", "key-block", (begin, *body, end), tuple(body))
        )
        items.append(
            Item(
                f"key block, no END in view ({kind})",
                "key-block",
                ("$ cat ~/.ssh/id_key", begin, *body[:3]),
                tuple(body[:3]),
            )
        )
    return items


def _hex(rng: random.Random, n: int) -> str:
    return _s(rng, "0123456789abcdef", n)


BENIGN: list[tuple[str, Callable[[random.Random], str]]] = [
    ("git commit hash", lambda r: f"commit {_hex(r, 40)}"),
    ("short hash", lambda r: f"[main {_hex(r, 7)}] fix the retry loop"),
    ("sha256 digest", lambda r: f"sha256:{_hex(r, 64)}"),
    ("md5 sum", lambda r: f"{_hex(r, 32)}  backup.tar.gz"),
    ("uuid", lambda r: f"request id {uuid.UUID(int=r.getrandbits(128), version=4)}"),
    ("trace id", lambda r: f"trace_id={_hex(r, 32)} span_id={_hex(r, 16)}"),
    (
        "version",
        lambda r: (
            f"Python {r.randrange(2, 4)}.{r.randrange(20)}.{r.randrange(20)} (main, Oct {r.randrange(1, 29)} 2026)"
        ),
    ),
    (
        "semver prerelease",
        lambda r: f"v{r.randrange(10)}.{r.randrange(30)}.{r.randrange(30)}-rc.{r.randrange(5)}",
    ),
    (
        "amazon order",
        lambda r: (
            f"Order #{r.randrange(100, 999)}-{r.randrange(10**6, 10**7)}-{r.randrange(10**6, 10**7)}"
        ),
    ),
    (
        "UPS tracking",
        lambda r: (
            f"Tracking 1Z{_s(r, ALNUM.upper()[:36], 6)}{r.randrange(10, 99)}{r.randrange(10**7, 10**8)}"
        ),
    ),
    (
        "USPS tracking",
        lambda r: "USPS " + _grouped("9400" + _s(r, string.digits, 18), [4] * 5, " "),
    ),
    ("FedEx tracking", lambda r: f"FedEx {_grouped(_s(r, string.digits, 12), [4, 4, 4], ' ')}"),
    ("invoice number", lambda r: f"Invoice INV-2026-{r.randrange(10**5, 10**6)}"),
    (
        "ISO timestamp",
        lambda r: (
            f"2026-{r.randrange(1, 13):02d}-{r.randrange(1, 29):02d}T{r.randrange(24):02d}:{r.randrange(60):02d}:{r.randrange(60):02d}Z"
        ),
    ),
    ("epoch millis", lambda r: f"ts={r.randrange(1_600_000_000_000, 1_900_000_000_000)}"),
    (
        "compact timestamp",
        lambda r: (
            f"build 2026{r.randrange(1, 13):02d}{r.randrange(1, 29):02d}{r.randrange(24):02d}{r.randrange(60):02d}{r.randrange(60):02d}"
        ),
    ),
    ("byte count", lambda r: f"Received {r.randrange(10**12, 10**16)} bytes"),
    ("masked password", lambda r: "Password: " + "*" * r.randrange(6, 14)),
    ("masked dots", lambda r: "password: " + "•" * r.randrange(6, 14)),
    ("masked card", lambda r: f"Visa ending in {r.randrange(1000, 9999)}"),
    ("masked card stars", lambda r: f"**** **** **** {r.randrange(1000, 9999)}"),
    (
        "env placeholder",
        lambda r: r.choice(
            (
                "DB_PASSWORD=${DB_PASSWORD}",
                "API_TOKEN=$API_TOKEN",
                "password: <your password>",
                "token: [hidden]",
                "SECRET_KEY = os.environ['SECRET_KEY']",
            )
        ),
    ),
    (
        "password prose",
        lambda r: r.choice(
            (
                "Forgot password?",
                "The password is incorrect",
                "Enter your password",
                "the password manager opened",
                "Password must be at least 12 characters",
                "my password was reset yesterday",
            )
        ),
    ),
    (
        "token words",
        lambda r: r.choice(
            (
                "max_tokens: 800",
                "token_type: bearer",
                "total_tokens = 1532",
                "tokenizer: cl100k_base",
                "the bearer of bad news",
            )
        ),
    ),
    (
        "status codes",
        lambda r: (
            r.choice(("error code 404", "status code 500", "zip code 94107", "area code 415"))
            + f" at {r.randrange(24)}:00"
        ),
    ),
    ("shell PWD", lambda r: f"PWD=/home/{r.choice(WORDS)}/projects"),
    (
        "IP and port",
        lambda r: (
            f"listening on {r.randrange(1, 255)}.{r.randrange(255)}.{r.randrange(255)}.{r.randrange(255)}:{r.randrange(1024, 65535)}"
        ),
    ),
    ("price", lambda r: f"Total: ${r.randrange(1, 9999)}.{r.randrange(100):02d}"),
    (
        "ISBN",
        lambda r: (
            f"ISBN 978-{r.randrange(10)}-{r.randrange(10**3, 10**4)}-{r.randrange(10**3, 10**4)}-{r.randrange(10)}"
        ),
    ),
    ("coordinates", lambda r: f"{r.uniform(-90, 90):.6f}, {r.uniform(-180, 180):.6f}"),
    (
        "public key",
        lambda r: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + _s(r, B64, 43) + " ana@laptop",
    ),
    (
        "public key block",
        lambda r: "-----BEGIN PUBLIC KEY----- MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8A" + _s(r, B64, 40),
    ),
    ("Stripe publishable key", lambda r: "pk_live_" + _s(r, ALNUM, 24)),
    ("AWS account id", lambda r: f"arn:aws:iam::{r.randrange(10**11, 10**12)}:role/deploy"),
    # an IBAN's shape with its checksum wrong and no IBAN label (after the label it is a misread IBAN, and taken)
    ("IBAN-shaped reference, bad checksum", lambda r: "reference " + _invalid_iban(r)),
    ("phone number", lambda r: f"call +1 415 {r.randrange(200, 999)} {r.randrange(1000, 9999)}"),
    (
        "date list",
        lambda r: (
            f"meetings on {r.randrange(1, 29)}, {r.randrange(1, 29)}, {r.randrange(1, 29)} and {r.randrange(1, 29)} March"
        ),
    ),
    ("score line", lambda r: "epoch " + " ".join(str(r.randrange(100)) for _ in range(8))),
    ("base64 image", lambda r: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + _s(r, B64, 60)),
]


def plain(
    rng: random.Random,
    forms: Sequence[tuple[str, Callable[[random.Random], str]]],
    group: str,
    per_form: int,
) -> list[Item]:
    """``per_form`` items of each of ``forms`` (a name and a maker of text with no secret in it)."""
    return [Item(form, group, (make(rng),), ()) for form, make in forms for _ in range(per_form)]


def benign(rng: random.Random, per_form: int = 4) -> list[Item]:
    return plain(rng, BENIGN, "benign", per_form)


def corpus(seed: int = 42, per_form: int = 3) -> tuple[list[Item], list[Item]]:
    """(secret items, benign items), the same for the same seed."""
    rng = random.Random(seed)
    return secrets(rng, per_form), benign(rng, per_form + 1)
