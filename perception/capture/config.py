"""The ``[capture]`` section of the config tree."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CaptureConfig(BaseModel):
    out: str = "~/.local/share/mnemo/screens"
    interval_s: float = Field(2.0, gt=0, description="seconds between grabs while the user is active")
    idle_after_s: float = Field(60.0, gt=0, description="no keyboard/mouse input for this long: grab slower")
    idle_interval_s: float = Field(10.0, gt=0, description="seconds between grabs while idle")
    heartbeat_s: float = Field(60.0, gt=0, description="on a static screen, a heartbeat line this often")
    min_changed_fraction: float = Field(0.05, gt=0, le=1, description="keep a frame when this share of the "
                                        "(non-volatile) screen changed, input or not")
    input_settle_s: float = Field(3.0, ge=0, description="a change this soon after keyboard/mouse input is kept as "
                                  "its effect (a command's output, a page that loads), however small")
    tile_px: int = Field(32, ge=8)
    jpeg_quality: int = Field(80, ge=30, le=100)
    exclude_classes: list[str] = []  # WM_CLASS class or instance, case-insensitive
    exclude_titles: list[str] = []  # regular expressions, case-insensitive
    builtin_exclusions: bool = True  # private/incognito windows, password managers
    budget_mb: float = Field(2048.0, ge=0, description="bytes kept at most (0: no budget); oldest deleted first")
    max_age_days: float = Field(30.0, ge=0, description="frames older than this are deleted (0: never)")
    min_free_mb: float = Field(1024.0, ge=0, description="pause while the disk has less free space")
    encrypt: bool = False  # Fernet at rest; key from MNEMO_CAPTURE_KEY or key_file
    key_file: str = ""  # default ~/.config/mnemo/capture.key
    ingest_poll_s: float = Field(5.0, gt=0, description="--ingest: how often closed clips are looked for where file events cannot be had")
