"""The arguments every ``mnemo`` command spells the same way: ``--store``, ``--json``, ISO-8601
times and durations with units. Light on purpose: building the parser imports this and argparse only."""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable
from datetime import datetime

STORE_HELP = "store directory (default: graph.store, ./mnemo-data)"
JSON_HELP = "print one JSON object on the last line"
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([smhd])\s*")
_NUMBER = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*")


def add_store(parser: argparse.ArgumentParser, help: str = STORE_HELP, **kwargs) -> None:
    """``--store DIR``; ``help`` only where the folder means something else (a bench's stores)."""
    parser.add_argument("--store", metavar="DIR", help=help, **kwargs)


def add_json(parser: argparse.ArgumentParser, help: str = JSON_HELP, **kwargs) -> None:
    """``--json``: the command's result as one JSON object on the last line of stdout."""
    parser.add_argument("--json", action="store_true", help=help, **kwargs)


def parse_time(value: str) -> datetime:
    """An ISO-8601 time as an aware datetime: ``Z`` is UTC, a time without an offset is local time."""
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an ISO 8601 time; write e.g. 2026-11-20T10:00, 2026-11-20T10:00:00+01:00 "
            "or 2026-11-20T09:00Z (no offset: local time)"
        ) from None
    return when if when.tzinfo else when.astimezone()


def parse_duration(value: str) -> float:
    """A duration with its unit (``90s``, ``15m``, ``2h``, ``3d``, ``0.5s``) in seconds. A bare number
    is refused: flags once took seconds in one place and days in another, so a number alone is
    ambiguous, and reading ``--older-than 30`` as 30 seconds would forget almost everything."""
    m = _DURATION.fullmatch(value)
    if m:
        return float(m.group(1)) * UNITS[m.group(2)]
    units = ", ".join(UNITS)
    if _NUMBER.fullmatch(value):
        n = value.strip()
        raise argparse.ArgumentTypeError(
            f"{value!r} has no unit; write it with one of {units} (seconds, minutes, hours, days): "
            f"{n}s, {n}m, {n}h or {n}d"
        )
    raise argparse.ArgumentTypeError(
        f"{value!r} is not a duration; write a number and one of {units} "
        "(seconds, minutes, hours, days), e.g. 90s, 15m, 2h or 3d"
    )


def add_duration(parser: argparse.ArgumentParser, flag: str, help: str, **kwargs) -> None:
    """A duration flag (``parse_duration``; the value in seconds), shown as ``FLAG DURATION``."""
    kwargs.setdefault("metavar", "DURATION")
    parser.add_argument(flag, type=parse_duration, help=help, **kwargs)


def set_handler(
    parser: argparse.ArgumentParser, func: Callable[..., int], needs_config: bool = True
) -> None:
    """What ``mnemo`` runs for this (sub)command: ``func(args, cfg)``, or ``func(args)`` before the
    config loads when ``needs_config`` is False (``doctor``: a config that fails to load is one of its
    checks)."""
    parser.set_defaults(func=func, needs_config=needs_config)


class LazySubcommands(argparse._SubParsersAction):
    """Sub-commands whose own arguments are added by a function in another module (``"pkg.mod:fn"``),
    imported only when that sub-command is named on the command line, or for all by ``load_all``:
    ``mnemo bench --help`` then lists the benches without importing any bench's code."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._pending: dict[str, str] = {}

    def add_lazy_parser(
        self, name: str, arguments: str | None, **kwargs
    ) -> argparse.ArgumentParser:
        parser = self.add_parser(name, **kwargs)
        if arguments:
            self._pending[name] = arguments
        return parser

    def load(self, name: str) -> None:
        """Add ``name``'s own arguments to its parser, once."""
        where = self._pending.pop(name, None)
        if where is not None:
            module, function = where.split(":")
            getattr(importlib.import_module(module), function)(self.choices[name])

    def load_all(self) -> None:
        for name in list(self._pending):
            self.load(name)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        if values and values[0] in self._pending:
            self.load(values[0])
        super().__call__(parser, namespace, values, option_string)
