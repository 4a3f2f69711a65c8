"""Putting results that arrive in any order back into sequence order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class ReorderBuffer(Generic[T]):
    """Holds results until every earlier sequence number has been handed out.

    ``put(seq, item)`` returns the items now ready, in order. Sequence numbers start at ``first``
    and must each come once; a repeat (a retried task whose first attempt also finished) is dropped.
    """

    def __init__(self, first: int = 0) -> None:
        self.next = first
        self.waiting: dict[int, T] = {}

    def put(self, seq: int, item: T) -> list[T]:
        if seq < self.next or seq in self.waiting:
            return []
        self.waiting[seq] = item
        ready = []
        while self.next in self.waiting:
            ready.append(self.waiting.pop(self.next))
            self.next += 1
        return ready

    def __len__(self) -> int:
        return len(self.waiting)


def in_order(pairs: Iterable[tuple[int, T]], first: int = 0) -> Iterator[T]:
    """The items of (seq, item) pairs in sequence order, each as soon as it can be."""
    buffer: ReorderBuffer[T] = ReorderBuffer(first)
    for seq, item in pairs:
        yield from buffer.put(seq, item)
    if buffer.waiting:
        raise RuntimeError(
            f"results {sorted(buffer.waiting)[:5]} came without result {buffer.next}: "
            "a perception task was lost"
        )
