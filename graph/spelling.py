"""Full-text search that forgives word boundaries read wrong from a screen.

OCR of screen text still splits or merges some words ("BLUE HER ON" for "BLUEHERON", "shipson" for
"ships on", "level3bay_42"). The full-text index of the memories is built on ``search_text``: the
memory's text plus, for screen text (``resource`` memories), every run of two to four adjacent
words written together ("blueher", "heron", "blueheron"; OCR cut Chromium's "quillonbbax" into
four: "quill on b bax") and the words wordninja finds inside
long letter runs ("shipson": "ships", "on"), with runs of them written together again (a word
wordninja does not know is cut into pieces: "isquillonbbax" gives "quill", "on", "b", "bax", and
"quillonbbax"). A query is searched with its words and the joins of
each two adjacent words ("shipson"). So a query word matches a stored token that differs from it
only in spacing or an inserted ``_``/``-`` (the index's tokenizer splits at those): stored
"BLUE HER ON" is found by "BLUEHERON", stored "shipson" by "ships on" and by "ships", stored
"bay_42" by "bay42". These forms are only indexed, never shown. Figures: ``mnemo bench ocr``
(``search_found`` beside ``search_found_plain``).
"""

from __future__ import annotations

import re

JOIN_WORDS = 4  # runs of up to this many adjacent words are also indexed written together
_WORD = re.compile(r"[A-Za-z0-9']+")
_TOKEN = re.compile(r"[A-Za-z0-9]+")  # as the index's tokenizer splits: at spaces, "_", "-", "." …
_SEGMENT = re.compile(r"\s\|\s|\n")  # screen lines are joined with " | " in a memory's text
FORGIVING_KINDS = ("resource",)  # what was read from a screen
MIN_RUN = 6  # letter runs this long are also indexed as the words wordninja splits them into
RUN_JOIN = 5  # and those words written together again, up to this many at once
_LETTER_RUN = re.compile(rf"[A-Za-z]{{{MIN_RUN},}}")


def joined(text: str, longest: int = JOIN_WORDS) -> list[str]:
    """Each run of 2..``longest`` adjacent tokens of ``text`` written together, lower-cased, within
    each line (never across a `` | `` that separates screen lines)."""
    out: list[str] = []
    for segment in _SEGMENT.split(text):
        tokens = [t.lower() for t in _TOKEN.findall(segment)]
        for n in range(2, longest + 1):
            out += ["".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
    return out


def split_runs(text: str) -> list[str]:
    """The words of each run of ``MIN_RUN`` or more letters that wordninja (a unigram model of
    English Wikipedia) splits in two or more: "shipson" gives "ships", "on"; and those words
    written together again, up to ``RUN_JOIN`` at once. A word wordninja does not know (a name, a
    code) is cut into pieces, and one of those joins is the word: "isquillonbbax" gives "is",
    "quill", "on", "b", "bax", and among the joins "quillonbbax"."""
    import wordninja

    out: list[str] = []
    for run in _LETTER_RUN.findall(text):
        words = [w.lower() for w in wordninja.split(run)]
        if len(words) > 1:
            out += words + joined(" ".join(words), longest=RUN_JOIN)
    return out


def search_text(kind: str, text: str) -> str:
    """What the full-text index holds for a memory: its text, and for screen text the joins of
    adjacent words and the words inside long letter runs."""
    if kind not in FORGIVING_KINDS:
        return text
    extra = joined(text) + split_runs(text)
    return f"{text}\n{' '.join(extra)}" if extra else text


def full_text_terms(query: str) -> str:
    """The query's words for the full-text index (its query syntax would read punctuation), and the
    joins of adjacent words, so a word the screen read merged is found."""
    words = _WORD.findall(query)
    lower = {w.lower() for w in words}
    return " ".join(words + [j for j in joined(" ".join(words), longest=2) if j not in lower])
