"""Speaker (voice) embedding with Resemblyzer's GE2E encoder, 256-d, weights inside the package."""

from __future__ import annotations

import warnings

import numpy as np

from perception.weights import torch_device
from perception.weights import packaged_file


def _resemblyzer():
    with warnings.catch_warnings():
        # webrtcvad imports the deprecated pkg_resources, scipy.ndimage.morphology too: not ours to fix
        warnings.simplefilter("ignore", category=UserWarning)
        warnings.simplefilter("ignore", category=DeprecationWarning)
        import resemblyzer
    return resemblyzer


class ResemblyzerSpeaker:
    dim = 256
    min_duration_s = 0.6  # shorter stretches give embeddings too noisy to match on
    window_s = 1.6  # embed_windows: resemblyzer's partial utterances, 160 frames of 10 ms

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._encoder = None

    def _load(self):
        if self._encoder is None:
            device = torch_device(self.device)
            weights = packaged_file("resemblyzer", "pretrained.pt")
            self._encoder = _resemblyzer().VoiceEncoder(device=device, verbose=False, weights_fpath=weights)
        return self._encoder

    def embed(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        wav = _resemblyzer().preprocess_wav(audio.astype(np.float32, copy=False), source_sr=sample_rate)
        if wav.size < self.min_duration_s * 16_000:
            # the VAD trim left too little voice; embed the untrimmed stretch instead
            wav = audio.astype(np.float32, copy=False)
        emb = self._load().embed_utterance(wav)
        return (emb / (np.linalg.norm(emb) + 1e-9)).astype(np.float32)

    def embed_windows(self, audio: np.ndarray, sample_rate: int, rate_hz: float = 4.0
                      ) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings of 1.6 s windows every ``1/rate_hz`` s over the raw audio, and their centres (s).

        The audio is not VAD-trimmed here, so window times stay aligned with the clip.
        """
        if sample_rate != 16_000:
            raise ValueError(f"resemblyzer needs 16 kHz audio, got {sample_rate} Hz")
        _, partials, slices = self._load().embed_utterance(
            audio.astype(np.float32, copy=False), return_partials=True, rate=rate_hz)
        centres = np.array([(s.start + min(s.stop, audio.size)) / 2 / sample_rate for s in slices])
        return partials.astype(np.float32), centres
