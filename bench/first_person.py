"""A question about someone, asked by that someone: "What did Caroline research?" becomes "What did
I research?". ``bench locomo --first-person`` asks the owner's questions both ways.

The rules cover how LoCoMo's questions name a person (measured on its dev questions): the name
after an auxiliary ("did Caroline", "has Caroline" -> "did I", "have I"), at the start ("Caroline
went" -> "I went"), possessive ("Caroline's" -> "my"), and elsewhere an object ("with Caroline" ->
"with me"). Third-person pronouns become first person too, but only where the question names no one
else (then "her" can only be the owner): "her friends" -> "my friends", "to her" -> "to me". A
question the rules do not change is left out of the comparison.
"""

from __future__ import annotations

import re

AUX = {
    "did": "did",
    "does": "do",
    "do": "do",
    "is": "am",
    "was": "was",
    "has": "have",
    "have": "have",
    "will": "will",
    "would": "would",
    "could": "could",
    "can": "can",
    "should": "should",
    "might": "might",
    "may": "may",
    "must": "must",
}
VERB_AFTER_I = {"is": "am", "has": "have", "does": "do", "was": "was"}
SUBJECT_PRONOUN = {
    "she": "I",
    "he": "I",
    "herself": "myself",
    "himself": "myself",
    "his": "my",
    "hers": "mine",
}
OBJECT_AFTER = {
    "to",
    "for",
    "with",
    "about",
    "at",
    "in",
    "on",
    "from",
    "by",
    "of",
    "and",
    "or",
    "than",
    "as",
}


def to_first_person(question: str, name: str, others: tuple[str, ...] = ()) -> str:
    """``question`` as ``name`` would ask it; ``others``: the other people's names (a question naming
    one of them keeps its pronouns)."""
    n = re.escape(name)
    out = re.sub(rf"\b{n}'s\b", "my", question)
    out = re.sub(
        rf"\b({'|'.join(AUX)})\s+{n}\b",
        lambda m: _case(AUX[m.group(1).lower()], m.group(1)) + " I",
        out,
        flags=re.IGNORECASE,
    )
    out = re.sub(
        rf"^{n}\b(\s+(\w+))?",
        lambda m: "I" + (" " + VERB_AFTER_I.get(m.group(2), m.group(2)) if m.group(2) else ""),
        out,
    )
    # the subject of a verb of its own ("changes Caroline has faced", "Caroline went")
    out = re.sub(rf"\b{n}(?=\s+(?:{'|'.join(AUX)}|had|\w+ed)\b)", "I", out)
    out = re.sub(rf"\b{n}\b", "me", out)
    if not any(re.search(rf"\b{re.escape(o)}\b", question) for o in others):
        out = re.sub(
            r"\b(she|he|herself|himself|his|hers)\b",
            lambda m: _case(SUBJECT_PRONOUN[m.group(1).lower()], m.group(1)),
            out,
            flags=re.IGNORECASE,
        )
        out = re.sub(r"\b([Hh]er)\b(\s*)(\w*)", _her, out)
    out = re.sub(r"\bI (has|is|does)\b", lambda m: "I " + VERB_AFTER_I[m.group(1)], out)
    return re.sub(r"\bI and (\w+)", r"\1 and I", out)  # "did Melanie and I", as people say it


def _her(m: re.Match) -> str:
    """ "her" before a noun is "my", as an object ("to her", "her?") it is "me"."""
    word = m.group(3)
    mine = word and word.lower() not in OBJECT_AFTER
    return ("my" if mine else "me") + m.group(2) + word


def _case(word: str, like: str) -> str:
    return word[0].upper() + word[1:] if like[:1].isupper() else word
