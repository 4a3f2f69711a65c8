"""``bench capture``'s targets and report: the figures a session measured against the short
session's or the ordinary hour's targets, sway against X11, and the summary ``--json`` prints."""

from __future__ import annotations

from bench.metrics import meets

TARGETS = {
    "cpu_pct": ("<=", 3.0),
    "rss_mb": ("<=", 150.0),
    "static_dedup": (">=", 0.95),
    "typing_kept": ("==", 1.0),
    "ingest_lag_s": ("<=", 60.0),
}
HOUR_TARGETS = {  # the ordinary hour: the daemon and its ingest together
    "cpu_pct": ("<=", 10.0),
    "rss_mb": ("<=", 1000.0),
    "static_dedup": (">=", 0.95),
    "typing_kept": ("==", 1.0),
    "ingest_lag_s": ("<=", 60.0),
    "pages_found": (">=", 0.98),
}
SWAY_OVER_X11 = 1.5  # the daemon's CPU and memory on sway, at most this times X11's in one run


def format_report(f: dict) -> str:
    targets = HOUR_TARGETS if f.get("minutes") else TARGETS
    rows = [
        ("capture + ingest CPU, % of one core", f["cpu_pct"], "cpu_pct"),
        ("  its busiest minute", f.get("cpu_pct_peak_minute"), None),
        ("  of which the daemon itself", f["cpu_pct_daemon"], None),
        ("capture + ingest peak RSS, MB", f["rss_mb"], "rss_mb"),
        ("  steady (median at each minute's end)", f.get("rss_mb_steady"), None),
        ("  peak PSS (shared pages split), MB", f.get("pss_mb"), None),
        ("  the daemon's own peak RSS, MB", f["rss_mb_daemon"], None),
        ("MB stored per hour", f.get("mb_per_hour"), None),
        ("  while typing", f["mb_per_hour_active"], None),
        ("  static", f["mb_per_hour_static"], None),
        ("static ticks that wrote nothing", f["static_dedup"], "static_dedup"),
        ("typed words in a stored frame's OCR", f["typing_kept"], "typing_kept"),
        ("live-ingest lag, s (typed → in memory)", f["ingest_lag_s"], "ingest_lag_s"),
        ("screen text from the tree, % of a core", f.get("text_tree_pct"), None),
        ("  the daemon waiting on the apps, % of the time", f.get("text_tree_wait_pct"), None),
        ("  frames with text from the tree", f.get("frames_from_tree"), None),
        ("screen text by OCR, % of a core", f.get("text_ocr_pct"), None),
    ]
    if f.get("apps"):
        rows.append(("pages read found by search", f.get("pages_found"), "pages_found"))
        rows.append(("  by their whole marker sentence", f.get("pages_found_by_sentence"), None))
    what = (
        f"an ordinary hour in {f['minutes']:g} min"
        if f.get("minutes")
        else f"{f['frames_active']} frames while typing"
    )
    screen = "headless sway 1920x1080" if f.get("desktop") == "sway" else "Xvfb 1920x1080"
    lines = [
        f"capture every {f['interval_s']:g} s under {screen}: {what}, {f['frames']} frames, "
        f"{f['frames_static']} in {f['static_ticks']} static ticks, {f['typing_events']} typing events"
    ]
    for label, value, key in rows:
        target = ""
        if key:
            op, bound = targets[key]
            target = f"target {op} {bound:g}: {'met' if value is not None and meets(value, op, bound) else 'MISSED'}"
        lines.append(f"  {label:<42} {value if value is not None else 'n/a':>10}  {target}")
    if f.get("rss_peak_by"):
        held = ", ".join(f"{who} {mb:g}" for who, mb in f["rss_peak_by"].items())
        lines.append(f"  the peak of RSS, {f['rss_peak_at_s']} s into the session: {held} MB")
    if f.get("frames_call") is not None:
        lines.append(
            f"  {'the video call: frames stored, faces in the store':<42} "
            f"{f['frames_call']:>4}, {f['faces_stored']}"
        )
    if f.get("pages_missed"):
        lines.append(f"  pages read that search did not find: {f['pages_missed']}")
    if f.get("typing_missed"):
        lines.append(f"  typed words not in a stored frame's OCR: {', '.join(f['typing_missed'])}")
    if "wer_mic" in f:
        lines += [f"  {label:<42} {f.get(key)}" for label, key in SOUND_ROWS if key in f]
    return "\n".join(lines)


# the call heard (``--audio``): report lines, and with the targets of issue 66 where it sets one
SOUND_ROWS = (
    ("the call played (times)", "call_plays"),
    ("its clips ingested (else no WER or attribution)", "call_ingested"),
    ("WER of the microphone's stream", "wer_mic"),
    ("  the same track ingested as a file", "wer_mic_file"),
    ("WER of the computer's sound", "wer_out"),
    ("  the same track ingested as a file", "wer_out_file"),
    ("owner attribution (target >= 0.95)", "owner_attribution"),
    ("sentences stored twice (target 0)", "duplicated_sentences"),
    ("sound stored, MB an hour", "audio_mb_per_hour"),
    ("lag from speech to memory, s (target <= 60)", "speech_lag_s"),
    ("CPU % of a core the sound adds (target <= 15)", "audio_cpu_pct_added"),
    ("peak RSS the sound adds, MB (target <= 200)", "audio_rss_mb_added"),
)


def compare(x11: dict, sway: dict) -> str:
    """The daemon on sway against X11 in the same run."""
    lines = ["sway against X11 in this run (the daemon itself):"]
    for key, label in (("cpu_pct_daemon", "CPU"), ("rss_mb_daemon", "peak RSS")):
        ratio = sway[key] / x11[key] if x11[key] else None
        ok = ratio is not None and ratio <= SWAY_OVER_X11
        lines.append(
            f"  {label:<10} {x11[key]:>8} on X11, {sway[key]:>8} on sway: "
            f"{'n/a' if ratio is None else f'{ratio:.2f}x'}  target <= {SWAY_OVER_X11:g}x: "
            f"{'met' if ok else 'MISSED'}"
        )
    return "\n".join(lines)


def summary(f: dict) -> dict:
    base = (
        "desktop",
        "cpu_pct",
        "cpu_pct_peak_minute",
        "rss_mb",
        "rss_mb_steady",
        "pss_mb",
        "mb_per_hour",
        "mb_per_hour_active",
        "static_dedup",
        "typing_kept",
        "ingest_lag_s",
        "text_tree_pct",
        "text_ocr_pct",
        "frames_from_tree",
        "pages_found",
    )
    heard = [key for _, key in SOUND_ROWS if key in f]  # with --audio
    return {k: f.get(k) for k in (*base, *heard)}
