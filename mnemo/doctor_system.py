"""``mnemo doctor``'s checks of the machine's media and compute: the ffmpeg binary that decodes
recordings, and the CPU (usable cores, AVX2, AVX-512, bfloat16) the models run on."""

from __future__ import annotations

import os
import subprocess
import sys

from mnemo.doctor_check import Check, quoted


def ffmpeg_check() -> Check:
    fix = f"{quoted(sys.executable)} -m pip install --force-reinstall imageio-ffmpeg"
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
