"""The offline planner: multi-round retrieval without a language model, deterministic.

Rounds:

1. **Read the question.** People named in it (by their names in memory) and time expressions
   ("in June", "last week", "8 May 2023") become filters; "I", "me", "my", "mine" and "myself"
   name the owner (``mnemo people me``), when one is known. Of several people named, the question
   is about the first ("What did Jon say about Gina's store?", "What did Sarah tell me?") unless
   they are listed together ("What do Jon and Gina have in common?").
2. **Search.** A hybrid search for the question; then the same search restricted to each named
   person's memories, and to each time window. The question is embedded once.
3. **Expand** from the best memories not yet expanded: their neighbours in the same recording (the
   turns just before and after) are read in one query.
4. **Re-rank** everything read: cosine similarity (neighbours' too, from their stored vectors)
   plus scaled BM25; a memory inherits part of the
   score of the memory just before it (more when that one asked a question: the answer follows
   it) and of the one just after; memories about a named person or inside a named time window get
   a bonus (the people the question is about, not every person it names; for the owner, also what
   was on their screen while they typed or moved the mouse), and so do memories that
   say when something happened ("last week", "in May") if the question asks when. Rounds 3-4
   repeat until the top ``k`` stops changing (convergence) or ``rounds`` is reached.

The weights were chosen on LoCoMo's dev conversations (``mnemo bench locomo``) from a handful of
round numbers; each is a plain knob below, and the bench reports what the planner gets with them.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from control.candidates import Candidate
from control.screens import latest_screens
from control.tools import MemoryTools, Person
from control.when import TimeWindow, asks_when, says_when, time_windows
from graph.rows import BY_OWNER, Hit, Memory

BM25_WEIGHT = 0.2  # BM25 scaled to [0, 1] by the best full-text score of the question
AFTER_WEIGHT = 0.8  # a memory inherits this share of the score of the memory just before it
AFTER_QUESTION_WEIGHT = 0.95  # ... when that memory asked a question
BEFORE_WEIGHT = 0.7  # ... and this share of the score of the memory just after it
PERSON_BONUS = (
    0.3  # share of the score range added to memories about a person the question is about
)
TIME_BONUS = 0.3  # ... and to memories inside a time window the question names
WHEN_BONUS = 0.2  # ... and to memories that say when, if the question asks when
# the owner in a question; "I" matched in any case ("what did i say"), as people type
FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RetrievalPlan:
    question: str
    people: tuple[Person, ...]  # everyone the question names, in the order named
    windows: tuple[TimeWindow, ...]
    subjects: tuple[Person, ...]  # whom it asks about: the first named, or all when listed together
    when: bool  # it asks when something happened
    me: Person | None = None  # the owner, when the question speaks in the first person


@dataclass(frozen=True)
class Retrieval:
    plan: RetrievalPlan
    ranked: tuple[Candidate, ...]  # best first
    rounds: tuple[str, ...]  # one line per step: what it did (an answer's ``steps``)

    @property
    def memories(self) -> list[Memory]:
        return [c.memory for c in self.ranked]


@dataclass(eq=False)  # one planner is one planner: compared and hashed by identity
class OfflinePlanner:
    tools: MemoryTools
    k: int = 10
    candidates: int = 50
    expand: int = 8
    rounds: int = 2
    window_s: float = 30.0
    _people: list[Person] | None = field(default=None, init=False, repr=False)
    _newest: datetime | None = field(default=None, init=False, repr=False)
    _executor: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="mnemo-planner")
        return self._executor

    def people(self, before_ts: float | None = None) -> list[Person]:
        """Everyone in memory as of the latest ``retrieve`` (read then: a rename, a merge or a new
        person shows in the next question); with ``before_ts``, only people first seen before then."""
        if self._people is None:
            self._people = self.tools.list_people()
        return (
            self._people
            if before_ts is None
            else [p for p in self._people if p.first_seen_ts < before_ts]
        )

    def newest(self) -> datetime:
        """When the newest clip in memory ends: what "last week" is relative to, by default."""
        if self._newest is None:
            ts = self.tools.store.newest_ts()
            self._newest = (
                datetime.fromtimestamp(ts, tz=UTC) if ts is not None else datetime.now(UTC)
            )
        return self._newest

    def plan(
        self, question: str, now: datetime | None = None, before_ts: float | None = None
    ) -> RetrievalPlan:
        at = {}
        people = self.people(before_ts)
        for p in people:
            found = (
                re.search(rf"\b{re.escape(p.name)}\b", question, re.IGNORECASE) if p.name else None
            )
            if found:
                at[p.person_id] = found.start()
        me = self.tools.owner(people)
        first = FIRST_PERSON.search(question) if me is not None else None
        if me is not None and first is not None:
            at[me.person_id] = min(at.get(me.person_id, first.start()), first.start())
        else:
            me = None
        named = tuple(
            sorted((p for p in people if p.person_id in at), key=lambda p: at[p.person_id])
        )
        return RetrievalPlan(
            question,
            named,
            tuple(time_windows(question, now or self.newest())),
            _subjects(question, named, me),
            asks_when(question),
            me,
        )

    def retrieve(self, question: str, before_ts: float | None = None) -> Retrieval:
        store = self.tools.store
        self._people = self.tools.list_people()  # people change under a long-lived planner (serve)
        now = datetime.fromtimestamp(before_ts, tz=UTC) if before_ts is not None else None
        plan = self.plan(question, now, before_ts)
        pool: dict[str, Candidate] = {}
        log: list[str] = [f'"I" is {plan.me.label}, the owner'] if plan.me is not None else []

        def take(hits: list[Hit], label: str) -> int:
            new = 0
            for h in hits:
                c = pool.get(h.memory.memory_id)
                if c is None:
                    c = pool[h.memory.memory_id] = Candidate(h.memory)
                    new += 1
                c.similarity = h.similarity if h.similarity is not None else c.similarity
                c.bm25 = h.bm25 if h.bm25 is not None else c.bm25
                c.found_by.add(label)
            return new

        # the question is searched without the names of people it names: their memories are found
        # (and favoured) by person, and the name would outweigh what is asked about them
        words = plan.question
        for p in plan.people:
            if p.name:
                words = re.sub(rf"\b{re.escape(p.name)}\b(?:'s)?", " ", words, flags=re.IGNORECASE)
        if plan.me is not None:  # "I", "my" name the owner as a name does
            words = FIRST_PERSON.sub(" ", words)
        vector = store.embedder.embed([words])[0]
        search = dict(
            k=self.candidates, candidates=self.candidates, before_ts=before_ts, vector=vector
        )
        # (what the log says, label, filters)
        searches: list[tuple[str, str, dict[str, Any]]] = [(f"search {question!r}", "search", {})]
        searches += [
            (
                f"search about {p.label}" + (" (you)" if p == plan.me else ""),
                f"person:{p.person_id}",
                {"entity_ids": list(p.ids)},
            )
            for p in plan.people
        ]
        searches += [
            (
                f"search within {w.text!r}",
                f"time:{w.text}",
                {"start_ts": w.start_ts, "end_ts": w.end_ts},
            )
            for w in plan.windows
        ]
        # the searches run at once (LanceDB works outside the GIL); their hits are taken in order
        results = self._pool().map(lambda s: store.search(words, **search, **s[2]), searches)
        for (what, label, _), hits in zip(searches, results):
            n = take(hits, label)
            log.append(f"{what}: {n} memories" if label == "search" else f"{what}: {n} new")

        expanded: set[str] = set()
        ranked = self._rank(pool, plan, expanded)
        for _ in range(self.rounds):
            seeds = [c.memory for c in ranked if c.memory.memory_id not in expanded][: self.expand]
            if not seeds:
                break
            expanded.update(m.memory_id for m in seeds)
            n = take(
                store.neighbour_hits(seeds, vector, self.window_s, limit=None, before_ts=before_ts),
                "neighbour",
            )
            log.append(f"expand {len(seeds)} best: {n} neighbouring memories")
            top = [c.memory.memory_id for c in ranked[: self.k]]
            ranked = self._rank(pool, plan, expanded)
            if [c.memory.memory_id for c in ranked[: self.k]] == top:
                log.append("converged: the top memories did not change")
                break
        return Retrieval(plan, tuple(ranked), tuple(log))

    def _rank(
        self, pool: dict[str, Candidate], plan: RetrievalPlan, expanded: set[str]
    ) -> list[Candidate]:
        cands = list(pool.values())
        if not cands:  # nothing matched (or nothing was known yet, before_ts)
            return []
        sims = [c.similarity for c in cands if c.similarity is not None]
        floor = min(sims) if sims else 0.0  # no stored vector (not expected): the least similar
        best_bm25 = max((c.bm25 or 0.0 for c in cands), default=0.0) or 1.0
        own = np.array(
            [
                (c.similarity if c.similarity is not None else floor)
                + BM25_WEIGHT * (c.bm25 or 0.0) / best_bm25
                for c in cands
            ]
        )
        z = own - own.min()
        score = z.copy()
        # neighbours by time within a recording: memories starting together (a turn and the image
        # shown with it) are one step
        order = sorted(
            range(len(cands)), key=lambda i: (cands[i].memory.source_path, cands[i].memory.start_ts)
        )
        steps: list[list[int]] = []
        for i in order:
            m = cands[i].memory
            last = cands[steps[-1][0]].memory if steps else None
            if (
                last is not None
                and last.source_path == m.source_path
                and last.start_ts == m.start_ts
            ):
                steps[-1].append(i)
            else:
                steps.append([i])
        step_z = [max(z[i] for i in s) for s in steps]
        asks = [any(_asks(cands[i].memory.text) for i in s) for s in steps]
        # two steps are known to be adjacent only around an expanded memory: elsewhere the pool
        # may lack what lies between them
        seen = [any(cands[i].memory.memory_id in expanded for i in s) for s in steps]

        def adjacent(a: int, b: int) -> bool:
            return (
                0 <= a
                and b < len(steps)
                and (seen[a] or seen[b])
                and cands[steps[a][0]].memory.source_path == cands[steps[b][0]].memory.source_path
            )

        for j, s in enumerate(steps):
            inherited = 0.0
            if adjacent(j - 1, j):
                inherited = (AFTER_QUESTION_WEIGHT if asks[j - 1] else AFTER_WEIGHT) * step_z[j - 1]
            if adjacent(j, j + 1):
                inherited = max(inherited, BEFORE_WEIGHT * step_z[j + 1])
            for i in s:
                score[i] = max(score[i], inherited)
        spread = float(score.max() - score.min()) if len(score) else 0.0
        ids = {e for p in plan.subjects for e in p.ids}
        typed = (
            plan.me is not None and plan.me in plan.subjects
        )  # the owner wrote and read their own screens
        for i, c in enumerate(cands):
            if (ids and ids & set(c.memory.entity_ids)) or (
                typed and BY_OWNER in c.memory.provenance
            ):
                score[i] += PERSON_BONUS * spread
            if any(w.contains(c.memory.start_ts, c.memory.end_ts) for w in plan.windows):
                score[i] += TIME_BONUS * spread
            if plan.when and says_when(c.memory.text):
                score[i] += WHEN_BONUS * spread
        for c, s in zip(cands, score):
            c.score = float(s)
        cands = latest_screens(cands)  # a screen read again further along stands for the earlier
        return sorted(cands, key=lambda c: (-c.score, c.memory.start_ts, c.memory.memory_id))


def _subjects(
    question: str, named: tuple[Person, ...], me: Person | None = None
) -> tuple[Person, ...]:
    """Whom a question naming ``named`` (in order) asks about: the first named, who mostly said
    the evidence, unless the names are listed together ("Jon and Gina", "Sarah and I")."""
    if len(named) < 2:
        return named
    names = "|".join(
        [re.escape(p.name) for p in named if p.name] + ([FIRST_PERSON.pattern] if me else [])
    )
    listed = rf"\b(?:{names})\b(?:'s)?\s*(?:,|\band\b|&|\bor\b)\s*(?:{names})\b"
    return named if re.search(listed, question, re.IGNORECASE) else named[:1]


def _asks(text: str) -> bool:
    return text.rstrip().rstrip('"').rstrip().endswith("?")
