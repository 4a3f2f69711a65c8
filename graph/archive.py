"""A store out and back in: a versioned export folder (``docs/export-format.md``), its import, and
a consistent backup copy.

**Export** writes every table's rows as JSON Lines and the memories' vectors as one ``.npy``,
into a hidden staging folder beside ``OUT`` that becomes ``OUT`` by one rename once
``manifest.json`` (format, versions, embedder, counts, a SHA-256 per file) is written: an export
that stops part-way leaves no ``OUT``. Vectors are exported (float32, ``dim`` in the manifest) so
that an import needs no model and gives the very same search results; ``--reembed`` on import
embeds the texts again instead (another embedder). Left out on purpose, with the reasons in
``LEFT_OUT``: derived columns and indexes (rebuilt by the import as an ingest builds them), old
table versions, the commit journal and lock files.

**Import** checks the whole archive first (manifest, format version, every file's size and
SHA-256, the embedder), then builds the store in a staging folder and renames it into place: a
bad archive creates nothing, and a failure while building leaves no half store.

**Consistency.** Export and backup hold the store's writer lock (``Store.writing``) and its people
lock (``graph.edit_people``) while they read, so no clip commit, forget or people change is half in
what they read: writers wait and say who holds the store. Taking the writer lock also undoes a
commit a killed writer left (``graph.commit.recover``), as any next writer would. The alternative,
reading each LanceDB table at a pinned version without the lock, was not chosen: the four tables
of one clip commit are four separate LanceDB commits, so no set of versions read one after another
is known to be a moment between two clip commits, and ``mnemo forget`` deletes old versions, which
a long read at a pinned version may still need. A forget left unfinished by a kill is finished
first (``graph.forget_store.finish_unfinished``): the user asked for it, and a copy must not carry it back.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from graph import forget_store as forgetting
from graph.edit_people import _locked as people_locked
from graph.schema import SCHEMA_VERSION
from graph.spelling import search_text
from graph.store import Store

log = logging.getLogger(__name__)

FORMAT = "mnemo-export"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
VECTORS = "memory_vectors.npy"
# table -> its file; in the order an import writes them
TABLES = {
    "clips": "clips.jsonl",
    "memories": "memories.jsonl",
    "entities": "entities.jsonl",
    "edges": "edges.jsonl",
    "people_log": "people_log.jsonl",
    "forget_log": "forget_log.jsonl",
}
DERIVED = {"memories": ("vector", "search_text")}  # columns not in the JSONL (vector: in VECTORS)
LEFT_OUT = {
    "memories.search_text": "derived from kind and text (graph.spelling.search_text); computed again on import",
    "indexes": "full-text, scalar and vector indexes are rebuilt on import by Store.refresh_indexes, as after an ingest",
    "old table versions": "an export holds each table as it is now; LanceDB's version history is not carried",
    ".commit journal": "export holds the writer lock, which first undoes any commit a killed writer left",
    "lock files": ".writer.lock and .people.lock only say who writes a store now",
}
BATCH_ROWS = 4096
LOCK_FILES = (".writer.lock", ".people.lock")


class ArchiveError(ValueError):
    """An export, import or backup that cannot go ahead; the message says why and what to do."""


def refuse_existing(out: Path, what: str) -> None:
    """``out`` must not exist, or be an empty folder: nothing of the user's is ever written over."""
    if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
        return  # (a link is refused: the finished copy replaces the folder, which a link is not)
    if out.exists() or out.is_symlink():
        raise ArchiveError(
            f"{out} exists and is not an empty folder; {what} writes only into a new or empty "
            "folder: give another path or move that one away (nothing was changed)"
        )


def refuse_inside(out: Path, store_uri: str) -> None:
    """A copy written inside the store would become part of the store."""
    if "://" in store_uri:
        return
    root = Path(store_uri).resolve()
    if out.resolve() == root or root in out.resolve().parents:
        raise ArchiveError(
            f"{out} is inside the store {root}; write it outside the store (nothing was changed)"
        )


def staging_for(out: Path) -> Path:
    """A hidden sibling of ``out`` (the same file system, so the final rename is atomic)."""
    return out.parent / f".{out.name}.partial-{os.getpid()}"


def move_into_place(staging: Path, out: Path) -> None:
    if out.is_dir():
        out.rmdir()  # empty (refuse_existing); rename(2) would replace it too, but say it plainly
    os.rename(staging, out)


@contextlib.contextmanager
def built_in_place(out: Path) -> Iterator[Path]:
    """A new staging folder for ``out`` (one a killed run left is removed first): renamed to
    ``out`` when the block ends, removed when it fails, so ``out`` is whole or not there."""
    staging = staging_for(out)
    shutil.rmtree(staging, ignore_errors=True)
    try:
        yield staging
        move_into_place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


