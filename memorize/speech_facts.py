"""Names and facts a speaker states about themself, read from first-person speech.

Patterns for the common self-introductions ("I'm Sheila", "this is Diane", "my name is …") and
statements about where one is from or lives. They are heuristics for the offline writer; the LLM
writer states facts instead.
"""

from __future__ import annotations

import re

_NAME = r"([A-Z][a-z]+(?:-[A-Z][a-z]+)?)"
_PLACE = r"((?:St\. )?[A-Z][a-z]+(?: [A-Z][a-z]+){0,2})"
_INTRO = re.compile(r"\b(?:I'm|I am|[Mm]y name is|[Tt]his is|[Ii]t's|[Cc]all me)\s+" + _NAME + r"\b")
# Capitalised words that follow "I'm" or "this is" without being a name
_NOT_NAMES = {
    "I", "A", "An", "The", "And", "But", "So", "Oh", "Okay", "Ok", "Well", "Yes", "Yeah", "No", "Not", "Just",
    "Here", "There", "Good", "Fine", "Sure", "Sorry", "Really", "Glad", "Happy", "Home", "Back", "Going",
    "Very", "Still", "Also", "Now", "Always", "Never", "Great", "Right", "Done", "Ready", "Busy", "Tired",
    "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "English", "American",
}
_FACTS = (
    ("is from", re.compile(r"\b(?:originally from|I'm from|I am from|I come from|born in|grew up in)\s+" + _PLACE)),
    ("lives in", re.compile(r"\b(?:I live in|I'm living in|I'm in|I am in|I moved to)\s+" + _PLACE)),
    ("lives in", re.compile(r"\b(?:I'm|I am|[Tt]his is)\s+" + _NAME + r"\s+(?:here\s+)?in\s+" + _PLACE)),
)


def names_in(text: str) -> list[str]:
    """Names a speaker gives for themself: "This is Diane in New Jersey" -> ["Diane"]."""
    return [m.group(1) for m in _INTRO.finditer(text) if m.group(1) not in _NOT_NAMES]


def facts_in(text: str) -> list[tuple[str, str]]:
    """(relation, value) a speaker states about themself: "I'm originally from Chicago" ->
    [("is from", "Chicago")]."""
    out = []
    for relation, pattern in _FACTS:
        for m in pattern.finditer(text):
            value = m.group(m.lastindex)
            if value.split()[0] not in _NOT_NAMES:
                out.append((relation, value))
    return list(dict.fromkeys(out))
