"""``mnemo mcp`` through the SDK's own client over stdio: the real subprocess, the demo store."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

pytestmark = pytest.mark.slow

TOOLS = {"ask", "search", "list_people", "read_clip", "timeline"}


async def _session(store_uri: str, cwd: str):
    from mcp import Client, StdioServerParameters

    env = {"MNEMO_GRAPH__TEXT_EMBEDDER": "minilm",  # what the demo_store fixture was built with
           "HF_HUB_OFFLINE": "1", "HOME": os.environ.get("HOME", "/root")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mnemo", "mcp", "--store", store_uri],
                                   env=env, cwd=cwd)
    out = {}
    async with Client(params, read_timeout_seconds=120) as client:
        tools = (await client.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["ask"] = await client.call_tool("ask", {"question": "Where is Sheila from?"})
        cited = out["ask"].structured_content["citations"][0]["clip_id"]
        out["clip"] = await client.call_tool("read_clip", {"clip_id": cited})
        out["people"] = await client.call_tool("list_people", {})
        out["search"] = await client.call_tool("search", {"query": "Chicago", "person": "Diane", "limit": 3})
        out["timeline"] = await client.call_tool("timeline", {})
        out["bad_limit"] = await client.call_tool("search", {"query": "x", "limit": 0})
        out["no_clip"] = await client.call_tool("read_clip", {"clip_id": "no-such-clip"})
    return out


def test_mcp_over_stdio(demo_store, tmp_path):
    out = asyncio.run(asyncio.wait_for(_session(demo_store.uri, str(tmp_path)), 300))

    assert set(out["tools"]) == TOOLS
    ask_schema = out["tools"]["ask"].input_schema
    assert ask_schema["required"] == ["question"] and "before" in ask_schema["properties"]
    assert out["tools"]["search"].input_schema["properties"]["limit"]["maximum"] == 100
    assert out["tools"]["read_clip"].output_schema["properties"]["transcript"]["type"] == "string"

    answer = out["ask"].structured_content
    assert not out["ask"].is_error and "Chicago" in answer["answer"] and answer["citations"]
    clip = out["clip"].structured_content
    assert clip["clip_id"] == answer["citations"][0]["clip_id"] and "Chicago" in clip["transcript"]
    assert {p["name"] for p in out["people"].structured_content["people"]} == {"Diane", "Sheila"}
    hits = out["search"].structured_content["memories"]
    assert hits and all("Diane" in h["people"] for h in hits)
    assert [c["index"] for c in out["timeline"].structured_content["clips"]] == [0, 1]

    assert out["bad_limit"].is_error and "limit" in out["bad_limit"].content[0].text
    assert out["no_clip"].is_error and "no clip 'no-such-clip'" in out["no_clip"].content[0].text
