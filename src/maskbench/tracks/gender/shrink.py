"""Materialise a structured mask on a BERT encoder: the heads and FFN neurons a mask took out are really removed,
so that the smaller dense encoder computes the same ``last_hidden_state`` (eval mode, up to float rounding) and
parameter counts and CPU latency measure what the pruning saves.

Input: an encoder whose mask is already *baked into the weights* (exact zeros; ``evaluation.load_run`` on a
``.mask`` file gives one). Dead units are read off the zeros, so a unit that happens to be zero in the pre-trained
model is removed as well — exact either way. An encoder still carrying mask parametrizations is refused. Which units
are removable and their removal live in maskbench/text/bert_units.py (shared with the Hugging Face export); what
follows is why.

What a head contributes. Head h of a layer (head size d, columns c_h = [h d, (h + 1) d)) adds to the attention
output dense O (before its bias)

    O[:, c_h] (softmax(q_h k_h^T / sqrt(d) + mask) (X V[c_h]^T + b_v[c_h]))
      = O[:, c_h] (A_h X V[c_h]^T) + O[:, c_h] b_v[c_h]         (every softmax row sums to 1)

so it is removed, exactly, when

* its O columns are all zero: it contributes nothing, whatever Q, K and V do;
* its V rows are all zero: it contributes the constant O[:, c_h] b_v[c_h], folded into O's bias (zero when the
  engine zeroed the bias of the empty rows, ``EmptyRowBias`` / ``zero_bias_of_empty_rows``).

A removed head takes its Q, K and V rows and its O columns with it. transformers 5 no longer has
``PreTrainedModel.prune_heads``; the slicing is done here, and the self-attention's ``num_attention_heads`` and
``all_head_size`` follow (its forward infers the head count from the width of Q, K and V, the head size is the
config's hidden / heads and does not change). A layer that loses *every* head cannot keep a zero-head
``BertSelfAttention`` (its reshape to (..., -1, d) of an empty tensor is ambiguous): its self-attention is replaced
by ``NoSelfAttention``, which returns a zero-width context, and O becomes a (hidden x 0) Linear whose output is its
bias — the folded constants. Exact, and the layer pays nothing for attention.

What an FFN neuron contributes. Neuron j (row j of ``intermediate.dense`` W1, b1; column j of ``output.dense``
W2) adds W2[:, j] act(W1[j] x + b1[j]); it is removed, exactly, when

* W2[:, j] = 0: it contributes nothing;
* W1[j] = 0: it contributes the constant W2[:, j] act(b1[j]), folded into W2's bias (0 for GELU when b1[j] = 0).

A layer may lose every neuron: W1 becomes (0 x hidden), W2 (hidden x 0), the FFN outputs W2's bias.

Units that are only partly masked (blocks smaller than a head, a neuron with some weights left) stay, their zeros
inside the kept matrices. Constants are folded in float64 and cast back to the bias's dtype.

Saving. The shrunk encoder's layers differ in width, which a ``BertConfig`` cannot express; ``save_shrunk`` writes
the original config (its head size stays valid), the weights as safetensors and ``shrunk_layers.json`` (per layer
the kept heads by original index and the FFN width); ``load_shrunk`` checks the weights against their checksum
(maskbench/checkpoint_integrity.py), rebuilds the same modules and loads the weights strictly, bit for bit.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench import runtime
from maskbench.checkpoint_integrity import seal_safetensors, verify_safetensors
from maskbench.masking.savings import forward_latency
from maskbench.text.bert_units import (
    columns,
    dead_heads,
    dead_neurons,
    folded_bias,
    head_index,
    linear,
    remove_neurons,
    rows,
)

WEIGHTS_FILE = "model.safetensors"
LAYERS_FILE = "shrunk_layers.json"


@dataclass
class LayerShrink:
    """What one layer lost. ``heads_folded`` / ``ffn_folded``: the removed units whose constant output was not zero
    and was folded into the next bias."""

    layer: int
    heads: int
    heads_removed: list[int] = field(default_factory=list)
    heads_folded: list[int] = field(default_factory=list)
    attention_removed: bool = False
    ffn_neurons: int = 0
    ffn_removed: list[int] = field(default_factory=list)
    ffn_folded: list[int] = field(default_factory=list)

    @property
    def heads_kept(self) -> list[int]:
        return [h for h in range(self.heads) if h not in set(self.heads_removed)]

    @property
    def ffn_width(self) -> int:
        return self.ffn_neurons - len(self.ffn_removed)


class NoSelfAttention(nn.Module):
    """The self-attention of a layer whose heads are all removed: a zero-width context (batch, length, 0), which the
    (hidden x 0) attention-output dense turns into its bias."""

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> tuple[torch.Tensor, None]:
        return hidden_states.new_zeros(*hidden_states.shape[:-1], 0), None


# ------------------------------------------------------------------------------------------------ removing
def _shrink_attention(attention, head_size: int, report: LayerShrink) -> None:
    removed, folded = dead_heads(attention, head_size)
    report.heads_removed, report.heads_folded = removed, folded
    out = attention.output.dense
    bias = out.bias
    if folded and bias is not None:
        index = head_index(folded, head_size)
        bias = folded_bias(out, index, attention.self.value.bias.detach()[index])
    if not removed:
        return
    kept = report.heads_kept
    index = head_index(kept, head_size)
    attention.output.dense = columns(out, index, bias)
    if not kept:
        attention.self = NoSelfAttention()
        report.attention_removed = True
        return
    self_attention = attention.self
    for name in ("query", "key", "value"):
        setattr(self_attention, name, rows(getattr(self_attention, name), index))
    self_attention.num_attention_heads = len(kept)
    self_attention.all_head_size = len(kept) * head_size


def _shrink_ffn(layer, report: LayerShrink) -> None:
    removed, folded = dead_neurons(layer.intermediate, layer.output)
    report.ffn_removed, report.ffn_folded = removed, folded
    remove_neurons(layer, removed, folded)


def _check_encoder(encoder) -> None:
    if not hasattr(encoder, "encoder") or not hasattr(encoder.encoder, "layer"):
        raise TypeError(f"shrink_encoder: expected a BertModel (with .encoder.layer), got {type(encoder).__name__}")
    if getattr(encoder.config, "add_cross_attention", False):
        raise ValueError("shrink_encoder: encoders with cross-attention are not supported")
    if any(parametrize.is_parametrized(m) for m in encoder.modules()):
        raise ValueError("shrink_encoder: the encoder still carries mask parametrizations; bake the mask into the "
                         "weights first (evaluation.load_run, or remove_parametrizations(keep_values=True))")


@torch.no_grad()
def shrink_encoder(encoder) -> tuple[nn.Module, list[dict[str, Any]]]:
    """A smaller copy of ``encoder`` (a BertModel whose mask is baked into its weights as exact zeros) with every
    constant-zero or constant head and FFN neuron removed (module docstring), in eval mode, and a per-layer report
    (``LayerShrink`` as dicts, unit indices as in the original layer). ``encoder`` is left untouched."""
    _check_encoder(encoder)
    small = copy.deepcopy(encoder).eval()
    head_size = small.config.hidden_size // small.config.num_attention_heads
    reports = []
    for i, layer in enumerate(small.encoder.layer):
        report = LayerShrink(i, heads=layer.attention.self.value.out_features // head_size,
                             ffn_neurons=layer.intermediate.dense.out_features)
        _shrink_attention(layer.attention, head_size, report)
        _shrink_ffn(layer, report)
        reports.append(report)
    small.shrunk_layers = [_widths(r) for r in reports]
    return small, [asdict(r) for r in reports]


def _widths(report: LayerShrink) -> dict[str, Any]:
    return {"heads_kept": report.heads_kept, "intermediate_size": report.ffn_width}


# ------------------------------------------------------------------------------------------------ save / load
def _empty(out_features: int, in_features: int, bias: bool) -> nn.Linear:
    return linear(torch.zeros(out_features, in_features), torch.zeros(out_features) if bias else None)


def _resize(model, shrunk_layers: list[dict[str, Any]]) -> None:
    """Give a freshly built BertModel the shrunk layer widths (weights are loaded afterwards)."""
    config = model.config
    hidden, head_size = config.hidden_size, config.hidden_size // config.num_attention_heads
    if len(shrunk_layers) != len(model.encoder.layer):
        raise ValueError(f"shrunk layers: {len(shrunk_layers)} recorded, the config has {len(model.encoder.layer)}")
    for layer, widths in zip(model.encoder.layer, shrunk_layers, strict=True):
        heads = len(widths["heads_kept"])
        attention = layer.attention
        if heads == 0:
            attention.self = NoSelfAttention()
        else:
            for name in ("query", "key", "value"):
                setattr(attention.self, name, _empty(heads * head_size, hidden, True))
            attention.self.num_attention_heads = heads
            attention.self.all_head_size = heads * head_size
        attention.output.dense = _empty(hidden, heads * head_size, True)
        width = int(widths["intermediate_size"])
        layer.intermediate.dense = _empty(width, hidden, True)
        layer.output.dense = _empty(hidden, width, True)


def save_shrunk(model, folder: str | Path) -> Path:
    """Write a ``shrink_encoder`` result to ``folder``: config.json (the original's), model.safetensors and
    shrunk_layers.json (per layer the kept heads, by original index, and the FFN width)."""
    from safetensors.torch import save_file

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save_pretrained(folder)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    with runtime.atomic_path(folder / WEIGHTS_FILE) as tmp:
        save_file(state, str(tmp), metadata={"format": "pt"})
        seal_safetensors(tmp)
    runtime.atomic_write_json(folder / LAYERS_FILE, {"layers": model.shrunk_layers})
    return folder


def load_shrunk(folder: str | Path):
    """The encoder ``save_shrunk`` wrote, bit for bit, in eval mode."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, AutoModel

    folder = Path(folder)
    for name in ("config.json", WEIGHTS_FILE, LAYERS_FILE):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name}: missing — is {folder} a save_shrunk folder?")
    verify_safetensors(folder / WEIGHTS_FILE)
    layers = json.loads((folder / LAYERS_FILE).read_text())["layers"]
    model = AutoModel.from_config(AutoConfig.from_pretrained(folder))
    _resize(model, layers)
    model.load_state_dict(load_file(str(folder / WEIGHTS_FILE)), strict=True)
    model.shrunk_layers = layers
    return model.eval()


# ------------------------------------------------------------------------------------------------ measuring
def encoder_latency(model: nn.Module, batch: dict[str, torch.Tensor], repeats: int = 20, warmup: int = 3) -> float:
    """Median wall-clock seconds of one eval-mode forward pass of ``batch`` (input_ids, attention_mask) on the CPU."""
    return forward_latency(model, lambda encoder: encoder(**batch), repeats, warmup)
