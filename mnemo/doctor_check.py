"""What every check of ``mnemo doctor`` returns (``Check``), and what its families of checks share:
the shell quoting of a path in a fix, and the command that installs mnemo (with an extra) here.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

GB = 1e9


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok", "warn" or "fail"
    detail: str  # what was found
    fix: str = ""  # the command or step that fixes it; set when status is not "ok"


def quoted(path: Path | str) -> str:
    """``path`` as a shell word, for a fix the user pastes."""
    return shlex.quote(str(path))


def source_root() -> Path | None:
    """The repository mnemo runs from, when it is a clone (its pyproject.toml beside the packages)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def pip_install(extra: str = "") -> str:
    """The command that installs mnemo (with ``extra``) into the environment doctor runs in."""
    root = source_root()
    target = (
        f"{root}[{extra}]"
        if extra and root
        else str(root)
        if root
        else f"mnemo[{extra}]"
        if extra
        else "mnemo"
    )
    return f"{quoted(sys.executable)} -m pip install {'-e ' if root else ''}{quoted(target)}"
