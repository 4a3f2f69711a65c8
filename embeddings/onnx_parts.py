"""A lean text encoder's graph cut between its layers into parts, each run in a session opened for
its run and closed after it (``PartsEncoder``), so that a run holds one part's weights, not all of
them.

A mapped model's session (``onnx_text.mapped_model``) holds only the weight pages it has touched,
but one run touches every layer's: all of mpnet's float16 matrices, 170 MB, are resident at once
while a clip's texts are embedded, on top of everything else an all-day watcher holds (the hour of
``mnemo bench capture`` peaked there). Cut in ``PARTS``, a run holds about a quarter of them. The
parts compute exactly what the whole graph does, op for op (checked at build: ``build_part``), so
the vectors are the same bit for bit.

A part's inputs are the tensors it reads that an earlier part made (the hidden states, and what the
first part made of the attention mask and the positions); its outputs, those a later part reads.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np

from embeddings.onnx_text import EXTERNAL_DATA
from perception.onnx_models import cached_export, cpu_session

log = logging.getLogger(__name__)

PARTS = 4  # a lean encoder's graph in this many parts (mpnet: 3 of its 12 layers each)
PARTS_VERSION = "parts-2"  # in each part's cache key
OUTPUT = "last_hidden_state"
# a layer's last node: the layer norm after its feed-forward block (fused with the residual add);
# not its attention block's ("layer.0.attention.output.LayerNorm" in BERT)
LAYER_END = ("SkipLayerNormalization", re.compile(r"\blayer\.\d+\.output\.LayerNorm\."))


def layer_ends(graph) -> list[int]:
    """The index in ``graph.node`` of each encoder layer's last node, in order; [] when the graph is
    not a fused transformer's."""
    return [
        i
        for i, node in enumerate(graph.node)
        if node.op_type == LAYER_END[0] and any(LAYER_END[1].search(name) for name in node.input)
    ]


def cuts(graph, parts: int = PARTS) -> list[int]:
    """Where each part ends: node indices (exclusive) into ``graph.node``, the layers shared out as
    evenly as they go (mpnet's 12: 3 a part; MiniLM's 6: 2, 2, 1, 1), the last part ending at the
    graph's end; [] when the graph has fewer layers than ``parts``."""
    ends = layer_ends(graph)
    if parts < 2 or len(ends) < parts:
        return []
    bounds, done = [], 0
    for k in range(parts - 1):
        done += len(ends) // parts + (k < len(ends) % parts)
        bounds.append(ends[done - 1] + 1)
    return [*bounds, len(graph.node)]


def part_graph(model, k: int, parts: int = PARTS):
    """Part ``k`` of ``model`` (an ``onnx.ModelProto`` with its weights loaded) as a model of its own:
    the nodes between two cuts, the initializers they read, as inputs what earlier parts made (or
    the graph's own inputs), as outputs what later parts read (or the graph's own output)."""
    from onnx import TensorProto, helper

    graph = model.graph
    bounds = cuts(graph, parts)
    if not bounds:
        raise RuntimeError(f"the graph cannot be cut in {parts} parts at its layers")
    start = bounds[k - 1] if k else 0
    nodes = list(graph.node[start : bounds[k]])
    made_here = {o for n in nodes for o in n.output}
    made_before = {o for n in graph.node[:start] for o in n.output}
    read_later = {i for n in graph.node[bounds[k] :] for i in n.input}
    weights = {t.name: t for t in graph.initializer}
    graph_inputs = {i.name: i for i in graph.input}
    read = [i for n in nodes for i in n.input if i]
    inputs, seen = [], set()
    for name in read:
        if name in seen or name in made_here or name in weights:
            continue
        seen.add(name)
        if name in graph_inputs:
            inputs.append(graph_inputs[name])
        elif name in made_before:
            # what the parts hand on is float32: hidden states, the mask's and the positions' biases
            inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        else:
            raise RuntimeError(f"part {k} reads {name!r}, which nothing before it makes")
    outputs = [
        helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
        for name in sorted(made_here & read_later)
    ]
    if k == len(bounds) - 1:
        outputs = [o for o in graph.output if o.name in made_here]
    part = helper.make_graph(
        nodes,
        f"{graph.name}-part{k}",
        inputs,
        outputs,
        [weights[name] for name in dict.fromkeys(read) if name in weights],
    )
    return helper.make_model(part, opset_imports=model.opset_import, ir_version=model.ir_version)


