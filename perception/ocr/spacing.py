"""Restore word spacing in Latin OCR text.

PP-OCR's recognizer (trained mostly on Chinese) often drops the spaces between English words:
"AtrackbarcreatedwithaNULLwindow". Runs of Latin letters that are long and not a known word are
split by ``wordninja`` (a unigram model built from English Wikipedia) into the most likely words;
case is kept. Tokens with digits or inner punctuation (paths, identifiers, ``libmixed_sample.so``)
are left alone, since splitting them would corrupt exactly what a user searches for.
"""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN = re.compile(r"^([\"'“‘(\[]*)([A-Za-z]+)([.,;:!?\"'”’)\]]*)$")
# A run is split only when it is long or splits into three or more words: a short two-way split
# of an unknown word is as likely a real word missing from the list ("Refactor" -> "Re factor").
_MIN_LEN = 6
_MIN_LEN_TWO_WORDS = 10


@lru_cache(maxsize=1)
def english_words() -> tuple[str, ...]:
    """wordninja's word list (English Wikipedia unigrams, most frequent first), read from the file
    the package ships and builds its own model from."""
    import gzip
    import os

    import wordninja

    path = os.path.join(
        os.path.dirname(os.path.abspath(wordninja.__file__)), "wordninja", "wordninja_words.txt.gz"
    )
    with gzip.open(path) as f:
        return tuple(f.read().decode().split())


@lru_cache(maxsize=1)
def _vocabulary() -> frozenset[str]:
    return frozenset(english_words())


def known_word(word: str) -> bool:
    """Whether ``word`` is in wordninja's English list (case aside)."""
    return word.lower() in _vocabulary()


def _split_token(token: str, min_len: int = _MIN_LEN) -> str:
    if "-" in token.strip("-"):  # "Region-basedsegmentation": each hyphenated part on its own
        return "-".join(_split_token(part, min_len) if part else part for part in token.split("-"))
    m = _TOKEN.match(token)
    if not m:
        return token
    lead, letters, trail = m.groups()
    if len(letters) < min_len or known_word(letters):
        return token
    import wordninja

    words = wordninja.split(letters)
    if (
        len(words) < 2
        or "".join(words) != letters
        or (len(words) == 2 and len(letters) < _MIN_LEN_TWO_WORDS)
    ):
        return token
    return lead + " ".join(words) + trail


def restore_spacing(text: str, min_len: int = _MIN_LEN) -> str:
    """``text`` with missing spaces between Latin words put back (in runs of ``min_len`` letters or
    more); other text is unchanged."""
    # a sentence end glued to the next word ("panel.There") gets its space first
    text = re.sub(r"(?<=[a-z]{2})([.,;:!?])(?=[A-Z][a-z])", r"\1 ", text)
    return " ".join(_split_token(t, min_len) for t in text.split())
