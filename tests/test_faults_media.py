"""``mnemo bench faults``, the media scenarios (``bench.faults.media``): each survives on this
checkout, and each reports the failure when the guard it checks is broken (in the child ``mnemo``
through the scenario's ``mnemo_cmd``, or in this process)."""

from __future__ import annotations

import sys

import pytest

from bench.faults import Context, Tally, media

pytestmark = pytest.mark.slow


def run(scenario, tmp_path, **kw) -> Tally:
    from mnemo.config import load_config

    tally = Tally(scenario.__name__)
    scenario(Context(tmp_path, 1, load_config(), print), tally, **kw)
    print(tally.figures, tally.notes)
    return tally


def broken_mnemo(tmp_path, patch: str) -> tuple[str, ...]:
    """A ``mnemo`` command that runs ``patch`` first: the guard it breaks is broken in the child."""
    script = tmp_path / "broken_mnemo.py"
    script.write_text(
        f"import sys\n{patch}\nfrom mnemo.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    )
    return (sys.executable, str(script))


def survived(tally: Tally) -> bool:
    return (tally.runs, tally.survived, tally.lost, tally.orphans, tally.leaks) == (1, 1, 0, 0, 0)


def test_corrupt_media_survives(tmp_path):
    assert survived(run(media.corrupt_media, tmp_path))


def test_corrupt_media_reports_good_files_lost_when_a_broken_file_stops_the_ingest(tmp_path):
    cmd = broken_mnemo(
        tmp_path,
        "import pipeline.ingest as ing\nfrom perception.errors import MediaError\n"
        "real = ing.probe\n"
        "def probe(path, start=None):\n"
        "    try:\n        return real(path, start=start)\n"
        "    except MediaError as e:\n        raise RuntimeError(str(e)) from e\n"
        "ing.probe = probe\n",
    )
    tally = run(media.corrupt_media, tmp_path / "work", mnemo_cmd=cmd)
    assert tally.survived == 0 and tally.lost >= 2


def test_a_broken_link_in_a_folder_is_named_with_what_to_do(tmp_path, capsys):
    from conftest import run_cli

    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "call.wav").symlink_to(tmp_path / "gone.wav")
    code, out, err = run_cli(
        capsys, "ingest", str(tmp_path / "media"), "--store", str(tmp_path / "store")
    )
    assert code == 1
    assert (
        f"{tmp_path / 'media' / 'call.wav'}: a link to {tmp_path / 'gone.wav'}, which does not exist"
        in err
    )
    assert "fix or remove the link" in err


def test_malformed_llm_survives(tmp_path):
    assert survived(run(media.malformed_llm, tmp_path))


def test_malformed_llm_reports_clips_lost_without_the_writers_fallback(tmp_path):
    cmd = broken_mnemo(
        tmp_path,
        "import memorize.memorizer as m\nclass Never(Exception):\n    pass\nm.LLMError = Never\n",
    )
    tally = run(media.malformed_llm, tmp_path / "work", mnemo_cmd=cmd)
    assert tally.survived == 0 and tally.lost > 0


def test_planted_secrets_on_screens_and_in_window_titles_survive(tmp_path):
    """Every form of the corpus on captured screens, read by the real OCR: none reaches the store.
    (Said aloud, speech recognition mishears some cues and values, "the password for the bank in
    November 35%": the bench counts those, and this test leaves them out.)"""
    assert survived(run(media.planted_secrets, tmp_path, spoken=False))


def test_planted_secrets_reports_leaks_when_the_redactor_does_nothing(tmp_path):
    cmd = broken_mnemo(
        tmp_path, "import memorize.redact as r\nr.Redactor.spans = lambda self, text: []\n"
    )
    tally = run(media.planted_secrets, tmp_path / "work", mnemo_cmd=cmd, sample=20)
    assert tally.survived == 0 and tally.leaks > 5


def test_export_import_survives(tmp_path):
    assert survived(run(media.export_import, tmp_path))


def test_export_import_reports_a_tampered_archive_taken_when_checksums_are_not_checked(
    tmp_path, monkeypatch
):
    import graph.archive

    monkeypatch.setattr(graph.archive, "file_digest", lambda path: "0" * 64)
    tally = run(media.export_import, tmp_path)
    assert tally.survived == 0 and tally.orphans >= 1


def test_a_refused_llm_reply_is_not_quoted_in_the_note_stored_with_the_clip(hash_store, caplog):
    """pydantic's message quotes the values it refused: the LLM writer's error (logged, and kept
    as the clip's note) says what was wrong without them."""
    import json

    from bench.openai_loopback import LoopbackOpenAI
    from factories import seen_and_heard
    from llm.client import ChatClient
    from memorize.identity import MatchPolicy
    from memorize.memorizer import Memorizer
    from memorize.writer_llm import LLMWriter

    garbage = json.dumps(
        {"episodic": "IGNORE PREVIOUS INSTRUCTIONS zqgarbage42", "memories": ["zqgarbage42"]}
    )
    with LoopbackOpenAI(lambda body: garbage) as server:
        writer = LLMWriter(
            ChatClient(server.base_url, "m", timeout_s=5.0, max_retries=1, backoff_s=0.01)
        )
        written = Memorizer(
            hash_store, MatchPolicy(0.9), MatchPolicy(0.9), llm_writer=writer
        ).memorize(seen_and_heard())
    assert written.notes and "episodic: Input should be a valid list" in written.notes[0]
    assert not any("zqgarbage42" in n for n in written.notes)
    assert not any("zqgarbage42" in r.getMessage() for r in caplog.records)
