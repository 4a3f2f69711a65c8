"""LoCoMo's own answer metric, as its ``task_eval/evaluation.py`` scores a QA run (mnemo's code, after
reading that file for the rule):

- an answer and a gold answer are normalised: commas dropped, lower case, punctuation removed,
  the words "a", "an", "the" and "and" removed, white space collapsed; each word is Porter-stemmed
  (NLTK's ``PorterStemmer``, as LoCoMo uses);
- token F1 between the two bags of stems (0 when they share none);
- category 1 (multi-hop): the gold answer and the answer are split on commas; each gold part takes
  its best F1 against any answer part, and the parts' mean is the score;
- categories 2, 3 and 4: one F1; for category 3 only the gold answer's part before a ";";
- category 5 (adversarial): 1 when the answer says the information is not there ("no information
  available" or "not mentioned", LoCoMo's two phrases; mnemo's "not in memory" too), else 0.

LoCoMo's integer categories: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial
(the paper's and Mem0's names; LoCoMo's README lists them in another order, its data and code use
these).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import cache

ABSTAIN = "not in memory"  # mnemo's abstention: what the reasoned answer says instead of a guess
_ABSTAINED = ("no information available", "not mentioned", ABSTAIN)
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_PUNCT = str.maketrans("", "", string.punctuation)


@cache
def _stemmer():
    from nltk.stem import PorterStemmer  # the [bench] extra

    return PorterStemmer()


def normalize(text: str) -> str:
    text = text.replace(",", "").lower().translate(_PUNCT)
    return " ".join(re.sub(r"\b(a|an|the|and)\b", " ", text).split())


def _stems(text: str) -> list[str]:
    stem = _stemmer().stem
    return [stem(w) for w in normalize(text).split()]


def token_f1(answer: str, gold: str) -> float:
    said, want = _stems(answer), _stems(gold)
    same = sum((Counter(said) & Counter(want)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(said), same / len(want)
    return 2 * precision * recall / (precision + recall)


def multi_f1(answer: str, gold: str) -> float:
    answers = [a.strip() for a in answer.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    return sum(max(token_f1(a, g) for a in answers) for g in golds) / len(golds)


def abstained(answer: str) -> bool:
    low = answer.lower()
    return any(phrase in low for phrase in _ABSTAINED)


def score(answer: str, gold: str | int | None, category: int) -> float:
    """The score LoCoMo gives ``answer`` for a question of ``category`` with ``gold``."""
    if category == 5:
        return 1.0 if abstained(answer) else 0.0
    gold = "" if gold is None else str(gold)
    if category == 1:
        return multi_f1(answer, gold)
    if category == 3:
        gold = gold.split(";")[0].strip()
    return token_f1(answer, gold)
