"""``corrupt_media``: a folder of good media beside broken files, ingested by ``mnemo ingest`` in a
child process, then again; the folder is hashed before and after.
"""

from __future__ import annotations

import os
import random
import shutil
import wave
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.faults import Context, Tally
from bench.faults.media_kit import (
    HINTS,
    MNEMO,
    changed,
    child_env,
    consistency,
    record_try,
    run_mnemo,
    snapshot,
    table_rows,
)

# ---- corrupt_media -------------------------------------------------------------------------------


def _excerpt(wav: Path, out: Path, start_s: float, seconds: float) -> None:
    with wave.open(str(wav)) as w:
        rate = w.getframerate()
        w.setpos(int(start_s * rate))
        frames, params = w.readframes(int(seconds * rate)), w.getparams()
    with wave.open(str(out), "wb") as o:
        o.setparams(params)
        o.writeframes(frames)


BROKEN = (
    "empty.wav",
    "truncated.mp4",
    "noise.jpg",
    "noise.mp4",
    "notes.png",
    "folder.mp4",
    "link.wav",
)


def _corrupt_folder(
    folder: Path, rng: random.Random, when: datetime
) -> tuple[dict, dict[str, Path]]:
    """The user's folder: good media and a random choice of broken files under random names.
    Returns (good: name -> path, broken: kind -> path)."""
    from bench.demo_media import build_demo_recording
    from bench.fixtures import group_photo, pyannote_sample

    folder.mkdir(parents=True)
    good = {"audio": folder / "call.wav", "image": folder / "photo.jpg"}
    _excerpt(pyannote_sample() / "sample.wav", good["audio"], rng.choice((0.0, 6.0, 12.0)), 6.0)
    shutil.copy(group_photo(), good["image"])
    kinds = rng.sample(BROKEN, rng.randint(4, len(BROKEN)))
    broken = {}
    for kind in kinds:
        stem, suffix = kind.split(".")
        path = folder / f"{rng.choice('abcxyz')}{rng.randint(0, 99)}-{stem}.{suffix}"
        if kind == "empty.wav":
            path.write_bytes(b"")
        elif kind == "truncated.mp4":
            path.write_bytes(
                build_demo_recording().read_bytes()[: rng.choice((4096, 32768, 131072))]
            )
        elif kind in ("noise.jpg", "noise.mp4"):
            path.write_bytes(rng.randbytes(rng.choice((512, 20000))))
        elif kind == "notes.png":
            path.write_text("shopping list: eggs, milk, bread\n" * 20)
        elif kind == "folder.mp4":
            path.mkdir()
        else:
            path.symlink_to(folder / "moved-away-recording.wav")
        broken[kind] = path
    # the images' capture times: from their mtimes; broken ones in the good image's 30 s or another
    stamp = when.timestamp()
    for path in [good["image"], *(p for k, p in broken.items() if k in ("noise.jpg", "notes.png"))]:
        t = stamp + (0 if path == good["image"] or rng.random() < 0.5 else 90)
        os.utime(path, (t, t))
    return good, broken


def corrupt_media(ctx: Context, tally: Tally, mnemo_cmd: Sequence[str] = MNEMO) -> None:
    """Every good file stored, every broken one named with what to do, the folder untouched, a
    rerun that adds nothing, and a run of broken files alone that exits non-zero. (``mnemo ingest``
    exits 0 when something was ingested: docs/ingest.md; so the exit code is checked on
    the broken files alone, less a truncated recording, whose readable start is ingested.) A folder
    named ``x.mp4`` is a folder: walked, and not named."""
    env = child_env()
    for n in range(ctx.runs):
        rng = random.Random(n)
        root = ctx.workdir / f"try{n}"
        folder, store = root / "user-media", root / "store"
        when = datetime(2026, 5, 4, 9, 0, tzinfo=UTC) + timedelta(hours=n)
        good, broken = _corrupt_folder(folder, rng, when)
        before = snapshot(folder)
        first = run_mnemo(mnemo_cmd, ["ingest", str(folder), "--store", str(store)], root, env)
        said = first.stdout + first.stderr
        lost, orphans, notes = 0, 0, []
        if not (store / "clips.lance").exists():
            ctx.progress(f"corrupt_media try {n}: no store; ingest said: {said[-600:]}")
            tally.run(
                lost=len(good),
                ok=False,
                note=f"try {n}: exit {first.returncode}, no store: {said[-300:]}",
            )
            continue
        clips = table_rows(store, "clips")
        if not any(c["source_path"] == str(good["audio"].resolve()) for c in clips):
            lost += 1
            notes.append("the good recording was not stored")
        t_image = good["image"].stat().st_mtime
        if not any(
            c["source_path"] == str(folder.resolve()) and c["start_ts"] <= t_image < c["end_ts"]
            for c in clips
        ):
            lost += 1
            notes.append("the good image was not stored")
        lines = said.splitlines()
        for kind, path in broken.items():
            if kind == "folder.mp4":
                continue
            told = [line for line in lines if path.name in line]
            if not told:
                notes.append(f"{kind} ({path.name}) not named in the output")
            elif not any(h in line for line in told for h in HINTS):
                notes.append(f"{kind} ({path.name}) named without what to do: {told[0][:200]}")
        if first.returncode != 0:
            notes.append(f"exit {first.returncode} although good files were ingested")
        counts = [len(clips), len(table_rows(store, "memories"))]
        again = run_mnemo(mnemo_cmd, ["ingest", str(folder), "--store", str(store)], root, env)
        problems = consistency(store)
        if [
            len(table_rows(store, "clips")),
            len(table_rows(store, "memories")),
        ] != counts or problems:
            orphans += 1
            notes.append(
                f"the rerun changed the store: {counts} -> clips, memories "
                f"{len(table_rows(store, 'clips'))}, {len(table_rows(store, 'memories'))}; {problems}"
            )
        if "already stored" not in again.stdout + again.stderr:
            notes.append("the rerun did not say what was already stored")
        # a truncated recording's readable start is ingested (and already stored now): not run alone
        files = [str(p) for k, p in broken.items() if k not in ("folder.mp4", "truncated.mp4")]
        alone = run_mnemo(mnemo_cmd, ["ingest", *files, "--store", str(store)], root, env)
        if alone.returncode == 0:
            notes.append("ingesting only broken files exited 0")
        if len(table_rows(store, "clips")) != counts[0]:
            orphans += 1
            notes.append("ingesting only broken files changed the store")
        moved = changed(before, snapshot(folder))
        if moved:
            lost += len(moved)
            notes.append(f"the user's folder changed: {moved}")
        record_try(ctx, tally, n, lost, orphans, notes, said=f"broken {sorted(broken)}; ")