@contextlib.contextmanager
def quiet_store(store: Store, what: str, wait_s: float | None = None) -> Iterator[None]:
    """Hold ``store``'s writer and people locks (see the module doc): no commit, forget or change to
    people runs meanwhile. A forget a kill left unfinished is finished first, outside the lock,
    which ``finish_unfinished`` takes itself (a second ``flock`` in this process would wait forever)."""
    if forgetting.finish_unfinished(store):
        log.warning(
            "%s: finished a forget that had been interrupted before the %s", store.uri, what
        )
    with store.writing(what, wait_s), people_locked(store):
        store.catch_up()
        if store.forget_log.count_rows("NOT done"):
            raise ArchiveError(
                f"{store.uri}: a forget was interrupted meanwhile; run `mnemo forget` again "
                f"(it finishes it first), then the {what}"
            )
        yield


# ---- export ----------------------------------------------------------------------------------


def _columns(table: pa.Table | pa.Schema, name: str) -> list[str]:
    schema = table if isinstance(table, pa.Schema) else table.schema
    return [f.name for f in schema if f.name not in DERIVED.get(name, ())]


def write_tables(store: Store, folder: Path) -> dict:
    """Every table of ``store`` into ``folder`` (JSONL, and the vectors); the manifest's table part.
    Call it holding ``quiet_store``: the row counts read first must stay true while writing."""
    out: dict = {"tables": {}}
    for name, file in TABLES.items():
        table = getattr(store, name)
        columns = _columns(table.schema, name)
        n = table.count_rows()
        dim = table.schema.field("vector").type.list_size if name == "memories" else None
        vectors = (
            np.lib.format.open_memmap(folder / VECTORS, mode="w+", dtype="<f4", shape=(n, dim))
            if dim is not None
            else None
        )
        written = 0
        with (folder / file).open("w", encoding="utf-8") as f:
            for batch in table.search().limit(None).to_batches(BATCH_ROWS):
                for row in batch.select(columns).to_pylist():
                    try:
                        f.write(
                            json.dumps(
                                row, ensure_ascii=False, allow_nan=False, separators=(",", ":")
                            )
                            + "\n"
                        )
                    except ValueError as e:  # NaN or infinity: not JSON
                        raise ArchiveError(
                            f"{store.uri}: a row of {name!r} holds a value JSON cannot carry ({e}): "
                            f"{ {c: row[c] for c in columns[:1]} }"
                        ) from e
                if vectors is not None and batch.num_rows:
                    vectors[written : written + batch.num_rows] = (
                        batch.column("vector")
                        .flatten()
                        .to_numpy(zero_copy_only=False)
                        .reshape(-1, dim)
                    )
                written += batch.num_rows
        if written != n:  # the locks are held: a change meanwhile means a writer that ignores them
            raise ArchiveError(
                f"{store.uri}: {name!r} changed while it was exported ({n} rows counted, {written} "
                "read); stop whatever writes the store without `mnemo`, then export again"
            )
        if vectors is not None:
            vectors.flush()
            del vectors
            out["vectors"] = {
                "file": VECTORS,
                "dtype": "float32",
                "byte_order": "little",
                "dim": dim,
                "rows": n,
                "order": f"the rows of {TABLES['memories']}, line by line",
            }
        out["tables"][name] = {"file": file, "rows": n, "columns": columns}
    return out


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _archive_files(folder: Path) -> list[str]:
    return sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and p.name != MANIFEST
    )


