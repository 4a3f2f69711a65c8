"""The text embedders' ONNX Runtime path: the same vectors as torch, chosen for float32 on the CPU,
exported once and checked."""

import json

import numpy as np
import pytest

from embeddings import onnx_text
from embeddings.minilm import MiniLMText
from embeddings.mpnet import MPNetText

TEXTS = [
    "Where does Diane live?",
    "Diane lives in New Jersey.",
    "ok",
    "The meeting moved to Thursday because the projector in room 4 was broken again. " * 8,
]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    return tmp_path / "models" / "onnx" / MiniLMText.name


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_onnx_runtime_gives_torchs_vectors_for_texts_of_every_length(cache):
    onnx, torch = MiniLMText(runtime="auto"), MiniLMText(runtime="torch")
    v, w = onnx.embed(TEXTS), torch.embed(TEXTS)
    assert (onnx.runtime, torch.runtime) == ("onnx", "torch")  # float32 on the CPU: ONNX Runtime
    assert v.shape == (4, 384) and v.dtype == np.float32
    assert np.abs(v - w).max() < 1e-4
    assert np.abs(onnx.embed(TEXTS[:1]) - w[:1]).max() < 1e-4  # alone as in a batch
    assert (cache / "model.onnx").is_file() and not list(cache.glob(".build-*"))


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_the_export_is_made_once_and_again_when_the_weights_change(cache):
    MiniLMText().embed(["first"])
    mtime = (cache / "model.onnx").stat().st_mtime_ns
    MiniLMText().embed(["second"])  # a new process-worth of embedder: read from the cache
    assert (cache / "model.onnx").stat().st_mtime_ns == mtime
    (cache / "source").write_text("0-0")  # other weights than the cached export's
    MiniLMText().embed(["third"])
    assert (cache / "model.onnx").stat().st_mtime_ns != mtime and not list(cache.glob(".build-*"))


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_an_export_that_differs_from_torch_is_refused_and_leaves_nothing(cache, monkeypatch):
    monkeypatch.setattr(onnx_text, "CHECK_TOLERANCE", -1.0)
    with pytest.raises(RuntimeError, match='text_runtime = "torch"'):
        MiniLMText().embed(["x"])
    assert not list(cache.glob("*.onnx")) and not list(cache.glob(".build-*"))


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_the_runtime_follows_the_device_and_dtype():
    import pydantic

    from mnemo.config import GraphConfig
    from mnemo.wiring import text_embedder

    bf16 = text_embedder(
        GraphConfig(text_embedder="minilm", text_device="cpu", text_dtype="bfloat16")
    )
    bf16.embed(["x"])
    assert bf16.runtime == "torch"  # ONNX Runtime here runs float32 only
    with pytest.raises(ValueError, match="runs float32 on the CPU"):
        MiniLMText(dtype="bfloat16", runtime="onnx").embed(["x"])
    with pytest.raises(ValueError, match="choose one of auto, torch, onnx"):
        MiniLMText(runtime="tensorrt")
    with pytest.raises(pydantic.ValidationError, match="text_runtime"):
        GraphConfig(text_runtime="tensorrt")
    assert (
        text_embedder(GraphConfig(text_embedder="minilm", text_runtime="torch")).runtime == "torch"
    )


