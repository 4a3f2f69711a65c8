"""The capture daemon's sound, ingested: each 30 s slot's ``mic`` and ``out`` pieces (Ogg/Opus, plain
or encrypted, with sidecars) go into the slot's screen clip, each stream is heard on its own, a
sentence heard on both streams is kept once as the copy heard first, and the voice on the
microphone becomes the owner while nobody is.

The pieces are written here as the contract between the daemon and ingest says (names from
``perception.capture.owned``), with espeak-ng speech and the real speech models."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from perception.capture import owned
from perception.sources.screenshots import folders_with_screenshots, plan_screen_clips
from perception.speech.two_streams import heard_once, lag_s

RATE = 16000
SLOT = datetime(2026, 11, 20, 9, 0, 0, tzinfo=UTC)  # on the 30 s grid
OWNER = ("en-us+Storm", "I finished the quarterly report for the budget meeting this morning.")
OTHER = ("en-us+Lee", "Great, please send the report to the whole team before Friday.")


# ---- the contract's files ---------------------------------------------------------------------


def _write(path: Path, body: bytes, meta: dict, encrypted: bool) -> Path:
    side = json.dumps(meta).encode()
    if encrypted:
        from perception.capture.crypto import load_cipher

        cipher = load_cipher()
        body, side = cipher.encrypt(body), cipher.encrypt(side)
    path.write_bytes(body)
    owned.sidecar_of(path).write_bytes(side)
    return path


def write_sound(
    root: Path, slot: datetime, stream: str, samples: np.ndarray, encrypted: bool = False
) -> Path:
    """One stream's sound of one slot, as the daemon stores it: Opus in Ogg, 16 kHz mono, the
    whole slot (zeros where nothing was said), and its sidecar."""
    import soundfile

    track = np.zeros(30 * RATE, dtype=np.float32)
    track[: min(len(samples), len(track))] = samples[: len(track)]
    buf = io.BytesIO()
    soundfile.write(buf, track, RATE, format="OGG", subtype="OPUS")
    loud = np.abs(track) > 0.01
    meta = {
        "captured_at": slot.isoformat(timespec="milliseconds"),
        "stream": stream,
        "duration_s": 30.0,
        "sample_rate": RATE,
        "device": "alsa_input.test" if stream == "mic" else "alsa_output.test.monitor",
        "speech_s": round(float(loud.sum()) / RATE, 1),
        "speech": [[0.0, 30.0]],
        "codec": "opus",
    }
    day = owned.day_folder(root, slot)
    return _write(day / owned.audio_name(slot, stream, encrypted), buf.getvalue(), meta, encrypted)


def write_frame(root: Path, at: datetime, text: str, encrypted: bool = False) -> Path:
    """A screenshot (a JPEG with a line of text on it) and its sidecar, as the daemon writes them."""
    import cv2

    image = np.full((240, 640, 3), 255, dtype=np.uint8)
    cv2.putText(image, text, (20, 130), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (0, 0, 0), 2)
    ok, jpeg = cv2.imencode(".jpg", image)
    assert ok
    meta = {
        "captured_at": at.isoformat(timespec="milliseconds"),
        "app": "Firefox",
        "window": "Weekly call",
        "monitor": 0,
    }
    day = owned.day_folder(root, at)
    return _write(day / owned.frame_name(at, 0, encrypted), jpeg.tobytes(), meta, encrypted)


def placed(*parts: tuple[float, np.ndarray]) -> np.ndarray:
    """Sounds laid on a silent slot at these offsets (seconds)."""
    track = np.zeros(30 * RATE, dtype=np.float32)
    for at, sound in parts:
        i = int(round(at * RATE))
        track[i : i + len(sound)] += sound[: len(track) - i]
    return track


@pytest.fixture
def capture(tmp_path) -> Path:
    root = tmp_path / "capture"
    owned.claim(root)
    return root


# ---- fast: the plan and the lag, without models ----------------------------------------------


def test_a_slot_with_sound_and_no_frame_is_a_clip_and_the_sound_counts_in_its_id(capture):
    noise = np.random.default_rng(1).normal(0, 0.1, RATE).astype(np.float32)
    write_frame(capture, SLOT + timedelta(seconds=3), "hello")
    write_sound(capture, SLOT, "mic", placed((1.0, noise)))
    write_sound(capture, SLOT + timedelta(seconds=60), "out", placed((2.0, noise)))  # no frame
    (day,) = folders_with_screenshots([str(capture)])
    first, second = plan_screen_clips(day)
    assert [(len(c.shots), [a.stream for a in c.audio]) for c in (first, second)] == [
        (1, ["mic"]),
        (0, ["out"]),
    ]
    assert second.clip.start_ts == (SLOT + timedelta(seconds=60)).timestamp()
    assert second.audio[0].device == "alsa_output.test.monitor" and second.audio[0].duration_s == 30
    # a folder that holds only sound is found too
    for frame in day.glob("*.jpg*"):
        frame.unlink()
    assert folders_with_screenshots([str(capture)]) == [day]
    # the sound's contents are part of the clip's id; and a slot still open waits, sound or not
    before = plan_screen_clips(day)[0].clip.clip_id
    write_sound(capture, SLOT, "mic", placed((1.5, noise)))
    assert plan_screen_clips(day)[0].clip.clip_id != before
    assert len(plan_screen_clips(day, closed_before=SLOT + timedelta(seconds=89))) == 1
    assert len(plan_screen_clips(day, since=SLOT + timedelta(seconds=30))) == 1


def test_the_lag_between_the_streams_says_which_heard_it_first():
    rng = np.random.default_rng(7)
    sound = rng.normal(0, 0.2, 2 * RATE).astype(np.float32)
    out = placed((3.0, sound))
    mic = placed((3.15, 0.5 * sound)) + rng.normal(0, 0.01, 30 * RATE).astype(np.float32)
    assert lag_s(mic, out, RATE, 3.0, 5.0) == pytest.approx(0.15, abs=0.002)
    assert lag_s(out, mic, RATE, 3.0, 5.0) == pytest.approx(-0.15, abs=0.002)
    other = placed((3.0, rng.normal(0, 0.2, 2 * RATE).astype(np.float32)))
    assert lag_s(other, out, RATE, 3.0, 5.0) is None  # two different sounds: no order
    assert lag_s(np.zeros_like(out), out, RATE, 3.0, 5.0) is None


def _turn(channel: str, seg: str, speaker: str, words: list[tuple[str, float]]):
    from perception.records import SpeechTurn, Word

    ws = tuple(Word(w, at, at + 0.3, 0.9) for w, at in words)
    return SpeechTurn(
        seg,
        " ".join(w for w, _ in words),
        ws[0].start_s,
        ws[-1].end_s,
        "en",
        ws,
        None,
        speaker,
        channel,
    )


def _timed(text: str, at: float, step: float = 0.35) -> list[tuple[str, float]]:
    return [(w, at + k * step) for k, w in enumerate(text.split())]


def test_what_was_heard_twice_is_taken_out_word_by_word():
    """The sink's recogniser ran the owner's played-back sentence and the far side's answer into
    one turn: only the owner's words leave it (the out copy came later), the far side's stay;
    a lone "yes" on the microphone is not taken for the "yes" inside a longer turn."""
    from perception.records import SpeakerSegment

    rng = np.random.default_rng(5)
    sound = rng.normal(0, 0.2, 3 * RATE).astype(np.float32)
    mic_audio = placed((1.0, sound))
    out_audio = placed((1.15, 0.7 * sound), (5.0, rng.normal(0, 0.2, 2 * RATE).astype(np.float32)))
    mine = "I will send the budget to Sam."
    mic = [_turn("mic", "c:mic:0", "m0", _timed(mine, 1.0))]
    out = [
        _turn(
            "out",
            "c:out:0",
            "o0",
            _timed(mine, 1.15) + _timed("This is Diane in New Jersey.", 4.5),
        )
    ]
    lines = [SpeakerSegment("m0", 1.0, 3.8)], [SpeakerSegment("o0", 1.15, 6.5)]
    once = heard_once((mic, lines[0], mic_audio), (out, lines[1], out_audio), RATE)
    assert [(t.channel, t.text) for t in once.turns] == [
        ("mic", mine),
        ("out", "This is Diane in New Jersey."),
    ]
    assert once.twice == 1 and once.kept_first == {"mic": 1, "out": 0}
    assert once.turns[1].segment_id == "c:out:0" and once.turns[1].start_s == 4.5
    # the later copy on the microphone instead: the owner's words were the loudspeakers'
    late = [_turn("mic", "c:mic:0", "m0", _timed(mine, 1.3))]
    swapped = heard_once((late, [], placed((1.3, sound))), (out, [], out_audio), RATE)
    assert [t.channel for t in swapped.turns] == ["out"] and swapped.kept_first["out"] == 1
    yes = [_turn("mic", "c:mic:1", "m0", [("yes", 4.5)])]
    alone = heard_once((yes, [], mic_audio), (out, [], out_audio), RATE)
    assert alone.twice == 0 and len(alone.turns) == 2


# ---- slow: real speech, real models -----------------------------------------------------------


@pytest.fixture(scope="module")
def spoken(tmp_path_factory) -> dict[str, np.ndarray]:
    """The owner's and the other voice's sentences, 16 kHz mono float32."""
    import soundfile

    from bench.speech_synth import Voice, check_voices, require_tools
    from conftest import _fetched, say

    _fetched(require_tools, "espeak-ng and sox (sudo apt-get install espeak-ng sox)")
    check_voices([Voice(v, 50, 165) for v, _ in (OWNER, OTHER)])
    work = tmp_path_factory.mktemp("spoken")
    out = {}
    for who, (voice, text) in (("owner", OWNER), ("other", OTHER)):
        audio, rate = soundfile.read(say(text, voice, work, who, RATE), dtype="float32")
        assert rate == RATE
        out[who] = audio
    return out


def _clip(capture: Path):
    (day,) = folders_with_screenshots([str(capture)])
    (sc,) = plan_screen_clips(day)
    return sc


def _words(text: str) -> set[str]:
    return set("".join(c if c.isalnum() else " " for c in text.lower()).split())


def _said(turns, sentence: str) -> list:
    """The turns that say ``sentence`` (most of its words)."""
    words = _words(sentence)
    return [t for t in turns if len(words & _words(t.text)) >= 0.6 * len(words)]


@pytest.mark.slow
def test_an_audio_only_slot_is_heard_and_the_microphone_is_the_owner(
    capture, spoken, hash_store, perceivers, policies, capsys, monkeypatch
):
    from conftest import people_cli, run_cli
    from graph.resolve_people import owner_of
    from graph.rows import HEARD_ON_MIC
    from pipeline.ingest import ingest

    write_sound(capture, SLOT, "mic", placed((1.0, spoken["owner"])))
    write_sound(capture, SLOT, "out", placed((12.0, spoken["other"])))
    report = ingest([str(capture)], hash_store, perceivers, policies, progress=lambda m: None)
    assert report.clips_new == 1 and report.files_failed == []  # the .ogg are no recordings
    speech = hash_store.memories_where("kind = 'episodic'")
    mine = [m for m in speech if "quarterly" in m.text.lower()]
    theirs = [m for m in speech if "whole team" in m.text.lower()]
    assert len(mine) == 1 and len(theirs) == 1, [m.text for m in speech]
    assert HEARD_ON_MIC in mine[0].provenance and HEARD_ON_MIC not in theirs[0].provenance
    assert mine[0].entity_ids and theirs[0].entity_ids != mine[0].entity_ids
    owner = owner_of(hash_store.people())
    assert owner is not None and mine[0].entity_ids[0] in owner.ids
    assert owner.owner_heard and not owner.owner  # inferred, not the user's mark
    assert not set(theirs[0].entity_ids) & set(owner.ids)
    monkeypatch.setenv("MNEMO_GRAPH__TEXT_EMBEDDER", "hash")  # what the commands open it with
    code, listed, _ = people_cli(capsys, hash_store)
    assert code == 0 and [p["id"] for p in listed if p["owner"]] == [owner.person_id]
    code, table, _ = run_cli(capsys, "people", "--store", hash_store.uri)
    assert code == 0 and "you (microphone)" in table
    code, out, _ = people_cli(capsys, hash_store, "me")
    assert out["owner"] == owner.person_id and out["heard_on_microphone"]
    # the user's word wins, and a later microphone voice never takes it away
    other = next(p for p in hash_store.people() if theirs[0].entity_ids[0] in p.ids)
    assert people_cli(capsys, hash_store, "me", other.person_id)[0] == 0
    assert owner_of(hash_store.people()).person_id == other.person_id
    write_sound(capture, SLOT + timedelta(seconds=30), "mic", placed((1.0, spoken["owner"])))
    ingest([str(capture)], hash_store, perceivers, policies, progress=lambda m: None)
    assert owner_of(hash_store.people()).person_id == other.person_id
    assert [o.op for o in hash_store.people_ops()] == ["me", "me"]


@pytest.mark.slow
def test_the_stream_turns_carry_their_channel(capture, spoken, perceivers):
    from perception.observe import observe_screen_clip

    write_sound(capture, SLOT, "mic", placed((1.0, spoken["owner"])))
    write_sound(capture, SLOT, "out", placed((12.0, spoken["other"])))
    obs = observe_screen_clip(_clip(capture), perceivers)
    (mine,) = _said(obs.speech, OWNER[1])
    (theirs,) = _said(obs.speech, OTHER[1])
    assert (mine.channel, mine.speaker[0], theirs.channel, theirs.speaker[0]) == (
        "mic",
        "m",
        "out",
        "o",
    )
    assert mine.segment_id != theirs.segment_id and ":mic:" in mine.segment_id
    assert [t.start_s for t in obs.speech] == sorted(t.start_s for t in obs.speech)
    assert 11.0 < theirs.start_s < 13.5  # placed where it was heard in the slot
    assert {s.speaker[0] for s in obs.speakers} == {"m", "o"}
    assert not any("both streams" in n for n in obs.notes)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("who", "late", "kept"),
    [("other", "mic", "out"), ("owner", "out", "mic")],
    ids=["the-microphone-hears-the-loudspeakers", "the-owner-played-back"],
)
def test_a_sentence_heard_on_both_streams_is_kept_once_as_the_first_copy(
    capture, spoken, perceivers, who, late, kept
):
    from perception.observe import observe_screen_clip

    sound = spoken[who]
    noise = np.random.default_rng(3).normal(0, 0.003, 30 * RATE).astype(np.float32)
    first, echo = placed((2.0, sound)), placed((2.15, 0.6 * sound)) + noise
    streams = {late: echo, ({"mic", "out"} - {late}).pop(): first}
    write_sound(capture, SLOT, "mic", streams["mic"])
    write_sound(capture, SLOT, "out", streams["out"], encrypted=False)
    obs = observe_screen_clip(_clip(capture), perceivers)
    sentence = OWNER[1] if who == "owner" else OTHER[1]
    heard = _said(obs.speech, sentence)
    assert [t.channel for t in heard] == [kept], [(t.channel, t.text) for t in obs.speech]
    assert any(
        n.endswith("stretch(es) of speech heard on both streams kept once") for n in obs.notes
    )
    assert all(s.speaker[0] == kept[0] for s in obs.speakers), (
        obs.speakers,
        [(t.channel, t.text, t.words) for t in obs.speech],
    )  # the echo's speaker is gone too


@pytest.mark.slow
def test_encrypted_sound_is_ingested_once_and_a_broken_one_leaves_a_note(
    capture, spoken, hash_store, perceivers, policies, monkeypatch
):
    from cryptography.fernet import Fernet

    from pipeline.ingest import ingest

    monkeypatch.setenv("MNEMO_CAPTURE_KEY", Fernet.generate_key().decode())
    write_frame(capture, SLOT + timedelta(seconds=5), "Budget meeting notes", encrypted=True)
    write_sound(capture, SLOT, "mic", placed((1.0, spoken["owner"])), encrypted=True)
    later = SLOT + timedelta(seconds=30)
    write_frame(capture, later + timedelta(seconds=4), "Quarterly report draft")
    broken = owned.day_folder(capture, later) / owned.audio_name(later, "out", False)
    _write(broken, b"OggS not really a sound", {"duration_s": 30.0, "stream": "out"}, False)
    encrypted = list(capture.rglob("*.ogg.enc"))
    assert len(encrypted) == 1 and b"OggS" not in encrypted[0].read_bytes()

    lines: list[str] = []
    report = ingest([str(capture)], hash_store, perceivers, policies, progress=lines.append)
    assert report.clips_new == 2 and report.clips_failed == [] and report.files_failed == []
    clips = sorted(hash_store.clips.search().limit(None).to_list(), key=lambda r: r["start_ts"])
    assert "quarterly" in clips[0]["transcript"].lower()
    assert any("sound skipped" in n and broken.name in n for n in clips[1]["notes"])
    apps = hash_store.memories_where("kind = 'episodic'")
    assert any("Firefox" in m.text and m.clip_id == clips[1]["clip_id"] for m in apps)
    memories = len(hash_store.memories_where("kind != ''"))

    again = ingest([str(capture)], hash_store, perceivers, policies, progress=lambda m: None)
    assert again.clips_new == 0 and again.clips_skipped == 2
    assert len(hash_store.memories_where("kind != ''")) == memories


@pytest.mark.slow
def test_keep_audio_zero_keeps_the_transcript_and_drops_the_ingested_sound(
    capture, spoken, hash_store, perceivers, policies
):
    """``[capture] keep_audio = 0``: once a clip is committed its sound files go, its transcript
    and frames stay; a slot not ingested yet keeps its sound, as do files that are not the
    daemon's."""
    from mnemo.forget_with_media import drop_ingested_sound
    from pipeline.ingest import ingest

    heard = write_sound(capture, SLOT, "out", placed((1.0, spoken["other"])))
    frame = write_frame(capture, SLOT + timedelta(seconds=3), "Weekly call")
    ingest([str(capture)], hash_store, perceivers, policies, progress=lambda m: None)
    later = write_sound(
        capture, SLOT + timedelta(seconds=60), "mic", placed((1.0, spoken["owner"]))
    )
    mine = heard.parent / "call.ogg"
    mine.write_bytes(b"the user's")
    assert drop_ingested_sound(hash_store, [heard.parent]) == 1
    assert not heard.exists() and not owned.sidecar_of(heard).exists()
    assert later.exists() and frame.exists() and mine.exists()
    assert [m for m in hash_store.memories_where("kind = 'episodic'") if "whole team" in m.text]
