"""Fault scenarios: who may read or change memory. Each attack is made for real against the real
servers on a small store of people and memories: ``mnemo serve`` in its own process on 127.0.0.1
(real HTTP with httpx), ``mnemo mcp`` over stdio through the MCP SDK's client, and a folder's
``./mnemo.toml`` read by a child process run in that folder.

A leak is an answer that carries the store's data (a name, memory text, a clip id, the store's path),
a change to the store that was not the user's, a looser setting that took effect, or a key sent to
where a folder's file pointed. Every scenario also checks that the door opens for the right key (the
token, the page's own origin, the preview's nonce, the user's own config): a guard that refuses
everything would survive an attack and be useless, so that counts as a try that did not end as it
should (``ok=False``).

Each scenario takes ``prelude``: Python source a child runs before mnemo's CLI starts. The bench
passes none; tests pass one that breaks the guard under test, to see the scenario report it.

One module a scenario: ``access_origins`` (``rebinding_origin``), ``access_credentials``
(``no_credential``), ``access_mcp`` (``mcp_one_call_forget``), ``access_config``
(``hostile_config``); what they share in ``access_kit``.
"""

from __future__ import annotations

from bench.faults import by_name
from bench.faults.access_config import hostile_config
from bench.faults.access_credentials import no_credential
from bench.faults.access_mcp import mcp_one_call_forget
from bench.faults.access_origins import rebinding_origin

SCENARIOS = by_name(rebinding_origin, no_credential, mcp_one_call_forget, hostile_config)
