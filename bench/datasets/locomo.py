"""LoCoMo conversations (upstream ``locomo10.json`` format) as typed records.

``load`` reads only the dialogue turns: what is ingested is what was said. The dataset's
``event_summary``, ``session_summary`` and ``observation`` fields (generated from the dialogue) are
read by ``load_gold`` alone, as gold for the day digests and the profiles (``bench.digest``).
A shared image is kept as its caption (``blip_caption``), the text a perception stage would give.

Evidence ids in the questions are normalised, since some are malformed upstream:
``"D8:6; D9:17"`` (two ids in one), ``"D:11:26"`` (a stray colon), ``"D30:05"`` (a zero-padded turn);
ids that name no turn of the conversation are dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_ID = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SAFE_KEY = re.compile(r"[A-Za-z0-9_-]{1,64}")


@dataclass(frozen=True)
class Turn:
    dia_id: str  # "D3:7": session 3, turn 7
    speaker: str
    text: str
    image_caption: str = ""  # what a shared image shows; "" when the turn shares none


@dataclass(frozen=True)
class Session:
    index: int
    started_at: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Question:
    question: str
    answer: str
    evidence: tuple[str, ...]  # normalised dialogue ids
    category: int


@dataclass(frozen=True)
class Conversation:
    sample_id: str  # as the file gives it: any text
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]

    @property
    def turn_ids(self) -> set[str]:
        return {t.dia_id for s in self.sessions for t in s.turns}

    @property
    def key(self) -> str:
        """``sample_id`` when it is a safe file and table name (letters, digits, ``_``, ``-``; at
        most 64), else ``conv-`` and a hash of it: a file's ids never choose a path."""
        if _SAFE_KEY.fullmatch(self.sample_id):
            return self.sample_id
        return "conv-" + hashlib.sha256(self.sample_id.encode()).hexdigest()[:16]


def parse_session_time(text: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware datetime (UTC: the dataset gives no zone)."""
    try:
        return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y").replace(
            tzinfo=UTC
        )
    except ValueError as e:
        raise ValueError(f"session time {text!r} is not like '1:56 pm on 8 May, 2023'") from e


def normalize_evidence(raw: Sequence[str], known: set[str]) -> tuple[str, ...]:
    """Canonical ``D<session>:<turn>`` ids that exist in the conversation, in order, without repeats."""
    out: list[str] = []
    for item in raw:
        for m in _ID.finditer(str(item)):
            dia_id = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return tuple(out)


def _canonical(dia_id: str) -> str:
    m = _ID.fullmatch(dia_id.strip())
    return f"D{int(m.group(1))}:{int(m.group(2))}" if m else dia_id.strip()


def load(path: str | Path) -> list[Conversation]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(
            f"{path}: cannot read a LoCoMo file ({e}); expected the upstream locomo10.json format"
        ) from e
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of conversations (locomo10.json format)")
    conversations: list[Conversation] = []
    for item in data:
        conv = item["conversation"]
        sessions = []
        n = 1
        while f"session_{n}" in conv:
            turns = tuple(
                Turn(
                    _canonical(t["dia_id"]),
                    t["speaker"],
                    t.get("text", ""),
                    t.get("blip_caption", ""),
                )
                for t in conv[f"session_{n}"]
            )
            if turns:
                sessions.append(
                    Session(n, parse_session_time(conv[f"session_{n}_date_time"]), turns)
                )
            n += 1
        known = {t.dia_id for s in sessions for t in s.turns}
        questions = tuple(
            Question(
                q["question"],
                str(q.get("answer", q.get("adversarial_answer", ""))),
                normalize_evidence(q.get("evidence", []), known),
                int(q["category"]),
            )
            for q in item.get("qa", [])
        )
        conversations.append(
            Conversation(
                item.get("sample_id", f"conv-{len(conversations)}"),
                (conv["speaker_a"], conv["speaker_b"]),
                tuple(sessions),
                questions,
            )
        )
    return conversations


@dataclass(frozen=True)
class SessionGold:
    index: int
    events: tuple[tuple[str, str], ...]  # (speaker, what happened to them), from event_summary
    summary: str  # session_summary
    observations: tuple[tuple[str, str, str], ...]  # (speaker, fact, dialogue id), from observation


def load_gold(path: str | Path) -> dict[str, dict[int, SessionGold]]:
    """Conversation key (``Conversation.key``) -> session index -> what the dataset says about that
    session. A conversation or session without these fields gives empty ones."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out: dict[str, dict[int, SessionGold]] = {}
    for item, conv in zip(data, load(path)):  # load keeps one conversation per item, in order
        events, summaries, observed = (
            item.get(k) or {} for k in ("event_summary", "session_summary", "observation")
        )
        gold = {}
        for s in conv.sessions:
            happened = events.get(f"events_session_{s.index}") or {}
            gold[s.index] = SessionGold(
                s.index,
                tuple((who, str(e)) for who in conv.speakers for e in happened.get(who) or ()),
                str(summaries.get(f"session_{s.index}_summary", "")),
                tuple(
                    (who, str(fact[0]), _canonical(str(fact[1])))
                    for who in conv.speakers
                    for fact in (observed.get(f"session_{s.index}_observation") or {}).get(who)
                    or ()
                    if isinstance(fact, list) and len(fact) == 2
                ),
            )
        out[conv.key] = gold
    return out
