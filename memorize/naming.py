"""Names for people from what is said, each with its evidence.

Two kinds of evidence, kept per voice entity and name as edges to ``name:<Name>`` (``graph.resolve_people``):

- ``introduced_as``: the voice gives its own name ("I'm Sheila", "this is Diane");
- ``addressed_as``: the voice is called by a name in a two-party exchange ("Hey Caroline", "Thanks,
  Melanie!"): the name goes to the *other* person, never the speaker, who gets ``says_name`` instead
  (a voice that calls someone Caroline is probably not Caroline).

When more than one other voice was heard (a voice split in two by clustering, or a third person),
whom the name was said to is not known yet: the ``addressed_as`` edge then starts at all of those
voices together (``src_id`` "voice_3,voice_5") and counts for a person only once every one of them
is theirs (identities are reconsidered as evidence grows: two parts of one voice merge later).

An edge's weight is the number of clips that gave it, its evidence those clips and the turns said;
a person's support counts each clip once per kind and name, however many of their voices it names.
A person (a character and its voices) is given the name with the most support (2 a clip introducing,
1 a clip addressed) when that support is at least ``MIN_SUPPORT`` (``MIN_SUPPORT_UNLISTED`` for a word
that is no listed first name, ``memorize.given_names``), at least ``MIN_SHARE`` of all the
name support heard for them, contradicted (``says_name``) in at most a third as many clips, and not
as well supported for someone else: a wrong name is worse than none, so a person whose evidence
stops agreeing loses the name until it agrees again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence

from graph.resolve_people import id_order
from graph.rows import Edge, sources_of
from memorize.given_names import is_given_name, is_short_form

KINDS = ("introduced_as", "addressed_as", "says_name")
WEIGHT = {"introduced_as": 2.0, "addressed_as": 1.0}
MIN_SUPPORT = 2.0
# a word no name list holds: a misheard word or place ("Wow Joanna" heard as "Wild Atlanta") names
# nobody on a few hearings; a rare name needs two introductions or four clips addressing its bearer
MIN_SUPPORT_UNLISTED = 4.0
# of all the name support heard for a person: twice every other name's together. Misheard names
# ("Mary", "Pottery") and a greeting given to the wrong voice add noise that grows with what is
# heard: LoCoMo spoken, 6 sessions, left Melanie at 10 of 14 (0.71) under 0.75; 2/3 names her and
# gives no wrong name there or in the 3-session run (over their stored evidence)
MIN_SHARE = 2 / 3
MAX_EVIDENCE = 200  # evidence items kept on one edge (its weight keeps counting)


class Naming:
    def __init__(self, edges: Sequence[Edge] = ()) -> None:
        # (kind, voice, name) -> clip ids that gave it, and the evidence items (clips and turns)
        self.clips: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self.items: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        self.loaded: dict[tuple[str, str, str], int] = {}  # clip counts beyond the evidence kept
        self.of_voice: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
        for e in edges:
            key = (e.kind, e.src_id, e.dst_id.removeprefix("name:"))
            self.items[key] = list(e.evidence)
            self.clips[key] = {x.removeprefix("clip:") for x in e.evidence if x.startswith("clip:")}
            self.loaded[key] = max(0, int(e.weight) - len(self.clips[key]))
            for v in sources_of(e.src_id):
                self.of_voice[v].add(key)

    def add(self, kind: str, voice: str, name: str, clip_id: str, segment_id: str) -> Edge:
        """Record one hearing; returns the edge to store (it replaces the earlier one). ``voice``
        may be several, comma-joined (``among``): the name was said to one of them."""
        key = (kind, voice, name)
        self.clips[key].add(clip_id)
        for v in sources_of(voice):
            self.of_voice[v].add(key)
        items = self.items[key]
        for item in (f"clip:{clip_id}", segment_id):
            if item not in items:
                items.append(item)
        del items[:-MAX_EVIDENCE]
        return Edge(kind, voice, f"name:{name}", float(self.count(key)), clip_id, tuple(items))

    def count(self, key: tuple[str, str, str]) -> int:
        return len(self.clips.get(key, ())) + self.loaded.get(key, 0)

    def support(self, voices: set[str]) -> tuple[dict[str, float], dict[str, int]]:
        """(name -> support, name -> clips contradicting it) over these voices (evidence said to
        several voices counts once all are among them); each clip counts once per kind and name,
        and a short form ("Mel") counts for the full name heard for them too ("Melanie")."""
        clips: dict[tuple[str, str], set[str]] = defaultdict(set)
        beyond: dict[tuple[str, str], int] = defaultdict(
            int
        )  # clip counts beyond the evidence kept
        for key in {k for v in voices for k in self.of_voice.get(v, ())}:
            kind, voice, name = key
            if set(sources_of(voice)) <= voices:
                clips[(kind, name)] |= self.clips.get(key, set())
                beyond[(kind, name)] += self.loaded.get(key, 0)
        support: dict[str, float] = defaultdict(float)
        against: dict[str, int] = defaultdict(int)
        for (kind, name), seen in clips.items():
            n = len(seen) + beyond[(kind, name)]
            if kind == "says_name":
                against[name] += n
            else:
                support[name] += WEIGHT[kind] * n
        return _fold_short_forms(support), _fold_short_forms(against)

    def names_heard(self, voices: set[str]) -> set[str]:
        return {name for v in voices for (_, _, name) in self.of_voice.get(v, ())}

    def clips_of(self, voices: set[str]) -> set[str]:
        """The clips that gave any name evidence about these voices."""
        return {
            c for v in voices for key in self.of_voice.get(v, ()) for c in self.clips.get(key, ())
        }

    def decide(
        self,
        people: dict[str, set[str]],
        heard_together: Callable[[set[str], set[str]], bool] = lambda a, b: True,
    ) -> dict[str, str]:
        """Character id -> the name its voices' evidence gives ("" for none), for every person
        with any name evidence; ``people`` maps character ids to their voice entities, and must
        hold everyone who may claim the same names (see ``names_heard``). Two people who claim one
        name compete only when ``heard_together`` (their evidence clips) says they met: two Johns
        of different recordings may both be John, but of the two voices of one exchange only one is."""
        best: dict[str, tuple[str, float]] = {}
        out: dict[str, str] = {}
        for cid, voices in people.items():
            support, against = self.support(voices)
            if not support:
                continue
            out[cid] = ""
            name, score = max(support.items(), key=lambda kv: (kv[1], kv[0]))
            needed = MIN_SUPPORT if is_given_name(name) else MIN_SUPPORT_UNLISTED
            if (
                score >= needed
                and score >= MIN_SHARE * sum(support.values())
                and 3 * against.get(name, 0) <= score
            ):
                best[cid] = (name, score)
        by_name: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for cid, (name, score) in best.items():
            by_name[name].append((score, cid))
        for name, claims in by_name.items():
            clips = {cid: self.clips_of(people[cid]) for _, cid in claims}
            for score, cid in claims:
                rivals = [
                    s
                    for s, other in claims
                    if other != cid and heard_together(clips[cid], clips[other])
                ]
                # one name, two people who met: only a clear winner (twice the support of the next) keeps it
                if all(score >= 2 * s for s in rivals):
                    out[cid] = name
        return out


def among(voices) -> str:
    """The ``src_id`` of evidence said to one of these voices."""
    return ",".join(sorted(set(voices), key=id_order))


def _fold_short_forms(counts: dict) -> dict:
    """Counts of a name's short form ("Mel", "Jo") added to the one full name it starts ("Melanie")."""
    out = dict(counts)
    for short in sorted(counts, key=len):
        longer = [n for n in out if is_short_form(short, n)]
        if len(longer) == 1:
            out[longer[0]] += out.pop(short)
    return out
