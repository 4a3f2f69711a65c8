import pytest

from bench.metrics import speaker_attribution

REF = [("diane", 0.0, 2.0), ("sheila", 2.0, 3.0)]


def test_perfect_and_relabelled_predictions_score_one():
    assert speaker_attribution(REF, REF) == pytest.approx(1.0)
    assert speaker_attribution(REF, [("a", 0.0, 2.0), ("b", 2.0, 3.0)]) == pytest.approx(1.0)


def test_one_label_for_everyone_scores_the_longest_speaker_share():
    assert speaker_attribution(REF, [("a", 0.0, 3.0)]) == pytest.approx(2 / 3, abs=0.01)


def test_unpredicted_speech_counts_as_wrong():
    assert speaker_attribution(REF, [("a", 0.0, 1.0)]) == pytest.approx(1 / 3, abs=0.01)
