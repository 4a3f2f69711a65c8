"""``forget`` over MCP, confirmed by the person, not by the agent.

Recorded text (a page on screen, a transcript) can tell an agent to delete memory, so the agent
must not be the one that confirms. Where the client supports MCP's elicitation (spec 2025-06-18),
the server previews the filter and asks the person through the client ("Forget for good: 3 clips,
12 memories, from … to …?"); it forgets only when they accept with ``forget`` true, and the
preview's nonce never reaches the agent. The question goes through the SDK's resolvers
(``Resolve``/``Elicit``), which speak both the older protocol (a request mid-call) and 2026-07-28's
input-required round trips. A client without elicitation gets no ``forget`` at all,
unless the server was started with ``--allow-forget``, where the agent's own preview-and-nonce
flow (``mnemo.serve.confirm``) is what the user chose.
"""

from __future__ import annotations

from datetime import UTC, datetime

import anyio
from mcp.server.mcpserver import AcceptedElicitation, Context, Elicit
from pydantic import BaseModel, Field

from mnemo.serve.models import ForgetIn, ForgetOut
from mnemo.serve.service import MemoryService


class ForgetAnswer(BaseModel):
    """What the person answers (a form with one yes/no field, as elicitation allows)."""

    forget: bool = Field(description="true to forget this for good; nothing can bring it back")


def can_ask(capabilities) -> bool:
    """Whether a client with these declared ``capabilities`` can ask its person (elicitation)."""
    return capabilities is not None and capabilities.elicitation is not None


def question(preview: ForgetOut, request: ForgetIn) -> str:
    """The question put to the person: what the filter selects and what would go."""
    asked = request.model_dump(by_alias=True, exclude_none=True, exclude={"nonce", "confirm"})
    filters = ", ".join(f"{k} {v}" for k, v in asked.items()) or "no filter"
    lines = [
        f"An agent asks to forget, for good, what matches: {filters}.",
        f"That is {preview.clips} clip(s), {preview.memories} memories, {preview.entities} "
        f"people record(s) and {preview.people_changes} change(s) you made to people",
    ]
    if preview.span:
        start, end = (
            datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC") for t in preview.span
        )
        lines[-1] += f", from {start} to {end}"
    lines[-1] += "."
    if preview.files_to_delete:
        lines.append(f"{preview.files_to_delete} captured file(s) would be deleted too.")
    lines.append("Forget it? Nothing forgotten can be brought back.")
    return "\n".join(lines)


def _filters(request: ForgetIn) -> ForgetIn:
    """The request as the person decides on it: a nonce or ``confirm`` the agent sent is dropped."""
    return request.model_copy(update={"nonce": None, "confirm": False})


def ask_the_person(request: ForgetIn, ctx: Context) -> Elicit[ForgetAnswer] | None:
    """The SDK's resolver for ``forget``'s answer: the question for the person, when the client
    can ask them and the filter selects something; None otherwise (no one is asked). The SDK asks
    over the protocol the client speaks (a request mid-call, or an input-required round trip), so
    this may run again when the answer comes back: the preview is only read, never acted on."""
    if not can_ask(ctx.client_capabilities):
        return None
    service: MemoryService = ctx.mcp_server.service  # type: ignore[attr-defined]  # MnemoServer's
    preview = service.forget(_filters(request))
    return Elicit(question(preview, _filters(request)), ForgetAnswer) if preview.nonce else None


def _unconfirmed(preview: ForgetOut, why: str) -> ForgetOut:
    """``preview`` as the agent may see it: without its nonce."""
    return preview.model_copy(update={"nonce": None, "nonce_expires_in_s": None, "next_step": why})


async def decide(
    service: MemoryService, request: ForgetIn, answer, can_ask_user: bool
) -> ForgetOut:
    """``forget``'s outcome: where the person was asked (``answer``, from ``ask_the_person``), what
    they said; where no one was asked, the agent's own preview-and-nonce flow
    (``MemoryService.forget``, offered only with ``--allow-forget`` to a client that cannot ask).
    To a client that can ask (``can_ask_user``) no nonce is ever given, nor one it sends used:
    when the filter selected nothing as the question was to be put, it gets a preview only."""
    if isinstance(answer, AcceptedElicitation) and answer.data is None:  # no one was asked
        if not can_ask_user:
            return await anyio.to_thread.run_sync(service.forget, request)
        preview = await anyio.to_thread.run_sync(service.forget, _filters(request))
        return _unconfirmed(preview, "Nothing was forgotten: ask again to put it to the user.")
    preview = await anyio.to_thread.run_sync(service.forget, _filters(request))
    if not isinstance(answer, AcceptedElicitation) or not answer.data.forget:
        said = "declined" if answer.action == "decline" else "did not say yes"
        return _unconfirmed(preview, f"The user {said}: nothing was forgotten.")
    if not preview.nonce:  # gone meanwhile
        return preview
    confirmed = _filters(request).model_copy(update={"nonce": preview.nonce})
    return await anyio.to_thread.run_sync(service.forget, confirmed)
