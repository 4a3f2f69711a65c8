"""The offline answerer: hybrid search, then an extractive answer from the best evidence.

Deterministic and model-free (beyond the store's text embedder). It cites exactly the memories
its answer quotes, and nothing it did not read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from graph.records import Hit
from graph.store import Store

_WORD = re.compile(r"[a-z0-9']+")
STOPWORDS = frozenset("""
a an and are as at be been but by did do does for from had has have he her here him his how i if in
into is it its me my of on or our she so than that the their them then there these they this to was
we were what when where which who whom whose why will with would you your
""".split())


@dataclass(frozen=True)
class Citation:
    clip_id: str
    source: str
    start_s: float  # offset in the source recording
    end_s: float


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str
    citations: tuple[Citation, ...]
    evidence: tuple[Hit, ...]  # what was read, best first

    def to_json(self) -> dict:
        return {"answer": self.answer,
                "citations": [{"clip_id": c.clip_id, "source": c.source, "start_s": round(c.start_s, 2),
                               "end_s": round(c.end_s, 2)} for c in self.citations]}


def content_terms(text: str) -> set[str]:
    return {w.strip("'") for w in _WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 1}


def _rerank(question: str, hits: list[Hit]) -> list[Hit]:
    """Fused rank plus word overlap with the question: exact terms (names, places) matter most."""
    q = content_terms(question)
    if not q:
        return hits

    def key(h: Hit) -> float:
        overlap = len(q & content_terms(h.memory.text)) / len(q)
        return overlap + 30.0 * h.score  # RRF scores are ~1/60: scale them to break ties only

    return sorted(hits, key=key, reverse=True)


_NAMED = re.compile(r"(\b[A-Z][\w-]*) \(<(character_\d+)>\)")
_ID = re.compile(r"<((?:face|voice|character|thing)_\d+)>")


def known_names(store: Store) -> dict[str, str]:
    """Entity id -> person's name, for characters with a name and the faces and voices linked to them."""
    names = {c.entity_id: c.name for c in store.load_entities("character") if c.name}
    for edge in store.all_edges("same_person"):
        if edge.dst_id in names:
            names[edge.src_id] = names[edge.dst_id]
    return names


def render(text: str, names: dict[str, str]) -> str:
    """Memory text for people: "Sheila (<character_1>)" -> "Sheila", "<voice_1>" -> "Sheila" when
    known; ids stay where no name is known."""
    text = _NAMED.sub(r"\1", text)
    return _ID.sub(lambda m: names.get(m.group(1), m.group(0)), text)


class OfflineAnswerer:
    def __init__(self, store: Store, top_k: int = 10) -> None:
        self.store = store
        self.top_k = top_k

    def retrieve(self, question: str, before_ts: float | None = None) -> list[Hit]:
        """The memories the answer is chosen from, best first."""
        return _rerank(question, self.store.search(question, k=self.top_k, before_ts=before_ts))

    def ask(self, question: str, before_ts: float | None = None) -> Answer:
        hits = self.retrieve(question, before_ts)
        if not hits:
            return Answer(question, "I don't know: nothing in memory matches the question.", (), ())
        best = hits[0].memory
        clip = self.store.get_clip(best.clip_id)
        when = datetime.fromtimestamp(best.start_ts, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        if clip is None:  # the clip row commits last: a memory without one is from a clip in flight
            return Answer(question, "I don't know: the matching memory is not committed yet.", (), tuple(hits))
        offset = clip["offset_s"] - clip["start_ts"]
        citation = Citation(best.clip_id, best.source_path, best.start_ts + offset, best.end_ts + offset)
        return Answer(question, f"{render(best.text, known_names(self.store))} (at {when})", (citation,), tuple(hits))
