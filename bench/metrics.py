"""Metrics shared by the benches and the accuracy tests."""

from __future__ import annotations

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
