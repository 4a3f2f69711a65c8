"""``planted_secrets``: the redaction corpus's secrets rendered as screen text into screenshots that
``CaptureStore`` writes as the capture daemon does (window titles in the sidecars), and a few
spoken by espeak-ng (that part is not tried, with a note, where espeak-ng is missing), ingested
with the configured OCR and ASR; then every byte the store holds is searched.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.faults import Context, Tally
from bench.faults.media_kit import (
    MARKER,
    MNEMO,
    child_env,
    run_mnemo,
    secret_parts,
    squeeze,
    store_bytes,
    table_rows,
)
from bench.text_screens import render_screen, write_capture

# ---- planted_secrets ------------------------------------------------------------------------------

# the corpus's forms that are sentences a person says (its "passphrase: '…'" is written, not said)
SPOKEN = ("said wifi password words", "said password for", "said passcode for")


def _needles(item, around: bytes) -> list[list[bytes]]:
    """What of each of the item's secrets may not be in the store: its parts of ``MIN_PART``
    characters (whitespace taken out, lowercased) that the text around the secrets does not hold;
    a shorter secret with the word before it ("cvv021")."""
    from bench.redact import MIN_PART

    out: list[list[bytes]] = []
    for secret in item.secrets:
        flat = squeeze(secret.lower().encode())
        if len(flat) >= MIN_PART and " " in secret.strip():
            # words said or typed apart: parts within a long word, and words side by side (a part
            # across two words, "le co" of "maple comet", is in any text that has "example.com"; one
            # short word, "three" of a card read out, in any that counts)
            words = [squeeze(w.lower().encode()) for w in secret.split()]
            runs = (
                set()
            )  # two or more words side by side, as few as make MIN_PART characters ("33 42 76")
            for i in range(len(words) - 1):
                j, run = i + 2, words[i] + words[i + 1]
                while len(run) < MIN_PART and j < len(words):
                    run, j = run + words[j], j + 1
                if len(run) >= MIN_PART:
                    runs.add(run)
            inside = {p for w in words if len(w) >= MIN_PART for p in secret_parts(w)}
            out.append(sorted(p for p in inside | runs if p not in around))
        elif len(flat) >= MIN_PART:
            out.append(sorted(p for p in secret_parts(flat) if p not in around))
        else:
            line = next((ln for ln in item.lines if secret in ln), item.text)
            before = line[: line.index(secret)].split() if secret in line else []
            out.append([squeeze((before[-1] if before else "").lower().encode()) + flat])
    return out


def planted_secrets(
    ctx: Context,
    tally: Tally,
    mnemo_cmd: Sequence[str] = MNEMO,
    sample: int = 0,
    spoken: bool = True,
) -> None:
    """Each try plants a new draw of the corpus (every form once; ``sample``: that many secrets and
    benign items, spread over the forms, for a quicker check) on screens and in
    window titles, and a few said aloud; leaks are the secrets of which a part is found in any file
    of the store, or in what the ingest printed. The benign items go through the same ingest on
    screens of their own; how many of them were redacted is said on a progress line, and a try
    fails when most were."""
    from bench.redact_corpus import corpus

    espeak = shutil.which("espeak-ng")
    for n in range(ctx.runs):
        secrets, benign = corpus(seed=1000 + n, per_form=1)
        said = [i for i in secrets if i.form in SPOKEN][:3] if spoken else []
        if sample:
            secrets, benign = (
                items[:: max(1, len(items) // sample)][:sample] for items in (secrets, benign)
            )
        root = ctx.workdir / f"try{n}"
        base = datetime(2026, 7, 1, 14, 0, tzinfo=UTC) + timedelta(hours=n)
        screens, k = [], 0
        for kind, items in (("secret", secrets), ("benign", benign)):
            rows = [(item, line) for item in items for line in item.lines]
            for start in range(
                0, len(rows), 36
            ):  # a secret screen's window title: its first item's line
                window = rows[start][0].lines[0][:120] if kind == "secret" else f"notes {k}"
                screens.append(
                    (
                        render_screen([line for _, line in rows[start : start + 36]]),
                        base + timedelta(minutes=k, seconds=5),
                        "XTerm",
                        window,
                        kind,
                    )
                )
                k += 1
        write_capture(root / "capture", [s[:4] for s in screens])
        paths = [str(root / "capture")]
        notes: list[str] = []
        if espeak and said:
            (root / "voice").mkdir()
            text = ". ".join(i.text for i in said) + "."
            subprocess.run(
                [espeak, "-v", "en-us", "-s", "150", "-w", str(root / "voice" / "said.wav"), text],
                check=True,
                capture_output=True,
                timeout=60,
            )
            paths.append(str(root / "voice" / "said.wav"))
        elif not spoken:
            pass
        elif os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}:
            notes.append("espeak-ng is missing: the spoken secrets were not tried")
        else:
            ctx.progress(
                "planted_secrets: espeak-ng not installed, the spoken secrets are not tried"
            )
        cache = _cache_files()
        done = run_mnemo(
            mnemo_cmd, ["ingest", *paths, "--store", str(root / "store")], root, child_env()
        )
        store = root / "store"
        if done.returncode != 0 or not (store / "clips.lance").exists():
            tally.run(
                ok=False,
                note=f"try {n}: ingest exit {done.returncode}: {(done.stdout + done.stderr)[-400:]}",
            )
            continue
        written = [p for p, m in _cache_files().items() if cache.get(p) != m]
        haystack = squeeze(
            store_bytes(store)
            + b"\n".join(p.read_bytes().lower() for p in written)
            + (done.stdout + done.stderr).lower().encode()
        )
        secrets = list(dict.fromkeys(secrets + said))
        rendered = "\n".join(i.text for i in secrets + benign)
        for item in secrets:
            for secret in item.secrets:
                rendered = rendered.replace(secret, "\0")
        around = squeeze(rendered.lower().encode())
        leaked = []
        for item in secrets:
            if any(any(p in haystack for p in parts) for parts in _needles(item, around)):
                leaked.append(item)
        clips = table_rows(store, "clips")
        benign_start = next(s[1] for s in screens if s[4] == "benign").timestamp()
        taken = sum(
            len(MARKER.findall(c["screen_text"]))
            for c in clips
            if c["start_ts"] >= benign_start - 30
        )
        ctx.progress(
            f"planted_secrets try {n}: {len(leaked)} of {len(secrets)} secrets found in the store; "
            f"benign control: {taken} redaction(s) over {len(benign)} benign items"
        )
        if taken > len(benign) / 2:
            notes.append(
                f"the benign control lost most of its text: {taken} redactions over {len(benign)} items"
            )
        stored = sum(c["clip_id"].startswith("screen-") for c in clips)
        if stored < len(screens):
            notes.append(f"{len(screens) - stored} screen clip(s) not stored")
        shown = "; ".join(f"{i.form}: {i.text[:60]!r}" for i in leaked[:5])
        tally.run(
            leaks=len(leaked),
            ok=not notes,
            note=f"try {n}: " + "; ".join(notes + [shown] if shown else notes),
        )


def _cache_files() -> dict[Path, int]:
    """mnemo's cache files and their mtimes (what an ingest wrote there is searched too)."""
    root = Path(os.environ.get("MNEMO_CACHE") or Path.home() / ".cache" / "mnemo")
    skip = (
        "models",
        "pyannote-sample",
        "opencv-doc",
        "demo",
        "ocr-screens",
        "locomo-spoken",
        "bench-stores",
        "mini",
    )
    out = {}
    if root.is_dir():
        for child in root.iterdir():
            if child.name in skip:
                continue
            for p in [child] if child.is_file() else child.rglob("*"):
                if p.is_file() and not p.is_symlink():
                    out[p] = p.stat().st_mtime_ns
    return out
