"""A clip's media from the original file: a frame (JPEG), the audio span (WAV), or the screenshot.

Only files the store references are read: the path comes from the clip row, never from the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mnemo.serve.errors import BadRequest
from perception.errors import MediaError
from perception.sources.media import run_ffmpeg
from perception.sources.tracks import TRACK_SUFFIXES

KINDS = ("frame", "audio")
MAX_AUDIO_S = 120.0
_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
    ".tif": "image/tiff",
    ".tiff": "image/tiff",
}


class MediaGone(LookupError):
    """The clip exists but its media cannot be served (file moved, no such stream); says which."""


class NoPicture(MediaGone):
    """The clip has no picture at all (a recording without video, a GPS track), not a lost one."""


@dataclass(frozen=True)
class MediaBytes:
    data: bytes
    media_type: str
    encrypted: bool = (
        False  # decrypted from an encrypted capture: not to be written to disk in the clear
    )


def clip_media(row: dict, kind: str = "frame", at_s: float | None = None) -> MediaBytes:
    """``kind`` of the clip in ``row`` (a store clip row); ``at_s``: seconds into the clip for the
    frame (default: its middle)."""
    if kind not in KINDS:
        raise BadRequest(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    source = Path(row["source_path"])
    duration = float(row["duration_s"])
    at = duration / 2 if at_s is None else at_s
    if not 0 <= at <= duration:
        raise BadRequest(f"at={at_s} lies outside the clip (0 to {duration:g} s)")
    if source.is_dir():
        return _screenshot(row, source, kind, at)
    if source.suffix.lower() in TRACK_SUFFIXES:
        raise NoPicture(
            f"{source.name} is a GPS track: a stay or a move has no frame or audio to show"
        )
    if not source.is_file():
        raise MediaGone(
            f"the clip's recording {source} is no longer there; put it back to see its media"
        )
    has_audio, has_video = _streams(source)
    offset = float(row["offset_s"])
    if kind == "audio":
        if not has_audio:
            raise MediaGone(f"{source} has no audio; ask for kind=frame")
        pcm = run_ffmpeg(
            str(source),
            offset,
            min(duration, MAX_AUDIO_S),
            format="s16le",
            acodec="pcm_s16le",
            ac=1,
            ar=16000,
        )
        return MediaBytes(_wav(pcm, 16000), "audio/wav")
    if not has_video:
        raise NoPicture(f"{source} has no video (the clip is sound only); ask for kind=audio")
    # a frame a little before the clip's end when asked for the very end: the last instant has none
    at = min(at, max(0.0, duration - 0.05))
    jpeg = run_ffmpeg(
        str(source), offset + at, 1.0, format="image2", vcodec="mjpeg", vframes=1, **{"q:v": 3}
    )
    if not jpeg:
        raise MediaGone(f"{source}: no frame decodes at {offset + at:.1f} s")
    return MediaBytes(jpeg, "image/jpeg")


def _wav(pcm: bytes, rate: int) -> bytes:
    """16-bit mono PCM in a WAV file with its real length (ffmpeg writing to a pipe cannot go back
    and fill it in)."""
    import io
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def _streams(path: Path) -> tuple[bool, bool]:
    """Whether the recording has audio, and video (without hashing it as ``probe`` does)."""
    import av

    try:
        with av.open(str(path)) as container:
            kinds = {s.type for s in container.streams}
    except (av.error.FFmpegError, OSError) as e:
        raise MediaError(
            str(path), f"cannot be opened any more ({e}); was it replaced or damaged?"
        ) from e
    return "audio" in kinds, "video" in kinds


def _screenshot(row: dict, folder: Path, kind: str, at: float) -> MediaBytes:
    """The screenshot of the clip's window nearest to ``at`` seconds into it."""
    from perception.capture.crypto import ENCRYPTED_SUFFIX, decrypt_file
    from perception.sources.screenshots import scan

    if kind != "frame":
        raise MediaGone(f"clip {row['clip_id']} is screenshots ({folder}); it has no audio")
    start, end = float(row["start_ts"]), float(row["end_ts"])
    shots = [s for s in scan(folder) if start <= s.captured_at.timestamp() < end]
    if not shots:
        raise MediaGone(f"the screenshots of clip {row['clip_id']} are no longer in {folder}")
    shot = min(shots, key=lambda s: abs(s.captured_at.timestamp() - (start + at)))
    path = shot.path
    if path.suffix == ENCRYPTED_SUFFIX:
        try:
            data = decrypt_file(path)
        except (OSError, ValueError, RuntimeError) as e:  # CaptureKeyError: no key, or a bad one
            raise MediaGone(f"{path} is encrypted and cannot be shown: {e}") from e
        return MediaBytes(
            data, _TYPES.get(Path(path.stem).suffix.lower(), "image/jpeg"), encrypted=True
        )
    try:
        return MediaBytes(
            path.read_bytes(), _TYPES.get(path.suffix.lower(), "application/octet-stream")
        )
    except OSError as e:
        raise MediaGone(f"{path} cannot be read: {e}") from e
