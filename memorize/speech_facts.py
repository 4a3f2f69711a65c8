"""Names and facts a speaker states about themself, read from first-person speech.

Patterns for the common self-introductions ("I'm Sheila", "this is Diane", "my name is …") and
statements about where one is from or lives. They are heuristics for the offline writer; the LLM
writer states facts instead.
"""

from __future__ import annotations

import re

_NAME = r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)"
_PLACE = r"((?:St\. )?[A-Z][a-z]+(?: [A-Z][a-z]+){0,2})"
_INTRO = re.compile(
    r"\b(?:I'm|I am|[Mm]y name is|[Tt]his is|[Ii]t's|[Cc]all me)\s+" + _NAME + r"\b"
)
# Capitalised words that follow "I'm" or "this is" without being a name
_NOT_NAMES = {
    "I",
    "A",
    "An",
    "The",
    "And",
    "But",
    "So",
    "Oh",
    "Okay",
    "Ok",
    "Well",
    "Yes",
    "Yeah",
    "No",
    "Not",
    "Just",
    "Here",
    "There",
    "Good",
    "Fine",
    "Sure",
    "Sorry",
    "Really",
    "Glad",
    "Happy",
    "Home",
    "Back",
    "Going",
    "Very",
    "Still",
    "Also",
    "Now",
    "Always",
    "Never",
    "Great",
    "Right",
    "Done",
    "Ready",
    "Busy",
    "Tired",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "English",
    "American",
}
_FACTS = (
    (
        "is from",
        re.compile(
            r"\b(?:originally from|I'm from|I am from|I come from|born in|grew up in)\s+" + _PLACE
        ),
    ),
    ("lives in", re.compile(r"\b(?:I live in|I'm living in|I moved to)\s+" + _PLACE)),
    (
        "lives in",
        re.compile(r"\b(?:I'm|I am|[Tt]his is)\s+" + _NAME + r"\s+(?:here\s+)?in\s+" + _PLACE),
    ),
)
# The speaker speaks of themself: "I", or a self-introduction "(hi,) this is …" / "it's …" opening the sentence.
_FIRST_PERSON = re.compile(
    r"\bI(?:'m|'ve|'d)?\b|^(?:\s*(?:hi|hello|hey|yes|yeah|oh|and|so|well)\b,?)*\s*"
    r"(?:this is|it's)\b",
    re.IGNORECASE,
)
# Someone else is the subject: "my son was born in …", "he grew up in …", "you're from …".
_OTHER_SUBJECT = re.compile(
    r"\b(?:you|he|she|they|we|it|my|his|her|their|our|your|its)\b", re.IGNORECASE
)
_WHEN = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday|spring|summer|autumn|fall|winter|\d{4})"
)
_AT_A_TIME = re.compile(
    r"^\s+(?:in|on|at|during)\s+" + _WHEN + r"\b"
)  # "This is Paris in April": a place, a time
_TEMPORARY = re.compile(
    r"^\s*(?:this|next|for|until|till|today|tonight|tomorrow|right now|at the moment|"
    r"on (?:vacation|holiday|business|a trip))\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?]+(?:[.!?]+|$)")


def statements(text: str) -> list[str]:
    """The sentences of ``text`` that are not questions ("Are you originally from Chicago?")."""
    return [s for s in _SENTENCE.findall(text) if s.strip() and not s.rstrip().endswith("?")]


def _about_the_speaker(before: str) -> bool:
    """Whether the speaker is the subject at the end of ``before`` (the sentence up to a fact's
    value): a first-person word, or an opening self-introduction, with no other subject after it."""
    first = [m.end() for m in _FIRST_PERSON.finditer(before)]
    if not first:
        return False
    return not _OTHER_SUBJECT.search(before, first[-1])


def names_in(text: str) -> list[str]:
    """Names a speaker gives for themself: "This is Diane in New Jersey" -> ["Diane"]; not in
    questions, not about someone else ("my friend, I'm told, is …"), and not a place at a time
    ("This is Paris in April")."""
    out = []
    for sentence in statements(text):
        for m in _INTRO.finditer(sentence):
            name = m.group(1)
            # "I'm …", "my name is …", "call me …" say who speaks; "this is …", "it's …" only open a call
            own = not re.match(r"(?i)this is|it's", m.group(0))
            if (
                name in _NOT_NAMES
                or _AT_A_TIME.match(sentence[m.end() :])
                or not (own or _about_the_speaker(sentence[: m.start(1)]))
            ):
                continue
            out.append(name)
    return out


# words that open an address: "Hey Caroline", "Thanks, Melanie!", "Congrats Caroline"
_GREETING = (
    r"(?:hey|hi|hiya|hello|thanks|thank you|bye|goodbye|congrats|congratulations|see you|take care|"
    r"good morning|good night|morning|welcome|cheers|sorry|wow|oh|yes|yeah|well|dear)"
)
_ADDRESS = (
    re.compile(
        r"\b"
        + _GREETING
        + r",?\s+"
        + _NAME
        + r"\b(?!['’]s\b)(?!\s+(?:is|was|has|had|and|or|said|says|told)\b)",
        re.IGNORECASE,
    ),  # "… hey Caroline …"
    re.compile(r",\s*" + _NAME + r"\s*[.!?]*\s*$"),  # "That's great, Melanie!"
)
_NOT_ADDRESSED = _NOT_NAMES | {
    "Me",
    "You",
    "Everyone",
    "Guys",
    "Man",
    "Dude",
    "Girl",
    "Mom",
    "Dad",
    "Honey",
    "Buddy",
    "Thanks",
    "Thank",
    "Hey",
    "Hi",
    "Hello",
    "Bye",
    "Wow",
    "Congrats",
    "Congratulations",
    "Morning",
    "Welcome",
    "Cheers",
    "God",
    "Lord",
    "Jesus",
    "Again",
    "Too",
    "Though",
    "Everything",
    "Everybody",
    "Anyway",
    "Haha",
    "Lol",
    "Omg",
    "Awesome",
    "Nice",
    "Cool",
}


def addressed_in(text: str) -> list[str]:
    """Names the speaker calls the listener by: "Hey Caroline, how are you?", "Thanks, Melanie!",
    "That's great, Jon." -> the listener's name. The name must be capitalised as a name is in a
    transcript; "hey you" or "thanks, everyone" name nobody."""
    out = []
    for sentence in _SENTENCE.findall(text):
        for pattern in _ADDRESS:
            for m in pattern.finditer(sentence):
                name = m.group(1)
                if (
                    name[0].isupper()
                    and name.capitalize() not in _NOT_ADDRESSED
                    and name not in out
                ):
                    out.append(name)
    return out


def facts_in(text: str) -> list[tuple[str, str]]:
    """(relation, value) a speaker states about themself: "I'm originally from Chicago" ->
    [("is from", "Chicago")]. Questions, facts about others ("My son was born in Boston") and
    passing stays ("I'm here in Denver this week") are not the speaker's facts."""
    out = []
    for sentence in statements(text):
        for relation, pattern in _FACTS:
            for m in pattern.finditer(sentence):
                last = m.lastindex
                assert last is not None  # every fact pattern captures its value, last
                value = m.group(last)
                rest = sentence[m.end() :]
                if (
                    value.split()[0] in _NOT_NAMES
                    or re.fullmatch(_WHEN, value.split()[0])
                    or not _about_the_speaker(sentence[: m.start(last)])
                    or (relation == "lives in" and _TEMPORARY.match(rest))
                ):
                    continue
                out.append((relation, value))
    return list(dict.fromkeys(out))
