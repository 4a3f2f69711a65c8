"""The two speech passes on real speech with the real models: names the first pass misses are
heard once the recogniser expects them, and a hint list of any size or script never fails a clip."""

from __future__ import annotations

import re

import numpy as np
import pytest

from perception.speech.hints import SpeechHints
from perception.speech.stage import transcribe_clip

pytestmark = pytest.mark.slow

# espeak-ng voices of the spoken LoCoMo bench (bench.speech_synth.VOICE_PAIRS), checked to exist
LINES = (
    ("en-us+Storm", "Hey Gina, how did the store opening go last week?"),
    ("en-us+Lee", "Thanks Jon! It went great, we sold out of almost everything."),
)


@pytest.fixture(scope="module")
def names_spoken(tmp_path_factory) -> np.ndarray:
    """The two lines spoken one after the other, 16 kHz mono float32, with a pause between."""
    from bench.speech_synth import Voice, check_voices, require_tools
    from conftest import _fetched, say

    _fetched(require_tools, "espeak-ng and sox (sudo apt-get install espeak-ng sox)")
    check_voices([Voice(v, 50, 165) for v, _ in LINES])  # an unknown variant falls back silently
    work = tmp_path_factory.mktemp("names")
    parts = []
    for n, (voice, text) in enumerate(LINES):
        import soundfile

        audio, rate = soundfile.read(say(text, voice, work, str(n)), dtype="float32")
        assert rate == 16000
        parts += [audio, np.zeros(16000, dtype=np.float32)]
    return np.concatenate(parts)


@pytest.fixture(scope="module")
def second_pass():
    """The second pass as ``[perception] asr_second_model = "tiny.en"`` builds it (off by default)."""
    from mnemo.config import PerceptionConfig
    from mnemo.wiring import build_second_pass

    return build_second_pass(PerceptionConfig(asr_second_model="tiny.en"), threads=2)


def _text(audio, perceivers, second_pass, hints=None, first=False, noted=()) -> str:
    notes: list[str] = []
    timings: dict[str, float] = {}
    turns, _, _ = transcribe_clip(
        "c",
        audio,
        16000,
        perceivers.asr,
        perceivers.speaker,
        perceivers.max_turn_gap_s,
        perceivers.diarize_max_distance,
        perceivers.diarize_min_speaker_s,
        second_pass,
        hints,
        notes,
        timings,
        first,
    )
    assert notes == list(noted)
    if second_pass is not None:
        assert 0 < timings["second_pass_audio_s"] <= len(audio) / 16000
    return " ".join(t.text for t in turns)


def test_names_the_first_pass_misses_are_heard_once_expected(names_spoken, perceivers, second_pass):
    assert perceivers.second_pass is None  # the default: one pass
    first = _text(names_spoken, perceivers, None)
    # tiny.en alone writes them as it knows them ("Hey Gee", "Thanks John"): measured here
    assert "Gina" not in first and "Jon" not in re.findall(r"\w+", first)
    taught = SpeechHints(("Gina", "Jon"), ("Gina", "Jon"))
    second = _text(names_spoken, perceivers, second_pass, taught)
    words = re.findall(r"\w+", second)
    assert "Gina" in words and "Jon" in words and "John" not in words


def test_thousands_of_hints_in_other_scripts_still_transcribe(
    names_spoken, perceivers, second_pass
):
    many = tuple(f"Name{i}" for i in range(3000)) + ("王芳", "Олег", "Zoë", "Gina")
    text = _text(names_spoken, perceivers, second_pass, SpeechHints(many, many))
    # told 3000 made-up names, Whisper wrote "Name1 Name4 Name0" for the whole window: such a
    # second reading is refused and the first pass kept
    assert "how did the" in text and "sold out" in text and "Name" not in text


def test_ingest_hears_the_contact_lists_names_and_only_with_it(
    names_spoken, perceivers, second_pass, policies, tmp_path
):
    """`mnemo ingest`'s path: the contact list reaches the recogniser through the hint book."""
    from dataclasses import replace

    import soundfile

    from embeddings.base import build_text_embedder
    from graph.store import Store
    from pipeline.ingest import ingest

    wav = tmp_path / "call.wav"
    soundfile.write(wav, names_spoken, 16000)
    heard = {}
    for contacts in ((), ("Gina", "Jon")):
        store = Store(tmp_path / f"store-{len(contacts)}", build_text_embedder("hash"))
        report = ingest(
            [str(wav)],
            store,
            replace(perceivers, second_pass=second_pass),
            policies,
            progress=lambda m: None,
            contacts=contacts,
        )
        assert report.clips_new == 1 and report.stage_s["second_pass_audio_s"] > 0
        (clip,) = store.clips_in_range(0, 4e9)
        heard[contacts] = re.findall(r"\w+", clip["transcript"])
    assert "Jon" not in heard[()] and "Gina" not in heard[()]
    assert "Jon" in heard[("Gina", "Jon")] and "Gina" in heard[("Gina", "Jon")]


def test_the_first_pass_told_the_names_writes_them(names_spoken, perceivers):
    taught = SpeechHints(("Gina", "Jon"), ("Gina", "Jon"))
    words = re.findall(r"\w+", _text(names_spoken, perceivers, None, taught, first=True))
    assert "Gina" in words and "Jon" in words and "John" not in words


def test_a_first_pass_that_writes_the_hint_list_is_decoded_again_without_it(
    names_spoken, perceivers
):
    many = tuple(f"Name{i}" for i in range(3000))
    text = _text(
        names_spoken,
        perceivers,
        None,
        SpeechHints(many, many),
        first=True,
        noted=["the speech read as mostly the expected names: transcribed again without them"],
    )
    assert "how did the" in text and "sold out" in text and "Name" not in text
