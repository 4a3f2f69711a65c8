"""Metrics shared by the benches and the accuracy tests."""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import permutations


def speaker_attribution(reference: Sequence[tuple[str, float, float]], predicted: Sequence[tuple[str, float, float]],
                        step_s: float = 0.01) -> float:
    """Fraction of reference speech time whose predicted speaker maps to a right reference speaker,
    under the best one-to-one mapping of predicted to reference labels.

    Both arguments are ``(speaker, start_s, end_s)``. Time where references overlap counts as right
    if the prediction maps to any of them; reference time with no prediction counts as wrong.
    """
    ref_speakers = sorted({s for s, _, _ in reference})
    pred_speakers = sorted({s for s, _, _ in predicted})
    end = max((e for _, _, e in reference), default=0.0)
    grid = [i * step_s for i in range(int(end / step_s) + 1)]
    samples = []
    for t in grid:
        refs = {s for s, a, b in reference if a <= t < b}
        if refs:
            pred = next((s for s, a, b in predicted if a <= t < b), None)
            samples.append((refs, pred))
    if not samples:
        return 0.0
    best = 0
    k = min(len(pred_speakers), len(ref_speakers))
    for chosen in permutations(pred_speakers, k):
        for targets in permutations(ref_speakers, k):
            mapping = dict(zip(chosen, targets))
            best = max(best, sum(1 for refs, pred in samples if mapping.get(pred) in refs))
    return best / len(samples)


def edit_distance(ref: Sequence, hyp: Sequence) -> int:
    """Levenshtein distance (substitutions, insertions, deletions all cost 1)."""
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, start=1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, start=1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


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
    text = text.translate(str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'"}))
    return " ".join(text.split())


def line_cer(reference_lines: Sequence[str], hypothesis_lines: Sequence[str]) -> tuple[int, int]:
    """(character edits, reference characters) when each reference line is compared with the
    hypothesis line closest to it. OCR may cut one printed line into several boxes, so the
    candidates also include each hypothesis line joined with the following ones (up to 6)."""
    hyps = [normalize_chars(h) for h in hypothesis_lines if h.strip()]
    candidates = {" ".join(hyps[i:i + n]) for i in range(len(hyps)) for n in range(1, 7) if i + n <= len(hyps)}
    edits = chars = 0
    for ref in reference_lines:
        ref = normalize_chars(ref)
        near = [c for c in candidates if abs(len(c) - len(ref)) <= len(ref) // 2]  # others cannot be closest
        edits += min((edit_distance(ref, c) for c in near), default=len(ref))
        chars += len(ref)
    return edits, chars


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
