"""Where the recorder places sound on the clip grid when its chunks arrive late: a reader that fell
behind (a busy process) and then reads its backlog in a burst, a device that was suspended and
lost its samples, and ordinary scheduling jitter. The recorder is fed 20 ms chunks of a known
signal as ``parec``'s thread would, with the arrival times each case gives them; what it put in
its slots is compared with what was heard."""

from __future__ import annotations

import numpy as np
import pytest

from perception.capture.audio import CONFIRM_S, AudioRecorder, _Clock
from perception.capture.pulse import SAMPLE_RATE
from perception.capture.storage import CaptureStore

CHUNK = SAMPLE_RATE // 50
GRID_S = 30.0
T0 = 1_800_000_000.0 + 3.0  # 3 s into a slot of the 30 s grid


def _heard(seconds: float) -> np.ndarray:
    """A signal whose every sample says where it is: a slow ramp of distinct int16 values."""
    n = int(seconds * SAMPLE_RATE)
    return ((np.arange(n) % 30000) + 1).astype(np.int16)


def _feed(tmp_path, signal: np.ndarray, arrivals: list[float]) -> np.ndarray:
    """The recorder's ``out`` slots after chunk ``i`` of ``signal`` arrived at ``arrivals[i]``,
    joined from the slot that ``T0`` falls in."""
    rec = AudioRecorder(CaptureStore(tmp_path / "out"), clip_s=GRID_S, streams=("out",))
    stream = rec.streams["out"]
    for i, arrived in enumerate(arrivals):
        chunk = signal[i * CHUNK : (i + 1) * CHUNK]
        rec._feed(stream, chunk.astype("<i2").tobytes(), arrived)
    first = int(T0 // GRID_S)
    return np.concatenate([stream.slots[k].samples for k in sorted(stream.slots) if k >= first])


def _on_time(i: int, late_s: float = 0.004) -> float:
    """When chunk ``i`` arrives from a reader that keeps up: just after its last sample."""
    return T0 + (i + 1) * CHUNK / SAMPLE_RATE + late_s


def _where(placed: np.ndarray, signal: np.ndarray, at_s: float, near_s: float) -> float:
    """Seconds from ``T0`` at which the sample heard at ``at_s`` was placed, looked for within
    0.9 s of ``near_s`` (the ramp repeats every 1.875 s)."""
    value = signal[int(at_s * SAMPLE_RATE)]
    offset = int(T0 % GRID_S * SAMPLE_RATE)
    found = (np.flatnonzero(placed == value) - offset) / SAMPLE_RATE
    return float(found[np.argmin(abs(found - near_s))])


def test_a_backlog_read_in_a_burst_keeps_every_sample_in_its_place(tmp_path):
    """The reader stalls for 0.8 s, then reads what piled up at a chunk a millisecond. Every
    sample is stored, in order, where it was heard (a CI run's call was misheard when the burst
    was placed from its arrival and 0.8 s of speech were written over each other)."""
    signal = _heard(6.0)
    arrivals = [_on_time(i) for i in range(100)]
    for i in range(100, signal.size // CHUNK):
        arrivals.append(max(_on_time(i), arrivals[-1] + 0.001) if i > 100 else _on_time(i) + 0.8)
    placed = _feed(tmp_path, signal, arrivals)
    offset = int(T0 % GRID_S * SAMPLE_RATE)
    stored = placed[offset - 200 : offset + signal.size + 200]
    assert np.array_equal(stored[stored != 0], signal), "sound was written over or lost"
    for at_s in (1.0, 2.05, 2.5, 4.0, 5.9):
        assert abs(_where(placed, signal, at_s, at_s) - at_s) < 0.03, at_s


def test_sound_lost_while_a_device_was_suspended_is_a_gap_and_the_rest_is_on_time(tmp_path):
    """No samples came for 3 s; then they come at the pace they are heard. What followed the gap
    is placed on time once the stream was seen behind for ``CONFIRM_S``, and nothing placed
    before it is written over."""
    signal = _heard(10.0)
    gap_s = 3.0
    arrivals = [_on_time(i) + (gap_s if i >= 100 else 0.0) for i in range(signal.size // CHUNK)]
    placed = _feed(tmp_path, signal, arrivals)
    assert np.count_nonzero(placed) == signal.size, "sound was written over"
    assert abs(_where(placed, signal, 1.0, 1.0) - 1.0) < 0.03
    after = 2.0 + CONFIRM_S + 0.5  # heard then, when it came, the stream was known to be behind
    assert abs(_where(placed, signal, after, after + gap_s) - (after + gap_s)) < 0.03
    assert abs(_where(placed, signal, 9.5, 12.5) - 12.5) < 0.03


@pytest.mark.parametrize("seed", [0, 1])
def test_scheduling_jitter_moves_nothing(tmp_path, seed):
    """Chunks late by 0 to 40 ms at random: every sample stored, each within 45 ms of when it
    was heard."""
    rng = np.random.default_rng(seed)
    signal = _heard(8.0)
    arrivals = [_on_time(i, float(rng.uniform(0.0, 0.04))) for i in range(signal.size // CHUNK)]
    placed = _feed(tmp_path, signal, arrivals)
    assert np.count_nonzero(placed) == signal.size
    for at_s in np.arange(0.5, 8.0, 0.5):
        assert abs(_where(placed, signal, float(at_s), at_s) - at_s) < 0.045, at_s


def test_the_system_clock_stepped_back_moves_the_sound_back_with_it():
    """A wall clock set back a minute (not jitter) places what follows by the clock, as the
    screen's frames are: the sound is not held a minute ahead of them for good."""
    clock = _Clock()
    step = [0.0 if i < 100 else -60.0 for i in range(400)]
    placed = [clock.place(CHUNK, _on_time(i) + step[i]) for i in range(400)]
    heard = [round(T0 * SAMPLE_RATE) + i * CHUNK for i in range(400)]
    assert all(abs(placed[i] - heard[i]) < 0.03 * SAMPLE_RATE for i in range(100))
    assert all(
        abs(placed[i] - (heard[i] - 60 * SAMPLE_RATE)) < 0.03 * SAMPLE_RATE for i in range(100, 400)
    )
