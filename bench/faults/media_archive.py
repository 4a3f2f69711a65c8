"""``export_import``: a store with people, memories, edges, a people log and a forget log through
``mnemo export`` and ``mnemo import``, then damaged archives and taken folders.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import re
import shutil
from pathlib import Path
from unittest import mock

from bench.faults import Context, Tally
from bench.faults.media_kit import changed, open_store, record_try, snapshot, table_rows

# ---- export_import --------------------------------------------------------------------------------

ARCHIVE_TABLES = ("clips", "memories", "entities", "edges", "people_log", "forget_log")
QUESTIONS = (
    "What did they say about the custard tarts at the bakery in Lisbon?",
    "Who rode tram 28?",
    "Where does someone want to go next year?",
)


def mnemo_main(argv: list[str]) -> tuple[int, str, str]:
    """``mnemo ARGV`` in this process (its ``main``, as the console script runs it), with the
    ``hash`` embedder the scenario's store is built with; (exit code, stdout, stderr)."""
    from mnemo.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        mock.patch.dict(os.environ, {"MNEMO_GRAPH__TEXT_EMBEDDER": "hash"}),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _people_store(path: Path, t0: float) -> None:
    """Two people talking in three clips of a recording (voices, characters, a face), the third
    clip forgotten, one person named and a naming undone: every table holds rows."""
    from bench.talk_store import LINES, write_talk

    lines = [line for line in LINES if line[2] != 12] + [(2, "voice_1", 1, "Bye.")]
    store = write_talk(
        open_store(path),
        t0,
        3,
        lambda i: f"talk-clip-{i}",
        "/recordings/talk.wav",
        "sha-talk",
        lines,
    )
    del store
    for change in (
        ["forget", "--clip", "talk-clip-2", "--yes"],
        ["people", "name", "voice_2", "Carol"],
        ["people", "name", "voice_1", "Dave"],
        ["people", "undo"],
    ):
        code, _, err = mnemo_main([*change, "--store", str(path)])
        if code:
            raise RuntimeError(
                f"building the store: mnemo {' '.join(change)} failed: {err.strip()}"
            )
    open_store(path).refresh_indexes()


def _canonical(store_dir: Path, name: str) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table_rows(store_dir, name))


def _answers(store_dir: Path) -> list:
    out = [
        json.loads(mnemo_main(["people", "--store", str(store_dir), "--json"])[1].splitlines()[-1])
    ]
    for q in QUESTIONS:
        code, text, err = mnemo_main(["ask", q, "--store", str(store_dir), "--json"])
        answer = json.loads(text.splitlines()[-1]) if code == 0 else {"error": err}
        out.append({k: answer.get(k) for k in ("answer", "citations", "error")})
    return out


def _damage(archive: Path, how: str, rng: random.Random) -> None:
    if how == "truncated":
        victim = archive / rng.choice(
            ["memories.jsonl", "edges.jsonl", "memory_vectors.npy", "people_log.jsonl"]
        )
        whole = victim.read_bytes()
        victim.write_bytes(whole[: rng.randint(1, len(whole) - 1)])
    elif (
        how == "tampered"
    ):  # one byte of a value, so the archive still parses: only its checksum tells
        name, key = rng.choice(
            [
                ("memories.jsonl", b'"text":"'),
                ("clips.jsonl", b'"transcript":"'),
                ("memory_vectors.npy", b""),
            ]
        )
        data = bytearray((archive / name).read_bytes())
        if key:
            starts = [m.end() for m in re.finditer(re.escape(key), data)]
            at = next(i for i in range(rng.choice(starts), len(data)) if chr(data[i]).isalpha())
            data[at] = ord("q") if data[at] != ord("q") else ord("z")
        else:
            at = rng.randrange(128, len(data))  # past the .npy header
            data[at] ^= 1 << rng.randrange(8)
        (archive / name).write_bytes(bytes(data))
    else:  # a newer format
        manifest = json.loads((archive / "manifest.json").read_text())
        manifest["format_version"] += 1
        (archive / "manifest.json").write_text(json.dumps(manifest))


def export_import(ctx: Context, tally: Tally) -> None:
    """Out and back in: every row of every table equal, the same people and the same answers
    with the same citations. Then each refusal: a truncated, a tampered and a newer archive, an
    export into a folder that holds a file, an import over an existing store; each must fail with
    ``error:`` saying what to do and leave everything as it was (a store or staging folder left
    behind is an orphan, a changed file lost)."""
    for n in range(ctx.runs):
        rng = random.Random(200 + n)
        root = ctx.workdir / f"try{n}"
        root.mkdir(parents=True)
        store, archive, new = root / "store", root / "export", root / "imported"
        _people_store(store, 1_800_000_000.0 + 3600 * n)
        lost = orphans = 0
        notes: list[str] = []
        code, _, err = mnemo_main(["export", str(archive), "--store", str(store)])
        if code == 0:
            code, _, err = mnemo_main(["import", str(archive), "--store", str(new)])
        if code != 0:
            tally.run(ok=False, note=f"try {n}: the round trip failed: {err.strip()[-300:]}")
            continue
        for name in ARCHIVE_TABLES:
            a, b = _canonical(store, name), _canonical(new, name)
            if a != b:
                lost += len(set(a) ^ set(b)) or 1
                notes.append(
                    f"{name}: {len(a)} rows exported, {len(b)} imported, {len(set(a) ^ set(b))} differ"
                )
        if _answers(store) != _answers(new):
            lost += 1
            notes.append("people or answers differ after the import")
        store_before = snapshot(store)
        for how in ("truncated", "tampered", "newer"):
            bad = root / f"export-{how}"
            shutil.copytree(archive, bad)
            _damage(bad, how, rng)
            held = snapshot(bad)
            target = root / f"from-{how}"
            code, _, err = mnemo_main(["import", str(bad), "--store", str(target)])
            left = [
                p.name for p in root.iterdir() if p.name.startswith((f"from-{how}", f".from-{how}"))
            ]
            if code == 0 or left:
                orphans += max(1, len(left))
                notes.append(f"{how} archive: exit {code}, left {left}")
            elif "error:" not in err or "nothing was imported" not in err:
                notes.append(
                    f"{how} archive refused without saying what to do: {err.strip()[:200]}"
                )
            if changed(held, snapshot(bad)):
                lost += 1
                notes.append(f"{how} archive: the import changed it")
        taken = root / "user-folder"
        taken.mkdir()
        (taken / "thesis.txt").write_text("my own file\n")
        held = snapshot(taken)
        code, _, err = mnemo_main(["export", str(taken), "--store", str(store)])
        moved = changed(held, snapshot(taken))
        if moved or code == 0:
            lost += len(moved)
            orphans += code == 0
            notes.append(f"export into a folder holding a file: exit {code}, changed {moved}")
        elif "error:" not in err or "nothing was changed" not in err:
            notes.append(
                f"export into a taken folder refused without saying what to do: {err.strip()[:200]}"
            )
        held = snapshot(new)
        code, _, err = mnemo_main(["import", str(archive), "--store", str(new)])
        moved = changed(held, snapshot(new))
        if moved or code == 0:
            lost += len(moved) or 1
            notes.append(
                f"import over an existing store: exit {code}, changed {len(moved)} file(s)"
            )
        elif "error:" not in err:
            notes.append(
                f"import over an existing store refused without a clear message: {err.strip()[:200]}"
            )
        moved = changed(store_before, snapshot(store))
        if moved:
            lost += len(moved)
            notes.append(f"the exported store changed: {moved[:3]}")
        record_try(ctx, tally, n, lost, orphans, notes)
