"""The text embedders' ONNX graphs, built from the weight files without torch (embeddings/text_graph.py),
held to the sentence-transformers models in torch."""

import collections
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from embeddings import onnx_text, text_graph
from embeddings.minilm import MiniLMText
from embeddings.mpnet import packaged_mpnet_model

LONG = (
    "The meeting moved to Thursday because the projector in room 4 was broken again, and Diane said she "
    "would bring her own from home if nobody fixed it before the morning. "
)
TEXTS = [
    *onnx_text.CHECK_TEXTS,
    "",
    "ÉCOLE Straße naïve 😀 日本語",
    LONG,
    LONG * 3,
    LONG * 40,
]  # the last is cut at the model's longest input: MPNet's buckets at every distance


def model_dirs() -> dict[str, Path]:
    return {"minilm": MiniLMText().model_dir(), "mpnet": packaged_mpnet_model()}


@pytest.fixture(scope="module", params=["minilm", "mpnet"])
def built(request, tmp_path_factory):
    """(model_dir, the fused graph build_text wrote, the sentence-transformers model)."""
    from sentence_transformers import SentenceTransformer

    model_dir = model_dirs()[request.param]
    path = tmp_path_factory.mktemp(request.param) / "model.onnx"
    onnx_text.build_text(str(model_dir), str(onnx_text.CHECK_TOLERANCE), str(path))
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True).float().eval()
    return model_dir, path, model


def torch_vectors(model, texts: list[str]) -> np.ndarray:
    """sentence-transformers' vectors, the batch padded together, L2-normalised (the reference)."""
    import torch

    with torch.inference_mode():
        vecs = model.encode(
            texts, batch_size=len(texts), convert_to_tensor=True, show_progress_bar=False
        )
        return torch.nn.functional.normalize(vecs.float(), dim=-1).numpy()


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_the_built_graph_gives_torchs_vectors_alone_and_in_padded_batches(built):
    model_dir, path, model = built
    encoder = onnx_text.OnnxEncoder(path, model_dir, model.max_seq_length)
    assert (
        max(encoder.lengths(TEXTS)) == model.max_seq_length
    )  # the longest text fills the model's input
    batch = encoder.encode(TEXTS)  # padded to the longest
    want = torch_vectors(model, TEXTS)
    assert batch.shape == want.shape and batch.dtype == np.float32
    worst = float(np.abs(batch - want).max())
    alone = np.stack([encoder.encode([t])[0] for t in TEXTS])
    worst_alone = float(
        np.abs(alone - np.stack([torch_vectors(model, [t])[0] for t in TEXTS])).max()
    )
    print(
        f"{model.tokenizer.name_or_path}: largest difference from torch {worst:.2e} in a padded batch, {worst_alone:.2e} alone"
    )
    # far inside the export's tolerance (CHECK_TOLERANCE, 1e-3): 4e-7 measured, and MPNet with one
    # relative-position bucket wrong at long distances was 2e-4 off
    assert worst < 2e-5 and worst_alone < 2e-5


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_the_built_graph_gives_torchs_hidden_states_token_by_token(built):
    """Every real token's last hidden state, not only their mean: a wrong position or bucket for a
    few tokens would hide in the mean."""
    import torch

    model_dir, path, model = built
    encoder = onnx_text.OnnxEncoder(path, model_dir, model.max_seq_length)
    ids, mask = encoder.tokens(TEXTS)
    got = encoder.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
    with torch.inference_mode():
        want = (
            model[0]
            .auto_model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask))
            .last_hidden_state.numpy()
        )
    real = mask.astype(bool)
    worst = float(np.abs(got[real] - want[real]).max())
    print(f"{model.tokenizer.name_or_path}: largest hidden-state difference from torch {worst:.2e}")
    assert worst < onnx_text.CHECK_TOLERANCE


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_onnx_runtimes_fusions_fire_on_the_built_graph(built):
    import onnx

    model_dir, path, _ = built
    layers = json.loads((model_dir / "config.json").read_text())["num_hidden_layers"]
    ops = collections.Counter(
        n.op_type for n in onnx.load(str(path), load_external_data=False).graph.node
    )
    assert ops["BiasGelu"] == layers and "Erf" not in ops  # each GELU fused with its bias
    assert ops["SkipLayerNormalization"] >= 2 * layers  # each residual add with its layer norm
    assert (
        ops["LayerNormalization"] + ops["EmbedLayerNormalization"] + ops["SkipLayerNormalization"]
        == 2 * layers + 1
    )


@pytest.mark.slow  # needs an extra beyond [test,s3]
def test_mpnets_relative_position_buckets_are_torchs_at_every_distance():
    import torch
    from transformers.models.mpnet.modeling_mpnet import MPNetEncoder

    furthest = (
        json.loads((model_dirs()["mpnet"] / "config.json").read_text())["max_position_embeddings"]
        - 1
    )
    relative = np.arange(-furthest, furthest + 1)
    want = MPNetEncoder.relative_position_bucket(torch.from_numpy(relative), num_buckets=32).numpy()
    got = text_graph.relative_position_buckets(relative, 32)
    # every bucket but 16 (a key before its query at distance 0) is reached
    assert np.array_equal(got, want) and set(got.tolist()) == set(range(32)) - {16}


def test_a_transformer_the_builder_does_not_write_is_refused_by_name(tmp_path):
    config = json.loads((model_dirs()["minilm"] / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(config | {"model_type": "roberta"}))
    with pytest.raises(ValueError, match='roberta transformer .* text_runtime = "torch"'):
        text_graph.read_shape(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps(config | {"hidden_act": "relu"}))
    with pytest.raises(ValueError, match="GELU"):
        text_graph.read_shape(tmp_path)


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_a_graph_cached_by_the_torch_export_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("MNEMO_CACHE", str(tmp_path))
    model_dir = model_dirs()["minilm"]
    graph = onnx_text.exported_model(MiniLMText.name, model_dir)
    marker, first = graph.parent / "source", graph.stat().st_mtime_ns
    assert (
        onnx_text.exported_model(MiniLMText.name, model_dir).stat().st_mtime_ns == first
    )  # cached
    stat = (model_dir / "model.safetensors").stat()
    marker.write_text(
        f"{stat.st_size}-{stat.st_mtime_ns}"
    )  # the old export's key: same weights, no builder
    onnx_text.exported_model(MiniLMText.name, model_dir)
    assert graph.stat().st_mtime_ns != first and text_graph.BUILDER in marker.read_text()


@pytest.mark.slow  # a real text model's ONNX graph built from its weights
def test_building_and_embedding_import_no_torch(tmp_path):
    code = textwrap.dedent("""
        import sys
        from embeddings.minilm import MiniLMText
        from perception.weights import cache_root
        text = MiniLMText(device="cpu", dtype="float32", runtime="onnx")
        vecs = text.embed(["Where is Sheila from?", "ok"])
        assert vecs.shape == (2, 384) and (cache_root() / "models/onnx" / text.name / "model.onnx").is_file()
        print(sorted(m for m in ("torch", "transformers", "sentence_transformers") if m in sys.modules))
    """)
    env = {
        "MNEMO_CACHE": str(tmp_path),
        "MNEMO_MODELS": os.environ["MNEMO_MODELS"],
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        "HF_HUB_OFFLINE": "1",
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"
