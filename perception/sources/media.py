"""Recordings → exact 30 s clips.

Probing uses PyAV; decoding drives the static ffmpeg binary from imageio-ffmpeg through
ffmpeg-python, so no system ffmpeg is needed. Clip ``k`` covers exactly ``[k*clip_s, (k+1)*clip_s)``
of the recording (the last one shorter): no gaps, no overlaps. Media is decoded per clip, on
demand, so an hours-long recording never sits in memory whole.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

from perception.errors import MediaError
from perception.records import Clip, ClipMedia, SourceInfo

log = logging.getLogger(__name__)

SAMPLE_RATE = 16_000
# A clip's decode is stopped after this long: a hostile or damaged file must not hang an ingest.
# Decoding a 30 s clip takes about a second here.
DECODE_TIMEOUT_S = 120.0
VIDEO_MAX_SIDE = 960  # video frames are decoded with at most this long side
AUDIO_SUFFIXES = frozenset(".wav .mp3 .m4a .aac .flac .ogg .opus .wma".split())
MEDIA_SUFFIXES = frozenset(".mp4 .mkv .mov .avi .webm .m4v .mpg .mpeg".split()) | AUDIO_SUFFIXES
INGESTED_SUFFIXES = MEDIA_SUFFIXES | frozenset({".gpx"})  # GPS tracks: perception.sources.tracks


def missing_streams(source: SourceInfo) -> str:
    """What a whole recording lacks, said once for the file ("" when nothing is missing that its
    kind should have: an audio file is not expected to have video)."""
    if not source.has_audio:
        return "no audio stream: speech skipped"
    if not source.has_video and Path(source.path).suffix.lower() not in AUDIO_SUFFIXES:
        return "no video stream: faces and frames skipped"
    return ""


@lru_cache(maxsize=1)
def ffmpeg_exe() -> str:
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def file_sha256(path: Path, chunk_bytes: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(chunk_bytes):
            h.update(chunk)
    return h.hexdigest()


def utc_time(text: str | None) -> datetime | None:
    """An ISO 8601 time as an aware datetime, UTC where it names no offset (``Z`` is UTC too);
    None where there is none or it cannot be read."""
    if not text:
        return None
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def _parse_creation_time(value: str | None) -> datetime | None:
    ts = utc_time(value)
    # 1970/1904 epochs are what muxers write when they know no date
    return None if ts is None or ts.year < 1990 else ts


def probe(path: str | os.PathLike[str], start: datetime | None = None) -> SourceInfo:
    """Check that ``path`` is a decodable recording and read its duration, streams and start time.

    ``start`` overrides the start time; otherwise the container's ``creation_time`` is used, and
    failing that the file's modification time minus its duration.
    """
    import av

    p = Path(path)
    if not p.exists():
        if p.is_symlink():
            raise MediaError(
                str(p), f"a link to {os.readlink(p)}, which does not exist; fix or remove the link"
            )
        raise MediaError(str(p), "no such file; check the path")
    if not p.is_file():
        raise MediaError(str(p), "not a regular file")
    if p.stat().st_size == 0:
        raise MediaError(str(p), "the file is empty; re-export or re-copy the recording")
    try:
        with av.open(str(p)) as container:
            audio = [s for s in container.streams if s.type == "audio"]
            video = [s for s in container.streams if s.type == "video"]
            duration_s = (container.duration or 0) / 1_000_000
            if not duration_s:
                durations = [
                    float(s.duration * s.time_base)
                    for s in audio + video
                    if s.duration and s.time_base
                ]
                duration_s = max(durations, default=0.0)
            created = _parse_creation_time(container.metadata.get("creation_time"))
            # a single still image opens as a one-frame "video"; it is not a recording
            is_still = (
                bool(video)
                and not audio
                and container.format.name
                in {
                    "image2",
                    "png_pipe",
                    "jpeg_pipe",
                    "webp_pipe",
                    "bmp_pipe",
                    "gif",
                    "tiff_pipe",
                }
            )
    except (av.error.FFmpegError, UnicodeDecodeError) as e:
        raise MediaError(
            str(p),
            f"not a readable audio/video file ({e.__class__.__name__}: {e}); "
            "if it is a recording it may be truncated or corrupt: re-export it",
        ) from e
    if is_still:
        raise MediaError(
            str(p), "a still image, not a recording; screenshots are ingested as folders"
        )
    if not audio and not video:
        raise MediaError(str(p), "contains neither an audio nor a video stream")
    if duration_s <= 0 or not math.isfinite(duration_s):
        raise MediaError(
            str(p), "duration unknown or zero; the file may be truncated: re-export it"
        )

    if start is not None:
        recorded_at, origin = start, "option"
    elif created is not None:
        recorded_at, origin = created, "metadata"
    else:
        recorded_at = datetime.fromtimestamp(p.stat().st_mtime - duration_s, tz=UTC)
        origin = "mtime"
        log.info("%s: no creation_time in metadata; start taken from file mtime (use --start)", p)
    if recorded_at.tzinfo is None:
        recorded_at = recorded_at.astimezone()
    try:
        sha256 = file_sha256(p)
    except OSError as e:
        raise MediaError(
            str(p), f"cannot be read ({e.strerror or e}); check its permissions"
        ) from e
    return SourceInfo(
        path=str(p.resolve()),
        sha256=sha256,
        duration_s=duration_s,
        has_audio=bool(audio),
        has_video=bool(video),
        recorded_at=recorded_at,
        start_origin=origin,
    )


def clip_id(source_sha256: str, index: int, clip_s: float) -> str:
    """Stable id: the same bytes cut the same way give the same id on any machine."""
    return hashlib.sha256(f"{source_sha256}:{clip_s:g}:{index}".encode()).hexdigest()[:24]


def plan_clips(source: SourceInfo, clip_s: float = 30.0) -> Iterator[Clip]:
    """Yield the clips of ``source`` lazily, in time order."""
    if clip_s <= 0:
        raise ValueError(f"clip length must be positive, got {clip_s}")
    n = max(1, math.ceil(source.duration_s / clip_s - 1e-9))
    for k in range(n):
        offset = k * clip_s
        duration = min(clip_s, source.duration_s - offset)
        if duration <= 0.05:  # container rounding leaves a sliver: nothing to decode
            break
        yield Clip(clip_id(source.sha256, k, clip_s), source, k, offset, duration)


def _run_ffmpeg(clip: Clip, **output_kwargs) -> bytes:
    return run_ffmpeg(clip.source.path, clip.offset_s, clip.duration_s, **output_kwargs)


def run_ffmpeg(path: str, offset_s: float, duration_s: float, **output_kwargs) -> bytes:
    """``[offset_s, offset_s + duration_s)`` of ``path`` through ffmpeg to bytes (``output_kwargs``
    are ffmpeg output options); ``MediaError`` naming the file and the span when it fails."""
    import ffmpeg

    span = f"{offset_s:.0f}-{offset_s + duration_s:.0f} s"
    stream = ffmpeg.input(path, ss=f"{offset_s:.6f}", t=f"{duration_s:.6f}")
    proc = (
        stream.output("pipe:", **output_kwargs)
        .global_args("-nostdin", "-loglevel", "error")
        .run_async(cmd=ffmpeg_exe(), pipe_stdout=True, pipe_stderr=True)
    )
    try:
        out, err = proc.communicate(timeout=DECODE_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        proc.kill()
        proc.communicate()
        raise MediaError(
            path,
            f"decoding {span} took longer than "
            f"{DECODE_TIMEOUT_S:g} s and was stopped; the file may be damaged: re-export it",
        ) from e
    if proc.returncode != 0:
        detail = (err or b"").decode(errors="replace").strip().splitlines()[-1:] or ["?"]
        raise MediaError(path, f"ffmpeg could not decode {span}: {detail[0]}")
    return out


def decode_audio(clip: Clip) -> np.ndarray:
    """The clip's audio as 16 kHz mono float32, as decoded (short if the file ends early)."""
    raw = _run_ffmpeg(clip, format="f32le", acodec="pcm_f32le", ac=1, ar=SAMPLE_RATE, vn=None)
    return np.frombuffer(raw, dtype=np.float32)


