"""The ``[perception]`` section of the config tree (``mnemo.config``): how recordings are cut into
clips and which models read what from them, with what thresholds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class PerceptionConfig(BaseModel):
    """``[perception]``: how recordings are cut into clips and what is read from them."""

    clip_s: float = Field(
        30.0,
        gt=0,
        description=(
            "Length of the clips a recording is cut into, in seconds; each clip is perceived and memorized as one "
            "unit. Shorter clips give more, finer memories."
        ),
    )
    frame_fps: float = Field(
        1.0,
        gt=0,
        le=30,
        description=(
            "Video frames sampled per second for faces, tags, screen text and captions. Lower it to ingest faster, "
            "raise it to catch brief glimpses."
        ),
    )
    duplicate_max_diff: float = Field(
        3.0,
        ge=0,
        description=(
            "Mean grey-level change (0-255) under which a frame repeats an earlier frame of its clip: it takes that "
            "frame's faces, tags and text instead of being read again. 0 reads every frame."
        ),
    )
    device: str = Field(
        "auto",
        description=(
            'Where the models run: "auto" (a GPU when torch sees one, else the CPU), "cpu", "cuda", "cuda:1", ... '
            "A GPU needs the extra mnemo[torch]."
        ),
    )
    threads: int = Field(
        0,
        ge=0,
        description=(
            "CPU threads per model library (torch, CTranslate2, ONNX Runtime). 0: the CPUs this process may use; "
            "a Ray worker gets its share of the CPUs."
        ),
    )
    model_runtime: Literal["auto", "torch", "onnx"] = Field(
        "auto",
        description=(
            'How the speaker and image models run: "auto" runs them on the CPU in ONNX Runtime (their graphs built '
            'from the weight files, without torch); "torch" (or a GPU device) needs the extra mnemo[torch].'
        ),
    )
    asr_model: str = Field(
        "tiny.en",
        description=(
            'The speech-to-text model: packaged "tiny.en" (English) or "base" (multilingual), or another '
            "faster-whisper model name or local model folder. Larger models transcribe better, slower."
        ),
    )
    asr_compute_type: str = Field(
        "auto",
        description=(
            '"auto": float16 on a GPU, float32 on the CPU; or any CTranslate2 compute type (e.g. int8, faster and '
            "a little less exact)."
        ),
    )
    asr_beam_size: int = Field(
        5,
        ge=1,
        le=10,
        description=(
            "Beams the speech decoder keeps: fewer is cheaper and, below 3, transcribes worse."
        ),
    )
    asr_hotwords: bool = Field(
        False,
        description=(
            "Tell the first speech pass the names mnemo expects (names you gave, [people] contacts, names already "
            "established, first names on screen that day) as hotwords; a reading that is mostly those names is "
            "decoded again without them. Off: on LoCoMo spoken it raised the WER and named no one more rightly "
            "(docs/benchmarks.md). The spellings you and your contacts give apply either way."
        ),
    )
    asr_second_model: str = Field(
        "",
        description=(
            "A second speech pass, off by default: it decodes again, with a wider beam and the names mnemo expects "
            "as hotwords, where a name may be spoken, a word was heard with doubt or a sentence repeats itself: "
            '"tiny.en", "base" (packaged Whisper base), another faster-whisper model or folder; "" for one pass. '
            "Measured: the pyannote call's WER 0.1235 to 0.0988, but on LoCoMo spoken it heard 93% of the audio "
            "again and named more people wrongly (docs/benchmarks.md)."
        ),
    )
    asr_second_beam_size: int = Field(
        8,
        ge=1,
        le=16,
        description="Beams the second speech pass keeps (it hears little audio, so it can afford more).",
    )
    asr_second_min_probability: float = Field(
        0.5,
        ge=0,
        le=1,
        description=(
            "A first-pass word heard with a probability under this sends its sentence to the second pass; "
            "0: only names do."
        ),
    )
    speaker_backend: Literal["resemblyzer"] = Field(
        "resemblyzer", description=("The voice model that tells speakers apart.")
    )
    diarize_max_distance: float = Field(
        0.25,
        gt=0,
        lt=2,
        description=(
            "Cosine distance under which a clip's voice windows are clustered as one speaker. Lower splits voices "
            "more readily, higher merges alike voices."
        ),
    )
    diarize_min_speaker_s: float = Field(
        2.5,
        ge=0,
        description=(
            "Seconds of speech a speaker needs in a clip; speakers with less are folded into the nearest one."
        ),
    )
    faces_backend: Literal["auto", "dlib", "insightface"] = Field(
        "auto",
        description=(
            'The face detector and embedder: "auto" takes insightface when its model pack is on disk and its '
            "package (mnemo[insightface]) is installed, dlib otherwise."
        ),
    )
    insightface_root: str = Field(
        "~/.insightface",
        description=("Folder holding insightface's model packs (in its models/ folder)."),
    )
    insightface_pack: str = Field(
        "buffalo_l",
        description=("The insightface model pack: a folder under insightface_root/models."),
    )
    face_min_px: int = Field(
        40,
        ge=8,
        description=(
            "Smallest face used, in pixels (the shorter side of its box); smaller ones are ignored."
        ),
    )
    face_min_sharpness: float = Field(
        20.0,
        ge=0,
        description=(
            "Sharpness a face needs to be used: the Laplacian variance of its 128x128 crop. Raise it to drop "
            "blurred faces."
        ),
    )
    face_cluster_distance_dlib: float = Field(
        0.08,
        gt=0,
        lt=2,
        description=(
            "Average cosine distance under which faces of one clip are grouped as one person (dlib)."
        ),
    )
    face_cluster_distance_insightface: float = Field(
        0.55,
        gt=0,
        lt=2,
        description=(
            "Average cosine distance under which faces of one clip are grouped as one person (insightface)."
        ),
    )
    image_backend: Literal["efficientnet-lite0", "open-clip", "none"] = Field(
        "efficientnet-lite0",
        description=(
            'The image tagger: "efficientnet-lite0" (small, no torch needed), "open-clip" (needs open_clip and '
            'torch), or "none".'
        ),
    )
    open_clip_model: str = Field(
        "ViT-B-32", description=('The open_clip architecture, with image_backend "open-clip".')
    )
    open_clip_checkpoint: str = Field(
        "",
        description=(
            'With image_backend "open-clip": a local .pt/.safetensors file or an open_clip pretrained tag.'
        ),
    )
    ocr_backend: Literal["rapidocr", "none"] = Field(
        "rapidocr", description=('The on-screen text reader; "none" reads no text from frames.')
    )
    ocr_min_text_fraction: float = Field(
        0.01,
        ge=0,
        le=1,
        description=(
            "Read the text of frames at least this covered (0-1) by detected text; 0 reads every frame."
        ),
    )
    ocr_every_s: float = Field(
        5.0,
        ge=0,
        description=(
            "Look for on-screen text in video at most once per this many seconds (screenshots: every frame)."
        ),
    )
    ocr_word_gaps: bool = Field(
        True,
        description=(
            "Place spaces in screen text where the line's pixels have blank columns (perception/ocr/words.py); "
            "false keeps the recogniser's own spaces."
        ),
    )
    ocr_detect_min_side: int = Field(
        0,
        ge=0,
        description=(
            "0: detect text on the frame at its own size; N: first upscale its short side to N pixels (RapidOCR's "
            "default, 736)."
        ),
    )
    ocr_detect_max_side: int = Field(
        4096,
        ge=640,
        description=(
            "A frame with a longer side, in pixels, is scaled down to it to detect text (its lines are still read at "
            "full size). 4096 takes a 4K screen as it is; RapidOCR's own 2000 is cheaper and misses small text."
        ),
    )
    caption_backend: Literal["none", "vlm"] = Field(
        "none",
        description=(
            '"vlm": the [llm] endpoint captions the frames (they are sent to it); "none": no captions.'
        ),
    )
