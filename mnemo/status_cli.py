"""``mnemo status``: what the store holds and what it costs on disk, and whether capture runs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from mnemo.cli_args import add_json, add_store, set_handler


def add_parser(sub) -> None:
    p = sub.add_parser(
        "status", help="store size by part, clips, memories, people, span covered, capture state"
    )
    add_store(p)
    add_json(p)
    set_handler(p, cmd_status)


def store_status(store) -> dict:
    parts = {
        name.removesuffix(".lance"): size
        for name, size in sorted(store.side.sizes().items())
        if name.endswith(".lance")
    }
    counts = store.count()
    spans = (
        store.clips.search().select(["start_ts", "end_ts", "ingested_ts"]).limit(None).to_arrow()
    )
    first = min(spans["start_ts"].to_pylist(), default=None)
    last = max(spans["end_ts"].to_pylist(), default=None)
    kinds: dict[str, int] = {}
    for row in store.memories.search().select(["kind"]).limit(None).to_list():
        kinds[row["kind"]] = kinds.get(row["kind"], 0) + 1
    return {
        "store": store.uri,
        "bytes": sum(parts.values()),
        "bytes_by_part": parts,
        "clips": counts["clips"],
        "memories": counts["memories"],
        "memories_by_kind": kinds,
        "people": len(store.people()),
        "span": [first, last] if first is not None else None,
        "last_clip_ts": last,
        "last_ingest_ts": max(spans["ingested_ts"].to_pylist(), default=None),
    }


def capture_status(cfg) -> dict:
    from graph.sidefiles import folder_bytes
    from perception.capture.control import DaemonNotRunning, request

    out = Path(cfg.capture.out).expanduser()
    state: dict = {"out": str(out), "bytes": folder_bytes(out) if out.is_dir() else 0}
    try:
        reply = request({"cmd": "status"}, timeout_s=2.0)
    except (DaemonNotRunning, OSError, ValueError) as e:
        state["state"] = (
            "not running" if isinstance(e, DaemonNotRunning) else f"not answering ({e})"
        )
    else:
        state.update(
            {
                "state": reply.get("state", "unknown"),
                "why": reply.get("why"),
                "daemon_out": reply.get("out"),
                "frames_written": reply.get("written"),
            }
        )
    return state


def _when(ts: float | None) -> str:
    return (
        datetime.fromtimestamp(ts).astimezone().isoformat(timespec="seconds")
        if ts is not None
        else "never"
    )


def cmd_status(args, cfg) -> int:
    from mnemo.wiring import open_store

    status = store_status(open_store(cfg.graph, args.store))
    status["capture"] = capture_status(cfg)
    mb = lambda n: f"{n / 1e6:.1f} MB"  # noqa: E731
    print(
        f"store {status['store']}: {mb(status['bytes'])} ("
        + ", ".join(f"{k} {mb(v)}" for k, v in status["bytes_by_part"].items())
        + ")"
    )
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(status["memories_by_kind"].items()))
    print(
        f"{status['clips']} clip(s), {status['memories']} memories"
        + (f" ({kinds})" if kinds else "")
        + f", {status['people']} people"
    )
    span = status["span"]
    print(f"covers {_when(span[0])} to {_when(span[1])}" if span else "covers nothing yet")
    print(
        f"last clip ends {_when(status['last_clip_ts'])}; last ingest {_when(status['last_ingest_ts'])}"
    )
    cap = status["capture"]
    print(
        f"capture: {cap['state']}"
        + (f" ({cap['why']})" if cap.get("why") else "")
        + f"; {mb(cap['bytes'])} of screenshots in {cap['out']}"
    )
    if args.json:
        print(json.dumps(status))
    return 0
