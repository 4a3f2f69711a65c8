"""``bench redact``'s look-alikes: ordinary text that looks like a secret, as people meet it.

Hashes, ids and numbers are long, random-looking runs of letters and digits, and sentences about
passwords name a password without holding one. None of these may be redacted: a lifelog that
blanks every commit, parcel and version number cannot be searched for them. Each form is generated
(``per_form`` of each, from a seeded random source) inside the sentence or line it comes in.
"""

from __future__ import annotations

import base64
import random
import string
import uuid

from bench.redact_corpus import Item, _hex, _s, plain


def _isbn13(rng: random.Random) -> str:
    digits = [9, 7, 8] + [rng.randrange(10) for _ in range(9)]
    check = (10 - sum(d * (3 if i % 2 else 1) for i, d in enumerate(digits)) % 10) % 10
    d = "".join(map(str, digits + [check]))
    return f"{d[:3]}-{d[3]}-{d[4:7]}-{d[7:12]}-{d[12]}"


def _png(rng: random.Random) -> str:
    header = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    return base64.b64encode(header + bytes(rng.randrange(256) for _ in range(60))).decode()


FORMS = (
    ("git SHA", lambda r: f"Merge commit {_hex(r, 40)} into main"),
    ("short SHA", lambda r: f"fixed in {_hex(r, 7)}, see the changelog"),
    ("UUID", lambda r: f"request {uuid.UUID(int=r.getrandbits(128), version=4)} failed with 502"),
    ("image digest", lambda r: f"docker pull nginx@sha256:{_hex(r, 64)}"),
    (
        "UPS tracking",
        lambda r: (
            f"Your parcel 1Z{_s(r, string.ascii_uppercase + string.digits, 16)} is out for delivery"
        ),
    ),
    (
        "order number",
        lambda r: (
            f"Order #{r.randrange(100, 999)}-{r.randrange(10**6, 10**7)}-{r.randrange(10**6, 10**7)} has shipped"
        ),
    ),
    ("ISBN", lambda r: f"ISBN {_isbn13(r)}, paperback, 320 pages"),
    ("MAC address", lambda r: "Wi-Fi adapter " + ":".join(_hex(r, 2) for _ in range(6))),
    (
        "IPv6 address",
        lambda r: "inet6 fe80::" + ":".join(_hex(r, 4) for _ in range(4)) + "/64 scope link",
    ),
    (
        "version string",
        lambda r: (
            f"Updated to {r.randrange(1, 30)}.{r.randrange(40)}.{r.randrange(20)}-rc.{r.randrange(9)}+build.{r.randrange(10**4)}"
        ),
    ),
    ("base64 image", lambda r: f'<img src="data:image/png;base64,{_png(r)}">'),
    (
        "URL with a query",
        lambda r: (
            "https://shop.example.com/search?q=running+shoes&size=42&utm_source=newsletter"
            f"&utm_medium=email&utm_campaign=spring_{r.randrange(2020, 2030)}&gclid={_s(r, string.ascii_letters + string.digits, 40)}"
        ),
    ),
    (
        "sentence about a password",
        lambda r: r.choice(
            (
                "I need to reset my password before Friday.",
                "The password must be at least 12 characters long.",
                "She forgot her password again and called the help desk.",
                "Never share your token with anyone, not even support.",
                "The API key rotation is scheduled for Monday morning.",
                "Use a passphrase instead of a password for the vault.",
            )
        ),
    ),
)


def items(seed: int = 7, per_form: int = 8) -> list[Item]:
    """``per_form`` look-alikes of each form, the same for the same seed."""
    return plain(random.Random(seed), FORMS, "look-alike", per_form)
