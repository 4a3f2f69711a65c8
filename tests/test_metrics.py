"""The bench metrics on inputs with known answers."""

import pytest

from bench.metrics import (
    cluster_purity,
    diarization_error_rate,
    edit_distance,
    line_cer,
    speaker_attribution,
    word_error_rate,
)

REF = [("diane", 0.0, 2.0), ("sheila", 2.0, 3.0)]


def test_perfect_and_relabelled_predictions_score_one():
    assert speaker_attribution(REF, REF) == pytest.approx(1.0)
    assert speaker_attribution(REF, [("a", 0.0, 2.0), ("b", 2.0, 3.0)]) == pytest.approx(1.0)


def test_one_label_for_everyone_scores_the_longest_speaker_share():
    assert speaker_attribution(REF, [("a", 0.0, 3.0)]) == pytest.approx(2 / 3, abs=0.01)


def test_unpredicted_speech_counts_as_wrong():
    assert speaker_attribution(REF, [("a", 0.0, 1.0)]) == pytest.approx(1 / 3, abs=0.01)


def test_the_mapping_is_one_to_one_and_the_best_one():
    # three predicted labels, two people: the best one-to-one mapping leaves "c" unmapped
    pred = [("a", 0.0, 1.5), ("c", 1.5, 2.0), ("b", 2.0, 3.0)]
    assert speaker_attribution(REF, pred) == pytest.approx(2.5 / 3, abs=0.01)
    # swapped labels mid-way: a greedy first-come mapping would pick a->diane; the best is a->sheila
    pred = [("a", 0.0, 0.5), ("b", 0.5, 2.0), ("a", 2.0, 3.0)]
    assert speaker_attribution(REF, pred) == pytest.approx(2.5 / 3, abs=0.01)


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_der_counts_missed_speech_false_alarm_and_confusion():
    assert diarization_error_rate(REF, REF) == pytest.approx(0.0)
    assert diarization_error_rate(REF, [("a", 0.0, 1.0)]) == pytest.approx(2 / 3)  # 2 s missed of 3
    # speech predicted where nobody speaks: attribution does not see it, DER does
    extra = REF + [("x", 5.0, 6.5)]
    assert speaker_attribution(REF, extra) == pytest.approx(1.0)
    assert diarization_error_rate(REF, extra) == pytest.approx(1.5 / 3)
    assert diarization_error_rate(REF, [("a", 0.0, 3.0)]) == pytest.approx(
        1 / 3
    )  # sheila's second confused


def test_edit_distance_and_word_error_rate():
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance(["a", "b", "c"], ["a", "c", "d"]) == 2
    assert word_error_rate("I didn't see the dog.", "i didn't see a dog") == pytest.approx(1 / 5)
    assert word_error_rate("Well-known fact", "well known fact") == 0.0  # hyphens split words
    assert word_error_rate("one two", "one two three four") == pytest.approx(
        1.0
    )  # insertions count


def test_line_cer_takes_the_closest_line_or_run_of_lines():
    ref = ["Open file", "Save as"]
    assert line_cer(ref, ["Open file", "Save", "as", "XXXXXXXXXX"]) == (
        0,
        16,
    )  # "Save" + "as" joined
    assert line_cer(ref, ["Opem file", "Save as"]) == (1, 16)
    assert line_cer(["Quit"], []) == (4, 4)  # a line not read at all costs every character


def test_cluster_purity():
    assert cluster_purity(["1", "1", "2", "2"], ["a", "a", "b", "b"]) == 1.0
    assert cluster_purity(["1", "1", "1", "1"], ["a", "a", "a", "b"]) == 0.75
    assert cluster_purity([], []) == 0.0
