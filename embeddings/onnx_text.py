"""A mean-pooled sentence-transformers encoder run by ONNX Runtime on the CPU.

For one short query, torch spends most of its time outside the matrix products; ONNX Runtime
gives the same vectors (checked against ``CHECK_TOLERANCE``) in less time. The ONNX graph
is built from the packaged weight files without torch (``text_graph.py``) once per machine, fused
by ONNX Runtime's transformer optimizer, and cached under ``$MNEMO_CACHE/models/onnx/<name>/``.

(Not int8: dynamic quantisation of mpnet, in torch or ONNX Runtime, moves query vectors far
from float32's.)
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np

from embeddings.text_graph import BUILDER, build_text_graph, read_shape
from perception.onnx_models import cached_export, cpu_session

CHECK_TEXTS = (
    "Where is Sheila from?",
    "Diane said she moved to New Jersey after the summer of 2019.",
    "ok",
)
CHECK_TOLERANCE = (
    1e-3  # largest difference allowed between vectors: torch's and the graph's (in tests), the
)
# graph's before and after fusion (at build)


def pooling_is_mean(model_dir: Path) -> bool:
    """Whether the sentence-transformers model in ``model_dir`` is a transformer followed by mean
    pooling (and optionally normalisation): the only layout this encoder reproduces."""
    try:
        modules = json.loads((model_dir / "modules.json").read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    except (OSError, ValueError, KeyError):
        return False
    modes = {k for k, v in pooling.items() if k.startswith("pooling_mode_") and v}
    return (
        kinds[:2] == ["Transformer", "Pooling"]
        and set(kinds[2:]) <= {"Normalize"}
        and modes == {"pooling_mode_mean_tokens"}
    )


MAPPED = "mapped-2"  # in mapped_model's cache key: 2, its matrices in float16
EXTERNAL_DATA = "model.onnx.data"  # a mapped model's weights, beside its graph
HALF_MIN = 1024  # a matrix of fewer numbers is left in float32


def exported_model(name: str, model_dir: Path) -> Path:
    """The ONNX graph of ``model_dir``'s transformer, built once from its weight files without torch
    (``text_graph.py``), fused, and cached (``perception.onnx_models``)."""
    return cached_export(
        name,
        model_dir / "model.safetensors",
        build_text,
        str(model_dir),
        str(CHECK_TOLERANCE),
        version=BUILDER,
    )


def mapped_model(name: str, model_dir: Path) -> Path:
    """``exported_model``'s graph with its weights in a file of their own beside it
    (``model.onnx.data``), which ONNX Runtime maps instead of reading into memory: a session opens
    in a tenth of the time, holds only the weight pages it has touched, and gives them all back
    when it is closed (a lean embedder closes it after each use). Its matrices are stored in
    float16 and cast to float32 where they are read (``half_matrices``): half the pages to map. Run
    it in a session with ``cast_weights``."""
    inline = exported_model(name, model_dir)
    return cached_export(
        f"{name}-mapped",
        inline,
        _with_weights_apart,
        str(inline),
        version=MAPPED,
        beside=(EXTERNAL_DATA,),
    )


def _with_weights_apart(inline: str, path: str) -> None:
    import onnx

    data = Path(path).with_name(EXTERNAL_DATA)
    data.unlink(missing_ok=True)  # onnx appends to an existing file
    model = onnx.load(inline)
    half_matrices(model.graph)
    onnx.save_model(
        model, path, save_as_external_data=True, location=EXTERNAL_DATA, size_threshold=1024
    )


def half_matrices(graph) -> int:
    """Store each float32 initializer that only MatMuls read (the linear layers' matrices, 340 of
    mpnet's 436 MB) in float16, with a Cast back to float32 just before its first reader; the
    number of matrices halved. The embedding tables stay float32: a lookup touches a few rows. The
    products are still float32, and the vectors within 5e-4 of float32's (``tests/
    test_text_runtime.py``; measured in docs/benchmarks.md)."""
    from onnx import TensorProto, helper, numpy_helper

    readers: dict[str, set[str]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, set()).add(node.op_type)
    casts = {}
    for tensor in graph.initializer:
        if (
            tensor.data_type != TensorProto.FLOAT
            or readers.get(tensor.name) != {"MatMul"}
            or int(np.prod(tensor.dims)) < HALF_MIN
        ):
            continue
        name = tensor.name
        half = numpy_helper.to_array(tensor).astype(np.float16)
        tensor.CopyFrom(numpy_helper.from_array(half, f"{name}_f16"))
        casts[name] = helper.make_node(
            "Cast", [f"{name}_f16"], [name], name=f"{name}_cast", to=TensorProto.FLOAT
        )
    made, nodes = len(casts), []
    for node in graph.node:
        nodes += [casts.pop(name) for name in node.input if name in casts]
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    return made


def build_text(model_dir: str, tolerance: str, path: str) -> None:
    """Write the transformer's graph (fused) to ``path``; raise when ONNX Runtime's fusions move its
    vectors by more than ``tolerance``. (``tests/test_text_graph.py`` holds the graph to torch.)"""
    import onnx

    source = Path(model_dir)
    shape = read_shape(source)
    max_length = json.loads((source / "sentence_bert_config.json").read_text())["max_seq_length"]
    graph = build_text_graph(source)
    onnx.save(graph, path)  # a session reads it here before the fusions rewrite it in place
    plain = OnnxEncoder(Path(path), source, max_length).encode(list(CHECK_TEXTS))
    _fuse(graph, shape.heads, shape.hidden).save_model_to_file(path)
    fused = OnnxEncoder(Path(path), source, max_length).encode(list(CHECK_TEXTS))
    worst = float(np.abs(fused - plain).max())
    if worst > float(tolerance):
        raise RuntimeError(
            f"ONNX Runtime's fusions moved the vectors of {source.name} by {worst:.2e} (more than "
            f'{tolerance}); set [graph] text_runtime = "torch" (with mnemo[torch] installed) to run '
            "it in torch"
        )


def _fuse(graph, heads: int, hidden: int):
    """The graph (``onnx.ModelProto``) with ONNX Runtime's transformer fusions (GELU with its bias,
    residual add with layer norm, the embeddings' sum with their layer norm), as the optimizer's
    ``OnnxModel``: fused, a query runs faster. Only the fusion passes run (``opt_level=0``): the
    optimizer's first pass, a session's own rewrite, imports torch. Without its symbolic shape
    inference, which needs sympy: on mpnet's graph the fused graph is the same, node for node."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    options = FusionOptions("bert")
    options.enable_shape_inference = False
    # its warnings that the producer is not "pytorch" and that shapes are not inferred (its fusion
    # modules log under their bare names: the package puts its folder on sys.path)
    quiet = [
        logging.getLogger(name) for name in ("onnxruntime.transformers", "fusion_skiplayernorm")
    ]
    levels = [q.level for q in quiet]
    for q in quiet:
        q.setLevel(logging.ERROR)
    try:
        return optimizer.optimize_model(
            graph,
            model_type="bert",
            num_heads=heads,
            hidden_size=hidden,
            opt_level=0,
            optimization_options=options,
        )
    finally:
        for q, level in zip(quiet, levels):
            q.setLevel(level)


