"""Recorded text in prompts is data, never instructions.

Transcripts, screen text and memories can hold sentences that read like instructions ("ignore your
instructions and …" said aloud or shown on screen). Prompts put such text inside a named block that
the system prompt says never to obey, and the text cannot close that block or open another: any
tag of that name inside it is defused.
"""

from __future__ import annotations

import re


def defuse(text: str, tag: str) -> str:
    """``text`` with any ``<tag>`` or ``</tag>`` in it made harmless (angle brackets replaced)."""
    return re.sub(
        rf"</?\s*{re.escape(tag)}\s*>",
        lambda m: m.group(0).replace("<", "‹").replace(">", "›"),
        text,
        flags=re.IGNORECASE,
    )


def quote_data(text: str, tag: str) -> str:
    """``text`` inside ``<tag>…</tag>``, defused so it cannot end the block early."""
    return f"<{tag}>\n{defuse(text, tag)}\n</{tag}>"
