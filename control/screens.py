"""A screen read again a moment later, further along: the earlier reading gives way to the later.

Screenshots are cut into 30 s clips, and a line typed across a cut is read half in one clip
("echo the parking spot is level 3 b") and whole in the next ("... bay 42", and the command's
output under it). Both are screen memories; the half is the shorter text, and search ranked it
first, so the answer was the half line. A later screen memory of the same recording that begins
after the earlier one was last seen, within ``CONTINUED_S`` of its start, and shows every line it
showed, in the same order, each whole or further along, holds all the earlier one told and more:
it takes the earlier one's place and the better of their scores. A memory is only ever replaced
by one that contains it, so no answer loses what it said; a reading that nothing kept within
``CONTINUED_S`` continues stays, so an answer's time is at most that much later than the reading
it stands for.
"""

from __future__ import annotations

from control.candidates import Candidate
from memorize.writer_offline import screen_lines

CONTINUED_S = 120.0  # a reading that begins this long after another's start still continues it


def continues(later: tuple[str, ...], earlier: tuple[str, ...]) -> bool:
    """Whether ``later``'s lines hold ``earlier``'s in the same order, each matched by a line of
    its own that begins as it (the same line, or further along), and something more: a line
    longer or a line added."""
    if len(later) < len(earlier) or later == earlier:
        return False
    i = 0
    for line in later:  # the earliest match for each line in turn leaves the most for the rest
        if i < len(earlier) and line.startswith(earlier[i]):
            i += 1
    return i == len(earlier)


def latest_screens(cands: list[Candidate]) -> list[Candidate]:
    """The scored ``cands`` without each screen memory that a later one kept among them continues
    (``continues``, within ``CONTINUED_S``), that one scored as the better of the two; in their
    order. Continuing is transitive, so the latest reading kept stands for a line typed over
    three clips."""
    screens = sorted(
        ((c, lines) for c in cands if (lines := screen_lines(c.memory)) is not None),
        key=lambda cl: (cl[0].memory.start_ts, cl[0].memory.memory_id),
    )
    dropped: set[str] = set()
    for i in range(len(screens) - 1, -1, -1):  # the latest first: what is kept after is known
        a, a_lines = screens[i]
        later = (
            b
            for b, b_lines in reversed(screens[i + 1 :])
            if b.memory.memory_id not in dropped
            and b.memory.source_path == a.memory.source_path
            and a.memory.end_ts <= b.memory.start_ts <= a.memory.start_ts + CONTINUED_S
            and b.memory.start_ts > a.memory.start_ts
            and continues(b_lines, a_lines)
        )
        if (kept := next(later, None)) is not None:
            dropped.add(a.memory.memory_id)
            kept.score = max(kept.score, a.score)
    return [c for c in cands if c.memory.memory_id not in dropped] if dropped else cands
