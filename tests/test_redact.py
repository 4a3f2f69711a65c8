"""Secrets and numbers kept out of memory: planted in speech and on screen, gone from every file of
the store; ordinary text of the project's own fixtures left as it is."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from factories import video_source
from memorize.identity import MatchPolicy
from memorize.memorizer import Memorizer
from memorize.redact import DEFAULT_KINDS, KINDS, Redactor
from perception.records import (
    Clip,
    ClipObservations,
    FrameObservation,
    SpeechTurn,
    TextLine,
    Word,
)
from pipeline.ingest import ClipWriter, IngestPlan, IngestReport
from pipeline.jobs import ClipJob

ALL = Redactor(KINDS)


@pytest.mark.parametrize(
    "text, kept",
    [
        ("Pay with 4111 1111 1111 1111 today", "Pay with [card] today"),
        ("amex 3782-822463-10005.", "amex [card]."),
        ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [iban] please"),
        ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=[secret]"),
        (
            "curl -H 'Authorization: Bearer sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7CD0EF'",
            "curl -H 'Authorization: Bearer [secret]'",
        ),
        ("slack xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "slack [secret]"),
        ("my password is hunter2, don't tell", "my password is [password], don't tell"),
        ("PIN: 4821", "PIN: [password]"),
        # said aloud and transcribed: a PIN and a card in words
        ("the pin is one two three four", "the pin is [password]"),
        ("my pin was nine, eight, seven, six and then", "my pin was [password] and then"),
        ("pin is one of the things", None),
        (
            "the card is four one one one, one one one one, one one one one, one one one one",
            "the card is [card]",
        ),
        ("my password was correct horse battery staple.", "my password was [password]."),
        ("passcode: 1234", "passcode: [password]"),
        ("4111 1111 1111 1111 12/27", "[card] 12/27"),
        ("ID 2024 4111 1111 1111 1111", "ID 2024 [card]"),
        ("DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX", "[iban] BIC COBADEFFXXX"),
        (
            "Bearer 8f3kD02mZpQ71xLw9vBnT4 with iPhone 12 users",
            "Bearer [secret] with iPhone 12 users",
        ),
        ("bus pass is valid", None),
        ("drop a pin is fine", None),
        ("mail me at ana.lopez@example.org", "mail me at [email]"),
        ("call +44 20 7946 0958 tomorrow", "call [phone] tomorrow"),
        # ordinary numbers stay: not Luhn-valid, not an issuer's, a checksum that fails, a hash, a time
        ("Order 1234567812345670 shipped", None),
        ("card 4111 1111 1111 1112", None),
        ("DE89 3704 0044 0532 0130 01", None),
        ("commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39", None),
        ("2026-11-25 14:00:00 build 20261125140000 done", None),
        ("the password manager opened", None),
    ],
)
def test_what_is_redacted_and_what_stays(text, kept):
    assert ALL.text(text) == (text if kept is None else kept)


def test_emails_and_phones_are_kept_unless_asked_for():
    assert "emails" not in DEFAULT_KINDS and "phones" not in DEFAULT_KINDS
    assert (
        Redactor().text("ana.lopez@example.org, +44 20 7946 0958")
        == "ana.lopez@example.org, +44 20 7946 0958"
    )
    with pytest.raises(ValueError, match="unknown redaction kind"):
        Redactor(("cards", "ssn"))


CARD, KEY, IBAN = "4111 1111 1111 1111", "AKIAIOSFODNN7EXAMPLE", "GB82 WEST 1234 5698 7654 32"


def test_planted_secrets_in_speech_and_on_screen_reach_no_file_of_the_store(hash_store):
    source = video_source("/rec/call.mp4", "3" * 64, datetime(2026, 5, 1, tzinfo=UTC))
    clip = Clip("redact-clip", source, 0, 0.0, 30.0)
    said = f"Sure, my card number is {CARD} and the password is Tr0ub4dor."
    words = tuple(Word(w, 0.3 * i, 0.3 * i + 0.25, 0.9) for i, w in enumerate(said.split()))
    emb = np.ones(4, dtype=np.float32) / 2
    speech = (SpeechTurn("redact-clip:t0", said, 0.0, 6.0, "en", words, emb, "s0"),)
    lines = (
        TextLine(f"export AWS_ACCESS_KEY_ID={KEY}", (0, 0, 10, 10), 0.99),
        TextLine(f"Transfer to {IBAN}", (0, 20, 10, 30), 0.99),
    )
    frames = (FrameObservation(2.0, text_lines=lines, app="XTerm", window=f"vault: AWS_KEY={KEY}"),)
    obs = ClipObservations(clip, speech, (), frames=frames)
    report = IngestReport()
    writer = ClipWriter(
        hash_store,
        Memorizer(hash_store, MatchPolicy(0.9), MatchPolicy(0.84, min_found_s=0.5)),
        report,
        progress=lambda _m: None,
    )
    writer.write(ClipJob(0, source.path, "clip", clip), obs)
    writer.finish(IngestPlan([], {}))
    assert report.redacted == {"card": 1, "password": 1, "secret": 2, "iban": 1}
    files = [p for p in Path(hash_store.uri).rglob("*") if p.is_file()]
    for secret in (CARD, KEY, IBAN, "Tr0ub4dor", CARD.replace(" ", "")):
        assert not [str(p) for p in files if secret.encode() in p.read_bytes()], secret
    row = hash_store.get_clip("redact-clip")
    assert (
        "[card]" in row["transcript"]
        and "[secret]" in row["screen_text"]
        and "[iban]" in row["screen_text"]
    )
    assert any("redacted before storing" in n for n in row["notes"])
    assert any("[card]" in m.text for m in hash_store.memories_where("kind = 'episodic'"))


@pytest.mark.slow  # every LoCoMo dev turn, the pyannote call's transcript and the OCR bench's screens redacted
def test_the_defaults_redact_nothing_in_the_projects_own_conversations_and_screens(pyannote_dir):
    """False redactions: LoCoMo's dev conversations and the pyannote call's transcript (what people
    say) and the OCR bench's screens (terminals, dialogs, a page). Counted for every kind, asserted
    for the defaults."""
    from bench.fixtures import read_stm
    from bench.ocr_screens import screens
    from conftest import unavailable

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
    if not path.is_file():
        unavailable(f"{path} is missing (the shared LoCoMo dev set)")
    turns = [
        t["text"]
        for conv in json.loads(path.read_text())
        for k, session in conv["conversation"].items()
        if k.startswith("session_") and not k.endswith("date_time")
        for t in session
    ]
    turns += [text for *_, text in read_stm(pyannote_dir / "sample.stm")]
    screen_lines = [line for s in screens() for line in s.lines]
    # the OCR bench's note screen shows one real secret: it must go, and nothing else
    planted = "The wifi password for the cabin is maple-sunrise-19"
    assert (
        planted in screen_lines
        and Redactor().text(planted) == "The wifi password for the cabin is [password]"
    )
    screen_lines = [line for line in screen_lines if line != planted]
    found = {k: sum(len(Redactor((k,)).spans(t)) for t in turns + screen_lines) for k in KINDS}
    print(f"{len(turns)} turns and {len(screen_lines)} screen lines; spans found by kind: {found}")
    assert len(turns) > 1000 and len(screen_lines) > 30
    assert sum(found[k] for k in DEFAULT_KINDS) == 0


def _left(secret: str, stored: str) -> str:
    """A part of ``secret`` (6 characters, or all of a shorter one) still in ``stored``; "" when none."""
    n = min(6, len(secret))
    return next(
        (secret[i : i + n] for i in range(len(secret) - n + 1) if secret[i : i + n] in stored), ""
    )


# what a user found stored (issue 42), and what the audit of 49 forms missed
@pytest.mark.parametrize(
    "text, secret",
    [
        (
            "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        ),
        ("DB_PASSWORD=s3cr3t-Passw0rd!", "s3cr3t-Passw0rd!"),
        (
            "export DB_PASSwORD=Tr0ub4dor-and-3",
            "Tr0ub4dor-and-3",
        ),  # as OCR read a screen: case mixed inside the word
        ('{"user": "ana", "password": "Blue Otter 42"}', "Blue Otter 42"),
        ("Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "YWxhZGRpbjpvcGVuc2VzYW1l"),
        ("card 4111.1111.1111.1111 expires 09/28", "4111.1111.1111.1111"),
        ("iban de89 3704 0044 0532 0130 00", "de89 3704 0044 0532 0130 00"),
        (
            "//registry.npmjs.org/:_authToken=npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
            "npm_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        ),
        (
            "SECRET_KEY = 'django-insecure-9x#k2@p!m^w7$z&q(3v)r8t*u1y0o-e6i5a4s_d'",
            "django-insecure-9x#k2@p!m^w7$z&q(3v)r8t*u1y0o-e6i5a4s_d",
        ),
        (
            "-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW "
            "QyNTUxOQAAACDq9fLy -----END OPENSSH PRIVATE KEY-----",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ),
        ("Authorization: Bearer 8f3kD02mZpQ71xLw9vBnT4", "8f3kD02mZpQ71xLw9vBnT4"),
        ("Your verification code is 482913", "482913"),
        ("it's 4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 on the card", "4 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"),
        ('password: "correct horse battery staple"', "correct horse battery staple"),
        # bench faults planted_secrets: OCR split a bearer token after its full stop; speech recognition
        # heard "is" as "in" and put a comma inside a password said aloud (it was "Ember35%7cDTm")
        ("authorization: bearer 8f3kD02mZpQ71xLw9vR-xf. NrcYdS6R9'", "NrcYdS6R9"),
        ("the password for the bank in November 35%, 7 CDTM, don't tell anyone.", "35%, 7 CDTM"),
        ("Don't tell anyone the password for the gate is 5 ,720.", "5 ,720"),
    ],
)
def test_the_secrets_the_user_and_the_audit_found_stored_are_kept_out(text, secret):
    stored = ALL.text(text)
    assert not _left(secret, stored), stored


@pytest.mark.parametrize(
    "text",
    [
        "Password: ********",
        "Received 4503599627370492 bytes",
        "DB_PASSWORD=${DB_PASSWORD}",
        "SECRET_KEY = os.environ['SECRET_KEY']",
        "PWD=/home/ana/projects",
        "max_tokens: 800",
        "token_type: bearer",
        "The password is incorrect",
        "status code 500",
        "the password in 2023 was different",
    ],
)
def test_look_alikes_the_audit_saw_redacted_stay(text):
    from stdnum import luhn

    if "bytes" in text:  # the audit's byte count passed Luhn, and began as a Visa card does
        assert luhn.is_valid(text.split()[1]) and text.split()[1].startswith("4")
    assert Redactor().text(text) == text


def test_a_key_block_read_as_many_screen_lines_is_kept_out_line_by_line():
    lines = [
        "$ cat ~/.ssh/id_ed25519",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
        "QyNTUxOQAAACDq9fLy",
        "-----END OPENSSH PRIVATE KEY-----",
        "$ ls",
    ]
    assert Redactor().lines(lines) == [
        "$ cat ~/.ssh/id_ed25519",
        "[secret]",
        "[secret]",
        "[secret]",
        "[secret]",
        "$ ls",
    ]


def test_what_an_llm_writer_returns_is_redacted_before_it_is_memorized(hash_store):
    """The model reads the frames themselves: a key legible on screen reaches its reply even where
    the OCR lines were redacted. The real ChatClient and writer, against a loopback endpoint."""
    from fake_openai import FakeOpenAI
    from llm.client import ChatClient
    from memorize.writer_llm import LLMWriter

    source = video_source("/rec/desk.mp4", "4" * 64, datetime(2026, 5, 1, tzinfo=UTC))
    clip = Clip("llm-redact", source, 0, 0.0, 30.0)
    speech = (
        SpeechTurn(
            "llm-redact:t0",
            "let me paste the key",
            0.0,
            3.0,
            "en",
            (),
            np.ones(4, np.float32) / 2,
            "s0",
        ),
    )
    reply = json.dumps(
        {
            "episodic": [f"<voice_1> pastes the AWS key {KEY} and pays with card {CARD}."],
            "semantic": [
                {"subject": "voice_1", "relation": "has password", "value": "password is Tr0ub4dor"}
            ],
        }
    )
    with FakeOpenAI([reply]) as fake:
        client = ChatClient(fake.base_url, "qwen2.5-vl", timeout_s=5.0, max_retries=0)
        memorizer = Memorizer(
            hash_store, MatchPolicy(0.9), MatchPolicy(0.84), llm_writer=LLMWriter(client)
        )
        written = memorizer.memorize(ClipObservations(clip, speech, ()))
    texts = " | ".join(m.text for m in written.memories)
    assert "[secret]" in texts and "[card]" in texts and "pastes the AWS key" in texts
    for secret in (KEY, CARD, "Tr0ub4dor"):
        assert secret not in texts
    assert any("redacted from the LLM writer's reply" in n for n in written.notes)


def test_bench_redact_meets_its_targets_through_every_channel():
    """The bench's corpus (bench/redact_corpus.py) through the ingest's redaction points."""
    from bench import redact

    report = redact.run()
    f = report.figures
    print(redact.format_report(report))
    assert f["secrets"] >= 150 and f["benign"] >= 150
    assert f["recall"] >= 0.99, redact.format_report(report)
    assert f["false_redaction_rate"] <= 0.01, redact.format_report(report)


def test_bench_redact_is_a_bench_command_with_its_figures_on_the_last_line(capsys):
    from conftest import run_cli

    code, out, _ = run_cli(capsys, "bench", "redact", "--json")
    figures = json.loads(out.strip().splitlines()[-1])
    assert code == 0 and {"secrets", "recall", "benign", "false_redactions", "ms_per_kb"} <= set(
        figures
    )
    assert "recall" in out and "false-redaction rate" in out


# long runs of what each rule loops on, and of what starts each rule
ADVERSARIAL = [
    "a",
    "0",
    "-",
    "_",
    " ",
    ".",
    "/",
    "eyJ",
    "eyJa.",
    "sk-",
    "AKC",
    "//",
    "password:",
    "password ",
    "--password ",
    "Authorization: Basic ",
    "a://",
    "1-",
    "4 ",
    "one ",
    "de89 ",
    "-----BEGIN RSA PRIVATE KEY-----",
    "bearer ",
    "password is ",
    "pin is 1",
    "verification code ",
    "0 is your ",
    "ab12",
    '"a',
    "\\",
    "a@",
    "a.b@",
    # OCR's forms: a key in pieces, a digit for a prefix's letter, a lost or unclosed quote, IBAN labels
    "sk-a ",
    "sk-aaaaaaaaaaaaaaaaaaaa ",
    "x0xp-1",
    "password: a ",
    "password: 'a ",
    "IBAN: DE00 ",
    "-u a: ",
    # a bearer token split by OCR, a spoken password heard as "in …" and cut by commas
    "bearer aaaaaaaaaaaaaaaa1 ",
    "aB1 ",
    "password in 1 ",
    "password is a, 77",
]


@pytest.mark.slow
@pytest.mark.serial  # a ratio of two timings: another test beside it would skew one of them
def test_every_rule_takes_time_linear_in_the_line():
    """50,000 and 200,000 characters of one repeated unit: 4 times the text must cost about 4 times
    the time (a quadratic rule costs 16 times: detect-secrets' npm one took 8 s on 50,000)."""
    import time

    redactor = Redactor(DEFAULT_KINDS + ("emails",))
    redactor.spans("warm up")

    def seconds(text: str, runs: int) -> float:
        best = float("inf")
        for _ in range(runs):  # the least of a few: another process on the machine only adds time
            t0 = time.perf_counter()
            redactor.spans(text)
            best = min(best, time.perf_counter() - t0)
        return best

    ratios = {}
    for unit in ADVERSARIAL:
        short, long = ((unit * (n // len(unit) + 1))[:n] + "!" for n in (50_000, 200_000))
        ratios[unit] = seconds(long, 2) / max(
            seconds(short, 3), 1e-4
        )  # each the least of a few: a busy machine
    print({u: round(r, 1) for u, r in ratios.items()})
    # linear is 4, quadratic 16; on a busy 2-core machine linear rules were seen at up to 8.3
    assert max(ratios.values()) < 10, {u: round(r, 1) for u, r in ratios.items() if r >= 10}