def test_only_mean_pooled_models_are_run_by_the_onnx_encoder(tmp_path):
    model = MiniLMText().model_dir()
    assert onnx_text.pooling_is_mean(model)
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text((model / "modules.json").read_text())
    pooling = json.loads((model / "1_Pooling" / "config.json").read_text())
    (tmp_path / "1_Pooling" / "config.json").write_text(
        json.dumps(pooling | {"pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True})
    )
    assert not onnx_text.pooling_is_mean(tmp_path)
    assert not onnx_text.pooling_is_mean(tmp_path / "missing")


@pytest.mark.slow  # needs an extra beyond [test,s3]
@pytest.mark.parametrize("embedder", [MiniLMText, MPNetText], ids=["minilm", "mpnet"])
def test_the_onnx_path_tokenizes_as_transformers_does(embedder):
    """The ONNX path reads tokenizer.json with the tokenizers library (transformers would load
    torch): the same ids and masks as the model's own tokenizer (BERT's for MiniLM, MPNet's for
    mpnet), padded and truncated alike. (Also measured on 12,659 real texts, LoCoMo's dev turns,
    questions and captions and M3-Bench's web questions and answers: the same ids for both.)"""
    from transformers import AutoTokenizer

    texts = [
        *TEXTS,
        "",
        "  ",
        "ÉCOLE Straße naïve 😀 日本語",
        "Hello\tworld\n\nnew",
        "room 4 " * 300,
        "don't STOP-me",
    ]
    model = embedder(device="cpu", dtype="float32", runtime="onnx")
    model.embed(["load"])
    encoder, hf = model._encoder, AutoTokenizer.from_pretrained(str(model.model_dir()))
    want = hf(
        texts,
        padding=True,
        truncation=True,
        max_length=encoder_max_length(model),
        return_tensors="np",
    )
    ids, mask = encoder.tokens(texts)
    assert np.array_equal(ids, want["input_ids"]) and np.array_equal(mask, want["attention_mask"])
    assert encoder.lengths(texts) == [int(n) for n in want["attention_mask"].sum(axis=1)]
    assert max(encoder.lengths(texts)) == encoder_max_length(model)  # the long one is cut


def encoder_max_length(model) -> int:
    return json.loads((model.model_dir() / "sentence_bert_config.json").read_text())[
        "max_seq_length"
    ]


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_a_lean_embedder_gives_the_same_vectors_in_smaller_batches(cache):
    """The capture watcher's embedder (batches of at most 512 tokens, weights not prepacked, its
    matrices stored in float16) writes vectors that every other command reads and queries with."""
    import onnx

    from embeddings.onnx_text import EXTERNAL_DATA, mapped_model
    from embeddings.sentence_transformer import LEAN_BATCH_TOKENS

    texts = TEXTS * 20  # more tokens than one lean batch holds
    lean, full = MiniLMText(runtime="onnx", lean=True), MiniLMText(runtime="onnx")
    assert lean.max_batch_tokens == LEAN_BATCH_TOKENS < full.max_batch_tokens
    v, w = lean.embed(texts), full.embed(texts)
    # float16 matrices move a vector by 1.4e-4 at most here (mpnet: 9.4e-5), the way it points
    # not at all that a search could tell
    assert v.shape == w.shape and np.abs(v - w).max() < 5e-4
    assert (v * w).sum(axis=1).min() > 0.99999
    # its weights are mapped from a file of their own, and let go after each use
    assert lean._encoder is None and full._encoder is not None
    mapped = mapped_model(lean.name, lean.model_dir())
    assert mapped.with_name(EXTERNAL_DATA).stat().st_size > 10 * mapped.stat().st_size
    graph = onnx.load(mapped, load_external_data=False).graph
    halves = [t for t in graph.initializer if t.data_type == onnx.TensorProto.FLOAT16]
    assert len(halves) == 6 * 6  # six layers' q, k, v, o, intermediate and output matrices
    assert np.abs(lean.embed(texts[:3]) - w[:3]).max() < 5e-4  # opened again


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_a_session_on_half_matrices_does_not_cast_them_all_at_load(cache):
    """Constant folding would cast every float16 matrix to float32 once, when the session opens,
    and keep the copies: the memory halving them saves, and more, spent again."""
    import gc

    from embeddings.onnx_text import mapped_model
    from perception.malloc import give_back_freed_memory
    from perception.onnx_models import cpu_session

    lean = MiniLMText(runtime="onnx", lean=True)
    mapped = mapped_model(lean.name, lean.model_dir())
    gc.collect()
    give_back_freed_memory()  # building the graph freed more than the copies would need

    def anonymous_mb() -> float:
        status = open("/proc/self/status").read().split("\n")
        return next(int(line.split()[1]) for line in status if line.startswith("RssAnon:")) / 1024

    before = anonymous_mb()
    session = cpu_session(mapped, prepack=False, cast_weights=True)
    grown = anonymous_mb() - before
    assert session.get_inputs()[0].name == "input_ids"
    # MiniLM's matrices are 42 MB in float32; cast at load, they would all be held here
    assert grown < 15, f"{grown:.0f} MB held when the session opened"


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_a_mapped_model_whose_weights_file_is_gone_or_cut_short_is_built_again(cache):
    """The graph alone would load and fail on its missing weights, in every clip the watcher
    embeds; the cache keeps the weights file's size and builds the pair again."""
    from embeddings.onnx_text import EXTERNAL_DATA, mapped_model

    lean = MiniLMText(runtime="onnx", lean=True)
    want = lean.embed(TEXTS)
    data = mapped_model(lean.name, lean.model_dir()).with_name(EXTERNAL_DATA)
    size = data.stat().st_size
    data.unlink()
    assert np.abs(lean.embed(TEXTS) - want).max() < 1e-6 and data.stat().st_size == size
    with open(data, "r+b") as f:
        f.truncate(size // 2)
    assert np.abs(lean.embed(TEXTS) - want).max() < 1e-6 and data.stat().st_size == size


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_a_lean_embedder_runs_its_graph_in_parts_holding_a_part_of_the_weights_each(cache, caplog):
    """One run of the whole mapped graph touches every layer's matrices, and all are resident at
    once (mpnet: 170 MB, the capture watcher's peak); in parts, a run holds one part's at a time,
    and the vectors are the whole graph's to the bit."""
    import onnx

    from embeddings import onnx_parts
    from embeddings.onnx_parts import PARTS, PartsEncoder, mapped_parts
    from embeddings.onnx_text import OnnxEncoder, mapped_model

    texts = TEXTS * 20  # several lean batches: each part runs them all before the next opens
    lean = MiniLMText(runtime="onnx", lean=True)
    v = lean.embed(texts)
    model_dir = lean.model_dir()
    max_length = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
    mapped = mapped_model(lean.name, model_dir)
    parts = mapped_parts(lean.name, mapped, model_dir, max_length)
    assert len(parts) == PARTS
    whole = OnnxEncoder(mapped, model_dir, max_length, prepack=False, cast_weights=True)
    batches = [texts[i : i + 7] for i in range(0, len(texts), 7)]
    cut = PartsEncoder(parts, model_dir, max_length).encode_batches(batches)
    assert all(np.array_equal(c, whole.encode(b)) for c, b in zip(cut, batches))
    assert np.abs(v - np.concatenate(cut)).max() < 1e-6  # batched by length, padded otherwise
    # MiniLM's six layers in four parts: two, two, one and one layers' matrices each
    halves = [
        sum(
            t.data_type == onnx.TensorProto.FLOAT16
            for t in onnx.load(p, load_external_data=False).graph.initializer
        )
        for p in parts
    ]
    assert halves == [12, 12, 6, 6]

    # a part whose weights were changed after it was checked is caught, and the whole graph runs
    data = parts[1].with_name(onnx_parts.EXTERNAL_DATA)
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 4096] = bytes(4096)
    data.write_bytes(bytes(raw))
    onnx_parts._known.clear()
    assert mapped_parts(lean.name, mapped, lean.model_dir(), max_length) == []
    assert "run whole" in caplog.text
    assert np.abs(lean.embed(texts[:4]) - v[:4]).max() < 1e-6
    assert isinstance(lean._load(), OnnxEncoder)
