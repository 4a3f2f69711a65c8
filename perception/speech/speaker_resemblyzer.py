"""Speaker (voice) embedding with Resemblyzer's GE2E encoder, 256-d, weights inside the package.

The encoder is an LSTM over 1.6 s windows of a 40-band mel spectrogram. On the CPU it runs in ONNX
Runtime (``perception.onnx_models``), its graph built once from ``pretrained.pt`` without torch
(``ge2e_graph.py``); the windows and the spectrogram are computed here as Resemblyzer's
``embed_utterance`` computes them, since importing ``resemblyzer`` loads torch. The torch network
(``runtime = "torch"``, or a GPU) needs the torch extra.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from perception.onnx_models import cached_export, forward_pass, require_torch_runtime
from perception.speech.ge2e_graph import GRAPH_VERSION, N_MELS, build_encoder
from perception.weights import packaged_file, torch_device

SAMPLE_RATE = 16_000
FRAME_SAMPLES = 160  # a mel frame every 10 ms
WINDOW_FRAMES = 160  # 1.6 s windows ("partial utterances")
N_FFT = 400  # 25 ms
MIN_COVERAGE = 0.75  # the last window is kept when the audio covers this much of it
CHECK_TOLERANCE = (
    1e-4  # largest difference allowed between the torch network's embeddings and the graph's
)
SETTING = "[perception] model_runtime"
TORCH_MODULES = ("resemblyzer",)  # what the torch runtime needs besides torch
WHAT = "the speaker model"


def _resemblyzer():
    with warnings.catch_warnings():
        # webrtcvad imports the deprecated pkg_resources, scipy.ndimage.morphology too: not ours to fix
        warnings.simplefilter("ignore", category=UserWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        try:
            import resemblyzer
        except ImportError as e:
            # its weights are fetched (mnemo models fetch); its code only serves this torch path
            raise ImportError(
                f"the speaker encoder's torch runtime needs the resemblyzer package ({e}): pip install "
                'resemblyzer==0.1.4 with torch; or set [perception] model_runtime = "onnx", which '
                "needs neither"
            ) from e
    return resemblyzer


def _weights() -> Path:
    return packaged_file("resemblyzer", "pretrained.pt")


def _graph() -> Path:
    return cached_export(
        "resemblyzer", _weights(), build_encoder, str(_weights()), version=GRAPH_VERSION
    )


def _torch_encoder(device: str):
    return _resemblyzer().VoiceEncoder(device=device, verbose=False, weights_fpath=_weights())


def window_starts(n_samples: int, rate_hz: float) -> list[int]:
    """The first mel frame of each window over ``n_samples`` of audio, ``rate_hz`` windows a second,
    covering it all; a last window the audio fills less than ``MIN_COVERAGE`` of is left out
    (Resemblyzer's ``compute_partial_slices``)."""
    n_frames = int(np.ceil((n_samples + 1) / FRAME_SAMPLES))
    step = int(np.round(SAMPLE_RATE / rate_hz / FRAME_SAMPLES))
    if not 0 < step <= WINDOW_FRAMES:
        raise ValueError(
            f"{rate_hz} windows a second: choose from {SAMPLE_RATE / FRAME_SAMPLES / WINDOW_FRAMES} "
            f"to {SAMPLE_RATE / FRAME_SAMPLES}"
        )
    starts = list(range(0, max(1, n_frames - WINDOW_FRAMES + step + 1), step))
    coverage = (n_samples - starts[-1] * FRAME_SAMPLES) / (WINDOW_FRAMES * FRAME_SAMPLES)
    if coverage < MIN_COVERAGE and len(starts) > 1:
        starts.pop()
    return starts


def mel_frames(audio: np.ndarray) -> np.ndarray:
    """The encoder's input: a (frames, 40) float32 mel power spectrogram, a frame every 10 ms, as
    ``librosa.feature.melspectrogram`` computes it (centred Hann frames, Slaney mel bands), in numpy:
    librosa's first call loads numba, which costs memory and seconds."""
    audio = np.pad(audio.astype(np.float32, copy=False), N_FFT // 2)
    frames = np.lib.stride_tricks.sliding_window_view(audio, N_FFT)[::FRAME_SAMPLES]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=1).astype(np.complex64)) ** 2
    return (power @ _mel_bands().T).astype(np.float32)


