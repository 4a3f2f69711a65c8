"""``mnemo export``, ``mnemo import`` and ``mnemo backup``: a way out of a store and back in
(``graph.archive``; the format is ``docs/export-format.md``), and ``--media``: the media files the
store cites, copied into the export (originals are only read)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

from mnemo.cli_args import add_duration, add_json, add_store, set_handler

MEDIA_DIR = "media"
MEDIA_INDEX = "media.jsonl"
WAIT_HELP = "another process writing the store: wait at most this long (e.g. 30s, 5m), then fail (default: until done)"


def add_parsers(sub) -> None:
    ex = sub.add_parser(
        "export",
        help="write the store to a versioned, documented folder (JSONL, vectors, manifest)",
        description="Every table as JSON Lines, the memory vectors as .npy, and manifest.json with "
        "the format version, the text embedder, counts and a SHA-256 per file; see "
        "docs/export-format.md. OUT must be new or empty. Writers wait while the "
        "tables are read.",
    )
    ex.add_argument("out", metavar="OUT", help="the folder to create")
    add_store(ex)
    ex.add_argument(
        "--media",
        action="store_true",
        help="also copy the recordings and screenshots the store cites into OUT/media (originals untouched)",
    )
    add_duration(ex, "--wait", WAIT_HELP)
    add_json(ex, "print the manifest as one JSON object on the last line")
    set_handler(ex, _busy_fails(cmd_export))
    im = sub.add_parser(
        "import",
        help="build a new store from a `mnemo export` folder",
        description="Checks the whole archive first (format version, every file's SHA-256, the "
        "text embedder), then builds the store in a staging folder and renames it into "
        "place: a bad archive creates nothing. The store must be new or empty.",
    )
    im.add_argument("archive", metavar="ARCHIVE", help="the folder `mnemo export` wrote")
    add_store(im, help="the new store directory (must not exist, or be empty)", required=True)
    im.add_argument(
        "--reembed",
        action="store_true",
        help="embed the memories again with graph.text_embedder instead of using the exported vectors",
    )
    add_json(im, "print the row counts as one JSON object on the last line")
    set_handler(im, _busy_fails(cmd_import))
    bk = sub.add_parser(
        "backup",
        help="a consistent copy of the store folder, while writers may run",
        description="Copies the store folder holding its writer lock: an ingest, forget or people "
        "change waits for the copy, so none is half in it. OUT opens as a store.",
    )
    bk.add_argument("out", metavar="OUT", help="the folder to create")
    add_store(bk)
    add_duration(bk, "--wait", WAIT_HELP)
    add_json(bk, "print the row counts as one JSON object on the last line")
    set_handler(bk, _busy_fails(cmd_backup))


def cited_media(clips: list[dict]) -> tuple[dict[Path, list[str]], list[str]]:
    """The files the clips cite, each with the ids of the clips citing it, and the cited paths
    not found. A clip of a recording cites the file; a clip of a screenshot folder cites the
    images captured within its span, and their sidecar JSON."""
    from perception.sources.screenshots import scan

    files: dict[Path, list[str]] = {}
    missing: set[str] = set()
    by_folder: dict[str, list[dict]] = {}
    for c in clips:
        path = Path(c["source_path"])
        if path.is_file():
            files.setdefault(path, []).append(c["clip_id"])
        elif path.is_dir():
            by_folder.setdefault(c["source_path"], []).append(c)
        else:
            missing.add(c["source_path"])
    for folder, spans in by_folder.items():
        for shot in scan(Path(folder)):
            t = shot.captured_at.timestamp()
            citing = [
                c["clip_id"] for c in spans if c["start_ts"] <= t < c["end_ts"]
            ]  # a clip is [start, end)
            if citing:
                for path in (shot.path, shot.path.with_name(shot.path.name + ".json")):
                    if path.is_file():
                        files.setdefault(path, []).extend(citing)
    return files, sorted(missing)


def copy_media(folder: Path) -> dict:
    """Copy what the exported clips (``folder``'s clips.jsonl) cite into ``folder/media``, one
    sub-folder per original folder so that equal names never collide; ``media.jsonl`` maps each
    original path to its copy. The manifest's part: counts, and the cited paths not found."""
    from graph.archive import TABLES

    clips = [json.loads(line) for line in (folder / TABLES["clips"]).open(encoding="utf-8")]
    files, missing = cited_media(clips)
    total = 0
    with (folder / MEDIA_INDEX).open("w", encoding="utf-8") as index:
        for path, clip_ids in sorted(files.items()):
            where = (
                Path(MEDIA_DIR)
                / hashlib.sha256(str(path.parent).encode()).hexdigest()[:16]
                / path.name
            )
            (folder / where).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            shutil.copy2(path, folder / where)  # mtimes kept: a recording's may be its start time
            total += (folder / where).stat().st_size
            index.write(
                json.dumps(
                    {"path": str(path), "file": str(where), "clip_ids": sorted(set(clip_ids))},
                    ensure_ascii=False,
                )
                + "\n"
            )
    return {"index": MEDIA_INDEX, "files": len(files), "bytes": total, "missing": missing}


def _existing_store(cfg, store_dir: str | None):
    from mnemo.wiring import open_store

    where = store_dir or cfg.graph.store
    if "://" not in str(where) and not Path(where).is_dir():  # opening would create an empty store
        raise FileNotFoundError(f"no store at {where}: pass --store DIR (the store to copy)")
    return open_store(cfg.graph, where)


def cmd_export(args, cfg) -> int:
    from graph.archive import export
    from mnemo import __version__

    store = _existing_store(cfg, args.store)
    manifest = export(
        store,
        Path(args.out),
        __version__,
        copy_media if args.media else None,
        args.wait,
        embedder_setting=cfg.graph.text_embedder,
    )
    counts = ", ".join(f"{t['rows']} {name}" for name, t in manifest["tables"].items())
    print(
        f"exported {store.uri} to {args.out} (format {manifest['format']} v{manifest['format_version']}): {counts}"
    )
    media = manifest["media"]
    if media:
        print(
            f"copied {media['files']} media file(s), {media['bytes'] / 1e6:.1f} MB, into {Path(args.out) / MEDIA_DIR}"
        )
        for path in media["missing"]:
            print(f"warning: cited media not found, not copied: {path}")
    if args.json:
        print(json.dumps(manifest, ensure_ascii=False))
    return 0


def cmd_import(args, cfg) -> int:
    from graph.archive import import_archive
    from mnemo.wiring import text_embedder

    counts = import_archive(
        Path(args.archive), args.store, text_embedder(cfg.graph), reembed=args.reembed
    )
    print(
        f"imported {args.archive} into the new store {args.store}: "
        + ", ".join(f"{n} {name}" for name, n in counts.items())
    )
    if args.json:
        print(json.dumps(counts))
    return 0


def cmd_backup(args, cfg) -> int:
    from graph.archive import backup

    store = _existing_store(cfg, args.store)
    counts = backup(store, Path(args.out), args.wait)
    print(
        f"backed up {store.uri} to {args.out}: "
        + ", ".join(f"{n} {name}" for name, n in counts.items())
        + f"; open it with --store {args.out}"
    )
    if args.json:
        print(json.dumps(counts))
    return 0


def _busy_fails(run):
    """``run`` as a handler whose store, still written by another process after ``--wait``, is an
    error (exit 1) saying that nothing was written."""

    def handler(args, cfg) -> int:
        from graph.store import StoreBusy

        try:
            return run(args, cfg)
        except StoreBusy as e:
            print(f"error: {e}; nothing was written", file=sys.stderr)
            return 1

    return handler
