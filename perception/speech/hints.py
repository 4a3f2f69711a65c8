"""Names the speech recogniser is told to expect, and the spellings it must keep.

A recogniser writes a name it has never been told about as the nearest common word or the common
spelling ("Gina" as "Gia", "Jon" as "John"). Names the user gave, a contact list and names already
known are handed to the second pass as hotwords (``perception.speech.second_pass``), and a spelling
the user or a contact list gives wins over a same-sounding one the recogniser wrote. Hints only
change how speech is written: a name still needs evidence in what was said to name anyone
(``memorize.naming``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from perception.records import SpeechTurn, Word

log = logging.getLogger(__name__)

# Whisper keeps at most 223 prompt tokens for hotwords and as many for the preceding text, of a 448
# token window; a name is 1-4 tokens with its space. Names beyond this are not told (most wanted first)
MAX_HOTWORD_CHARS = 400
MAX_CONTACTS_BYTES = 16 * 1024 * 1024
_NAME = re.compile(r"^[^\W\d_][^\W\d_'’.\- ]*(?:['’.\- ][^\W\d_]+)*$")


@dataclass(frozen=True)
class SpeechHints:
    """``names``: every name to expect, most wanted first (the user's, contacts, established, seen on
    screen); ``spellings``: the subset whose spelling wins over a same-sounding word (given by the
    user or a contact list)."""

    names: tuple[str, ...] = ()
    spellings: tuple[str, ...] = ()

    def hotwords(self, max_chars: int = MAX_HOTWORD_CHARS) -> str:
        """The names as one hotword string, cut at a whole name to ``max_chars``."""
        out: list[str] = []
        size = 0
        for name in self.names:
            if size + len(name) + 1 > max_chars:
                break
            out.append(name)
            size += len(name) + 1
        return " ".join(out)

    def __bool__(self) -> bool:
        return bool(self.names)


def mostly_hints(
    turns: list[SpeechTurn],
    hints: SpeechHints | None,
    heard: frozenset[str] | set[str] = frozenset(),
) -> bool:
    """Whether a reading is the hinted names rather than speech: of its words, hinted names not in
    ``heard`` are more than a third (and four or more), or two thirds (and two or more), or one such
    name twice in a row, or three in a row. Told a long list, Whisper may write the list instead of
    the speech ("Name1 Name4 Name")."""
    if not hints:
        return False
    hinted = {n.casefold() for n in hints.names}
    said = [w.strip(".,!?;:\"'").casefold() for t in turns for w in t.text.split()]
    told = [w in hinted and w not in heard for w in said]
    n = sum(told)
    if n > max(3, len(said) // 3) or (n >= 2 and 3 * n >= 2 * len(said)):
        return True
    run = 0
    for i, is_told in enumerate(told):
        run = run + 1 if is_told else 0
        if run >= 3 or (run >= 2 and said[i] == said[i - 1]):
            return True
    return False


def sound_key(word: str) -> str:
    """A rough spelling-independent key: "John" and "Jon", "Katherine" and "Catherine", "Ann" and
    "Anne" share one. Only compares names; not a phonetic algorithm for other words."""
    w = "".join(c for c in word.casefold() if c.isalpha())
    if not w:
        return ""
    w = w.replace("ph", "f").replace("ck", "k").replace("qu", "kw")
    w = re.sub(r"c(?=[eiy])", "s", w).replace("c", "k")
    w = w[0] + w[1:].replace("h", "")  # silent or softening h: "John", "Thomas", "Sarah"
    w = re.sub(r"(.)\1+", r"\1", w)  # doubled letters: "Ann", "Phillip"
    w = w[0] + re.sub(r"(?<=.)y", "i", w[1:]) if len(w) > 1 else w
    return w[:-1] if len(w) > 2 and w.endswith("e") else w


def respell(turns: list[SpeechTurn], hints: SpeechHints | None) -> list[SpeechTurn]:
    """Turns whose capitalised words that sound like a taught spelling but are written otherwise
    ("John" for a "Jon" the user named) are written as taught. A word that is itself a hinted name
    stays: with both a John and a Jon known, nothing says which was meant."""
    if not hints or not hints.spellings:
        return turns
    taught: dict[str, str] = {}
    for name in hints.spellings:
        if " " not in name:
            taught.setdefault(sound_key(name), name)
    known = {n.casefold() for n in hints.names}
    if not taught:
        return turns

    def fix(text: str) -> str:
        core = text.strip(".,!?;:\"'()")
        if not core[:1].isupper() or core.casefold() in known:
            return text
        spelled = taught.get(sound_key(core))
        return text.replace(core, spelled, 1) if spelled else text

    out = []
    for t in turns:
        words = tuple(Word(fix(w.text), w.start_s, w.end_s, w.probability) for w in t.words)
        text = " ".join(fix(x) for x in t.text.split(" "))
        out.append(
            SpeechTurn(
                t.segment_id,
                text,
                t.start_s,
                t.end_s,
                t.language,
                words,
                t.voice_embedding,
                t.speaker,
            )
        )
    return out


def clean_name(raw: str) -> str | None:
    """A contact's name as hinted: whitespace collapsed, letters of any script with the joiners
    names use; None for an empty line, a comment, or something that is no name."""
    name = " ".join(raw.split())
    if not name or name.startswith("#") or len(name) > 80:
        return None
    return name if _NAME.match(name) else None


def _vcard_names(text: str) -> list[str]:
    """FN (the name as shown), else N (family;given;...) as "given family", of each card; NICKNAME too."""
    names: list[str] = []
    unfolded = re.sub(r"\r?\n[ \t]", "", text)  # RFC 6350 line folding
    card_fn: str | None = None
    card_n: str | None = None
    for line in unfolded.splitlines():
        key, _, value = line.partition(":")
        field = key.split(";", 1)[0].strip().upper().rsplit(".", 1)[-1]  # "item1.FN" groups
        value = value.replace("\\,", ",").replace("\\;", ";").strip()
        if field == "BEGIN":
            card_fn = card_n = None
        elif field == "FN":
            card_fn = value
        elif field == "N":
            family, given = (value.split(";") + ["", ""])[:2]
            card_n = f"{given} {family}".strip()
        elif field == "NICKNAME":
            names.extend(v.strip() for v in value.split(","))
        elif field == "END":
            if card_fn or card_n:
                names.append(card_fn or card_n or "")
    return names


def read_contacts(path: str | Path) -> tuple[tuple[str, ...], str]:
    """The names in a contact list, and a note ("" when all is well). A vCard file (``.vcf``, or
    text starting ``BEGIN:VCARD``) gives each card's shown name and nicknames; any other file is
    one name a line (``#`` starts a comment). Each full name also gives its first word ("Joanna"
    of "Joanna Smith"), which is what people are called. A missing, unreadable or empty file
    gives no names and a note saying so: speech is still transcribed, without these hints."""
    p = Path(path).expanduser()
    try:
        if p.stat().st_size > MAX_CONTACTS_BYTES:
            return (), f"contact list {p} is over {MAX_CONTACTS_BYTES >> 20} MiB: not read"
        text = p.read_text(encoding="utf-8-sig", errors="replace")
    except OSError as e:
        return (), f"contact list {p} could not be read ({e.strerror or e}): no names from it"
    vcard = p.suffix.lower() in (".vcf", ".vcard") or text.lstrip().upper().startswith(
        "BEGIN:VCARD"
    )
    raw = _vcard_names(text) if vcard else text.splitlines()
    names: list[str] = []
    seen: set[str] = set()
    skipped = 0
    for line in raw:
        name = clean_name(line)
        if name is None:
            skipped += bool(line.strip()) and not line.strip().startswith("#")
            continue
        for n in (name, name.split(" ")[0]):
            if n.casefold() not in seen:
                seen.add(n.casefold())
                names.append(n)
    if not names:
        return (), f"contact list {p} holds no names: speech is transcribed without them"
    note = f"contact list {p}: {skipped} line(s) that are no name skipped" if skipped else ""
    return tuple(names), note
