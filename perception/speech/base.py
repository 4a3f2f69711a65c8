"""The speech family's protocols: speech recognition and speaker (voice) embedding."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from perception.records import SpeechTurn


@runtime_checkable
class SpeechRecognizer(Protocol):
    def transcribe(
        self,
        audio: np.ndarray,
        sample_rate: int,
        hotwords: str | None = None,
        prompt: str | None = None,
    ) -> tuple[list[SpeechTurn], str]:
        """Speech segments (offsets within ``audio``, with word timing) and the language.
        ``hotwords``: words (names) to expect; ``prompt``: the text said just before."""


@runtime_checkable
class SpeakerEmbedder(Protocol):
    dim: int
    window_s: float  # the length of the windows ``embed_windows`` embeds

    def embed_windows(
        self, audio: np.ndarray, sample_rate: int, rate_hz: float = 4.0
    ) -> tuple[np.ndarray, np.ndarray]:
        """L2-normalised embeddings of short sliding windows, and the window centres in seconds."""
