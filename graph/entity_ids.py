"""The highest number a store has given an entity of one kind, forgotten ones included.

A new voice, face or character takes the next number (``voice_4`` after ``voice_3``). Counting only
the entities the store holds now would give a forgotten person's number to the next newcomer, who
would then inherit what the people log says of that number: the name the user gave, a merge, a
split. So the numbers that were given and are gone count too: those a forget removed (its
``forget_log`` row lists them) and those the people log names. An id is never given twice.
"""

from __future__ import annotations

import re

_ID = re.compile(r"\b(voice|face|character)_(\d+)\b")


def highest_issued(store) -> dict[str, int]:
    """The highest number the store holds or held for each kind (``voice``, ``face``,
    ``character``; 0 for none), read in one pass over the entities and the two logs."""
    highest = dict.fromkeys(("voice", "face", "character"), 0)

    def seen(text: str) -> None:
        for kind, n in _ID.findall(text):
            highest[kind] = max(highest[kind], int(n))

    for r in store.entities.search().select(["entity_id"]).limit(None).to_list():
        seen(r["entity_id"])
    for r in store.forget_log.search().select(["entity_ids"]).limit(None).to_list():
        seen(" ".join(r["entity_ids"] or ()))
    for r in store.people_log.search().select(["person", "args"]).limit(None).to_list():
        seen(f"{r['person']} {r['args']}")
    return highest
