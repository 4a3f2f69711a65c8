"""What an answer, a digest or a profile shows of a memory: where it can be checked (``Citation``,
``cite``: its clip and its span in the source recording) and its text with people's names
(``known_names``, ``render``: ids turned into the names people have when read).

The answerers (``control.answer``, ``control.agent``, ``control.reason``), the digests, profiles
and the people listing all use them; none of them imports another for these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from control.tools import Person
from graph.rows import Memory
from graph.store import Store


@dataclass(frozen=True)
class Citation:
    clip_id: str
    source: str
    start_s: float  # offset in the source recording
    end_s: float

    def to_json(self) -> dict:
        return {
            "clip_id": self.clip_id,
            "source": self.source,
            "start_s": round(self.start_s, 2),
            "end_s": round(self.end_s, 2),
        }


_NAMED = re.compile(r"(\b[A-Z][\w-]*) \(<(?:face|voice|character)_\d+>\)")
_ID = re.compile(r"<((?:face|voice|character)_\d+)>")


def known_names(people: list[Person]) -> dict[str, str]:
    """Entity id -> person's name, for named people: their character and linked faces and voices."""
    return {e: p.name for p in people if p.name for e in p.ids}


def render(text: str, names: dict[str, str]) -> str:
    """Memory text for people: "Sheila (<character_1>)" -> "Sheila", "<voice_1>" -> "Sheila" when
    known; ids stay where no name is known."""
    text = _NAMED.sub(r"\1", text)
    return _ID.sub(lambda m: names.get(m.group(1), m.group(0)), text)


def cite(store: Store, memory: Memory) -> Citation | None:
    """Where a memory can be checked: its clip and its span in the source recording (None while
    the clip is not committed: the clip row is written last)."""
    offset = store.clip_offset(memory.clip_id)
    if offset is None:
        return None
    return Citation(
        memory.clip_id, memory.source_path, memory.start_ts + offset, memory.end_ts + offset
    )
