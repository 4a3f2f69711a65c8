"""The daemon's ears: the microphone and what the computer plays, cut on the screen's clip grid.

Two streams are recorded (``perception/capture/pulse.py``): ``mic``, the default source, and
``out``, the default sink's monitor. Each follows its default: when the server says a device
changed, the defaults are read again and a stream whose device is no longer the default moves to
the new one. A stream whose device went away is paused with the reason (``status``) and starts
again once a device is there; a default source that is itself a monitor (a computer without a
microphone) is not recorded as the microphone, since everything heard there would be taken for
the owner's voice.

Samples go into the 30 s slot of the epoch-aligned clip grid that the screen's clips use, placed by
the wall-clock time they arrived (a chunk that follows on from the last one continues it, a burst
read late keeps its place, and after sound was lost it is placed anew). While ``gate()`` names a
reason (the screen is locked, an excluded window has focus, the user paused), samples are dropped,
never held. A slot is finished a moment after it ends: Silero VAD (the ONNX file faster-whisper
ships) finds its speech, and a stream's slot with less than ``min_speech_s`` of speech stores
nothing, so silence, hum and music cost nothing and are never transcribed; otherwise it is stored
as Opus in Ogg (``soundfile``'s libsndfile, about 11 MB an hour of speech) through
``CaptureStore.write_audio``: atomically, encrypted as frames are, within the byte budget.
"""

from __future__ import annotations

import io
import logging
import queue
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

import numpy as np

from perception.capture import pulse
from perception.capture.owned import AUDIO_STREAMS
from perception.capture.pulse import SAMPLE_RATE, PulseUnavailable

log = logging.getLogger(__name__)

FINISH_AFTER_S = 1.0  # a slot is finished this long after it ends (the last chunk in flight)
LOOK_EVERY_S = 10.0  # the defaults are read again this often even without an event
RETRY_S = 2.0  # a stream without its device tries again this often
GAP_S = 0.5  # a stream this much later than its samples say, for CONFIRM_S, lost samples
CONFIRM_S = 2.0  # a reader that stalled catches up sooner: its backlog comes in a burst
ANCHOR_S = 30.0  # the stream's clock is the earliest arrival over this long (see _Clock)


@dataclass
class StreamStatus:
    state: str = "starting"  # recording, paused, off
    why: str = ""
    device: str = ""
    stored: int = 0  # slots stored with speech
    silent: int = 0  # slots without speech: nothing stored
    gated_s: float = 0.0  # seconds of sound dropped while the gate was closed


@dataclass
class _Slot:
    samples: np.ndarray  # int16, the slot's length; zeros where nothing was recorded
    device: str
    heard: int = 0  # samples placed


class _Clock:
    """When a stream's samples were heard, from when its chunks arrived. A chunk never arrives
    before its samples were heard, only later (the pipe, the scheduler), so the sample count's
    time is the earliest ``arrival - samples read / rate`` seen over the last ``ANCHOR_S``: one
    late chunk moves nothing, and the window follows a sound card's clock drifting from the
    system's. A stream still more than ``GAP_S`` behind after ``CONFIRM_S`` lost samples (a
    device was suspended) and starts anew; one that catches up within it was only read late (a
    busy process), and its backlog keeps its place. A chunk is not placed over the one before
    (an earlier head found by jitter), so sound that was heard is not written over; only the
    system clock stepping back by more than ``GAP_S`` moves sound back. Each stream has its own
    pipeline latency, which this does not remove."""

    def __init__(self) -> None:
        self.read = 0  # samples since the clock started
        self.starts: deque[tuple[float, float]] = deque()  # (arrival, arrival - read / rate)
        self.late_since: float | None = None  # when the stream fell more than GAP_S behind
        self.end = 0  # the sample (counted from the epoch) after the last chunk placed

    def place(self, n: int, arrived: float) -> int:
        """The first of ``n`` samples that arrived at ``arrived``: when it was heard, as a
        sample count since the epoch."""
        start = arrived - (self.read + n) / SAMPLE_RATE
        if not self.starts or start - self.starts[0][1] <= GAP_S:  # the head is the earliest
            self.late_since = None
        elif self.late_since is None:
            self.late_since = arrived
        elif arrived - self.late_since >= CONFIRM_S:  # still behind: samples were lost
            log.info("audio: %.1f s of sound not recorded", start - self.starts[0][1])
            self.starts.clear()
            self.read = 0
            self.late_since = None
            start = arrived - n / SAMPLE_RATE
        while self.starts and self.starts[0][0] < arrived - ANCHOR_S:
            self.starts.popleft()
        while self.starts and self.starts[-1][1] >= start:  # a monotone queue: its head is the min
            self.starts.pop()
        self.starts.append((arrived, start))
        at = round(self.starts[0][1] * SAMPLE_RATE) + self.read
        if 0 < self.end - at < GAP_S * SAMPLE_RATE:  # an earlier head: jitter, not a step back
            at = self.end
        self.read += n
        self.end = at + n
        return at


