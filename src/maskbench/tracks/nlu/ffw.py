"""Paper D's FFW on the nlu track's fine-tuned encoder (issue 31's cross-paper matrix): the shared gates, heads,
MI loss and schedule of ``maskbench.ffw.core`` read through ``NluFFW``, with a bias attribute per training pair.

Features: the input of the model's ``classifier`` (BERT's pooled [CLS] representation after its dropout, captured by
a forward pre-hook during the model's own forward pass); task logits: ``classifier(features)``. Gates:

- ``ffw`` (unstructured): one gate per weight of every encoder matrix (Q, K, V, attention output, FFN in, FFN out
  of every layer: paper A's mask search targets), the bias untouched (a fully pruned row keeps its bias, as during
  gate training: the mask file says ``zero_bias_of_empty_rows: false``);
- ``ffw_structured``: one gate per attention head — the head's columns of the attention output matrix, so a closed
  gate removes the head's whole contribution (the output bias, shared by the heads, stays) — and one gate per FFN
  neuron — its row of the FFN-in matrix with its bias (``gate_unit_output``: a closed gate makes the neuron output
  GELU(0) = 0, i.e. nothing reaches FFN-out). At inference a pruned neuron's bias is zeroed
  (``zero_bias_of_empty_rows: true``), which is what the hard gate computed. (Edge case: a layer whose every head
  is pruned keeps the attention output bias while gating but loses it at inference; the summary counts such
  layers, ``layers_without_heads``.)

Bias attributes (one per run, each its own matrix row):

- ``overlap``: the class the lexical-overlap bias model (``nlu.bias_overlap``, Clark et al.'s logistic regression)
  predicts for the pair — the argmax of its training-set probabilities, ties to the first label; the classes are
  the labels it predicts anywhere in the training part, in label order (chrisc36's entailment-vs-rest model gives
  two: entailment, and the first other label standing for "the rest");
- ``negation``: whether the hypothesis holds a negation word (``maskbench.data.negation``, paper A's list of the
  negation subset).

Departures from paper D's setting: the gates train on a seeded slice of the task's training part (there is no
unbiased split with bias labels); the temperature schedule and snapshot selection read a disjoint held-out slice
of it, and the bias readout of the final mask a third; dropout is off while gating (the frozen model as it
predicts, so that the heads and the MI read the same features).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from torch import nn

from maskbench.data.negation import NEGATION_WORDS, has_negation
from maskbench.masking.module_kinds import ENCODER_KINDS
from maskbench.text.batches import EncodedPairs, model_inputs

ATTRIBUTES = ("overlap", "negation")


def overlap_attribute(probs: np.ndarray, labels: list[str]) -> tuple[np.ndarray, list[str]]:
    """(class index per pair, class names): the overlap bias model's argmax, re-indexed over the labels it
    predicts anywhere (in label order)."""
    predicted = np.asarray(probs).argmax(axis=1)
    present = sorted(set(predicted.tolist()))
    if len(present) < 2:
        raise ValueError(f"overlap attribute: the bias model predicts only {[labels[i] for i in present]} on the "
                         "training part; a bias attribute needs at least two classes")
    index = {label: i for i, label in enumerate(present)}
    return np.array([index[p] for p in predicted], dtype=np.int64), [labels[i] for i in present]


def negation_attribute(hypotheses, words=NEGATION_WORDS) -> tuple[np.ndarray, list[str]]:
    """(1 where the hypothesis holds a negation word, else 0; class names)."""
    return np.array([int(has_negation(h, words)) for h in hypotheses], dtype=np.int64), ["no_negation", "negation"]


def bias_attribute(name: str, frame: pd.DataFrame, labels: list[str], overlap_probs: np.ndarray | None = None):
    if name == "overlap":
        if overlap_probs is None:
            raise ValueError("attribute 'overlap' needs the overlap bias model's probabilities (--bias-probs)")
        return overlap_attribute(overlap_probs, labels)
    if name == "negation":
        return negation_attribute(frame["text_b"].tolist())
    raise ValueError(f"ffw.attributes: {name!r} is unknown; choose one of {', '.join(ATTRIBUTES)}")


class GatePairs(EncodedPairs):
    """Encoded pairs whose batches also carry the bias attribute (``bias``, N x 1)."""

    def __init__(self, tokenizer, frame: pd.DataFrame, attribute: np.ndarray, max_length: int, view: str = "pair"):
        super().__init__(tokenizer, frame["text_a"].tolist(), frame["text_b"].tolist(), frame["label"].to_numpy(),
                         max_length, view)
        self.attribute = np.asarray(attribute, dtype=np.int64)

    def collate(self, indices):
        batch = super().collate(indices)
        batch["bias"] = torch.from_numpy(self.attribute[indices])[:, None]
        return batch


def split_indices(n: int, sizes: dict[str, int], seed: int) -> dict[str, np.ndarray]:
    """Disjoint seeded slices of ``range(n)`` (gate_train, gate_val, readout), each sorted; an error when they do
    not fit."""
    wanted = sum(sizes.values())
    if wanted > n:
        raise ValueError(f"ffw.examples: {sizes} asks for {wanted} pairs, the training part has {n}")
    order = np.random.default_rng(seed).permutation(n)
    out, start = {}, 0
    for name, size in sizes.items():
        out[name] = np.sort(order[start:start + size])
        start += size
    return out


class NluFFW:
    """``maskbench.ffw.core.FFWAdapter`` of a BERT-family sequence classifier."""

    family = "bert"

    def __init__(self, model: nn.Module):
        classifier = getattr(model, "classifier", None)
        if not isinstance(classifier, nn.Linear):
            raise ValueError(f"{type(model).__name__}: FFW reads the input of a Linear `classifier` (BERT's pooled "
                             "features); this model has none")
        self.head_size = model.config.hidden_size // model.config.num_attention_heads
        self._captured: dict[str, torch.Tensor] = {}
        classifier.register_forward_pre_hook(self._capture)

    def _capture(self, module, args):
        self._captured["features"] = args[0]

    def features(self, model, batch, device):
        model(**model_inputs(batch, device))
        return self._captured.pop("features")

    def logits(self, model, features):
        return model.classifier(features)

    def labels(self, batch):
        return batch["labels"]

    def bias(self, batch):
        return batch["bias"]

    def gate_plan(self, model, structured):
        if not structured:
            return list(ENCODER_KINDS), "weight", False
        plan = {"attention_output": {"head": self.head_size, "axis": "column"}, "ffn_in": "row"}
        return ["attention_output", "ffn_in"], plan, True

    def loader(self, data, batch_size):
        """Batches in length order (longest first; a pair's features do not depend on its batch but for float-sum
        order, and labels and attributes travel with their pairs): a batch pads to its longest pair."""
        order = torch.sort(torch.as_tensor(data.lengths, dtype=torch.long), descending=True, stable=True).indices
        batches = [order[i:i + batch_size].tolist() for i in range(0, len(order), batch_size)]
        return torch.utils.data.DataLoader(data, batch_sampler=batches, collate_fn=data.collate)


def no_dropout(model: nn.Module) -> int:
    """Set every dropout's p to 0 (gating reads the model as it predicts); returns how many there were."""
    found = [m for m in model.modules() if isinstance(m, nn.Dropout)]
    for module in found:
        module.p = 0.0
    return len(found)


def layers_without_heads(keep: dict[str, np.ndarray]) -> int:
    """Attention output matrices whose every column is pruned (the edge case of the module docstring)."""
    return sum(1 for name, mask in keep.items() if name.endswith("attention.output.dense") and not mask.any())
