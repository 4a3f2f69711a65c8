"""The highest number a store has given an entity of one kind, forgotten ones included.

A new voice, face or character takes the next number (``voice_4`` after ``voice_3``). Counting only
the entities the store holds now would give a forgotten person's number to the next newcomer, who
would then inherit what the people log says of that number: the name the user gave, a merge, a
split. So the numbers that were given and are gone count too: those a forget removed (its
``forget_log`` row lists them) and those the people log names. An id is never given twice.
"""

from __future__ import annotations

import re

from graph import sql

_ID = re.compile(r"\b(voice|face|character)_(\d+)\b")


def highest_issued(store, kind: str) -> int:
    """The highest number of an entity of ``kind`` the store holds or held (0 for none)."""
    numbers = [
        int(r["entity_id"].rsplit("_", 1)[-1])
        for r in store.entities.search()
        .where(f"kind = {sql.quote(kind)}")
        .select(["entity_id"])
        .limit(None)
        .to_list()
    ]
    for r in store.forget_log.search().select(["entity_ids"]).limit(None).to_list():
        numbers += _numbers(" ".join(r["entity_ids"] or ()), kind)
    for r in store.people_log.search().select(["person", "args"]).limit(None).to_list():
        numbers += _numbers(f"{r['person']} {r['args']}", kind)
    return max(numbers, default=0)


def _numbers(text: str, kind: str) -> list[int]:
    return [int(n) for k, n in _ID.findall(text) if k == kind]
