"""Whether an answer rests on the memories it cites (``control.reason``): no answer rather than a
wrong one.

A small model's reply names the memories it rests on and a short answer. It is given only where:

- every date, number and name it says is in those memories (``unsupported``; a copied
  "yesterday [7 May 2023]" and an ISO date are first written as the memories write dates,
  ``plain_dates``), and the question's own names other than people's are too (``premise_names``);
- at least ``MIN_COVERED`` of its content words are in them (``uncovered``);
- when the question asks about a person, the memories are theirs (``about``), and where that
  person said it, not only as a question or to someone else (``told_of_others``), and the answer
  is not a line copied in the first or second person (``in_person``).

A reply that cites the wrong number may rest on the one line that says it all instead
(``recited``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from control.digest import content_words, stem
from control.when import _MONTH as MONTH
from graph.rows import Memory

ABSTAIN = "not in memory"

# control.when's month names (a capturing group: the dates are read with finditer, whole)
_DATE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)? (?:of )?{MONTH},? \d{{4}}|{MONTH} \d{{1,2}}(?:st|nd|rd|th)?,? "
    rf"\d{{4}}|{MONTH},? \d{{4}})\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_][\w'’-]*|\d+(?:[.,:]\d+)*")
_FUNCTION = frozenset(
    "yes no not likely probably maybe she he they her his their it its i you we a an the and or "
    "in on at of to for with by from as".split()
)


def _norm(word: str) -> str:
    """A word as the checks compare it: lower case, no possessive, no plural "s"."""
    word = re.sub(r"['’]s?$", "", word.lower())
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _date_key(date: str) -> str:
    return " ".join(re.sub(r"(?<=\d)(?:st|nd|rd|th)\b|,|\bof\b", " ", date.lower()).split())


def must_be_said(answer: str, proper: frozenset[str] = frozenset()) -> dict[str, str]:
    """The answer's words that a memory must say, compared as ``_norm`` makes them, each with its
    own spelling: numbers and names (capitalised words but plain function words, and words that
    ``proper``, the shown lines' capitalised words, says are names even in lower case)."""
    out: dict[str, str] = {}
    for w in _WORD.findall(_DATE.sub(" ", answer)):
        low = _norm(w)
        if w[0].isdigit() or low in proper or (w[0].isupper() and low not in _FUNCTION):
            out[low] = w.lower()
    return out


def unsupported(
    answer: str,
    cited: Sequence[str],
    people: frozenset[str] = frozenset(),
    shown: Sequence[str] = (),
) -> set[str]:
    """What the answer says that the cited lines do not: each date it gives (as a whole: "7 May
    2023" needs "7 May 2023", not a 7 somewhere and a May elsewhere), each number and each name
    (``must_be_said``). ``people``: the names known to the store, which the question may supply."""
    text = " ".join(cited)
    dates = {_date_key(m.group(0)) for m in _DATE.finditer(text)}
    missing = {_date_key(m.group(0)) for m in _DATE.finditer(answer)} - dates
    said = {_norm(w) for w in _WORD.findall(text)} | {_norm(p) for p in people}
    said |= {w.replace(",", "") for w in said}
    proper = (
        frozenset(_norm(w) for line in shown for w in _WORD.findall(line) if w[0].isupper())
        - _FUNCTION
    )
    return missing | {
        word
        for norm, word in must_be_said(answer, proper).items()
        if norm not in said and norm.replace(",", "") not in said
    }


_RELATIVE_DATED = re.compile(
    r"\b(?:yesterday|today|tonight|tomorrow|(?:(?:last|next|this|this past) \w+)|"
    r"(?:\w+ (?:days?|weeks?|months?|years?) ago))\s*\[([^\]]+)\]",
    re.IGNORECASE,
)


_ISO_DATE = re.compile(r"\b((?:19|20)\d\d)-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])\b")


def _written_date(m: re.Match) -> str:
    at = datetime(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return f"{at.day} {at:%B %Y}"


def plain_dates(answer: str) -> str:
    """A copied "yesterday [7 May 2023]" as the date alone, no square brackets left, and an ISO
    date ("2023-05-07") written as the memories write dates ("7 May 2023")."""
    answer = _RELATIVE_DATED.sub(r"\1", answer)
    answer = _ISO_DATE.sub(_written_date, answer)
    return " ".join(re.sub(r"\[([^\]]*)\]", r"\1", answer).split())


def named_in(question: str, people: set[str]) -> list[str]:
    """The known people's names the question says, in any case."""
    return [p for p in sorted(people) if re.search(rf"\b{re.escape(p)}\b", question, re.IGNORECASE)]


_SPEAKER = re.compile(r"<((?:voice|character|face)_\d+)> said:")


def about(memory: Memory, line: str, person: str, names: dict[str, str]) -> bool:
    """Whether a memory is ``person``'s: said by them (its speaker's id, not its text, says who),
    or, where nobody speaks (a screen, a scene), naming them. A line someone else says that names
    them is not: "Thanks, Melanie!" is Caroline's, and the question about Melanie that it answers
    is a trap (LoCoMo's adversarial questions ask about the other person)."""
    speaker = _SPEAKER.match(memory.text)
    if speaker:
        return names.get(speaker.group(1), "").lower() == person.lower()
    return re.search(rf"\b{re.escape(person)}\b", line, re.IGNORECASE) is not None


_SENTENCE = re.compile(r"[^.!?…]+[.!?…]*")
_SECOND = re.compile(
    r"\b(?:you|your|yours|yourself|you're|you've|you'll|you'd|ya)\b", re.IGNORECASE
)
_FIRST = re.compile(
    r"\b(?:i|i'm|i've|i'll|i'd|me|my|mine|myself|we|we're|we've|our|ours|us)\b", re.IGNORECASE
)
_HEDGES = frozenset("likely unlikely probably maybe possibly".split())
MIN_COVERED = 0.5  # of the answer's content words, the share its memories must say


def _stem(word: str) -> str:
    """A word as ``_norm`` and ``control.digest.stem`` make it: "designed", "designs", "design"
    alike."""
    return stem(_norm(word))


def answer_words(answer: str) -> set[str]:
    """The answer's content words (``control.digest.content_words``) as ``_stem`` compares them,
    hedges ("likely") left out."""
    return {_stem(w) for w in content_words(answer) if w not in _HEDGES and not w.isdigit()}


def uncovered(answer: str, cited: Sequence[str]) -> tuple[int, int]:
    """(how many of the answer's content words its cited lines do not say, how many it has)."""
    want = answer_words(answer)
    said = {_stem(w) for w in _WORD.findall(" ".join(cited))}
    return len(want - said), len(want)


def _spoken(line: str) -> str:
    """What a memory line says, its date and "X said:" left off."""
    text = line.split(": ", 1)[-1]
    said = re.match(r'[^"“]{0,60}?\bsaid:\s*["“](.*)', text, re.DOTALL)
    return said.group(1) if said else text


def told_of_others(answer: str, lines: Sequence[str], people: frozenset[str] = frozenset()) -> bool:
    """Whether every sentence of ``lines`` (each said by the person asked about) that says one of
    the answer's words asks a question or speaks to someone else ("your store looks great", "What
    dance were you doing?") rather than of the speaker: what the answer rests on is then the
    listener's, not the speaker's (LoCoMo's adversarial questions ask about the wrong one). The
    answer's words that are ``people``'s names do not count: "Way to go, Nate!" names the listener,
    it says nothing of the speaker."""
    names = {_stem(w) for p in people for w in _WORD.findall(p)}
    want = answer_words(answer) - names
    holding = [
        sentence
        for line in lines
        for sentence in _SENTENCE.findall(_spoken(line))
        if want & {_stem(w) for w in _WORD.findall(sentence)}
    ]
    if not holding:
        return False
    return all(
        sentence.rstrip().rstrip('"”').endswith("?")
        or (_SECOND.search(sentence) and not _FIRST.search(sentence))
        for sentence in holding
    )


_QUESTION_WORDS = frozenset(
    "what when where who whom whose which why how did do does is are was were has have had can "
    "could would should will".split()
)


def in_person(answer: str) -> bool:
    """Whether the answer speaks as "I" or "we", or to "you" ("When my dance crew took home
    first…", "Congratulations on your victory!"): a speaker's line copied, not an answer about the
    person asked of, whose own words it may not even be."""
    return _SPEAKS_AS.search(answer) is not None


# as _FIRST and _SECOND, in the case a sentence writes them: "I" upper case, "us" not "US", "me"
# not "ME"
_SPEAKS_AS = re.compile(
    r"\b(?:I(?:['’](?:m|ve|ll|d))?|[Mm](?:e|y|ine|yself)|[Ww]e(?:['’](?:re|ve|ll|d))?|[Oo]urs?|us"
    r"|[Yy]ou(?:rs?|rself|['’](?:re|ve|ll|d))?)\b"
)


def premise_names(question: str, people: set[str]) -> set[str]:
    """The question's names other than people's (places, titles, things: "Barcelona", "HR"),
    which the memories an answer rests on must say: capitalised words after the first, not months
    or days."""
    words = _WORD.findall(_DATE.sub(" ", question))
    known = {p.lower() for p in people}
    return {
        _norm(w)
        for w in words[1:]
        if w[0].isupper()
        and _norm(w) not in known
        and w.lower() not in _FUNCTION | _QUESTION_WORDS
        and not re.fullmatch(
            rf"{MONTH}|monday|tuesday|wednesday|thursday|friday|saturday|sunday", w, re.IGNORECASE
        )
    }


def not_resting_on(
    question: str,
    answer: str,
    lines: Sequence[str],
    people: frozenset[str],
    shown: Sequence[tuple[Memory, str]],
) -> str:
    """Why ``answer`` does not rest on ``lines`` ("" where it does): a name, number or date they
    do not say (``unsupported``), a name of the question's they do not say (``premise_names``),
    or too few of its words (``uncovered``)."""
    missing = unsupported(answer, lines, people, [line for _, line in shown])
    if missing:
        return (
            f"the answer names {', '.join(sorted(missing))}, which its memories do not say: "
            "not given"
        )
    absent = premise_names(question, set(people)) - {
        _norm(w) for w in _WORD.findall(" ".join(lines))
    }
    if absent:
        return (
            f"the question speaks of {', '.join(sorted(absent))}, which the memories the answer "
            "cites do not: not given"
        )
    left, total = uncovered(answer, lines)
    if total and left > total * (1 - MIN_COVERED):
        return f"{left} of the answer's {total} words are not in the memories it cites: not given"
    return ""


def recited(
    question: str, answer: str, pool: Sequence[tuple[Memory, str]], people: frozenset[str]
) -> list[tuple[Memory, str]]:
    """The one line of ``pool`` the answer may rest on instead of the ones its reply cited (a
    small model that picked the right words or date often cites the wrong number): a line that
    says every word and date of the answer and speaks of what the question asks, the one sharing
    the most of the question's words besides people's names: at least one for a date, two for
    other answers (with one, a re-cited answer was more often the other person's, LoCoMo's
    adversarial questions, than right)."""
    dates = {_date_key(m.group(0)) for m in _DATE.finditer(answer)}
    need = 1 if dates else 2
    want = answer_words(answer)
    asked = answer_words(question) - {_stem(p) for p in people}
    best: tuple[int, int] | None = None
    for i, (_, line) in enumerate(pool):
        words = {_stem(w) for w in _WORD.findall(line)}
        if not want <= words or not dates <= {_date_key(m.group(0)) for m in _DATE.finditer(line)}:
            continue
        shared = len(asked & words)
        if shared >= need and (best is None or shared > best[0]):
            best = (shared, i)
    return [pool[best[1]]] if best else []


def said_by(memory: Memory, person: str, names: dict[str, str]) -> bool:
    """Whether ``person`` said the memory (its speaker's id says who)."""
    speaker = _SPEAKER.match(memory.text)
    return speaker is not None and names.get(speaker.group(1), "").lower() == person.lower()


def is_abstention(answer: str) -> bool:
    low = answer.lower()
    return ABSTAIN in low or "not mentioned" in low or "no information" in low
