from datetime import UTC, datetime

import numpy as np
import pytest

from perception.errors import MediaError
from perception.sources.media import (
    SAMPLE_RATE,
    decode_audio,
    fit_audio,
    load_media,
    plan_clips,
    probe,
)


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_probe_reads_streams_duration_and_metadata_start(demo_recording):
    info = probe(demo_recording)
    assert info.has_audio and info.has_video
    assert info.duration_s == pytest.approx(40.0, abs=0.1)
    assert info.recorded_at == datetime(2026, 11, 20, 10, 0, tzinfo=UTC)
    assert info.start_origin == "metadata"


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_start_option_overrides_metadata(demo_recording):
    start = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    info = probe(demo_recording, start=start)
    assert info.recorded_at == start and info.start_origin == "option"
    first = next(plan_clips(info))
    assert first.start_ts == start.timestamp()


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_audio_only_file_has_no_video_and_starts_from_mtime(sample_wav):
    info = probe(sample_wav)
    assert info.has_audio and not info.has_video
    assert info.start_origin == "mtime"
    assert info.duration_s == pytest.approx(30.0, abs=0.05)


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_clips_tile_the_recording_exactly(demo_recording):
    info = probe(demo_recording)
    clips = list(plan_clips(info, 30.0))
    assert [(c.offset_s, c.end_offset_s) for c in clips] == [
        (0.0, 30.0),
        (30.0, pytest.approx(40.0, abs=0.1)),
    ]
    for a, b in zip(clips, clips[1:]):
        assert a.end_offset_s == b.offset_s  # no gap, no overlap
        assert b.start_ts == pytest.approx(a.end_ts)
    assert len({c.clip_id for c in clips}) == len(clips)
    assert [c.clip_id for c in plan_clips(probe(demo_recording))] == [
        c.clip_id for c in clips
    ]  # stable


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_clip_audio_concatenates_to_the_whole_recording(sample_wav):
    """Cutting at 10 s gives the same samples as decoding the whole file: no gaps, no overlaps."""
    info = probe(sample_wav)
    whole = next(plan_clips(info, 60.0))
    parts = list(plan_clips(info, 10.0))
    assert len(parts) == 3
    joined = np.concatenate([fit_audio(decode_audio(c), c.duration_s)[0] for c in parts])
    full, _ = fit_audio(decode_audio(whole), whole.duration_s)
    assert joined.size == full.size == int(round(info.duration_s * SAMPLE_RATE))
    assert np.max(np.abs(joined - full)) < 1e-3


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_media_of_a_clip_is_exactly_its_length(demo_recording):
    clip = list(plan_clips(probe(demo_recording)))[1]
    media, notes = load_media(clip, fps=1.0)
    assert media.audio.size == int(round(clip.duration_s * SAMPLE_RATE))
    assert len(media.frames) == 10 and media.frames[0].shape == (360, 640, 3)
    assert notes == ()


@pytest.mark.parametrize(
    "content, reason", [(b"", "empty"), (b"hello, not a video\n" * 50, "not a readable")]
)
def test_probe_rejects_non_media_with_the_file_named(tmp_path, content, reason):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(content)
    with pytest.raises(MediaError) as e:
        probe(bad)
    assert str(bad) in str(e.value) and reason in str(e.value)


def test_probe_rejects_missing_path(tmp_path):
    with pytest.raises(MediaError, match="no such file"):
        probe(tmp_path / "nope.mp4")


@pytest.mark.slow  # real media (the demo recording, the pyannote call) probed and decoded
def test_a_decode_that_runs_too_long_is_stopped_and_named(demo_recording, monkeypatch):
    import perception.sources.media as media

    (clip, *_) = plan_clips(probe(demo_recording), 30.0)
    monkeypatch.setattr(media, "DECODE_TIMEOUT_S", 1e-6)
    with pytest.raises(MediaError, match="took longer than") as e:
        decode_audio(clip)
    assert str(demo_recording.resolve()) in str(e.value)
    with pytest.raises(MediaError, match="nothing decodable") as e:  # frames hit the same limit
        load_media(clip, 1.0)
    assert "took longer than" in str(e.value)
