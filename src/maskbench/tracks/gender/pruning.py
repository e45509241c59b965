"""Paper B's pruning granularities as engine plans, and what its figures read off a mask.

* ``block`` b: b x b blocks of Q, K, V and the attention output; FFN neurons (rows of ``intermediate.dense``,
  columns of ``output.dense``) — nn_pruning's ``sigmoied_threshold`` with square blocks and ``1d_alt`` on the
  dense layers. nn_pruning shares one score per FFN neuron between the two matrices; here each matrix has its
  own, and a neuron is gone when either drops it (its row's bias is zeroed with it, so it outputs nothing).
* ``head`` (size h = hidden / heads): one score per head of Q, K and V (an h x hidden block of rows) and of the
  attention output (a hidden x h block of columns), FFN neurons as above (paper B's 64 x 768 blocks on BERT-base).

Which matrices a head run prunes (``head_matrices``): ours all of Q, K, V, the attention output and the FFN
neurons; paper B's text (section 3.1, appendix "On Attention Head Pruning") the value matrices only; its code's
head experiment (``debias_head_pruning_frozen_values_only``) the values and the attention output (Q and K scores
frozen at +420, FFN scores frozen at 0). Every matrix is masked all the same; the scores of the others never train.

A head counts as pruned when its rows of the value matrix are all masked: its attention output is then a
weighted mean of zero vectors (plus V's bias, which ``EmptyRowBias`` zeroes with the rows), so whatever Q and K
do, the head contributes nothing — paper B's appendix reads head pruning off V for this reason.
"""

from __future__ import annotations

import re

import numpy as np

GRANULARITIES = ("block", "head")
# the matrices a head run may prune, and the engine's module kinds of each
HEAD_MATRICES = ("query", "key", "value", "attention_output", "ffn")
_HEAD_MATRIX_KINDS = {"query": ("query",), "key": ("key",), "value": ("value",),
                      "attention_output": ("attention_output",), "ffn": ("ffn_in", "ffn_out")}
_LAYER = re.compile(r"layer\.(\d+)\.")


def granularity_plan(granularity: str, block: int | None = None, head_size: int | None = None) -> dict:
    """The engine's per-kind granularity plan (``masking.engine.attach``)."""
    if granularity == "block":
        if not block or block < 1:
            raise ValueError(f"granularity 'block' needs a positive block size, got {block!r}")
        square = [int(block), int(block)]
        plan = {"query": square, "key": square, "value": square, "attention_output": square}
    elif granularity == "head":
        if not head_size or head_size < 1:
            raise ValueError(f"granularity 'head' needs the model's head size, got {head_size!r}")
        rows = {"head": int(head_size)}
        plan = {"query": rows, "key": rows, "value": rows,
                "attention_output": {"head": int(head_size), "axis": "column"}}
    else:
        raise ValueError(f"granularity {granularity!r} is unknown; choose one of {GRANULARITIES}")
    return {**plan, "ffn_in": "row", "ffn_out": "column"}


def frozen_kinds(head_matrices) -> set[str]:
    """The engine's module kinds whose scores a head run leaves at 0: those of the matrices not in
    ``head_matrices``."""
    unknown = [m for m in head_matrices if m not in HEAD_MATRICES]
    if unknown:
        raise ValueError(f"head_matrices: {unknown[0]!r} is unknown; choose from {list(HEAD_MATRICES)}")
    return {kind for matrix, kinds in _HEAD_MATRIX_KINDS.items() if matrix not in head_matrices for kind in kinds}


def layer_of(name: str) -> int:
    match = _LAYER.search(name)
    if match is None:
        raise ValueError(f"module {name!r} has no layer index")
    return int(match.group(1))


def heads_pruned(masks: dict[str, np.ndarray], head_size: int) -> np.ndarray:
    """Bool (layers, heads): True where the head's rows of the value matrix are all masked."""
    values = {layer_of(n): m for n, m in masks.items() if n.endswith("attention.self.value")}
    if not values:
        raise ValueError("heads_pruned: the masks hold no value matrix")
    layers = max(values) + 1
    heads = next(iter(values.values())).shape[0] // head_size
    grid = np.zeros((layers, heads), dtype=bool)
    for layer, mask in values.items():
        grid[layer] = ~mask.reshape(heads, head_size, -1).any(axis=(1, 2))
    return grid


def heads_pruned_nn_pruning(masks: dict[str, np.ndarray], head_size: int) -> np.ndarray:
    """Bool (layers, heads): the heads paper B's ``compile_model`` removes — nn_pruning's ``BertHeadsPruner``
    (``inference_model_patcher.py::get_pruned_heads``): a head goes when *any* of its Q, K or V row blocks is all
    zero (a matrix without a mask counts as kept), except that a layer whose heads would all go keeps head 0
    ("AT LEAST KEEP ONE HEAD")."""
    parts: dict[int, list[np.ndarray]] = {}
    for name, mask in masks.items():
        if re.search(r"attention\.self\.(query|key|value)$", name):
            parts.setdefault(layer_of(name), []).append(mask)
    if not parts:
        raise ValueError("heads_pruned_nn_pruning: the masks hold no query, key or value matrix")
    layers = max(parts) + 1
    heads = next(iter(parts.values()))[0].shape[0] // head_size
    grid = np.zeros((layers, heads), dtype=bool)
    for layer, matrices in parts.items():
        alive = np.stack([m.reshape(heads, head_size, -1).any(axis=(1, 2)) for m in matrices]).all(axis=0)
        gone = ~alive
        if gone.all():
            gone[0] = False
        grid[layer] = gone
    return grid


def layer_density(masks: dict[str, np.ndarray]) -> list[dict]:
    """Long form: one row per (layer, part) with the kept fraction; parts are attention (Q, K, V, output) and
    ffn (both FFN matrices)."""
    kept: dict[tuple[int, str], list[int]] = {}
    for name, mask in masks.items():
        part = "attention" if ".attention." in name else "ffn"
        entry = kept.setdefault((layer_of(name), part), [0, 0])
        entry[0] += int(mask.sum())
        entry[1] += int(mask.size)
    return [{"layer": layer, "part": part, "density": k / n} for (layer, part), (k, n) in sorted(kept.items())]