def write_manifest(folder: Path, manifest: dict) -> dict:
    """``manifest`` with the format fields and every file's size and SHA-256, written last."""
    files = {
        name: {"bytes": (folder / name).stat().st_size, "sha256": file_digest(folder / name)}
        for name in _archive_files(folder)
    }
    whole = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_version": SCHEMA_VERSION,
        "created_ts": time.time(),
        **manifest,
        "left_out": LEFT_OUT,
        "files": files,
    }
    (folder / MANIFEST).write_text(
        json.dumps(whole, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return whole


def export(
    store: Store,
    out: Path,
    mnemo_version: str,
    add_media: Callable[[Path], dict] | None = None,
    wait_s: float | None = None,
    embedder_setting: str | None = None,
) -> dict:
    """Write ``store`` to the new folder ``out`` (see the module doc); the manifest written.
    ``embedder_setting``: the ``graph.text_embedder`` value that built ``store.embedder`` (the store
    itself records only the vectors' dimension, which opening it checked).
    ``add_media(folder)`` copies cited media into the staging folder and returns its manifest part
    (run after the locks are released: media files are not the store's)."""
    out = Path(out)
    refuse_existing(out, "mnemo export")
    refuse_inside(out, store.uri)
    with built_in_place(out) as staging:
        staging.mkdir(mode=0o700, parents=True)
        with quiet_store(store, "export", wait_s):
            tables = write_tables(store, staging)
        manifest = {
            "mnemo_version": mnemo_version,
            "store": store.uri,
            "text_embedder": {
                "name": store.embedder.name,
                "dim": int(store.embedder.dim),
                "setting": embedder_setting,
            },
            **tables,
        }
        manifest["media"] = add_media(staging) if add_media else None
        manifest = write_manifest(staging, manifest)
    return manifest


# ---- import ----------------------------------------------------------------------------------


def read_manifest(folder: Path) -> dict:
    """The archive's manifest, once every file it lists is there whole (sizes and SHA-256 match)."""
    try:
        return _checked_manifest(Path(folder))
    except (KeyError, TypeError, AttributeError) as e:  # a field missing or of the wrong kind
        raise ArchiveError(
            f"{Path(folder) / MANIFEST} lacks or garbles {e}: the manifest is damaged; use an "
            "intact copy or export again (nothing was imported)"
        ) from e


def _checked_manifest(folder: Path) -> dict:
    if not folder.is_dir():
        raise ArchiveError(f"{folder} is not a folder; give the folder `mnemo export` wrote")
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ArchiveError(
            f"{folder} has no {MANIFEST}: it is not a mnemo export, or one that did not finish; "
            "export again (nothing was imported)"
        ) from e
    except (ValueError, OSError) as e:
        raise ArchiveError(
            f"{folder / MANIFEST} cannot be read ({e}): the archive is damaged; use an intact copy "
            "or export again (nothing was imported)"
        ) from e
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ArchiveError(
            f"{folder / MANIFEST} is not a {FORMAT} manifest; give the folder `mnemo export` wrote "
            "(nothing was imported)"
        )
    version = manifest.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ArchiveError(
            f"{folder} is {FORMAT} format version {version}, written by mnemo "
            f"{manifest.get('mnemo_version', '?')}; this mnemo reads up to version {FORMAT_VERSION}: "
            "upgrade mnemo to import it (nothing was imported)"
        )
    if version < 1:
        raise ArchiveError(
            f"{folder}: format version {version} does not exist; the manifest is damaged"
        )
    for name, want in manifest.get("files", {}).items():
        path = folder / name
        if not path.is_file():
            raise ArchiveError(
                f"{path} is listed in {MANIFEST} but missing: the archive is incomplete; use a "
                "whole copy or export again (nothing was imported)"
            )
        size = path.stat().st_size
        if size != want["bytes"] or file_digest(path) != want["sha256"]:
            raise ArchiveError(
                f"{path} does not match its SHA-256 in {MANIFEST} ({size} bytes, {want['bytes']} "
                "expected): it was changed or cut short since the export; use an intact copy of the "
                "archive or export again (nothing was imported)"
            )
    listed = set(manifest.get("files", {}))
    missing = [t["file"] for t in manifest.get("tables", {}).values() if t["file"] not in listed]
    if missing or set(manifest.get("tables", {})) != set(TABLES):
        raise ArchiveError(
            f"{folder / MANIFEST} does not list every table of format version {version} "
            f"({', '.join(sorted(TABLES))}); the manifest is damaged: export again"
        )
    extra = set(_archive_files(folder)) - listed
    if extra:
        log.warning(
            "%s: %d file(s) not in the manifest are ignored: %s",
            folder,
            len(extra),
            sorted(extra)[:5],
        )
    return manifest


def _rows(folder: Path, name: str, spec: dict, columns: list[str]) -> Iterator[list[dict]]:
    if spec["columns"] != columns:
        raise ArchiveError(
            f"{folder / spec['file']} holds columns {spec['columns']}, this mnemo's {name!r} table "
            f"has {columns}; import it with the mnemo version that wrote it (nothing was imported)"
        )
    rows: list[dict] = []
    with (folder / spec["file"]).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                row = json.loads(line)
            except ValueError as e:
                raise ArchiveError(
                    f"{folder / spec['file']}: line {n} is not JSON ({e}); export again "
                    "(nothing was imported)"
                ) from e
            if not isinstance(row, dict) or set(row) != set(columns):
                raise ArchiveError(
                    f"{folder / spec['file']}: line {n} does not hold the columns {columns}; "
                    "export again (nothing was imported)"
                )
            rows.append(row)
            if len(rows) == BATCH_ROWS:
                yield rows
                rows = []
    if rows:
        yield rows


def _add_memories(store: Store, rows: list[dict], vectors: np.ndarray | None) -> None:
    schema = store.memories.schema
    if vectors is None:  # --reembed
        vectors = store.embedder.embed([r["text"] for r in rows])
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    for r in rows:
        r["search_text"] = search_text(r["kind"], r["text"])
    plain = pa.Table.from_pylist(rows, schema=pa.schema([f for f in schema if f.name != "vector"]))
    vector = pa.FixedSizeListArray.from_arrays(
        pa.array(vectors.ravel(), pa.float32()), vectors.shape[1]
    )
    columns = [vector if f.name == "vector" else plain.column(f.name) for f in schema]
    store.memories.add(pa.Table.from_arrays(columns, schema=schema))


def import_archive(
    folder: Path, out: str | Path, embedder, reembed: bool = False
) -> dict[str, int]:
    """Build a new store at ``out`` from the export ``folder``, embedded with ``embedder``: the
    exported vectors when the archive's embedder is the same, the texts embedded again with
    ``reembed``. Returns the rows per table."""
    if "://" in str(out):  # (before Path, which would make s3://b/x into s3:/b/x)
        raise ArchiveError(
            f"{out}: import builds a local store; import into a folder, then copy it to object storage"
        )
    folder, out = Path(folder), Path(out)
    refuse_existing(out, "mnemo import")
    manifest = read_manifest(folder)
    made_by = manifest.get("text_embedder") or {}
    vectors_spec = manifest.get("vectors") or {}
    if not reembed:
        if made_by.get("name") != embedder.name or made_by.get("dim") != embedder.dim:
            raise ArchiveError(
                f"{folder}: its memories were embedded with {made_by.get('name')!r} ({made_by.get('dim')}-d), this "
                f"mnemo is set to {embedder.name!r} ({embedder.dim}-d, graph.text_embedder): set "
                f"MNEMO_GRAPH__TEXT_EMBEDDER={made_by.get('setting') or made_by.get('name')} (or graph.text_embedder "
                "in mnemo.toml) to import "
                f"them as they are, or pass --reembed to embed every memory again with {embedder.name!r} "
                "(nothing was imported)"
            )
        if vectors_spec.get("dtype") != "float32" or vectors_spec.get("dim") != embedder.dim:
            raise ArchiveError(
                f"{folder / MANIFEST}: vectors {vectors_spec} are not {embedder.dim}-d float32; "
                "pass --reembed to embed the memories again"
            )
    vectors = None
    if not reembed:
        try:
            vectors = np.load(folder / VECTORS, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError) as e:
            raise ArchiveError(
                f"{folder / VECTORS} cannot be read ({e}); export again or pass --reembed"
            ) from e
        if vectors.shape != (
            manifest["tables"]["memories"]["rows"],
            embedder.dim,
        ) or vectors.dtype != np.dtype("<f4"):
            raise ArchiveError(
                f"{folder / VECTORS} holds {vectors.shape} {vectors.dtype}, the manifest says "
                f"{manifest['tables']['memories']['rows']} rows of {embedder.dim}-d float32; export again"
            )
    out.parent.mkdir(parents=True, exist_ok=True)
    counts: dict[str, int] = {}
    with built_in_place(out) as staging:
        store = Store(staging, embedder, read_consistency_s=None)
        for name in TABLES:
            table = getattr(store, name)
            spec = manifest["tables"][name]
            n = 0
            for rows in _rows(folder, name, spec, _columns(table.schema, name)):
                if name == "memories":
                    _add_memories(
                        store, rows, None if vectors is None else vectors[n : n + len(rows)]
                    )
                else:
                    table.add(pa.Table.from_pylist(rows, schema=table.schema))
                n += len(rows)
            if n != spec["rows"]:
                raise ArchiveError(
                    f"{folder / spec['file']} holds {n} rows, the manifest says {spec['rows']}; "
                    "export again (nothing was imported)"
                )
            counts[name] = n
        store.refresh_indexes()
        del store
    return counts


# ---- backup ----------------------------------------------------------------------------------


def backup(store: Store, out: Path, wait_s: float | None = None) -> dict[str, int]:
    """A copy of the store folder at ``out`` that opens as a store (``--store out``), taken
    holding the store's locks (module doc): writers wait for the copy, then go on. The copy is of
    the files as they are (tables, their indexes and kept versions), less the lock files and the
    commit journal; it is opened once before it is renamed into place. Returns its row counts."""
    out = Path(out)
    if "://" in store.uri:
        raise ArchiveError(
            f"{store.uri}: backup copies a local store folder; for object storage use `mnemo export`"
        )
    refuse_existing(out, "mnemo backup")
    refuse_inside(out, store.uri)
    with built_in_place(out) as staging:
        with quiet_store(store, "backup", wait_s):
            shutil.copytree(
                store.uri,
                staging,
                symlinks=True,
                ignore=shutil.ignore_patterns(*LOCK_FILES, ".commit", ".commit.*"),
            )
        staging.chmod(0o700)
        copy = Store(staging, store.embedder, read_consistency_s=None)
        counts = copy.count()
        del copy
    return counts