@dataclass
class _Stream:
    name: str
    status: StreamStatus = field(default_factory=StreamStatus)
    rec: pulse.Recording | None = None
    clock: _Clock = field(default_factory=lambda: _Clock())
    slots: dict[int, _Slot] = field(default_factory=dict)
    retry_at: float = 0.0


def speech_seconds(samples: np.ndarray) -> tuple[float, list[tuple[float, float]]]:
    """Seconds of speech Silero VAD finds in 16 kHz float samples, and its stretches."""
    from perception.speech.diarize import speech_regions

    regions = speech_regions(samples, SAMPLE_RATE)
    return sum(b - a for a, b in regions), regions


def encode_opus(samples: np.ndarray) -> bytes:
    """16 kHz float samples as Opus in Ogg (libsndfile's default rate for Opus)."""
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(buf, samples, SAMPLE_RATE, format="OGG", subtype="OPUS")
    return buf.getvalue()


class AudioRecorder:
    """Records ``mic`` and ``out`` into ``store`` on the ``clip_s`` grid while ``gate()`` is "".

    ``gate``: called for each chunk; a non-empty reason drops it. ``pause``/``resume``: the user's
    own pause of the sound alone. Runs its threads from ``start`` until ``stop``; ``stop`` finishes
    the slot in progress."""

    def __init__(
        self,
        store,
        gate=lambda: "",
        clip_s: float = 30.0,
        min_speech_s: float = 1.0,
        streams: tuple[str, ...] = AUDIO_STREAMS,
    ) -> None:
        self.store = store
        self.gate = gate
        self.clip_s = clip_s
        self.min_speech_s = min_speech_s
        self.streams = {n: _Stream(n) for n in streams}
        self._lock = threading.Lock()
        self._look = threading.Event()
        self._stop = threading.Event()
        self._paused_until: float | None = None
        self._finished: queue.Queue = queue.Queue()
        self._events: pulse.Events | None = None
        self._threads: list[threading.Thread] = []
        self.error = ""  # the last failure to store a slot

    # control
    def pause(self, for_s: float | None = None) -> None:
        with self._lock:
            self._paused_until = time.time() + for_s if for_s else float("inf")

    def resume(self) -> None:
        with self._lock:
            self._paused_until = None

    def paused_by_user(self) -> str:
        with self._lock:
            until = self._paused_until
            if until is not None and time.time() >= until:
                self._paused_until = until = None
        if until is None:
            return ""
        return "sound paused by the user" + (
            ""
            if until == float("inf")
            else f" until {datetime.fromtimestamp(until).astimezone().isoformat(timespec='seconds')}"
        )

    def status(self) -> dict:
        closed = self.paused_by_user() or self.gate()
        out = {}
        for name, s in self.streams.items():
            st = s.status
            state, why = st.state, st.why
            if state == "recording" and closed:
                state, why = "paused", closed
            out[name] = {
                "state": state,
                "why": why,
                "device": st.device,
                "slots_stored": st.stored,
                "slots_silent": st.silent,
                "unrecorded_s": round(st.gated_s, 1),  # sound dropped while paused or locked
            }
        recording = any(v["state"] == "recording" for v in out.values())
        return {"recording": recording, "streams": out, "error": self.error}

    # threads
    def start(self) -> AudioRecorder:
        self._events = pulse.Events(self._look.set).start()
        for target, name in ((self._supervise, "supervise"), (self._write, "write")):
            t = threading.Thread(target=target, name=f"mnemo-audio-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        return self

    def stop(self) -> None:
        self._stop.set()
        self._look.set()
        if self._events is not None:
            self._events.stop()
        for t in self._threads[:1]:  # the supervisor: no stream is started or halted after this
            t.join(5.0)
        for s in self.streams.values():
            if s.rec is not None:
                s.rec.stop()
                s.rec = None
            s.status.state, s.status.why = "off", "capture stopped"
        with self._lock:
            for s in self.streams.values():
                for index in sorted(s.slots):
                    self._finished.put((s.name, index, s.slots.pop(index)))
        self._finished.put(None)
        for t in self._threads[1:]:
            t.join(30.0)

    def _supervise(self) -> None:
        last_look = 0.0
        while not self._stop.is_set():
            now = time.time()
            dead = any(s.rec is not None and not s.rec.alive for s in self.streams.values()) or any(
                s.rec is None and now >= s.retry_at for s in self.streams.values()
            )
            if self._look.is_set() or dead or now - last_look >= LOOK_EVERY_S:
                self._look.clear()
                last_look = now
                self._follow_defaults()
            self._finish_slots(now)
            self._look.wait(0.5)
            if self._stop.is_set():
                return

    def _follow_defaults(self) -> None:
        """Each stream on its default device; a stream that cannot be is paused saying why."""
        try:
            found = pulse.defaults()
        except PulseUnavailable as e:
            for s in self.streams.values():
                self._halt(s, str(e))
            return
        for s in self.streams.values():
            if s.name == "mic":
                device = found.source
                if pulse.is_monitor(device):
                    self._halt(
                        s,
                        f"no microphone: the default source is {device}, what a sink plays; "
                        "the sound the computer plays is recorded as the other stream",
                    )
                    continue
            else:
                device = found.monitor
            if s.rec is not None and s.rec.alive and s.rec.device == device:
                continue
            if s.rec is not None:
                ended = s.rec.ended
                s.rec.stop()
                s.rec = None
                if ended and s.status.device == device:  # the same device died: wait, then retry
                    self._halt(s, f"{device} stopped: {ended}")
                    continue
            self._record(s, device)

    def _record(self, s: _Stream, device: str) -> None:
        if s.status.device and s.status.device != device:
            log.info("audio %s: the default moved from %s to %s", s.name, s.status.device, device)
        s.clock = _Clock()
        try:
            s.rec = pulse.Recording(device, s.name, partial(self._feed, s))
        except OSError as e:
            self._halt(s, f"cannot start parec: {e}")
            return
        if s.status.state != "recording":
            log.info("audio %s: recording %s", s.name, device)
        s.status.state, s.status.why, s.status.device = "recording", "", device

    def _halt(self, s: _Stream, why: str) -> None:
        if self._stop.is_set():  # its recording was ended by stop, not lost
            return
        if s.rec is not None:
            s.rec.stop()
            s.rec = None
        s.retry_at = time.time() + RETRY_S
        if s.status.state != "paused" or s.status.why != why:
            log.warning("audio %s paused: %s", s.name, why)
        s.status.state, s.status.why = "paused", why

    def _feed(self, s: _Stream, chunk: bytes, arrived: float) -> None:
        """Place a chunk that arrived at ``arrived`` in its slot(s), unless the gate is closed."""
        samples = np.frombuffer(chunk, dtype="<i2")
        n = samples.size
        first = s.clock.place(n, arrived)
        why = self.paused_by_user() or self.gate()
        if why:
            s.status.gated_s += n / SAMPLE_RATE
            return
        per_slot = int(self.clip_s * SAMPLE_RATE)
        with self._lock:
            done = 0
            while done < n:
                index, offset = divmod(first + done, per_slot)
                take = min(n - done, per_slot - offset)
                slot = s.slots.get(index)
                if slot is None:
                    slot = s.slots[index] = _Slot(np.zeros(per_slot, np.int16), s.status.device)
                slot.samples[offset : offset + take] = samples[done : done + take]
                slot.heard += take
                done += take

    def _finish_slots(self, now: float) -> None:
        with self._lock:
            for s in self.streams.values():
                for index in sorted(s.slots):
                    if (index + 1) * self.clip_s + FINISH_AFTER_S <= now:
                        self._finished.put((s.name, index, s.slots.pop(index)))

    def _write(self) -> None:
        while (item := self._finished.get()) is not None:
            name, index, slot = item
            try:
                self._store_slot(name, index, slot)
            except Exception as e:  # noqa: BLE001 - a slot lost is said, the recorder goes on
                self.error = f"a {name} slot could not be stored: {e}"
                log.warning("audio %s: slot at %d not stored: %s", name, index, e)

    def _store_slot(self, name: str, index: int, slot: _Slot) -> None:
        st = self.streams[name].status
        samples = slot.samples.astype(np.float32) / 32768.0
        speech_s, regions = speech_seconds(samples)
        if speech_s < self.min_speech_s:
            st.silent += 1
            return
        start = datetime.fromtimestamp(index * self.clip_s, UTC)
        self.store.write_audio(
            encode_opus(samples),
            {
                "stream": name,
                "duration_s": self.clip_s,
                "sample_rate": SAMPLE_RATE,
                "device": slot.device,
                "speech_s": round(speech_s, 2),
                "speech": [[round(a, 2), round(b, 2)] for a, b in regions],
                "codec": "opus",
            },
            start,
            name,
        )
        st.stored += 1
