"""Metrics shared by the benches and the accuracy tests."""

from __future__ import annotations

import re
from collections.abc import Sequence


def speaker_attribution(
    reference: Sequence[tuple[str, float, float]],
    predicted: Sequence[tuple[str, float, float]],
    step_s: float = 0.01,
) -> float:
    """Fraction of reference speech time whose predicted speaker maps to a right reference speaker,
    under the best one-to-one mapping of predicted to reference labels (Hungarian assignment).

    Both arguments are ``(speaker, start_s, end_s)``. Time where references overlap counts as right
    if the prediction maps to any of them; reference time with no prediction counts as wrong.
    Speech predicted where the reference has none is not counted here: ``diarization_error_rate``
    counts it (false alarm).
    """
    import numpy as np

    from perception.weights import require

    require(("scipy",), "bench", "the speaker attribution (bench perception)")
    from scipy.optimize import linear_sum_assignment

    ref_speakers = sorted({s for s, _, _ in reference})
    pred_speakers = sorted({s for s, _, _ in predicted})
    end = max((e for _, _, e in reference), default=0.0)
    grid = [i * step_s for i in range(int(end / step_s) + 1)]
    agree = np.zeros(
        (max(1, len(pred_speakers)), max(1, len(ref_speakers)))
    )  # samples per (pred, ref)
    samples = 0
    for t in grid:
        refs = {s for s, a, b in reference if a <= t < b}
        if refs:
            samples += 1
            pred = next((s for s, a, b in predicted if a <= t < b), None)
            if pred is not None:
                for r in refs:
                    agree[pred_speakers.index(pred), ref_speakers.index(r)] += 1
    if not samples:
        return 0.0
    rows, cols = linear_sum_assignment(agree, maximize=True)
    return float(agree[rows, cols].sum()) / samples


def diarization_error_rate(
    reference: Sequence[tuple[str, float, float]], predicted: Sequence[tuple[str, float, float]]
) -> float:
    """DER (pyannote.metrics, no collar, overlap scored): (missed speech + false alarm + speaker
    confusion) / reference speech, under the best label mapping. Unlike ``speaker_attribution`` it
    penalises speech predicted where there is none."""
    import warnings

    from perception.weights import require

    require(("pyannote",), "bench", "the diarization error rate (bench perception)")
    from pyannote.core import Annotation, Segment
    from pyannote.metrics.diarization import DiarizationErrorRate

    def annotation(turns):
        a = Annotation()
        for i, (speaker, start, end) in enumerate(turns):
            if end > start:
                a[Segment(start, end), i] = speaker
        return a

    with (
        warnings.catch_warnings()
    ):  # it says it takes the evaluated extent from the two inputs: as meant
        warnings.simplefilter("ignore", UserWarning)
        return float(
            DiarizationErrorRate(collar=0.0, skip_overlap=False)(
                annotation(reference), annotation(predicted)
            )
        )


def edit_distance(ref: Sequence, hyp: Sequence) -> int:
    """Levenshtein distance (substitutions, insertions, deletions all cost 1) between two strings
    or two sequences of words."""
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(ref, hyp))


_PUNCT = re.compile(r"[^\w\s']|_")


def normalize_words(text: str) -> list[str]:
    """Words for WER: lower case; punctuation removed except apostrophes inside words ("didn't");
    hyphens split words; whitespace collapsed. No number or spelling normalisation."""
    text = _PUNCT.sub(" ", text.lower().replace("-", " "))
    return [w.strip("'") for w in text.split() if w.strip("'")]


def word_error_rate(reference: str, hypothesis: str) -> float:
    ref = normalize_words(reference)
    return edit_distance(ref, normalize_words(hypothesis)) / max(1, len(ref))


def normalize_chars(text: str) -> str:
    """Characters for CER: typographic quotes made plain, whitespace runs collapsed to one space."""
    text = text.translate(str.maketrans("“”‘’", "\"\"''"))
    return " ".join(text.split())


def closest_lines(
    reference_lines: Sequence[str], hypothesis_lines: Sequence[str]
) -> list[tuple[str, str]]:
    """Each reference line (normalized) with the hypothesis text closest to it by edit distance ("" for
    none). OCR may cut one printed line into several boxes, so the candidates also include each
    hypothesis line joined with the following ones (up to 6)."""
    hyps = [normalize_chars(h) for h in hypothesis_lines if h.strip()]
    candidates = sorted(
        {
            " ".join(hyps[i : i + n])
            for i in range(len(hyps))
            for n in range(1, 7)
            if i + n <= len(hyps)
        }
    )
    pairs = []
    for ref in reference_lines:
        ref = normalize_chars(ref)
        near = [
            c for c in candidates if abs(len(c) - len(ref)) <= len(ref) // 2
        ]  # others cannot be closest
        pairs.append((ref, min(near, key=lambda c: (edit_distance(ref, c), c), default="")))
    return pairs


