"""The owner's questions and the profiles in ``bench locomo --spoken`` (``--first-person``, and
``bench profile --spoken``): the first speaker marked as the owner and their questions asked as they
would ask them, and each speaker's profile against the dataset's observation facts; spoken and on the
text path alike."""

from __future__ import annotations

from bench.datasets.locomo import Conversation
from bench.locomo_spoken_recall import mean, ranked_turns_by_time
from bench.metrics import recall_at_k


def first_person_pairs(
    conv: Conversation, store, text_store, turns_by_path, persons: dict[str, str | None]
) -> dict:
    """The conversation's first speaker as the owner, in the spoken store (the person their voice
    became, as a user would mark it with ``mnemo people me``) and on the text path (enrolled by
    name); each question naming them asked as they would ask it (``bench.first_person``), and
    recall@10 both ways on those questions. A speaker no person stands for cannot be marked: their
    questions are counted apart (``owner_missing``)."""
    from bench import locomo
    from bench.first_person import to_first_person
    from control.planner import OfflinePlanner
    from control.tools import MemoryTools
    from graph import edit_people

    owner = conv.speakers[0]
    asked = [
        (q, mine)
        for q in conv.questions
        if q.category != 5
        and (mine := to_first_person(q.question, owner, conv.speakers[1:])) != q.question
    ]
    person = persons.get(owner)
    spoken: list[
        tuple[float, float]
    ] = []  # (third-person recall@10, first-person recall@10) a question
    text: list[tuple[float, float]] = []
    out = {
        "conversation": conv.key,
        "owner": owner,
        "person": person,
        "questions": len(asked),
        "spoken": spoken,
        "text": text,
        "owner_missing": 0,
    }
    if person is None:
        out["owner_missing"] = len(asked)
    else:
        if not any(p.owner and p.person_id == person for p in store.people()):
            edit_people.me(store, person)
        planner = OfflinePlanner(MemoryTools(store))
        for q, mine in asked:
            third = ranked_turns_by_time(planner.retrieve(q.question).memories, turns_by_path)
            first = ranked_turns_by_time(planner.retrieve(mine).memories, turns_by_path)
            spoken.append((recall_at_k(third, q.evidence, 10), recall_at_k(first, q.evidence, 10)))
    edit_people.me(text_store, owner)
    planner = OfflinePlanner(MemoryTools(text_store))
    for q, mine in asked:
        third = locomo.ranked_turns(planner.retrieve(q.question).memories, conv.turn_ids)
        first = locomo.ranked_turns(planner.retrieve(mine).memories, conv.turn_ids)
        text.append((recall_at_k(third, q.evidence, 10), recall_at_k(first, q.evidence, 10)))
    return out


def pool_first_person(rows: list[dict]) -> dict:
    def both(pairs):
        return {
            "questions": len(pairs),
            "third_person_recall@10": mean([t for t, _ in pairs]),
            "first_person_recall@10": mean([f for _, f in pairs]),
        }

    return {
        "spoken": both([p for r in rows for p in r["spoken"]]),
        "text": both([p for r in rows for p in r["text"]]),
        "owner_missing": sum(r["owner_missing"] for r in rows),
        "owners": {r["conversation"]: {"speaker": r["owner"], "person": r["person"]} for r in rows},
    }


def profile_figures(
    conv: Conversation, store, text_store, gold, persons: dict[str, str | None]
) -> dict:
    """Each speaker's profile, from the spoken store (the person their voice became; none: nothing
    stated) and from the text path, against the dataset's observation facts about them in the
    rendered sessions (``bench.profile.score``)."""
    from bench.profile import score
    from control.profile import build

    names = {n.lower() for n in conv.speakers} | {n.lower()[:3] for n in conv.speakers}
    kept = {s.index for s in conv.sessions}
    profiles: list[dict] = []
    out = {"conversation": conv.key, "people": profiles}
    for speaker in conv.speakers:
        facts = [
            fact for i in sorted(kept) for who, fact, _ in gold[i].observations if who == speaker
        ]
        if not facts:
            continue
        person = persons.get(speaker)
        spoken = (
            score(build(store, person), facts, names)
            if person is not None
            else [False] * len(facts)
        )
        text = score(build(text_store, speaker), facts, names)
        profiles.append(
            {
                "speaker": speaker,
                "person": person,
                "facts": len(facts),
                "spoken": spoken,
                "text": text,
            }
        )
    return out


def pool_profiles(rows: list[dict]) -> dict:
    people = [p for r in rows for p in r["people"]]
    return {
        "people": len(people),
        "facts": sum(p["facts"] for p in people),
        "fact_recall": mean([h for p in people for h in p["spoken"]]),
        "text_fact_recall": mean([h for p in people for h in p["text"]]),
        "unmapped_people": sum(p["person"] is None for p in people),
        "per_person": [
            {
                "conversation": r["conversation"],
                "speaker": p["speaker"],
                "person": p["person"],
                "facts": p["facts"],
                "fact_recall": mean(p["spoken"]),
                "text_fact_recall": mean(p["text"]),
            }
            for r in rows
            for p in r["people"]
        ],
    }