class Tokens:
    """A model's own tokenizer (``tokenizer.json``, read by the ``tokenizers`` library:
    transformers' tokenizers load torch): texts to padded ids and their attention mask."""

    def __init__(self, model_dir: Path, max_length: int) -> None:
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        pad = json.loads((model_dir / "tokenizer_config.json").read_text())["pad_token"]
        pad = pad if isinstance(pad, str) else pad["content"]
        self.tokenizer.enable_truncation(max_length)
        self.tokenizer.enable_padding(pad_id=self.tokenizer.token_to_id(pad), pad_token=pad)

    def __call__(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        encodings = self.tokenizer.encode_batch(texts)
        return (
            np.array([e.ids for e in encodings], dtype=np.int64),
            np.array([e.attention_mask for e in encodings], dtype=np.int64),
        )

    def lengths(self, texts: list[str]) -> list[int]:
        return [int(n) for n in self(texts)[1].sum(axis=1)] if texts else []


def mean_pooled(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of each text's token states, its padding left out."""
    weights = mask[..., None].astype(np.float32)
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
    return (pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)).astype(
        np.float32
    )


class OnnxEncoder:
    """Texts to L2-normalised mean-pooled float32 vectors with an exported transformer."""

    def __init__(
        self,
        path: Path,
        model_dir: Path,
        max_length: int,
        prepack: bool = True,
        cast_weights: bool = False,
    ) -> None:
        """``cast_weights``: ``path`` is a ``mapped_model``, its matrices stored in float16."""
        self.session = cpu_session(path, prepack=prepack, cast_weights=cast_weights)
        self.tokens = Tokens(model_dir, max_length)

    def lengths(self, texts: list[str]) -> list[int]:
        return self.tokens.lengths(texts)

    def encode(self, texts: list[str]) -> np.ndarray:
        ids, mask = self.tokens(texts)
        hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
        return mean_pooled(hidden, mask)

    def encode_batches(self, batches: list[list[str]]) -> list[np.ndarray]:
        return [self.encode(texts) for texts in batches]


def token_lengths(tokenizer, texts: list[str], max_length: int) -> list[int]:
    """Each text's length in tokens as the model reads it (special tokens in, truncated)."""
    return [
        len(ids)
        for ids in tokenizer(
            texts, add_special_tokens=True, truncation=True, max_length=max_length
        )["input_ids"]
    ]
