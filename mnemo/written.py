"""An account written by a model (``mnemo day|week --llm|--reason``, ``people show --reason``):
asked of the right model, printed under what it retells, and added to the --json object."""

from __future__ import annotations


def show_written(written, out: dict, what: str) -> None:
    """Prints the written account (``control.digest_llm.Written``, or None: nothing to print) and
    adds it to ``out`` (the --json object)."""
    if written is None:
        return
    print(
        f"  written by {written.model}:" + ("" if written.sentences else f" nothing {what} support")
    )
    for s in written.sentences:
        print(f"    {s.text}  [clip {', '.join(c.clip_id for c in s.citations)}]")
    out["written"] = {
        "model": written.model,
        "dropped": written.dropped,
        "sentences": [
            {"text": s.text, "clip_ids": [c.clip_id for c in s.citations]}
            for s in written.sentences
        ],
    }


def written_by(write, cfg, reason: bool = False):
    """``write(client, say)`` with the LLM (``reason``: the reasoning model), ``say`` printing its
    progress on stderr; None (said on stderr) when no usable reply came back."""
    import sys
    from contextlib import ExitStack

    from llm.client import LLMError
    from mnemo.wiring import llm_or_packaged, reasoning_client

    def say(m: str) -> None:
        print(m, file=sys.stderr)

    with ExitStack() as stack:
        try:
            if reason:
                client, server = reasoning_client(cfg.control, cfg.llm, say)
                if server is not None:
                    stack.callback(server.close)
            else:
                client = llm_or_packaged(cfg.llm, stack, say)
            return write(client, say)
        except LLMError as e:
            print(f"warning: no written account: {e}; what is above stands", file=sys.stderr)
            return None