def fit_audio(audio: np.ndarray, duration_s: float) -> tuple[np.ndarray, str | None]:
    """Exactly ``duration_s * 16000`` samples: trimmed, or padded with silence and a note why."""
    n = int(round(duration_s * SAMPLE_RATE))
    if audio.size >= n:
        return audio[:n].copy(), None
    note = None
    if audio.size < n - SAMPLE_RATE // 10:
        note = (
            f"audio ends early (decoded {audio.size / SAMPLE_RATE:.1f} of {duration_s:.1f} s; "
            "the file may be truncated); padded with silence"
        )
    return np.pad(audio, (0, n - audio.size)), note


def decode_frames(
    clip: Clip, fps: float, max_side: int = VIDEO_MAX_SIDE, threads: int = 0
) -> tuple[tuple[np.ndarray, ...], tuple[float, ...]]:
    """Frames sampled at ``fps`` (RGB uint8), scaled so the longer side is at most ``max_side``;
    the decoder uses ``threads`` threads (0: one per CPU of the machine).

    Decoded with PyAV: for each sample time ``k / fps`` the frame whose timestamp is nearest is
    taken, and its own timestamp (offset within the clip) is returned, so times say what the frame
    shows. (ffmpeg's fps filter was measured to hand out frames up to half a period late.) Packets
    that fail to decode are skipped; if nothing decodes, ``MediaError``.
    """
    import av

    try:
        container = av.open(clip.source.path)
    except (av.error.FFmpegError, OSError) as e:
        raise MediaError(clip.source.path, f"cannot open the video: {e}") from e
    deadline = time.monotonic() + DECODE_TIMEOUT_S
    targets = [k / fps for k in range(max(1, int(np.ceil(clip.duration_s * fps - 1e-6))))]
    chosen: list[tuple[float, np.ndarray]] = []
    bad_packets = 0
    with container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        if threads > 0:  # a Ray worker's share, not the machine's CPUs
            stream.codec_context.thread_count = threads
        w, h = stream.codec_context.width, stream.codec_context.height
        if w <= 0 or h <= 0:
            raise MediaError(clip.source.path, "video stream has no frame size")
        scale = min(1.0, max_side / max(w, h))
        ow, oh = max(2, int(w * scale) // 2 * 2), max(2, int(h * scale) // 2 * 2)
        origin = container.start_time / 1e6 if container.start_time is not None else 0.0
        if clip.offset_s > 0:
            container.seek(int((origin + clip.offset_s) * 1e6))  # lands on the keyframe before
        k = 0
        prev: tuple[float, av.VideoFrame] | None = None
        taken = None  # the decoded frame taken last

        def take(t_frame: tuple[float, av.VideoFrame]) -> None:
            nonlocal taken
            # converted at once: a decoded frame held on holds a buffer of the decoder's pool
            if taken is not t_frame[1]:
                taken = t_frame[1]
                chosen.append(
                    (
                        t_frame[0],
                        t_frame[1].reformat(width=ow, height=oh, format="rgb24").to_ndarray(),
                    )
                )

        def frames():
            nonlocal bad_packets
            for packet in container.demux(stream):
                try:
                    yield from packet.decode()
                except av.error.FFmpegError:
                    bad_packets += 1

        for frame in frames():
            if time.monotonic() > deadline:
                raise MediaError(
                    clip.source.path,
                    f"decoding the frames of {clip.offset_s:.0f}-{clip.end_offset_s:.0f} s "
                    f"took longer than {DECODE_TIMEOUT_S:g} s and was stopped; the file may be damaged",
                )
            if frame.time is None:
                continue
            t = float(frame.time) - origin - clip.offset_s
            if t >= clip.duration_s:
                break
            while k < len(targets) and t >= targets[k]:
                take(
                    prev
                    if prev is not None and prev[0] >= 0 and targets[k] - prev[0] < t - targets[k]
                    else (t, frame)
                )
                k += 1
            prev = (t, frame)
        if (
            k < len(targets)
            and prev is not None
            and prev[0] >= 0
            and prev[0] > targets[k] - 0.5 / fps
        ):
            take(prev)  # the last sample time falls after the last frame
    if not chosen:
        raise MediaError(
            clip.source.path,
            f"no video frame decodes in {clip.offset_s:.0f}-{clip.end_offset_s:.0f} s"
            + (f" ({bad_packets} corrupt packets)" if bad_packets else ""),
        )
    return tuple(image for _, image in chosen), tuple(
        min(max(t, 0.0), clip.duration_s) for t, _ in chosen
    )


def load_media(clip: Clip, fps: float, threads: int = 0) -> tuple[ClipMedia, tuple[str, ...]]:
    """Decode what the clip has (video with ``threads`` decoder threads, 0: the machine's CPUs). A
    stream that fails to decode is left out and said why in notes; a clip where nothing decodes
    raises ``MediaError``."""
    notes: list[str] = []
    audio = None
    frames: tuple[np.ndarray, ...] = ()
    times: tuple[float, ...] = ()
    decoded_audio_s = 0.0
    if clip.source.has_audio:
        try:
            raw = decode_audio(clip)
            decoded_audio_s = raw.size / SAMPLE_RATE
            audio, note = fit_audio(raw, clip.duration_s)
            if note:
                notes.append(note)
        except MediaError as e:
            notes.append(f"audio skipped: {e.reason}")
    if clip.source.has_video:
        try:
            frames, times = decode_frames(clip, fps, threads=threads)
            expected = int(clip.duration_s * fps)
            if len(frames) < expected - 1:
                notes.append(
                    f"video ends early ({len(frames)} of {expected} frames; the file may be truncated)"
                )
        except MediaError as e:
            notes.append(f"video skipped: {e.reason}")
    if decoded_audio_s < 0.05 and not frames:
        raise MediaError(
            clip.source.path,
            f"nothing decodable in {clip.offset_s:.0f}-{clip.end_offset_s:.0f} s "
            f"({'; '.join(notes)}); the file may be truncated: re-export it",
        )
    return ClipMedia(audio, SAMPLE_RATE, frames, times), tuple(notes)


def expand_paths(paths: list[str]) -> Iterator[Path]:
    """Files as given; folders walked (sorted) for files with a media or track suffix, and for links with one
    that lead nowhere (a recording moved away: ``probe`` says so, rather than nothing)."""
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for child in sorted(p.rglob("*")):
                if child.suffix.lower() in INGESTED_SUFFIXES and (
                    child.is_file() or (child.is_symlink() and not child.exists())
                ):
                    yield child
        else:
            yield p
