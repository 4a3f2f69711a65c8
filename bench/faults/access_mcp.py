"""``mcp_one_call_forget``: ``mnemo mcp`` over stdio through the MCP SDK's client: forget is off by
default; with ``--allow-forget`` only a preview's own nonce forgets, and only what it previewed.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.faults import mnemo_argv
from bench.faults.access_kit import (
    EVERYTHING,
    T0,
    Fingerprint,
    child_env,
    clip_id,
    fresh_store,
    note,
)

# ---- mcp_one_call_forget -------------------------------------------------------------------------

SHORT_NONCES = (
    "import time as _t, mnemo.serve.confirm as _c\n"
    "_c.Confirmations.__init__.__defaults__ = (2.0, _t.monotonic)"
)  # a nonce expires in 2 s


def mcp_one_call_forget(ctx, tally, prelude: str = "") -> None:
    """``mnemo mcp`` over stdio: forget off by default; with ``--allow-forget`` only a preview's own
    nonce forgets, and only what it previewed. Three servers (forget off, on, on with nonces that
    expire in 2 s) serve all tries; try ``i`` aims at clip ``i`` of a store with one clip more."""
    import asyncio

    where = fresh_store(ctx, ctx.runs + 1)
    tries = asyncio.run(
        asyncio.wait_for(_mcp_tries(ctx.workdir, where, ctx.runs, prelude), 300 + 60 * ctx.runs)
    )
    for run, (leaks, lost, wrong) in enumerate(tries):
        ok = not any(w.startswith("the right way") for w in wrong)
        tally.run(leaks=leaks, lost=lost, ok=ok, note=note(run, wrong))


def _mcp_server(workdir: Path, store: Path, prelude: str, *options: str):
    from mcp import StdioServerParameters

    argv = mnemo_argv(["mcp", "--store", str(store), *options], prelude)
    return StdioServerParameters(
        command=argv[0], args=argv[1:], env=child_env(workdir), cwd=str(workdir)
    )


async def _mcp_tries(
    workdir: Path, store: Path, runs: int, prelude: str
) -> list[tuple[int, int, list[str]]]:
    import asyncio

    from mcp import Client

    seen = Fingerprint(store)
    last = clip_id(runs)  # no try aims at it: it must stay
    tries, missing = [], set()

    async def refused(client, label: str, request: dict, wrong: list[str]) -> int:
        held = seen.held()
        reply = await client.call_tool("forget", {"request": request})
        gone = held - seen.held()
        if gone or not reply.is_error:
            wrong.append(f"{label}: {'deleted ' + str(gone) if gone else 'not refused'}")
            return max(gone, 1)
        return 0

    async def forget(client, request: dict) -> dict:
        return (await client.call_tool("forget", {"request": request})).structured_content or {}

    def span(index: int) -> dict:
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        return {"from": iso(T0 + 30 * index), "to": iso(T0 + 30 * index + 29)}

    async with (
        Client(_mcp_server(workdir, store, prelude), read_timeout_seconds=120) as off,
        Client(
            _mcp_server(workdir, store, prelude, "--allow-forget"), read_timeout_seconds=120
        ) as on,
        Client(
            _mcp_server(workdir, store, f"{prelude}\n{SHORT_NONCES}", "--allow-forget"),
            read_timeout_seconds=120,
        ) as short,
    ):
        for run in range(runs):
            target, wrong = clip_id(run), []
            leaks = lost = 0
            if "forget" in {t.name for t in (await off.list_tools()).tools}:
                leaks += 1
                wrong.append("forget is offered without --allow-forget")
            one_calls: list[dict[str, object]] = [
                {**EVERYTHING, "confirm": True},
                {"clip": target, "confirm": True},
                {"clip": target, "nonce": "made-up-nonce-0123456789abcdef"},
            ]
            one_call = one_calls[run % 3]
            leaks += await refused(off, "one call, forget off", one_call, wrong)
            leaks += await refused(
                on, "confirm=true, no nonce", {**EVERYTHING, "confirm": True}, wrong
            )
            leaks += await refused(
                on,
                "a made-up nonce",
                {"clip": target, "nonce": "made-up-nonce-0123456789abcdef"},
                wrong,
            )
            first = (await forget(on, span(run))).get("nonce") or "none"
            leaks += await refused(
                on, "another range's nonce", {**EVERYTHING, "nonce": first}, wrong
            )
            leaks += await refused(on, "a spent nonce", {**span(run), "nonce": first}, wrong)
            held = seen.held()
            preview = await forget(on, {"clip": target})
            done = await on.call_tool(
                "forget", {"request": {"clip": target, "nonce": preview.get("nonce") or ""}}
            )
            gone, expected = (
                held - seen.held(),
                preview.get("clips", 0) + preview.get("memories", 0),
            )
            if done.is_error or not expected or gone != expected:
                wrong.append(
                    f"the right way (preview, then its nonce) forgot {gone}, not the {expected} previewed"
                )
                lost += max(gone - expected, 0)
            leaks += await refused(
                on, "a used nonce", {"clip": last, "nonce": preview.get("nonce") or "none"}, wrong
            )
            late = (await forget(short, {"clip": last})).get("nonce") or "none"
            await asyncio.sleep(2.5)
            leaks += await refused(short, "an expired nonce", {"clip": last, "nonce": late}, wrong)
            seen.store.catch_up()
            kept = [
                c
                for c in (*(clip_id(i) for i in range(run + 1, runs)), last)
                if c not in missing and not seen.store.has_clip(c)
            ]
            missing.update(kept)
            if kept:
                lost += len(kept)
                wrong.append(f"{', '.join(kept)} forgotten, which no request named")
            tries.append((leaks, lost, wrong))
    return tries
