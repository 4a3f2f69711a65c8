"""Secrets and numbers kept out of memory: planted in speech and on screen, gone from every file of
the store; ordinary text of the project's own fixtures left as it is."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from memorize.identity import MatchPolicy
from memorize.memorizer import Memorizer
from memorize.redact import DEFAULT_KINDS, KINDS, Redactor
from pipeline.ingest import ClipJob, ClipWriter, IngestReport, Plan
from perception.records import (Clip, ClipObservations, FrameObservation, SourceInfo, SpeechTurn, TextLine,
                                Word)

ALL = Redactor(KINDS)


@pytest.mark.parametrize("text, kept", [
    ("Pay with 4111 1111 1111 1111 today", "Pay with [card] today"),
    ("amex 3782-822463-10005.", "amex [card]."),
    ("IBAN DE89 3704 0044 0532 0130 00 please", "IBAN [iban] please"),
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY_ID=[secret]"),
    ("curl -H 'Authorization: Bearer sk-proj-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'", "curl -H 'Authorization: Bearer [secret]'"),
    ("slack xoxb-123456789012-1234567890123-abcdefghijklmnopqrstuvwx", "slack [secret]"),
    ("my password is hunter2, don't tell", "my password is [password], don't tell"),
    ("PIN: 4821", "PIN: [password]"),
    ("my password was correct horse battery staple.", "my password was [password]."),
    ("passcode: 1234", "passcode: [password]"),
    ("4111 1111 1111 1111 12/27", "[card] 12/27"),
    ("ID 2024 4111 1111 1111 1111", "ID 2024 [card]"),
    ("DE89 3704 0044 0532 0130 00 BIC COBADEFFXXX", "[iban] BIC COBADEFFXXX"),
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
])
def test_what_is_redacted_and_what_stays(text, kept):
    assert ALL.text(text) == (text if kept is None else kept)


def test_emails_and_phones_are_kept_unless_asked_for():
    assert "emails" not in DEFAULT_KINDS and "phones" not in DEFAULT_KINDS
    assert Redactor().text("ana.lopez@example.org, +44 20 7946 0958") == "ana.lopez@example.org, +44 20 7946 0958"
    with pytest.raises(ValueError, match="unknown redaction kind"):
        Redactor(("cards", "ssn"))


CARD, KEY, IBAN = "4111 1111 1111 1111", "AKIAIOSFODNN7EXAMPLE", "GB82 WEST 1234 5698 7654 32"


def test_planted_secrets_in_speech_and_on_screen_reach_no_file_of_the_store(hash_store):
    source = SourceInfo("/rec/call.mp4", "3" * 64, 30.0, True, True, datetime(2026, 5, 1, tzinfo=timezone.utc), "option")
    clip = Clip("redact-clip", source, 0, 0.0, 30.0)
    said = f"Sure, my card number is {CARD} and the password is Tr0ub4dor."
    words = tuple(Word(w, 0.3 * i, 0.3 * i + 0.25, 0.9) for i, w in enumerate(said.split()))
    emb = np.ones(4, dtype=np.float32) / 2
    speech = (SpeechTurn("redact-clip:t0", said, 0.0, 6.0, "en", words, emb, "s0"),)
    lines = (TextLine(f"export AWS_ACCESS_KEY_ID={KEY}", (0, 0, 10, 10), 0.99),
             TextLine(f"Transfer to {IBAN}", (0, 20, 10, 30), 0.99))
    frames = (FrameObservation(2.0, text_lines=lines, app="XTerm", window=f"vault: AWS_KEY={KEY}"),)
    obs = ClipObservations(clip, speech, (), frames=frames)
    report = IngestReport()
    writer = ClipWriter(hash_store, Memorizer(hash_store, MatchPolicy(0.9), MatchPolicy(0.84, min_found_s=0.5)),
                        report, progress=lambda _m: None)
    writer.write(ClipJob(0, source.path, "clip", clip), obs)
    writer.finish(Plan([], {}))
    assert report.redacted == {"card": 1, "password": 1, "secret": 2, "iban": 1}
    files = [p for p in Path(hash_store.uri).rglob("*") if p.is_file()]
    for secret in (CARD, KEY, IBAN, "Tr0ub4dor", CARD.replace(" ", "")):
        assert not [str(p) for p in files if secret.encode() in p.read_bytes()], secret
    row = hash_store.get_clip("redact-clip")
    assert "[card]" in row["transcript"] and "[secret]" in row["screen_text"] and "[iban]" in row["screen_text"]
    assert any("redacted before storing" in n for n in row["notes"])
    assert any("[card]" in m.text for m in hash_store.memories_where("kind = 'episodic'"))


def test_the_defaults_redact_nothing_in_the_projects_own_conversations_and_screens(pyannote_dir):
    """False redactions: LoCoMo's dev conversations and the pyannote call's transcript (what people
    say) and the OCR bench's screens (terminals, dialogs, a page). Counted for every kind, asserted
    for the defaults."""
    from bench.fixtures import read_stm
    from bench.ocr_screens import screens
    from tests.conftest import unavailable

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo" / "locomo-dev.json"
    if not path.is_file():
        unavailable(f"{path} is missing (the shared LoCoMo dev set)")
    turns = [t["text"] for conv in json.loads(path.read_text()) for k, session in conv["conversation"].items()
             if k.startswith("session_") and not k.endswith("date_time") for t in session]
    turns += [text for *_, text in read_stm(pyannote_dir / "sample.stm")]
    screen_lines = [line for s in screens() for line in s.lines]
    found = {k: sum(len(Redactor((k,)).spans(t)) for t in turns + screen_lines) for k in KINDS}
    print(f"{len(turns)} turns and {len(screen_lines)} screen lines; spans found by kind: {found}")
    assert len(turns) > 1000 and len(screen_lines) > 30
    assert sum(found[k] for k in DEFAULT_KINDS) == 0
