"""Screen text read the same on every CPU: the bench's screens read natively and under QEMU's
user-mode emulation of other x86-64 CPUs, whose instruction sets send ONNX Runtime (MLAS) and NumPy
down other kernels.

ONNX Runtime offers no switch for its instruction-set path: it asks the CPU (cpuid) and picks
AVX-512, AVX2 or SSE kernels, whose sums round differently. ``qemu-x86_64 -cpu MODEL`` answers
cpuid as that model, so the same Python, wheels and screens run down the path that model's
machines take: ``Haswell`` (AVX2, no AVX-512), ``SandyBridge`` (AVX without AVX2 or FMA: MLAS's
AVX kernels). A CPU without AVX (``Nehalem``) no longer runs NumPy 2.4's wheels at all (its import
dies on an illegal instruction under emulation), so it is not a path mnemo can take. Emulation is slow
(many times native), so it reads a band of each screen (its top ``rows``
pixels) rather than the whole frame. Each side reads with one thread, as the bench's readings do
not depend on the thread count.

``python -m bench.ocr_cpus FOLDER OUT.json OPTIONS_JSON ROWS NAME...`` is the reading side; it
imports nothing of mnemo's composition root and writes the lines read per screen and the CPU
features NumPy saw (so a comparison shows which paths it actually took).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DEFAULT_CPUS = ("Haswell", "SandyBridge")
DEFAULT_SCREENS = ("xterm-dejavu-12", "xterm-9x15", "page-dejavu-13", "xmessage-10x20")
DEFAULT_ROWS = 160
# reader options a comparison passes to both sides
OPTIONS = (
    "min_confidence",
    "restore_spaces",
    "use_cls",
    "detect_min_side",
    "word_gaps",
    "detect_max_side",
)


class EmulatorMissing(RuntimeError):
    pass


@dataclass
class CpuReading:
    cpu: str  # "native" or a QEMU CPU model
    features: list[str]  # the AVX features NumPy found (what cpuid answered)
    lines: dict[str, list[str]]  # screen name -> lines read
    seconds: float


@dataclass
class CpuComparison:
    native: CpuReading
    others: list[CpuReading]

    def differences(self, other: CpuReading) -> list[str]:
        out = []
        for name, lines in self.native.lines.items():
            theirs = other.lines.get(name, [])
            if theirs != lines:
                out.append(f"{name}: native {lines!r} / {other.cpu} {theirs!r}")
        return out

    @property
    def identical(self) -> bool:
        return bool(self.others) and not any(self.differences(o) for o in self.others)

    def figures(self) -> dict:
        return {
            "same_text_across_cpus": self.identical,
            "cpus_compared": [o.cpu for o in self.others],
            "cpu_lines_compared": sum(len(v) for v in self.native.lines.values()),
        }

    def report(self) -> str:
        rows = [f"{'cpu':10} {'AVX features cpuid gave':44} {'lines':>5} {'differ':>6} {'s':>6}"]
        for r in (self.native, *self.others):
            feats = ",".join(f.removeprefix("AVX") or "AVX" for f in r.features) or "none"
            differ = len(self.differences(r)) if r is not self.native else 0
            rows.append(
                f"{r.cpu:10} {feats[:44]:44} {sum(map(len, r.lines.values())):5d} {differ:6d} {r.seconds:6.0f}"
            )
        for o in self.others:
            rows += [f"  {d}" for d in self.differences(o)[:10]]
        return "\n".join(rows)


def emulator() -> str:
    """QEMU's user-mode x86-64 emulator, which runs this machine's own Python and wheels."""
    import platform

    if platform.machine() != "x86_64":
        raise EmulatorMissing(
            f"comparing x86-64 CPUs runs this machine's x86-64 wheels; this is {platform.machine()}"
        )
    found = shutil.which("qemu-x86_64")
    if not found:
        raise EmulatorMissing(
            "comparing CPUs needs QEMU's user-mode emulator: apt-get install qemu-user"
        )
    return found


def compare(
    reader,
    folder: Path,
    cpus: tuple[str, ...] = DEFAULT_CPUS,
    names: tuple[str, ...] = DEFAULT_SCREENS,
    rows: int = DEFAULT_ROWS,
    progress: Callable[[str], None] = lambda m: None,
) -> CpuComparison:
    """Read the top ``rows`` pixels of each named screen natively and under each emulated CPU,
    with ``reader``'s options and one thread."""
    qemu = emulator() if cpus else ""
    options = json.dumps({k: getattr(reader, k) for k in OPTIONS})
    with tempfile.TemporaryDirectory(prefix="mnemo-ocr-cpus-") as tmp:

        def one(cpu: str) -> CpuReading:
            out = Path(tmp) / f"{cpu}.json"
            cmd = [
                sys.executable,
                "-m",
                "bench.ocr_cpus",
                str(folder),
                str(out),
                options,
                str(rows),
                *names,
            ]
            if cpu != "native":
                cmd = [qemu, "-cpu", cpu, *cmd]
            progress(f"reading {len(names)} screen bands on {cpu} …")
            t0 = time.perf_counter()
            done = subprocess.run(
                cmd,
                capture_output=True,
                text=True,
                cwd=Path(__file__).resolve().parents[1],
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
            if done.returncode != 0:
                tail = "\n".join(
                    ln for ln in done.stderr.splitlines() if "TCG doesn't support" not in ln
                )[-2000:]
                raise RuntimeError(f"reading on {cpu} failed (exit {done.returncode}): {tail}")
            data = json.loads(out.read_text())
            return CpuReading(cpu, data["features"], data["lines"], time.perf_counter() - t0)

        return CpuComparison(one("native"), [one(cpu) for cpu in cpus])


def _read(folder: Path, out: Path, options: dict, rows: int, names: list[str]) -> None:
    from perception.ocr.ocr_rapidocr import RapidOCRReader
    from perception.sources.frames import read_image

    reader = RapidOCRReader(threads=1, **options)
    import importlib

    try:  # what cpuid answered, as NumPy read it (a private module, without type hints)
        umath = importlib.import_module("numpy._core._multiarray_umath")
    except ImportError:  # NumPy 1.x
        umath = importlib.import_module("numpy.core._multiarray_umath")

    features = sorted(k for k, on in umath.__cpu_features__.items() if on and k.startswith("AVX"))
    lines = {
        n: [ln.text for ln in reader.read(read_image(folder / f"{n}.png")[:rows])] for n in names
    }
    out.write_text(json.dumps({"features": features, "lines": lines}))


if __name__ == "__main__":
    folder_, out_, options_, rows_, *names_ = sys.argv[1:]
    _read(Path(folder_), Path(out_), json.loads(options_), int(rows_), names_)
