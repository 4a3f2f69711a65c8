"""The ``[capture]`` section of the config tree."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CaptureConfig(BaseModel):
    """``[capture]``: the screenshot daemon: how often it grabs, what it keeps out, how much it keeps."""

    out: str = Field(
        "~/.local/share/mnemo/screens",
        description=("Folder where screenshots are written (and old ones deleted)."),
    )
    interval_s: float = Field(
        2.0, gt=0, description="Seconds between grabs while the user is active."
    )
    idle_after_s: float = Field(
        60.0,
        gt=0,
        description=(
            "Seconds without keyboard or mouse input after which the user is idle and grabs slow down."
        ),
    )
    idle_interval_s: float = Field(
        10.0, gt=0, description="Seconds between grabs while the user is idle."
    )
    heartbeat_s: float = Field(
        60.0,
        gt=0,
        description=("On a static screen, a heartbeat line is written this often, in seconds."),
    )
    min_changed_fraction: float = Field(
        0.05,
        gt=0,
        le=1,
        description=(
            "Keep a frame when this share (0-1) of the screen's non-volatile tiles changed, input or not."
        ),
    )
    input_settle_s: float = Field(
        3.0,
        ge=0,
        description=(
            "Seconds after keyboard or mouse input in which any change is kept as its effect (a command's output, a "
            "page that loads), however small."
        ),
    )
    pause_grab_s: float = Field(
        0.5,
        ge=0,
        description=(
            "Seconds after a burst of keyboard or mouse input ends at which the screen is grabbed at once, not at "
            "the next tick: what was typed is kept before the next word or a window switch (at most one grab "
            "per burst, and none sooner than half an interval after the last; 0: grabs only at the ticks)."
        ),
    )
    tile_px: int = Field(
        32,
        ge=8,
        description=(
            "Side of the square tiles, in pixels, in which a grab is compared with the last kept frame."
        ),
    )
    jpeg_quality: int = Field(
        80, ge=30, le=100, description="JPEG quality of the screenshots kept (30-100)."
    )
    exclude_classes: list[str] = Field(
        [],
        description=(
            "Windows blacked out of screenshots, by WM_CLASS class or instance, or Wayland app id (case-insensitive)."
        ),
    )
    exclude_titles: list[str] = Field(
        [],
        description=(
            "Windows blacked out of screenshots, by title: regular expressions, case-insensitive."
        ),
    )
    builtin_exclusions: bool = Field(
        True,
        description=("Also black out private/incognito browser windows and password managers."),
    )
    budget_mb: float = Field(
        2048.0,
        ge=0,
        description=(
            "Screenshots kept at most, in MB (0: no budget); the oldest are deleted first."
        ),
    )
    max_age_days: float = Field(
        30.0, ge=0, description=("Screenshots older than this many days are deleted (0: never).")
    )
    min_free_mb: float = Field(
        1024.0,
        ge=0,
        description=("Capture pauses while the disk has less free space than this, in MB."),
    )
    encrypt: bool = Field(
        False,
        description=(
            "Encrypt screenshots at rest (Fernet); the key comes from MNEMO_CAPTURE_KEY or key_file."
        ),
    )
    key_file: str = Field(
        "",
        description=(
            "The encryption key's file, readable by the user alone; empty: ~/.config/mnemo/capture.key."
        ),
    )
    read_tree: bool = Field(
        True,
        description=(
            "Read screen text from the accessibility tree (AT-SPI2) of the windows that publish one: exact "
            "words in milliseconds, where OCR takes seconds a page; OCR reads the rest (terminals like xterm, "
            "canvases, pictures). Password fields and excluded windows are never read."
        ),
    )
    audio: bool = Field(
        False,
        description=(
            "Also record sound: the microphone (the default source) and what the computer plays (the default "
            "sink's monitor), through PulseAudio or pipewire-pulse, in the screen's 30 s clips; only the slots "
            "with speech are stored."
        ),
    )
    audio_min_speech_s: float = Field(
        1.0,
        ge=0,
        description=(
            "A 30 s slot of one stream is stored only when voice-activity detection finds at least this many "
            "seconds of speech in it; silence, hum and music store nothing."
        ),
    )
    keep_audio: float = Field(
        7.0,
        ge=0,
        description=(
            "Days the recorded sound is kept (frames keep to max_age_days); 0: only until its clip is ingested, "
            "then only the transcript stays."
        ),
    )
    ingest_poll_s: float = Field(
        5.0,
        gt=0,
        description=(
            "`capture --ingest`: seconds between looks for closed clips where file events cannot be had."
        ),
    )
    ingest_release_s: float = Field(
        120.0,
        ge=0,
        description=(
            "`capture --ingest` and `mnemo watch`: seconds without a clip to ingest after which the models are let go "
            "(their memory goes back to the system; the next clip loads them again); 0: kept loaded."
        ),
    )
