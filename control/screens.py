"""A screen read again a moment later, further along: the earlier reading gives way to the later.

Screenshots are cut into 30 s clips, and a line typed across a cut is read half in one clip
("echo the parking spot is level 3 b") and whole in the next ("... bay 42", and the command's
output under it). Both are screen memories; the half is the shorter text, and search ranked it
first, so the answer was the half line. A later screen memory that shows every line an earlier one
showed, each whole or further along, within ``CONTINUED_S`` and from the same recording, holds all
the earlier one told and more: it takes the earlier one's place and the better of their scores. A
memory is only ever replaced by one that contains it, so no answer loses what it said.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memorize.writer_offline import screen_lines

if TYPE_CHECKING:
    from control.planner import Candidate

CONTINUED_S = 120.0  # a later reading this long after the earlier one began still continues it


def continues(later: tuple[str, ...], earlier: tuple[str, ...]) -> bool:
    """Whether the lines ``later`` show every line of ``earlier``, each as it was or further
    along (it begins the same), and something more."""
    return later != earlier and all(any(ln.startswith(e) for ln in later) for e in earlier)


def latest_screens(cands: list[Candidate]) -> list[Candidate]:
    """The scored ``cands`` without each screen memory that a later one among them continues
    (``continues``), the later one scored as the better of the two; in their order."""
    screens = sorted(
        ((c, lines) for c in cands if (lines := screen_lines(c.memory)) is not None),
        key=lambda cl: (cl[0].memory.start_ts, cl[0].memory.memory_id),
    )
    later_of: dict[str, Candidate] = {}
    for i, (a, a_lines) in enumerate(screens):
        for b, b_lines in screens[i + 1 :]:
            if b.memory.start_ts - a.memory.start_ts > CONTINUED_S:
                break
            if (
                b.memory.source_path == a.memory.source_path
                and b.memory.start_ts > a.memory.start_ts
                and continues(b_lines, a_lines)
            ):
                later_of[a.memory.memory_id] = b
                break
    if not later_of:
        return cands
    by_id = {c.memory.memory_id: c for c in cands}
    for memory_id, last in later_of.items():
        while last.memory.memory_id in later_of:  # a line typed over three clips
            last = later_of[last.memory.memory_id]
        last.score = max(last.score, by_id[memory_id].score)
    return [c for c in cands if c.memory.memory_id not in later_of]
