"""Speaker (voice) embedding with Resemblyzer's GE2E encoder, 256-d, weights inside the package."""

from __future__ import annotations

import warnings

import numpy as np

from perception.weights import packaged_file


class ResemblyzerSpeaker:
    dim = 256
    min_duration_s = 0.6  # shorter stretches give embeddings too noisy to match on

    def __init__(self, device: str = "auto") -> None:
        self.device = device
        self._encoder = None

    def _load(self):
        if self._encoder is None:
            from resemblyzer import VoiceEncoder

            device = self.device
            if device == "auto":
                import torch

                device = "cuda" if torch.cuda.is_available() else "cpu"
            weights = packaged_file("resemblyzer", "pretrained.pt")
            self._encoder = VoiceEncoder(device=device, verbose=False, weights_fpath=weights)
        return self._encoder

    def embed(self, audio: np.ndarray, sample_rate: int) -> np.ndarray:
        with warnings.catch_warnings():
            # webrtcvad imports the deprecated pkg_resources, scipy.ndimage.morphology too: not ours to fix
            warnings.simplefilter("ignore", category=UserWarning)
            warnings.simplefilter("ignore", category=DeprecationWarning)
            from resemblyzer import preprocess_wav

        wav = preprocess_wav(audio.astype(np.float32, copy=False), source_sr=sample_rate)
        if wav.size < self.min_duration_s * 16_000:
            # the VAD trim left too little voice; embed the untrimmed stretch instead
            wav = audio.astype(np.float32, copy=False)
        emb = self._load().embed_utterance(wav)
        return (emb / (np.linalg.norm(emb) + 1e-9)).astype(np.float32)