def build_part(mapped: str, k: str, parts: str, path: str) -> None:
    """Write part ``k`` of the mapped model at ``mapped`` to ``path``, its weights beside it
    (``EXTERNAL_DATA``), float16 matrices as they were (``mapped_parts`` checks the parts)."""
    import onnx

    data = Path(path).with_name(EXTERNAL_DATA)
    data.unlink(missing_ok=True)  # onnx appends to an existing file
    part = part_graph(onnx.load(mapped), int(k), int(parts))
    onnx.save_model(
        part, path, save_as_external_data=True, location=EXTERNAL_DATA, size_threshold=1024
    )


def check_parts(whole: Path, paths: list[Path], model_dir: Path, max_length: int) -> None:
    """Raise a RuntimeError unless the parts at ``paths`` give the vectors the whole mapped graph
    does, to the bit, for ``onnx_text.CHECK_TEXTS``."""
    from embeddings.onnx_text import CHECK_TEXTS, OnnxEncoder

    texts = list(CHECK_TEXTS)
    one = OnnxEncoder(whole, model_dir, max_length, prepack=False, cast_weights=True).encode(texts)
    cut = PartsEncoder(paths, model_dir, max_length).encode(texts)
    if not np.array_equal(one, cut):
        raise RuntimeError(
            f"the parts of {whole.parent.name} moved its vectors by "
            f"{float(np.abs(one - cut).max()):.2e}"
        )


# a mapped model's files as they are (paths, sizes, times) -> its checked parts, [] where it is not
# to be cut: known for the life of the process (a lean embedder asks for its graph at every use)
_known: dict[str, list[Path]] = {}


def _stamp(graphs: list[Path]) -> str:
    files = [f for g in graphs for f in (g, g.with_name(EXTERNAL_DATA))]
    return " ".join(f"{f}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files)


def mapped_parts(name: str, mapped: Path, model_dir: Path, max_length: int) -> list[Path]:
    """The mapped model ``mapped`` (of model ``name``) cut in ``PARTS``, each part built once and
    cached beside the others (``perception.onnx_models.cached_export``) and checked against the
    whole once for these files (``check_parts``; a ``checked`` stamp beside the last part); [] where it cannot be cut (not a fused transformer of at
    least ``PARTS`` layers) or its parts are not exact, said once in the log."""
    whole = _stamp([mapped])
    if _known.get(whole) == []:
        return []
    try:
        paths = [
            cached_export(
                f"{name}-part{k}of{PARTS}",
                mapped,
                build_part,
                str(mapped),
                str(k),
                str(PARTS),
                version=PARTS_VERSION,
                beside=(EXTERNAL_DATA,),
            )
            for k in range(PARTS)
        ]
        stamp = whole + " " + _stamp(paths)
        if stamp not in _known:
            # checked once for these files, on this machine: the check opens the whole graph
            checked = paths[-1].with_name("checked")
            if not (checked.is_file() and checked.read_text() == stamp):
                check_parts(mapped, paths, model_dir, max_length)
                checked.write_text(stamp)
            _known[stamp] = paths
        return _known[stamp]
    except RuntimeError as e:
        log.warning("%s's graph is run whole (%s)", name, e)
        _known[whole] = []
        return []


class PartsEncoder:
    """``onnx_text.OnnxEncoder``'s two calls over a graph in parts: each part's session is opened
    for its run over every batch and closed after it, so its weight pages go back before the next
    part's are read."""

    def __init__(self, parts: list[Path], model_dir: Path, max_length: int) -> None:
        from embeddings.onnx_text import Tokens

        self.parts = parts
        self.tokens = Tokens(model_dir, max_length)

    def lengths(self, texts: list[str]) -> list[int]:
        return self.tokens.lengths(texts)

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.encode_batches([texts])[0]

    def encode_batches(self, batches: list[list[str]]) -> list[np.ndarray]:
        """Each batch's vectors; every batch goes through a part before the next part is opened."""
        from embeddings.onnx_text import mean_pooled

        masks, feeds = [], []
        for texts in batches:
            ids, mask = self.tokens(texts)
            masks.append(mask)
            feeds.append({"input_ids": ids, "attention_mask": mask})
        for path in self.parts:
            session = cpu_session(path, prepack=False, cast_weights=True)
            wanted = [i.name for i in session.get_inputs()]
            names = [o.name for o in session.get_outputs()]
            for feed in feeds:
                feed.update(zip(names, session.run(names, {n: feed[n] for n in wanted})))
            del session  # its mapped weights go back
        return [mean_pooled(feed[OUTPUT], mask) for feed, mask in zip(feeds, masks)]
