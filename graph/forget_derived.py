"""What forgetting takes from people: what was derived from the forgotten clips, not stored in them.

``graph.forget_store`` removes the memories and the evidence of the forgotten clips; what memory had
concluded from them lives on in other rows and must follow (forget the only clip in which two
people were named, and ``mnemo people`` must no longer list them by those names, nor as seen inside
the forgotten span):

- an inferred name (a character's ``name``) that no remaining ``introduced_as``/``addressed_as``
  edge of its person gives goes: the person stays, unnamed, while other evidence of them remains.
  An enrolled name (a known speaker registered by a voice sample, ``same_person`` evidence
  ``enrolled``) is given, not inferred, and stays; so does a name the user gave, which is a row of
  ``people_log`` (the user's own act, holding only ids and the name typed), never a character's;
- a face linked to a person only because it was seen while their voice spoke in forgotten clips is
  theirs no more: the link stays where a remaining clip shows the face and one of the person's
  voices together (that clip becomes its evidence). Other ``same_person`` links hold while both ends
  remain: a character is the person of the voice it was made for, and a merge of two voices rests
  on the likeness of their samples;
- first and last seen that fall in no remaining clip are read again from the memories that remain.

Every decision reads the store as it is now, so ``finish_unfinished`` after a kill, or running it
twice, gives the same result.
"""

from __future__ import annotations

import bisect
import logging

from graph import sql
from graph.resolve_people import NAME_EVIDENCE
from graph.rows import sources_of

log = logging.getLogger(__name__)

# ``memorize.given_names.MIN_SHORT_FORM``: evidence for "Mel" counts for "Melanie" (naming folds them)
_MIN_SHORT_FORM = 3


def retract_derived(store, erase) -> dict:
    """Take back what only forgotten clips supported (see the module doc); ``erase`` is the
    ``graph.forget_erase.Eraser``, told of every row changed so that no file keeps the old one. Returns the
    counts changed."""
    memories = (
        store.memories.search()
        .select(["clip_id", "entity_ids", "start_ts", "end_ts"])
        .limit(None)
        .to_list()
    )
    links = _unlink_faces(store, erase, memories)
    names = _unname(store, erase)
    seen = _reseen(store, erase, memories)
    if links or names or seen:
        log.info(
            "forget: %d face link(s), %d inferred name(s) and %d seen time(s) taken back with their evidence",
            links,
            names,
            seen,
        )
    return {"face_links": links, "names": names, "seen_times": seen}


def _unlink_faces(store, erase, memories: list[dict]) -> int:
    """Face links whose recorded evidence is gone: kept on a remaining clip showing the face with one
    of the person's voices, else removed. Returns how many went."""
    edges = store.all_edges("same_person")
    voices: dict[str, set[str]] = {}
    for e in edges:
        if e.src_id.startswith("voice_"):
            voices.setdefault(e.dst_id, set()).add(e.src_id)
    # a link that lost its clip and every evidence item to a forget (graph.forget_store clears the clip of a
    # forgotten one); a link written with no evidence (an LLM's fact without any) keeps its clip
    orphans = [
        e for e in edges if e.src_id.startswith("face_") and not e.evidence and not e.clip_id
    ]
    if not orphans:
        return 0
    by_clip: dict[str, set[str]] = {}
    for r in memories:
        by_clip.setdefault(r["clip_id"], set()).update(r["entity_ids"] or ())
    gone = []
    for e in orphans:
        together = sorted(
            c for c, ids in by_clip.items() if e.src_id in ids and ids & voices.get(e.dst_id, set())
        )
        if not together:
            gone.append(e.edge_id)
            continue
        where = f"edge_id = {sql.quote(e.edge_id)}"
        erase.note(store.edges, where)
        store.edges.update(where=where, values={"clip_id": together[0], "evidence": [together[0]]})
    if gone:
        erase.delete(store.edges, sql.in_list("edge_id", gone))
    return len(gone)


def _heard_as(heard: str, name: str) -> bool:
    heard, name = heard.casefold(), name.casefold()
    return heard == name or (len(heard) >= _MIN_SHORT_FORM and name.startswith(heard))


def _unname(store, erase) -> int:
    """Clear the inferred names that no remaining evidence gives; how many."""
    named = [e for e in store.load_entities("character", samples=False) if e.name]
    if not named:
        return 0
    enrolled = {e.dst_id for e in store.all_edges("same_person") if e.evidence == ("enrolled",)}
    kinds = " OR ".join(f"kind = {sql.quote(k)}" for k in NAME_EVIDENCE)
    heard = [
        (set(sources_of(r["src_id"])), r["dst_id"].removeprefix("name:"))
        for r in store.edges.search()
        .where(kinds)
        .select(["src_id", "dst_id"])
        .limit(None)
        .to_list()
    ]
    groups = {i: set(p.ids) for p in store.people() for i in p.ids}
    gone = []
    for c in named:
        group = groups.get(c.entity_id, {c.entity_id})
        if group & enrolled:
            continue
        # evidence said to several voices counts once all are this person's (as naming counts it)
        if not any(voices <= group and _heard_as(name, c.name) for voices, name in heard):
            gone.append(c.entity_id)
    if gone:
        where = sql.in_list("entity_id", gone)
        erase.note(store.entities, where)
        store.entities.update(where=where, values={"name": ""})
    return len(gone)


class _Spans:
    """Whether a time lies in a remaining clip (clips may overlap: recordings of one time)."""

    def __init__(self, store) -> None:
        rows = sorted(
            (r["start_ts"], r["end_ts"])
            for r in store.clips.search().select(["start_ts", "end_ts"]).limit(None).to_list()
        )
        self.starts = [s for s, _ in rows]
        self.reach: list[float] = []  # the latest end of the clips starting at or before each
        for _, end in rows:
            self.reach.append(max(end, self.reach[-1]) if self.reach else end)

    def covers(self, ts: float) -> bool:
        i = bisect.bisect_right(self.starts, ts) - 1
        return i >= 0 and self.reach[i] >= ts


def _reseen(store, erase, memories: list[dict]) -> int:
    """First and last seen that lie in no remaining clip, read from the remaining memories naming
    the entity (a character: or its members); how many entities changed."""
    spans = _Spans(store)
    stale = [
        e
        for e in store.load_entities(samples=False)
        if not (spans.covers(e.first_seen_ts) and spans.covers(e.last_seen_ts))
    ]
    if not stale:
        return 0
    members: dict[str, set[str]] = {}
    for e in store.all_edges("same_person"):
        members.setdefault(e.dst_id, set()).add(e.src_id)
    when: dict[str, tuple[float, float]] = {}
    for r in memories:
        for i in r["entity_ids"] or ():
            first, last = when.get(i, (r["start_ts"], r["end_ts"]))
            when[i] = (min(first, r["start_ts"]), max(last, r["end_ts"]))
    changed = 0
    for e in stale:
        seen = [when[i] for i in {e.entity_id} | members.get(e.entity_id, set()) if i in when]
        if (
            not seen
        ):  # nothing left says when: the times it had stay (it goes when nothing names it)
            continue
        first = e.first_seen_ts if spans.covers(e.first_seen_ts) else min(s for s, _ in seen)
        last = e.last_seen_ts if spans.covers(e.last_seen_ts) else max(t for _, t in seen)
        first, last = min(first, last), max(first, last)
        if (first, last) == (e.first_seen_ts, e.last_seen_ts):
            continue
        where = f"entity_id = {sql.quote(e.entity_id)}"
        erase.note(store.entities, where)
        store.entities.update(where=where, values={"first_seen_ts": first, "last_seen_ts": last})
        changed += 1
    return changed
