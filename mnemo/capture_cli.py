"""``mnemo capture`` and ``mnemo watch``: the screenshot daemon, its control commands, the
session's accessibility switch (``capture a11y``), and live ingestion of what it captures."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from mnemo.cli_args import STORE_HELP, add_duration, add_json, add_store, set_handler

log = logging.getLogger("mnemo")
# capture --ingest's watcher runs at this niceness: OCR that keeps both cores busy must not delay
# the grabs (in the ordinary hour, typed words went unstored while it did)
WATCHER_NICE = 10

ACTIONS = (
    "start",
    "pause",
    "resume",
    "status",
    "stop",
    "keygen",
    "exclusions",
    "exclude",
    "include",
    "a11y",
)
A11Y = ("on", "off", "status")


def add_parsers(sub) -> None:
    cap = sub.add_parser(
        "capture",
        help="screenshot daemon (X11, sway): private by construction, searchable within a minute",
    )
    cap.add_argument(
        "action",
        nargs="?",
        default="start",
        choices=ACTIONS,
        help="start (default) runs the daemon in the foreground; pause/resume/status/stop talk to a "
        "running one; exclusions lists what it never stores, exclude/include add or take out a "
        "--class or --title from the next frame on; keygen writes a key for --encrypt; a11y "
        "on|off|status switches the session's accessibility on for the applications that wait "
        "for it (Qt, Chromium/Electron, Firefox), or says whether their text can be read",
    )
    cap.add_argument(
        "a11y",
        nargs="?",
        choices=A11Y,
        metavar="on|off|status",
        help="a11y: on (org.a11y.Status IsEnabled on the session bus, and GNOME's "
        "toolkit-accessibility), off, or status (default): whether the accessibility tree is "
        "readable and which applications publish one (exit 3 when it is not readable)",
    )
    cap.add_argument(
        "--out",
        metavar="DIR",
        help="where screenshots go (default: [capture] out, ~/.local/share/mnemo/screens)",
    )
    add_duration(
        cap,
        "--interval",
        "time between grabs while active (e.g. 2s, 0.5s; default: [capture] interval_s)",
    )
    add_duration(
        cap, "--duration", "stop after this long (e.g. 90s, 15m, 2h); default: run until stopped"
    )
    cap.add_argument(
        "--exclude-class",
        action="append",
        default=[],
        metavar="CLS",
        help="never store a window of this WM_CLASS or Wayland app id (repeatable)",
    )
    cap.add_argument(
        "--exclude-title",
        action="append",
        default=[],
        metavar="REGEX",
        help="never store a window whose title matches (repeatable, case-insensitive)",
    )
    cap.add_argument(
        "--ingest", action="store_true", help="ingest each 30 s clip into --store once it closes"
    )
    add_store(cap, help="--ingest: " + STORE_HELP)
    cap.add_argument(
        "--audio",
        action="store_true",
        help="start: also record the microphone and what the computer plays (PulseAudio or "
        "pipewire-pulse), in the same 30 s clips; pause/resume: the sound alone",
    )
    cap.add_argument(
        "--encrypt",
        action="store_true",
        help="encrypt stored images (key: MNEMO_CAPTURE_KEY or key file)",
    )
    cap.add_argument(
        "--adopt",
        action="store_true",
        help="start: mark --out as a capture folder although it is not "
        "empty (one an older mnemo captured into); only mnemo's own frames there are ever deleted",
    )
    cap.add_argument(
        "--budget-mb",
        type=float,
        metavar="MB",
        help="keep at most this many MB of screenshots (oldest deleted first)",
    )
    add_duration(
        cap, "--for", "pause: resume by itself after this long (e.g. 15m, 1h)", dest="for_"
    )
    add_json(cap, "status, exclusions, a11y: print the reply as one JSON object on the last line")
    cap.add_argument(
        "--class",
        dest="window_class",
        metavar="CLS",
        help="exclude/include: a window class (WM_CLASS, or a Wayland app id)",
    )
    cap.add_argument(
        "--title",
        metavar="REGEX",
        help="exclude/include: a window title pattern (case-insensitive)",
    )
    set_handler(cap, cmd_capture)

    w = sub.add_parser(
        "watch", help="ingest a capture folder's 30 s screenshot clips as they close"
    )
    w.add_argument("folder", metavar="FOLDER")
    add_store(w)
    add_duration(w, "--duration", "stop after this long (e.g. 8h); default: until interrupted")
    add_duration(
        w,
        "--poll",
        "where file events cannot be had: time between looks at the folder (e.g. 5s; "
        "default: [capture] ingest_poll_s)",
    )
    w.add_argument(
        "--nice",
        type=int,
        default=0,
        metavar="N",
        help="lower the watcher's CPU priority by N (1-19; capture --ingest gives its watcher "
        f"{WATCHER_NICE}, so that its grabs and the user's programs come first)",
    )
    w.add_argument(
        "--no-events",
        action="store_true",
        help="look every --poll instead of following file events",
    )
    set_handler(w, cmd_watch)


def _stop_on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())


def watch_graph(graph):
    """``[graph]`` for a watcher, which runs all day beside the user's work: the text embedder in
    float32 on ONNX Runtime where the dtype and runtime are left to choose and the device is the
    CPU (the same vectors as torch's float32; no torch loaded: 1.0 GB less at the peak, measured
    with ``mnemo bench capture``)."""
    from perception.weights import torch_device

    if (
        graph.text_embedder != "hash"
        and graph.text_dtype in (None, "auto")
        and graph.text_runtime == "auto"
        and graph.text_device in ("auto", "cpu")
        and (graph.text_device == "cpu" or torch_device("auto") == "cpu")
    ):
        return graph.model_copy(update={"text_dtype": "float32"})
    return graph


def cmd_watch(args, cfg) -> int:
    if args.nice:
        if not 0 < args.nice < 20:
            print(f"error: --nice is 1 to 19, not {args.nice}", file=sys.stderr)
            return 2
        os.nice(args.nice)
    from dataclasses import replace

    from mnemo.watch import watch, watch_malloc
    from mnemo.wiring import (
        build_perceivers,
        build_redactor,
        faces_backend_name,
        match_policies,
        open_store,
        text_embedder,
    )
    from perception.faces.stage import LastFaceless
    from perception.ocr.stage import LastRead

    watch_malloc()
    graph = watch_graph(cfg.graph)
    store = open_store(graph, args.store, lean=True)

    def perceivers_for_watch():
        # clips come in order: each screen is read only where it differs from the last one read,
        # and looked at for faces only where one may have come in since the last looked at
        return replace(
            build_perceivers(cfg.perception, cfg.llm),
            last_read=LastRead(),
            last_faceless=LastFaceless(),
        )

    perceivers = perceivers_for_watch()
    policies = match_policies(cfg.memorize, faces_backend_name(cfg.perception))
    stop = threading.Event()
    _stop_on_signals(stop)
    print(f"watch: ingesting closed clips of {args.folder} into {store.uri}", flush=True)
    report = watch(
        args.folder,
        store,
        perceivers,
        policies,
        clip_s=cfg.perception.clip_s,
        poll_s=args.poll or cfg.capture.ingest_poll_s,
        duration_s=args.duration,
        stop=stop,
        events=not args.no_events,
        say=lambda s: print(s, flush=True),
        retention_days=cfg.graph.retention_days,
        max_store_gb=cfg.graph.max_store_gb,
        redactor=build_redactor(cfg.memorize),
        release_after_s=cfg.capture.ingest_release_s,
        fresh=lambda: (perceivers_for_watch(), text_embedder(graph, lean=True)),
        keep_sound=cfg.capture.keep_audio > 0,
    )
    print(
        f"watch: {report.clips_new} clip(s) ingested, {report.clips_failed} failed, in {report.polls} look(s)"
    )
    return 0


def _client(args) -> int:
    from perception.capture.control import DaemonNotRunning, request

    msg = {"cmd": args.action}
    if args.action == "pause" and args.for_:
        msg["for_s"] = args.for_
    if args.action in ("pause", "resume") and args.audio:
        msg["audio"] = True
    if args.action in ("exclude", "include"):
        if not (args.window_class or args.title):
            print(
                f"error: capture {args.action} needs --class CLS or --title REGEX", file=sys.stderr
            )
            return 2
        msg.update({k: v for k, v in (("class", args.window_class), ("title", args.title)) if v})
    try:
        reply = request(msg)
    except DaemonNotRunning as e:
        if args.action == "status":
            print("not running" if not args.json else json.dumps({"state": "not running"}))
            return 3  # as systemctl status does for a stopped unit
        print(f"error: {e}", file=sys.stderr)
        return 1
    if "error" in reply:
        print(f"error: {reply['error']}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(reply))
    elif args.action in ("exclusions", "exclude", "include"):
        print(
            "never stored: classes "
            + (", ".join(reply["classes"] + reply["builtin_classes"]) or "none")
            + "; titles matching "
            + (", ".join(reply["titles"] + reply["builtin_titles"]) or "none")
            + ("" if reply["builtin"] else " (built-in exclusions off)")
        )
    else:
        why = f" ({reply['why']})" if reply.get("why") else ""
        print(
            f"{reply['state']}{why}: {reply['written']} frame(s) written of {reply['ticks']} grab(s), "
            f"{reply['bytes_stored'] / 1e6:.1f} MB stored in {reply['out']}"
        )
        if reply.get("audio"):
            print(_sound_line(reply["audio"]))
    return 0


def _sound_line(audio: dict) -> str:
    """``status``'s line on the sound: each stream's state, device and slots."""
    parts = []
    for name, s in audio["streams"].items():
        label = {"mic": "microphone", "out": "computer sound"}.get(name, name)
        where = f" {s['device']}" if s["device"] else ""
        why = f" ({s['why']})" if s["why"] else ""
        parts.append(
            f"{label} {s['state']}{why}{where}: {s['slots_stored']} slot(s) with speech stored, "
            f"{s['slots_silent']} silent"
        )
    return "sound: " + "; ".join(parts) + (f"; {audio['error']}" if audio.get("error") else "")


def _word(flag: bool | None) -> str:
    return "unknown" if flag is None else str(flag).lower()


def _a11y(what: str, as_json: bool) -> int:
    """``capture a11y on|off|status``: the session's accessibility switch
    (perception/capture/a11y_switch.py). status exits 3 when the tree cannot be read."""
    from perception.capture.a11y_switch import A11yError, status, switch

    if what == "status":
        st = status()
        if st.readable:
            print(
                f"accessibility tree: readable; {len(st.apps)} application(s) publish one"
                + (f": {', '.join(st.apps)}" if st.apps else "")
            )
            flag = {True: "on", False: "off", None: "unknown"}[st.is_enabled]
            print(
                f"switch: {flag} (org.a11y.Status IsEnabled {_word(st.is_enabled)}, "
                f"ScreenReaderEnabled {_word(st.screen_reader_enabled)})"
            )
            if st.is_enabled is not True:
                print(
                    "while it is off, Qt, Chromium/Electron and Firefox applications publish no "
                    "tree (GTK applications and VTE terminals do): mnemo capture a11y on"
                )
        else:
            print(f"accessibility tree: not readable: {st.why}")
            print(f"fix: {st.fix}")
        if as_json:
            print(json.dumps(st.as_json()))
        return 0 if st.readable else 3
    try:
        done = switch(what == "on")
    except A11yError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(
        f"accessibility {what}: org.a11y.Status IsEnabled is {str(done.on).lower()} on the "
        "session bus (read back)"
    )
    print(f"gsettings: {done.gsettings}")
    if not done.gsettings_done:
        print(f"warning: {done.gsettings}", file=sys.stderr)
    apps = done.status.apps
    print(
        f"{len(apps)} application(s) publish a tree now" + (f": {', '.join(apps)}" if apps else "")
    )
    print(done.restart)
    if as_json:
        print(json.dumps(done.as_json()))
    return 0


def cmd_capture(args, cfg) -> int:
    if args.a11y is not None and args.action != "a11y":
        print(
            f"error: {args.a11y!r} goes with `capture a11y` only (capture a11y {args.a11y})",
            file=sys.stderr,
        )
        return 2
    if args.action == "a11y":
        return _a11y(args.a11y or "status", args.json)
    if args.action == "keygen":
        from perception.capture.crypto import CaptureKeyError, default_key_file, generate_key

        try:
            path = generate_key(
                Path(cfg.capture.key_file).expanduser()
                if cfg.capture.key_file
                else default_key_file()
            )
        except CaptureKeyError as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(
            f"wrote a new capture key to {path} (mode 600); keep a copy: without it the images cannot be read"
        )
        return 0
    if args.action != "start":
        return _client(args)
    return _run_daemon(args, cfg)


def _run_daemon(args, cfg) -> int:
    from mnemo.supervise import Supervised
    from perception.capture.control import ControlServer
    from perception.capture.crypto import CaptureKeyError, load_cipher
    from perception.capture.daemon import Capturer
    from perception.capture.owned import NotACaptureFolder, adopt
    from perception.capture.storage import CaptureFolderBusy, CaptureStore, hold_folder
    from perception.capture.windows import DesktopLost, Unsupported

    c = cfg.capture.model_copy(
        update={
            k: v
            for k, v in {
                "out": args.out,
                "interval_s": args.interval,
                "encrypt": args.encrypt or None,
                "budget_mb": args.budget_mb,
                "audio": args.audio or None,
            }.items()
            if v is not None
        }
    )
    c = c.model_copy(
        update={
            "exclude_classes": [*c.exclude_classes, *args.exclude_class],
            "exclude_titles": [*c.exclude_titles, *args.exclude_title],
        }
    )
    try:
        cipher = load_cipher(c.key_file or None) if c.encrypt else None
    except CaptureKeyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    store = CaptureStore(
        c.out,
        int(c.budget_mb * 1e6),
        c.max_age_days,
        int(c.min_free_mb * 1e6),
        cipher,
        keep_audio_days=c.keep_audio,
    )
    try:
        if args.adopt:
            found = adopt(store.root)
            print(
                f"capture: {store.root} is a capture folder ({found.frames} frame(s) of mnemo's; "
                f"{found.others} other entries, which mnemo leaves alone)",
                flush=True,
            )
        hold_folder(store.root)  # one daemon a folder, held until this process ends
    except NotACaptureFolder as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CaptureFolderBusy as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    audio = None
    if c.audio:
        from perception.capture.audio import AudioRecorder
        from perception.capture.pulse import INSTALL, tools_missing

        if missing := tools_missing():
            print(f"error: --audio needs {', '.join(missing)}; {INSTALL}", file=sys.stderr)
            return 2
        audio = AudioRecorder(
            store, clip_s=cfg.perception.clip_s, min_speech_s=c.audio_min_speech_s
        )
    try:
        capturer = Capturer(c, store, audio=audio)
    except Unsupported as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (DesktopLost, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if audio is not None:
        audio.gate = capturer.sound_gate
    try:
        server = ControlServer(capturer.handle)
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    stop = threading.Event()
    _stop_on_signals(stop)

    def stop_when_asked() -> None:
        stop.wait()
        capturer.stop()

    threading.Thread(target=stop_when_asked, daemon=True).start()
    watcher = None
    if args.ingest:
        cmd = [sys.executable, "-m", "mnemo", "watch", str(store.root), "--nice", str(WATCHER_NICE)]
        if args.store:
            cmd += ["--store", args.store]
        # its own process, so perception never slows or bloats the grabs; restarted if it dies,
        # ended with the daemon (mnemo/supervise.py)
        watcher = Supervised(
            cmd, "capture: the watcher", say=lambda m: print(m, flush=True)
        ).start()
    print(
        f"capture: every {c.interval_s:g} s into {store.root}; control socket {server.path}",
        flush=True,
    )
    code = 0
    try:
        counters = capturer.run(args.duration)
    except DesktopLost as e:
        print(f"error: {e}", file=sys.stderr)
        counters, code = capturer.counters, 1
    finally:
        server.close()
        if watcher is not None:
            watcher.stop(timeout_s=120)
    print(
        f"capture: {counters.written} frame(s) written ({counters.bytes_written / 1e6:.1f} MB) of {counters.ticks} "
        f"grab(s); {counters.static_ticks} static, {counters.excluded} excluded, {counters.focus_changed} dropped "
        f"on a focus change; reasons {counters.reasons}"
    )
    return code
