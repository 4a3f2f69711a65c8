"""``mnemo mcp`` through the SDK's own client over stdio: the real subprocess, the demo store."""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

pytestmark = pytest.mark.slow

TOOLS = {"ask", "search", "list_people", "read_clip", "timeline", "name_person", "merge_people", "split_person",
         "undo_people_change", "forget"}


def _server(store_uri: str, cwd: str, embedder: str):
    from mcp import StdioServerParameters

    env = {"MNEMO_GRAPH__TEXT_EMBEDDER": embedder, "HF_HUB_OFFLINE": "1", "HOME": os.environ.get("HOME", "/root")}
    return StdioServerParameters(command=sys.executable, args=["-m", "mnemo", "mcp", "--store", store_uri],
                                 env=env, cwd=cwd)


async def _session(store_uri: str, cwd: str):
    from mcp import Client

    params = _server(store_uri, cwd, "minilm")  # what the demo_store fixture was built with
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
    people = out["people"].structured_content["people"]
    assert {p["name"] for p in people} == {"Diane", "Sheila"}
    assert all(len(p["voices"]) == len(p["faces"]) == 1 and p["clips"] == 2 and p["quote"] for p in people)
    hits = out["search"].structured_content["memories"]
    assert hits and all("Diane" in h["people"] for h in hits)
    assert [c["index"] for c in out["timeline"].structured_content["clips"]] == [0, 1]

    assert out["bad_limit"].is_error and "limit" in out["bad_limit"].content[0].text
    assert out["no_clip"].is_error and "no clip 'no-such-clip'" in out["no_clip"].content[0].text


async def _people_session(store_uri: str, cwd: str) -> dict:
    from mcp import Client

    calls = [("name_person", {"person": "voice_2", "name": "Carol"}),
             ("merge_people", {"a": "Carol", "b": "voice_1"}),
             ("split_person", {"person": "Carol", "members": ["voice_1", "character_1", "face_1"]}),
             ("undo_people_change", {}),
             ("list_people", {}),
             ("search", {"query": "tram", "person": "Carol"}),
             ("name_person", {"person": "voice_9", "name": "Zed"}),
             ("name_person", {"person": "voice_1", "name": "<script>"}),
             ("merge_people", {"a": "voice_1", "b": "character_1"}),
             ("split_person", {"person": "character_1", "members": ["voice_7"]})]
    async with Client(_server(store_uri, cwd, "hash"), read_timeout_seconds=120) as client:
        return {f"{i}:{name}": await client.call_tool(name, args) for i, (name, args) in enumerate(calls)}


def test_mcp_people_tools(people_store, tmp_path):
    out = list(asyncio.run(asyncio.wait_for(_people_session(people_store.uri, str(tmp_path)), 300)).values())
    named, merged, split, undone, listed, found, *bad = out
    assert not any(r.is_error for r in out[:6]), [r.content for r in out[:6] if r.is_error]
    assert named.structured_content["people"][0]["name"] == "Carol"
    assert merged.structured_content["people"][0]["voices"] == ["voice_1", "voice_2"]
    assert len(split.structured_content["people"]) == 2
    assert undone.structured_content["undid"]["op"] == "split"
    people = listed.structured_content["people"]
    assert [(p["id"], p["name"], p["name_source"]) for p in people] == [("character_1", "Carol", "user")]
    hits = found.structured_content["memories"]
    assert hits and any(h["text"].startswith("Carol said:") for h in hits)
    assert all(r.is_error for r in bad)
    assert "no person 'voice_9'" in bad[0].content[0].text and "< or >" in bad[1].content[0].text
    assert "ids of one person" in bad[2].content[0].text and "not part of character_1" in bad[3].content[0].text
    assert [o.op for o in people_store.people_ops()] == ["name", "merge", "split", "undo"]
