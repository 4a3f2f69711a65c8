"""Forgetting: what a filter selects, and its removal from every table, index and old table version.

A filter selects whole clips (a time range, a recording, a clip id, an app or window in front, a
text, an age) or one person (their memories, entities and the user's changes to them). ``plan``
(``graph.forget_plan``) says what would go without touching anything; ``forget`` removes it:

1. the selected memories, and what only they supported: a semantic memory whose every clip of
   evidence is forgotten goes, one with other evidence keeps it without the forgotten items;
2. edges touching a forgotten memory or entity, and edges whose evidence was all forgotten (but
   for ``same_person``: who is who holds while both ends remain);
3. voice and face entities that no remaining memory names (their samples came from forgotten
   media), and characters left with no member; the memories of step 1 are deleted after these, so
   that a forget killed before then still finds the entities only they named;
4. the clip rows, last, so that no memory is left pointing to a deleted clip;
5. what was concluded from them (``graph.forget_derived``): inferred names no remaining evidence
   gives, face links seen only there, first and last seen times that fall in no remaining clip;
6. the rows left in every data file that lost one are written anew, every table compacted, the
   full-text and vector indexes rebuilt from the remaining rows, and every old table version
   deleted (``graph.forget_erase``): the forgotten bytes are in no file under the store.

Before step 1 a row in ``forget_log`` records the filters by name, the counts and span (never the
content) and the ids involved (opaque hashes and entity ids): ``mnemo ingest`` skips the clip ids
it lists, so a recording ingested again does not bring them back, and a forget killed part-way is
finished by ``finish_unfinished`` (every forget, and retention, runs it first). The row says done
only after step 6. ``step`` is called between the stages (a kill at each is tested).

Media files are the caller's: ``mnemo.forget_with_media`` deletes captured screenshots of forgotten clips
(the capture folder is mnemo's), noting them in the store first so that a forget killed before they
are deleted has them deleted by the next, and leaves a user's own recordings where they are.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pyarrow as pa

from graph import sql
from graph.forget_derived import retract_derived
from graph.forget_erase import Eraser, chunks, purge
from graph.forget_plan import Filter, ForgetError, ForgetPlan, plan
from graph.rows import Edge, Memory, sources_of
from graph.schema import edge_from_row, edge_row, edge_schema, memory_row

# what callers use: the plan (graph.forget_plan), its removal here, the purge (graph.forget_erase)
__all__ = [
    "Filter",
    "ForgetError",
    "ForgetPlan",
    "finish_unfinished",
    "forget",
    "forgotten_clip_ids",
    "history",
    "plan",
    "purge",
    "step",
]


def step(name: str) -> None:
    """Called between a forget's stages (``name`` says which comes next); does nothing. Tests and
    ``mnemo bench faults`` replace it to kill a forget at each."""


def _gone(items, clips: set[str], memories: set[str]) -> bool:
    """Whether an evidence item points into what is forgotten: ``clip:ID`` (``llm:ID``: what a
    model said of that clip), a segment or observation id ``CLIPID:…``, or a forgotten memory id."""
    if items.startswith(("clip:", "llm:")):
        return items.split(":", 1)[1] in clips
    return items in memories or items.split(":", 1)[0] in clips


def forget(store, p: ForgetPlan, f: Filter, now: float | None = None) -> dict:
    """Remove what ``p`` selects (see the module doc); returns the counts removed."""
    now = time.time() if now is None else now
    with store.writing(
        "mnemo forget"
    ):  # an ingest writing meanwhile would lose its files to the purge
        store.catch_up()  # what another process wrote or purged before the lock was ours
        # the log row comes first: ingest skips these clips from now on, and a forget killed
        # part-way is finished by the next one (``finish_unfinished``)
        seq = _log(store, now, f, p)
        step("remove")
        counts, gone = _remove(store, p, (f.query or "").lower())
        step("purge")
        purge(store)
        # done only once no old version or index holds what was forgotten: a forget killed in the
        # purge is finished by the next one, not taken as done
        step("done")
        _done(store, seq, counts, p.entity_ids, gone)
    return counts


def finish_unfinished(store) -> int:
    """Finish forgets that were killed part-way (their log row says not done); how many."""
    rows = store.forget_log.search().where("NOT done").limit(None).to_list()
    if not rows:
        return 0
    with store.writing("mnemo forget (finishing an interrupted one)"):
        _finish(store, rows)
    return len(rows)


def _finish(store, rows: list[dict]) -> None:
    done = {}
    for row in rows:
        p = ForgetPlan(
            clip_ids=list(row["clip_ids"] or ()),
            entity_ids=list(row["entity_ids"] or ()),
            people_ops=[int(s) for s in row["people_ops"] or ()],
            transcripts_of=list(row["transcripts_of"] or ()),
        )
        clips = sql.in_list("clip_id", p.clip_ids) if p.clip_ids else "false"
        involved = sql.involves(p.entity_ids) if p.entity_ids else "false"
        p.memory_ids = [
            r["memory_id"]
            for r in store.memories.search()
            .where(f"{clips} OR {involved}")
            .select(["memory_id"])
            .limit(None)
            .to_list()
        ]
        # which data files lost rows before the kill is not known: every table is written anew
        done[row["ts"]] = (*_remove(store, p, "", everything=True), p.entity_ids)
    purge(store)
    for ts, (counts, gone, planned) in done.items():  # after the purge, as ``forget`` does
        _done(store, ts, counts, planned, gone)


def _done(store, seq: float, counts: dict, planned: list[str], gone: set[str]) -> None:
    """Mark the forget's log row done, with every entity it removed among its ``entity_ids``
    (those of a forgotten person, and those seen only in forgotten clips): their numbers are never
    given again (``graph.entity_ids``)."""
    values: dict = {"counts": json.dumps(counts), "done": True}
    if gone - set(planned):  # (LanceDB cannot set a list column to an empty list)
        values["entity_ids"] = sorted(set(planned) | gone)
    store.forget_log.update(where=f"ts = {seq!r}", values=values)


def _log(store, now: float, f: Filter, p: ForgetPlan) -> float:
    while store.forget_log.count_rows(f"ts = {now!r}"):  # the row's key
        now += 1e-6
    store.forget_log.add(
        [
            {
                "ts": now,
                "filters": json.dumps(f.kinds()),
                "counts": json.dumps(p.summary()),
                "span_start": p.span[0] if p.span else None,
                "span_end": p.span[1] if p.span else None,
                "clip_ids": sorted(p.clip_ids),
                "entity_ids": sorted(p.entity_ids),
                "people_ops": [str(s) for s in p.people_ops],
                "transcripts_of": sorted(p.transcripts_of),
                "done": False,
            }
        ]
    )
    return now


def _remove(store, p: ForgetPlan, query: str, everything: bool = False) -> tuple[dict, set[str]]:
    """Steps 1 to 5 of the module doc; each may run again after a kill (what is gone stays gone).
    ``everything``: write every table anew, not only the data files that lose rows now. Returns
    the counts removed and the ids of the entities removed."""
    erase = Eraser(store)
    if everything:
        for name in Eraser.KEYS:
            erase.note(getattr(store, name), "true")
    clips, forgotten = set(p.clip_ids), set(p.memory_ids)
    entities = set(p.entity_ids)
    heard = {
        e for m in store.get_memories(sorted(forgotten)) for e in m.entity_ids
    }  # may go with them
    # 1. memories, and the evidence other memories drew from them. A fact first heard in a forgotten
    # clip and heard again elsewhere stays, on that evidence (unless it holds the forgotten text or
    # is about a forgotten person)
    for m in store.get_memories(sorted(forgotten)):
        if (
            m.kind == "semantic"
            and not set(m.entity_ids) & entities
            and not (query and query in m.text.lower())
            and any(x.startswith("clip:") and x[5:] not in clips for x in m.provenance)
        ):
            forgotten.discard(m.memory_id)
    touching = (
        [f"array_has_any(provenance, [{', '.join(sql.quote('clip:' + c) for c in sorted(clips))}])"]
        if clips
        else []
    )
    touching += (
        [f"array_has_any(provenance, [{', '.join(map(sql.quote, sorted(forgotten)))}])"]
        if forgotten
        else []
    )
    touching += [sql.involves(sorted(entities))] if entities else []
    where = " OR ".join(touching) or "false"
    if forgotten:
        where = f"({where}) AND NOT {sql.in_list('memory_id', sorted(forgotten))}"
    kept_changed: list[Memory] = []
    for m in store.memories_where(where):
        provenance = tuple(x for x in m.provenance if not _gone(x, clips, forgotten))
        evidence_clips = [x[5:] for x in provenance if x.startswith("clip:")]
        if m.kind == "semantic" and (not evidence_clips or set(m.entity_ids) & entities):
            forgotten.add(m.memory_id)
            continue
        if provenance == m.provenance and m.clip_id not in clips:
            continue
        clip_id = (
            m.clip_id if m.clip_id not in clips else (evidence_clips[0] if evidence_clips else "")
        )
        if not clip_id:
            forgotten.add(m.memory_id)
            continue
        changed = replace(m, provenance=provenance, clip_id=clip_id)
        if (
            m.clip_id in clips
        ):  # its times were the forgotten clip's: now the earliest evidence left
            first = min(
                (store.get_clip(c) for c in evidence_clips),
                key=lambda c: c["start_ts"] if c else float("inf"),
            )
            if first:
                changed = replace(
                    changed,
                    start_ts=first["start_ts"],
                    end_ts=first["end_ts"],
                    valid_from_ts=first["start_ts"],
                    source_path=first["source_path"],
                )
        kept_changed.append(changed)
    # a fact that a forgotten one had superseded is current again
    revived = [
        e.dst_id
        for e in store.all_edges("supersedes")
        if e.src_id in forgotten and e.dst_id not in forgotten
    ]
    if revived:
        kept = {m.memory_id: m for m in kept_changed}
        for m in store.get_memories(revived):
            kept[m.memory_id] = replace(kept.get(m.memory_id, m), valid_to_ts=None)
        kept_changed = list(kept.values())
    if kept_changed:
        ids = sql.in_list("memory_id", [m.memory_id for m in kept_changed])
        vectors = {
            r["memory_id"]: r["vector"]
            for r in store.memories.search()
            .where(ids)
            .select(["memory_id", "vector"])
            .limit(None)
            .to_list()
        }
        erase.note(store.memories, ids)
        rows = [memory_row(m, vectors[m.memory_id]) for m in kept_changed if m.memory_id in vectors]
        store.memories.merge_insert("memory_id").when_matched_update_all().execute(
            pa.Table.from_pylist(rows, schema=store.memories.schema)
        )
    # 3 (decided before the edges, which may be their only link): entities no memory names any more.
    # The forgotten memories go after the entities: a forget killed before then is finished from
    # them (``_finish`` finds them by clip), while the entities only they named are still known
    named = {
        e
        for r in store.memories.search().select(["memory_id", "entity_ids"]).limit(None).to_list()
        if r["memory_id"] not in forgotten
        for e in r["entity_ids"] or ()
    }
    for e in sorted(heard - named):
        if e.startswith(("voice_", "face_")) and _seen_only_in(store, e, clips, forgotten):
            entities.add(e)
    # 2. edges
    step("edges")
    gone_edges, edges_changed = [], []
    for row in store.edges.search().limit(None).to_list():
        e = edge_from_row(row)
        evidence = tuple(x for x in e.evidence if not _gone(x, clips, forgotten))
        # a name heard only in forgotten clips goes; who is who (same_person) stays while both ends do
        ends = {*sources_of(e.src_id), e.dst_id}
        if ends & (forgotten | entities) or (
            e.evidence and not evidence and e.kind != "same_person"
        ):
            gone_edges.append(row["edge_id"])
        elif evidence != e.evidence or e.clip_id in clips:
            weight = float(sum(x.startswith("clip:") for x in evidence)) or e.weight
            changed = Edge(
                e.kind,
                e.src_id,
                e.dst_id,
                weight if e.kind in _COUNTED else e.weight,
                "" if e.clip_id in clips else e.clip_id,
                evidence,
            )
            edges_changed.append(edge_row(changed, changed.clip_id, row["created_ts"]))
    for chunk in chunks(gone_edges):
        erase.delete(store.edges, sql.in_list("edge_id", chunk))
    if edges_changed:
        erase.note(store.edges, sql.in_list("edge_id", [r["edge_id"] for r in edges_changed]))
        store.edges.merge_insert("edge_id").when_matched_update_all().execute(
            pa.Table.from_pylist(edges_changed, schema=edge_schema())
        )
    # characters left with no member
    members = {
        r["dst_id"]
        for r in store.edges.search()
        .where("kind = 'same_person'")
        .select(["dst_id"])
        .limit(None)
        .to_list()
    }
    empty = [
        e.entity_id
        for e in store.load_entities("character", samples=False)
        if e.entity_id not in members and e.entity_id not in named and e.entity_id not in entities
    ]
    if (
        empty
    ):  # and the edges that merged them into someone: a dangling one would be a person of its own
        ids = ", ".join(map(sql.quote, empty))
        erase.delete(store.edges, f"src_id IN ({ids}) OR dst_id IN ({ids})")
        entities.update(empty)
    step("entities")
    if entities:
        erase.delete(store.entities, sql.in_list("entity_id", sorted(entities)))
    step("memories")
    for chunk in chunks(sorted(forgotten)):
        erase.delete(store.memories, sql.in_list("memory_id", chunk))
    if p.people_ops:
        erase.delete(store.people_log, f"seq IN ({', '.join(str(int(s)) for s in p.people_ops)})")
    # a forgotten person's words are in the transcripts of the clips they spoke in
    if p.transcripts_of:
        where = sql.in_list("clip_id", p.transcripts_of)
        erase.note(store.clips, where)
        store.clips.update(where=where, values={"transcript": ""})
    # 4. the clip rows, last
    step("clips")
    for chunk in chunks(sorted(clips)):
        erase.delete(store.clips, sql.in_list("clip_id", chunk))
    # 5. what was concluded from them: names, face links, when people were seen (read from what is left)
    step("derived")
    derived = retract_derived(store, erase)
    step("rewrite")
    erase.rewrite()
    counts = {
        "clips": len(clips),
        "memories": len(forgotten),
        "entities": len(entities),
        "edges": len(gone_edges),
        "memories_changed": len(kept_changed),
        "edges_changed": len(edges_changed),
        **derived,
    }
    return counts, entities


_COUNTED = ("introduced_as", "addressed_as", "says_name")  # weight = the clips that gave it


def _seen_only_in(store, entity_id: str, clips: set[str], memories: set[str]) -> bool:
    """Whether every edge that gives this entity evidence points into what is forgotten (an entity
    with no evidence left anywhere came from forgotten media)."""
    rows = (
        store.edges.search()
        .where(f"src_id = {sql.quote(entity_id)} OR dst_id = {sql.quote(entity_id)}")
        .select(["clip_id", "evidence"])
        .limit(None)
        .to_list()
    )
    items = [x for r in rows for x in (r["evidence"] or ())] + [
        f"clip:{r['clip_id']}" for r in rows if r["clip_id"]
    ]
    return all(_gone(x, clips, memories) for x in items)


def forgotten_clip_ids(store) -> set[str]:
    """Clip ids a forget removed: ingest does not store them again."""
    return {
        c
        for r in store.forget_log.search().select(["clip_ids"]).limit(None).to_list()
        for c in r["clip_ids"] or ()
    }


def history(store) -> list[dict]:
    """Every forget, oldest first: when, the filters by name, the counts and the span."""
    rows = (
        store.forget_log.search()
        .select(["ts", "filters", "counts", "span_start", "span_end"])
        .limit(None)
        .to_list()
    )
    return sorted(
        (
            {
                "ts": r["ts"],
                "filters": json.loads(r["filters"]),
                "counts": json.loads(r["counts"]),
                "span": [r["span_start"], r["span_end"]] if r["span_start"] is not None else None,
            }
            for r in rows
        ),
        key=lambda r: r["ts"],
    )
