"""Fault scenarios: processes (filled in by issue 42 item 8)."""

from __future__ import annotations

SCENARIOS: dict = {}