@lru_cache(maxsize=1)
def _hann() -> np.ndarray:
    return (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)).astype(np.float32)  # periodic


def _hz_to_mel(hz: np.ndarray | float) -> np.ndarray:
    """Slaney's mel scale: linear to 1 kHz, logarithmic above."""
    hz = np.asarray(hz, dtype=np.float64)
    return np.where(
        hz < 1000.0,
        hz * 3 / 200,
        15.0 + np.log(np.maximum(hz, 1e-10) / 1000.0) / (np.log(6.4) / 27),
    )


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return np.where(mel < 15.0, mel * 200 / 3, 1000.0 * np.exp((np.log(6.4) / 27) * (mel - 15.0)))


@lru_cache(maxsize=1)
def _mel_bands() -> np.ndarray:
    """(40, 201) triangular filters from 0 Hz to Nyquist, each normalised to unit area (Slaney)."""
    fft_hz = np.fft.rfftfreq(N_FFT, 1 / SAMPLE_RATE)
    edges = _mel_to_hz(np.linspace(_hz_to_mel(0.0), _hz_to_mel(SAMPLE_RATE / 2), N_MELS + 2))
    widths = np.diff(edges)
    ramps = edges[:, None] - fft_hz[None, :]
    rising, falling = -ramps[:-2] / widths[:-1, None], ramps[2:] / widths[1:, None]
    bands = np.maximum(0, np.minimum(rising, falling)) * (2.0 / (edges[2:] - edges[:-2]))[:, None]
    return bands.astype(np.float32)


class ResemblyzerSpeaker:
    dim = 256
    window_s = (
        WINDOW_FRAMES * FRAME_SAMPLES / SAMPLE_RATE
    )  # the windows embed_windows embeds: 1.6 s

    def __init__(self, device: str = "auto", runtime: str = "auto") -> None:
        require_torch_runtime(runtime, device, TORCH_MODULES, SETTING)
        self.device = device
        self.runtime = runtime
        self._encode: Callable[[np.ndarray], np.ndarray] | None = None  # built on first use

    def _load(self):
        if self._encode is None:
            device = torch_device(self.device)
            run, self.runtime = forward_pass(
                self.runtime, device, SETTING, _graph, _torch_encoder, TORCH_MODULES, WHAT
            )
            self._encode = lambda mels: run(mels)[0]
        return self._encode

    def embed_windows(
        self, audio: np.ndarray, sample_rate: int, rate_hz: float = 4.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings of 1.6 s windows every ``1/rate_hz`` s over the raw audio, and their centres (s).

        The audio is not VAD-trimmed here, so window times stay aligned with the clip.
        """
        if sample_rate != SAMPLE_RATE:
            raise ValueError(f"resemblyzer needs 16 kHz audio, got {sample_rate} Hz")
        audio = audio.astype(np.float32, copy=False)
        starts = window_starts(audio.size, rate_hz)
        padded = (starts[-1] + WINDOW_FRAMES) * FRAME_SAMPLES
        mel = mel_frames(np.pad(audio, (0, padded - audio.size)) if padded >= audio.size else audio)
        embeddings = self._load()(np.stack([mel[s : s + WINDOW_FRAMES] for s in starts]))
        centres = np.array(
            [
                (s * FRAME_SAMPLES + min((s + WINDOW_FRAMES) * FRAME_SAMPLES, audio.size))
                / 2
                / SAMPLE_RATE
                for s in starts
            ]
        )
        return embeddings.astype(np.float32), centres
