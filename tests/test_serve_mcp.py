"""``mnemo mcp`` through the SDK's own client over stdio: the real subprocess, the demo store."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

from factories import held

pytestmark = pytest.mark.slow

READS = {"ask", "search", "list_people", "profile", "read_clip", "timeline", "digest"}
CHANGES = {"name_person", "merge_people", "split_person", "mark_owner", "undo_people_change"}
TOOLS = READS | CHANGES  # and forget, with --allow-forget only


def _server(store_uri: str, cwd: str, embedder: str, *options: str):
    from mcp import StdioServerParameters

    env = {
        "MNEMO_GRAPH__TEXT_EMBEDDER": embedder,
        "HF_HUB_OFFLINE": "1",
        "HOME": os.environ.get("HOME", "/root"),
    }
    if "PYTHONPATH" in os.environ:  # this checkout's code, as the tests run it
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mnemo", "mcp", "--store", store_uri, *options],
        env=env,
        cwd=cwd,
    )


async def _session(store_uri: str, cwd: str):
    from mcp import Client

    params = _server(store_uri, cwd, "minilm")  # what the demo_store fixture was built with
    out: dict[
        str, Any
    ] = {}  # the tools by name under "tools", a CallToolResult under each other key
    async with Client(params, read_timeout_seconds=120) as client:
        tools = (await client.list_tools()).tools
        out["tools"] = {t.name: t for t in tools}
        out["ask"] = await client.call_tool("ask", {"question": "Where is Sheila from?"})
        cited = out["ask"].structured_content["citations"][0]["clip_id"]
        out["clip"] = await client.call_tool("read_clip", {"clip_id": cited})
        out["people"] = await client.call_tool("list_people", {})
        out["search"] = await client.call_tool(
            "search", {"query": "Chicago", "person": "Diane", "limit": 3}
        )
        out["timeline"] = await client.call_tool("timeline", {})
        out["profile"] = await client.call_tool("profile", {"person": "Sheila"})
        out["no_owner"] = await client.call_tool("profile", {})
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
    assert all(
        len(p["voices"]) == len(p["faces"]) == 1 and p["clips"] == 2 and p["quote"] for p in people
    )
    hits = out["search"].structured_content["memories"]
    assert hits and all("Diane" in h["people"] for h in hits)
    assert [c["index"] for c in out["timeline"].structured_content["clips"]] == [0, 1]
    profile = out["profile"].structured_content
    assert not out["profile"].is_error and profile["name"] == "Sheila"
    chicago = [f for f in profile["facts"] if f["relation"] == "is from"]
    assert [f["value"] for f in chicago] == ["Chicago"] and chicago[0]["citations"][0][
        "clip_id"
    ] == clip["clip_id"]
    assert out["no_owner"].is_error and "nobody is marked as you" in out["no_owner"].content[0].text

    assert out["bad_limit"].is_error and "limit" in out["bad_limit"].content[0].text
    assert out["no_clip"].is_error and "no clip 'no-such-clip'" in out["no_clip"].content[0].text


async def _people_session(store_uri: str, cwd: str) -> dict:
    from mcp import Client

    calls: list[tuple[str, dict[str, Any]]] = [
        ("name_person", {"person": "voice_2", "name": "Carol"}),
        ("merge_people", {"a": "Carol", "b": "voice_1"}),
        ("split_person", {"person": "Carol", "members": ["voice_1", "character_1", "face_1"]}),
        ("undo_people_change", {}),
        ("mark_owner", {"person": "voice_2"}),
        ("list_people", {}),
        ("search", {"query": "tram", "person": "Carol"}),
        ("name_person", {"person": "voice_9", "name": "Zed"}),
        ("name_person", {"person": "voice_1", "name": "<script>"}),
        ("merge_people", {"a": "voice_1", "b": "character_1"}),
        ("split_person", {"person": "character_1", "members": ["voice_7"]}),
    ]
    async with Client(_server(store_uri, cwd, "hash"), read_timeout_seconds=120) as client:
        return {
            f"{i}:{name}": await client.call_tool(name, args)
            for i, (name, args) in enumerate(calls)
        }


def test_mcp_people_tools(people_store, tmp_path):
    out = list(
        asyncio.run(
            asyncio.wait_for(_people_session(people_store.uri, str(tmp_path)), 300)
        ).values()
    )
    named, merged, split, undone, owner, listed, found, *bad = out
    assert not any(r.is_error for r in out[:7]), [r.content for r in out[:7] if r.is_error]
    assert named.structured_content["people"][0]["name"] == "Carol"
    assert merged.structured_content["people"][0]["voices"] == ["voice_1", "voice_2"]
    assert len(split.structured_content["people"]) == 2
    assert undone.structured_content["undid"]["op"] == "split"
    assert owner.structured_content["change"]["description"] == "me character_1"
    people = listed.structured_content["people"]
    assert [(p["id"], p["name"], p["name_source"], p["owner"]) for p in people] == [
        ("character_1", "Carol", "user", True)
    ]
    hits = found.structured_content["memories"]
    assert hits and any(h["text"].startswith("Carol said:") for h in hits)
    assert all(r.is_error for r in bad)
    assert "no person 'voice_9'" in bad[0].content[0].text and "< or >" in bad[1].content[0].text
    assert (
        "ids of one person" in bad[2].content[0].text
        and "not part of character_1" in bad[3].content[0].text
    )
    assert [o.op for o in people_store.people_ops()] == ["name", "merge", "split", "undo", "me"]


EVERYTHING = {"from": "1970-01-01T00:00:00Z", "to": "2100-01-01T00:00:00Z"}


async def _forget_session(store_uri: str, cwd: str, *options: str, calls=()) -> dict:
    """``calls``: (label, arguments of forget, or a function of the results so far giving them)."""
    from mcp import Client

    out: dict[str, Any] = {}  # the tools by name under "tools", a CallToolResult under each label
    async with Client(
        _server(store_uri, cwd, "hash", *options), read_timeout_seconds=120
    ) as client:
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        for label, args in calls:
            out[label] = await client.call_tool("forget", args(out) if callable(args) else args)
    return out


def _text(result) -> str:
    return result.content[0].text


def test_mcp_forget_is_off_by_default(people_store, tmp_path):
    """What a prompt injection would send: forget everything, confirmed, in one call."""
    before = held(people_store)
    out = asyncio.run(
        asyncio.wait_for(
            _forget_session(
                people_store.uri,
                str(tmp_path),
                calls=[("all", {"request": {**EVERYTHING, "confirm": True}})],
            ),
            120,
        )
    )
    assert set(out["tools"]) == TOOLS
    for name, tool in out["tools"].items():
        hints = tool.annotations
        assert hints is not None and hints.open_world_hint is False, name
        if name in READS:
            assert hints.read_only_hint is True, name
        else:  # recorded and undone by undo_people_change
            assert hints.read_only_hint is False and hints.destructive_hint is False, name
    assert (
        out["all"].is_error
        and "forget is off" in _text(out["all"])
        and "--allow-forget" in _text(out["all"])
    )
    assert "nothing was forgotten" in _text(out["all"])
    assert held(people_store) == before == (2, 6)


def test_mcp_forget_needs_a_preview_and_its_nonce(people_store, tmp_path):
    clip0 = {"clip": "people-clip-0"}
    nonce = lambda label: lambda out: out[label].structured_content["nonce"]  # noqa: E731
    calls = [
        ("one_call", {"request": {**EVERYTHING, "confirm": True}}),
        ("preview", {"request": clip0}),
        ("wrong", {"request": {**clip0, "nonce": "not-the-nonce"}}),
        (
            "other_filter",
            lambda out: {"request": {"clip": "people-clip-1", "nonce": nonce("preview")(out)}},
        ),
        ("reused", lambda out: {"request": {**clip0, "nonce": nonce("preview")(out)}}),
        ("preview2", {"request": clip0}),
        ("confirmed", lambda out: {"request": {**clip0, "nonce": nonce("preview2")(out)}}),
        (
            "again",
            lambda out: {"request": {"clip": "people-clip-1", "nonce": nonce("preview2")(out)}},
        ),
    ]
    out = asyncio.run(
        asyncio.wait_for(
            _forget_session(people_store.uri, str(tmp_path), "--allow-forget", calls=calls), 120
        )
    )
    assert set(out["tools"]) == TOOLS | {"forget"}
    hints = out["tools"]["forget"].annotations
    assert (
        hints.destructive_hint is True
        and hints.read_only_hint is False
        and hints.idempotent_hint is False
    )
    assert "nonce" in out["tools"]["forget"].description

    assert out["one_call"].is_error and "confirm=true alone no longer forgets" in _text(
        out["one_call"]
    )
    preview = out["preview"].structured_content
    assert not out["preview"].is_error and not preview["forgotten"] and preview["clips"] == 1
    assert (
        preview["memories"] == 4
        and preview["span"] == [1_800_000_000.0, 1_800_000_030.0]
        and preview["nonce"]
    )
    for label, says in (
        ("wrong", "unknown or already used"),
        ("other_filter", "another request"),
        ("reused", "unknown or already used"),
        ("again", "unknown or already used"),
    ):
        assert (
            out[label].is_error
            and says in _text(out[label])
            and "nothing was forgotten" in _text(out[label])
        ), label
    confirmed = out["confirmed"].structured_content
    assert not out["confirmed"].is_error and confirmed["forgotten"] and confirmed["clips"] == 1
    assert held(people_store) == (1, 2)
    assert not people_store.has_clip("people-clip-0") and people_store.has_clip("people-clip-1")


async def _asking_session(store_uri: str, cwd: str, answers: list[dict | None], calls) -> dict:
    """A client that can ask its person (elicitation): each question the server puts is kept under
    "asked" and answered with the next of ``answers`` ({"forget": true} accepts; None declines)."""
    from mcp import Client
    from mcp.types import ElicitResult

    out: dict[str, Any] = {"asked": []}

    async def person(context, params):
        out["asked"].append(params.message)
        given = answers[len(out["asked"]) - 1]
        if given is None:
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content=given)

    async with Client(
        _server(store_uri, cwd, "hash"), read_timeout_seconds=120, elicitation_callback=person
    ) as client:
        out["tools"] = {t.name: t for t in (await client.list_tools()).tools}
        for label, args in calls:
            out[label] = await client.call_tool("forget", args)
    return out


def test_mcp_forget_asks_the_person_and_forgets_only_on_their_yes(people_store, tmp_path):
    """No --allow-forget: a client that can ask its person gets forget, and the person decides;
    the agent's own nonce or confirm decides nothing, and it never sees a nonce."""
    clip0, clip1 = {"clip": "people-clip-0"}, {"clip": "people-clip-1"}
    nothing = {"from": "2001-01-01T00:00:00Z", "to": "2001-01-02T00:00:00Z", "nonce": "made-up"}
    calls = [
        ("nothing", {"request": nothing}),  # selects nothing: no one is asked, no nonce given
        ("declined", {"request": {**clip0, "confirm": True, "nonce": "made-up"}}),
        ("said_no", {"request": clip0}),
        ("yes", {"request": clip1}),
    ]
    answers = [None, {"forget": False}, {"forget": True}]
    out = asyncio.run(
        asyncio.wait_for(_asking_session(people_store.uri, str(tmp_path), answers, calls), 120)
    )
    assert set(out["tools"]) == TOOLS | {"forget"}
    assert not out["nothing"].is_error, out["nothing"]
    said = out["nothing"].structured_content
    assert not said["forgotten"] and said["clips"] == 0 and said["nonce"] is None
    assert len(out["asked"]) == 3
    assert "1 clip(s)" in out["asked"][0] and "clip people-clip-0" in out["asked"][0]
    assert "for good" in out["asked"][0] and "2027-01-15 08:00 UTC" in out["asked"][0]
    for label in ("declined", "said_no"):
        said = out[label].structured_content
        assert not out[label].is_error and not said["forgotten"] and said["nonce"] is None, label
        assert "nothing was forgotten" in said["next_step"], label
    assert (
        out["yes"].structured_content["forgotten"] and out["yes"].structured_content["clips"] == 1
    )
    people_store.catch_up()
    assert people_store.has_clip("people-clip-0") and not people_store.has_clip("people-clip-1")
