"""Whole attention heads and FFN neurons of a BERT-style layer whose mask is baked into the weights (exact zeros):
which of them compute nothing or a constant, and their exact removal into smaller dense matrices.

What a head contributes. Head h of a layer (head size d, columns c_h = [h d, (h + 1) d)) adds to the attention
output dense O (before its bias)

    O[:, c_h] (softmax(q_h k_h^T / sqrt(d) + mask) (X V[c_h]^T + b_v[c_h]))
      = O[:, c_h] (A_h X V[c_h]^T) + O[:, c_h] b_v[c_h]         (every softmax row sums to 1)

so it is removable, exactly, when its O columns are all zero (it contributes nothing) or its V rows are all zero (it
contributes the constant O[:, c_h] b_v[c_h], folded into O's bias).

What an FFN neuron contributes. Neuron j (row j of ``intermediate.dense`` W1, b1; column j of ``output.dense`` W2)
adds W2[:, j] act(W1[j] x + b1[j]); it is removable, exactly, when W2[:, j] = 0 (nothing) or W1[j] = 0 (the constant
W2[:, j] act(b1[j]), folded into W2's bias).

Constants are folded in float64 and cast back to the bias's dtype. Used by the gender track's shrink (every dead
unit removed, per-layer widths) and by the Hugging Face export (FFN neurons removed only as far as every layer
allows, so that one ``intermediate_size`` still describes the model)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


# ------------------------------------------------------------------------------------------------ building blocks
def linear(weight: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    """An nn.Linear holding exactly ``weight`` (out x in) and ``bias`` — built on the meta device and filled, so an
    empty shape neither allocates nor warns about initialising a zero-element tensor."""
    layer = nn.Linear(1, 1, bias=bias is not None, device="meta")
    layer.in_features, layer.out_features = int(weight.shape[1]), int(weight.shape[0])
    layer.weight = nn.Parameter(weight.detach().clone().contiguous(), requires_grad=False)
    if bias is not None:
        layer.bias = nn.Parameter(bias.detach().clone().contiguous(), requires_grad=False)
    return layer


def rows(layer: nn.Linear, index: torch.Tensor) -> nn.Linear:
    return linear(layer.weight[index], None if layer.bias is None else layer.bias[index])


def columns(layer: nn.Linear, index: torch.Tensor, bias: torch.Tensor | None) -> nn.Linear:
    return linear(layer.weight[:, index], bias)


def folded_bias(layer: nn.Linear, cols: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``layer``'s bias plus the contribution W[:, cols] values of constant inputs, summed in float64."""
    weight = layer.weight.detach().to(torch.float64)[:, cols]
    bias = layer.bias.detach().to(torch.float64) + weight @ values.to(torch.float64)
    return bias.to(layer.bias.dtype)


def head_index(heads: Sequence[int], head_size: int) -> torch.Tensor:
    """The rows of Q, K, V (columns of O) that belong to ``heads``."""
    return torch.tensor([h * head_size + i for h in heads for i in range(head_size)], dtype=torch.long)


# ------------------------------------------------------------------------------------------------ reading the zeros
def dead_heads(attention, head_size: int) -> tuple[list[int], list[int]]:
    """``(removed, folded)`` heads of one ``BertAttention``: removable when its V rows or its O columns are all
    zero; folded when removable for its V rows while its V bias and O columns are not zero (the constant
    O[:, c_h] b_v[c_h] goes into O's bias)."""
    value, out = attention.self.value, attention.output.dense
    heads = value.out_features // head_size
    v_rows = value.weight.detach().reshape(heads, head_size, -1)
    o_cols = out.weight.detach().reshape(out.out_features, heads, head_size)
    v_bias = value.bias.detach().reshape(heads, head_size) if value.bias is not None else None
    removed, folded = [], []
    for h in range(heads):
        v_zero = not bool(v_rows[h].any())
        o_zero = not bool(o_cols[:, h].any())
        if v_zero or o_zero:
            removed.append(h)
            if v_zero and not o_zero and v_bias is not None and bool(v_bias[h].any()):
                folded.append(h)
    return removed, folded


def neuron_constants(intermediate, neurons: torch.Tensor) -> torch.Tensor:
    """act(b1[j]) of the neurons whose input row is zero, float64."""
    bias = intermediate.dense.bias
    if bias is None:
        return torch.zeros(len(neurons), dtype=torch.float64)
    return intermediate.intermediate_act_fn(bias.detach().to(torch.float64)[neurons])


def dead_neurons(intermediate, output) -> tuple[list[int], list[int]]:
    """``(removed, folded)`` FFN neurons of one layer: removable when the ``intermediate.dense`` row or the
    ``output.dense`` column is all zero; folded when removable for its row while act(b1[j]) and the column are not
    zero (the constant W2[:, j] act(b1[j]) goes into W2's bias)."""
    w1, w2 = intermediate.dense.weight.detach(), output.dense.weight.detach()
    row_zero = ~w1.any(dim=1)
    col_zero = ~w2.any(dim=0)
    constant = neuron_constants(intermediate, torch.nonzero(row_zero).flatten())
    folded_mask = torch.zeros_like(row_zero)
    folded_mask[row_zero] = constant != 0
    folded_mask &= ~col_zero
    removed = torch.nonzero(row_zero | col_zero).flatten().tolist()
    return removed, torch.nonzero(folded_mask).flatten().tolist()


# ------------------------------------------------------------------------------------------------ removing
def remove_neurons(layer, neurons: Sequence[int], folded: Sequence[int]) -> None:
    """Take ``neurons`` (removable ones, ``dead_neurons``) out of ``layer``'s FFN, first folding the constant
    outputs of ``folded`` (a subset of them) into ``output.dense``'s bias."""
    if not neurons:
        return
    intermediate, output = layer.intermediate, layer.output
    bias = output.dense.bias
    if folded and bias is not None:
        index = torch.tensor(list(folded), dtype=torch.long)
        bias = folded_bias(output.dense, index, neuron_constants(intermediate, index))
    gone = set(neurons)
    kept = torch.tensor([j for j in range(intermediate.dense.out_features) if j not in gone], dtype=torch.long)
    intermediate.dense = rows(intermediate.dense, kept)
    output.dense = columns(output.dense, kept, bias)
