"""ScreenshotVQA (MIRIX) in its release layout, as typed records.

``DIR/qa_pairs.json`` is a list of ``{"student": name, "qa_pairs": [{"question", "answer", ...}]}``;
``DIR/<student>/`` holds that user's screenshots named ``YYYYMMDD_HHMMSS.png`` (``.jpg``/``.jpeg``
too). As in MIRIX's evaluation, files with "compressed" in the name are skipped, and every
screenshot is ingested in time order before the user's questions are asked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
_NAME = re.compile(r"(\d{8})_(\d{6})")


@dataclass(frozen=True)
class QA:
    question: str
    answer: str
    extra: dict = field(
        default_factory=dict
    )  # the pair's other fields (the mini set: evidence, notes)

    @property
    def expects_not_found(self) -> bool:
        """The mini set's marker for a question whose answer is only in a skipped file."""
        return bool(self.extra.get("expect_not_found"))


@dataclass(frozen=True)
class User:
    name: str
    folder: Path
    screenshots: tuple[Path, ...]  # in time order, "compressed" files left out
    skipped: tuple[Path, ...]  # the "compressed" files
    questions: tuple[QA, ...]


def captured_at(path: Path) -> datetime:
    """The time in a ``YYYYMMDD_HHMMSS`` file name (local time, as MIRIX reads it)."""
    m = _NAME.search(path.stem)
    if not m:
        raise ValueError(
            f"{path.name}: not named YYYYMMDD_HHMMSS.png as ScreenshotVQA screenshots are"
        )
    return datetime.strptime("".join(m.groups()), "%Y%m%d%H%M%S")


def load(root: str | Path) -> list[User]:
    root = Path(root)
    qa_file = root / "qa_pairs.json"
    try:
        data = json.loads(qa_file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(
            f"{qa_file} is missing: --data must be a ScreenshotVQA folder holding qa_pairs.json and "
            "one folder of screenshots per user"
        ) from None
    except json.JSONDecodeError as e:
        raise ValueError(f"{qa_file} is not JSON ({e})") from None
    if not isinstance(data, list) or not all(
        isinstance(u, dict) and "student" in u and "qa_pairs" in u for u in data
    ):
        raise ValueError(f'{qa_file} is not a list of {{"student", "qa_pairs"}} objects')
    users = []
    for entry in data:
        name = str(entry["student"])
        folder = root / name
        if not folder.is_dir():
            raise ValueError(f"{qa_file} names user {name!r} but {folder} is not a folder")
        images = [p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES]
        kept = sorted(
            (p for p in images if "compressed" not in p.name),
            key=lambda p: (captured_at(p), p.name),
        )
        skipped = tuple(sorted(p for p in images if "compressed" in p.name))
        pairs = tuple(
            QA(
                str(q["question"]),
                str(q["answer"]),
                {k: v for k, v in q.items() if k not in ("question", "answer")},
            )
            for q in entry["qa_pairs"]
        )
        users.append(User(name, folder, tuple(kept), skipped, pairs))
    return users