def line_cer(reference_lines: Sequence[str], hypothesis_lines: Sequence[str]) -> tuple[int, int]:
    """(character edits, reference characters) when each reference line is compared with the
    hypothesis line closest to it (``closest_lines``). Hypothesis text that no reference line matched
    is not counted (the references may be a partial transcription)."""
    pairs = closest_lines(reference_lines, hypothesis_lines)
    return sum(edit_distance(r, h) for r, h in pairs), sum(len(r) for r, _ in pairs)


_EDGE_PUNCT = "\"'.,;:!?()[]{}<>$#*"


def word_tokens(text: str) -> list[str]:
    tokens = (t.strip(_EDGE_PUNCT) for t in text.split())
    return [t for t in tokens if any(c.isalnum() for c in t)]


def words_found(reference: str, hypothesis: str) -> tuple[int, int]:
    """(reference words found as a whole token of the hypothesis, reference words). Tokens are split
    at whitespace and compared with their surrounding punctuation stripped; case counts. A word read
    with a space inside ("BLUE HERON") or glued to its neighbour ("shipson") is not found."""
    from collections import Counter

    ref, hyp = word_tokens(reference), Counter(word_tokens(hypothesis))
    found = 0
    for word in ref:
        if hyp[word] > 0:
            hyp[word] -= 1
            found += 1
    return found, len(ref)


def space_errors(reference: str, hypothesis: str) -> tuple[int, int]:
    """(merged, split): word boundaries of the reference missing from the hypothesis, and boundaries
    the hypothesis has inside a reference word. The two are compared on their characters with the
    spaces taken out, aligned; a boundary is counted only where the characters on both sides align,
    so a misread letter is CER's business, not a merge or split."""
    from difflib import SequenceMatcher

    def bare(text: str) -> tuple[str, set[int]]:
        chars: list[str] = []
        starts: set[int] = set()
        for word in text.split():
            if chars:
                starts.add(len(chars))
            chars.extend(word)
        return "".join(chars), starts

    (r, r_starts), (h, h_starts) = bare(reference), bare(hypothesis)
    to_hyp: dict[int, int] = {}
    for a, b, size in SequenceMatcher(None, r, h, autojunk=False).get_matching_blocks():
        to_hyp.update((a + k, b + k) for k in range(size))
    aligned = [
        i
        for i in range(1, len(r))
        if i in to_hyp and i - 1 in to_hyp and to_hyp[i] == to_hyp[i - 1] + 1
    ]
    merged = sum(1 for i in aligned if i in r_starts and to_hyp[i] not in h_starts)
    split = sum(1 for i in aligned if i not in r_starts and to_hyp[i] in h_starts)
    return merged, split


def cluster_purity(assigned: Sequence[str], truth: Sequence[str]) -> float:
    """Share of items whose cluster's majority label is their own label."""
    from collections import Counter

    by_cluster: dict[str, Counter] = {}
    for a, t in zip(assigned, truth):
        by_cluster.setdefault(a, Counter())[t] += 1
    total = sum(sum(c.values()) for c in by_cluster.values())
    return sum(max(c.values()) for c in by_cluster.values()) / total if total else 0.0


def recall_at_k(ranked_turns: Sequence[str], evidence: Sequence[str], k: int) -> float:
    """|evidence turns among the first k ranked turns| / |evidence turns| (ranked turns deduplicated
    in first-occurrence order)."""
    if not evidence:
        raise ValueError("recall needs at least one evidence turn")
    top = list(dict.fromkeys(ranked_turns))[:k]
    return len(set(top) & set(evidence)) / len(set(evidence))


def meets(value, op: str, bound) -> bool:
    """Whether a bench figure meets its target ``op bound`` (``<=``, ``>=`` or ``==``)."""
    return value <= bound if op == "<=" else value >= bound if op == ">=" else value == bound


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_NOT_WORD = re.compile(r"[^\w\s]|_")


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, punctuation and articles (a, an, the) removed,
    whitespace collapsed. "The Pirate Ship Float." -> "pirate ship float"."""
    text = _NOT_WORD.sub(" ", text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(gold: str, predicted: str) -> float:
    """SQuAD token F1 of two answers after ``normalize_answer`` (a proxy, not accuracy)."""
    from collections import Counter

    g, p = normalize_answer(gold).split(), normalize_answer(predicted).split()
    if not g or not p:
        return float(g == p)
    common = sum((Counter(g) & Counter(p)).values())
    if not common:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


def contains_answer(gold: str, text: str) -> bool:
    """Whether the normalised gold answer occurs in the normalised text as whole words."""
    g = normalize_answer(gold)
    return bool(g) and f" {g} " in f" {normalize_answer(text)} "


def is_yes_no(answer: str) -> bool:
    """A gold answer that starts with "yes" or "no" ("Yes.", "No, she doesn't."): such a word
    occurs in almost any text, so these are scored apart."""
    return normalize_answer(answer).split()[:1] in (["yes"], ["no"])


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson score interval of a proportion (``z`` for another level); (0, 1) when n == 0."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * ((p * (1 - p) + z * z / (4 * n)) / n) ** 0.5
    denom = 1 + z * z / n
    return max(0.0, (centre - spread) / denom), min(1.0, (centre + spread) / denom)
