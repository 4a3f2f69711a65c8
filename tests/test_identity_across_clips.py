"""Voices keep their identity across clips: pyannote's sample.wav cut into 10 s clips."""

import pytest

from bench.fixtures import read_rttm
from bench.metrics import speaker_attribution
from pipeline.ingest import ingest

pytestmark = [pytest.mark.slow, pytest.mark.accuracy]


def test_two_speakers_stay_two_voices_across_three_clips(
    hash_store, perceivers, policies, sample_wav, pyannote_dir
):
    report = ingest(
        [str(sample_wav)], hash_store, perceivers, policies, clip_s=10.0, progress=lambda _m: None
    )
    assert report.clips_new == 3
    voices = hash_store.load_entities("voice")
    assert [v.entity_id for v in voices] == ["voice_1", "voice_2"]
    start = min(c["start_ts"] for c in hash_store.clips.search().limit(None).to_list())
    predicted = [
        (m.entity_ids[0], m.start_ts - start, m.end_ts - start)
        for m in hash_store.memories_where("kind = 'episodic'")
        if " said: " in m.text and m.entity_ids
    ]
    reference = [(t.speaker, t.start_s, t.end_s) for t in read_rttm(pyannote_dir / "sample.rttm")]
    # speech time of each reference speaker that lands on the voice entity mapped to them
    assert speaker_attribution(reference, predicted) >= 0.6
