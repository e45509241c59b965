"""Paper D's FFW on the gender track: gates on the frozen encoder paper B debiases, a bias head reading the
sentence's gender attribute (``attribute.py``) from the sentence feature SEAT reads, and paper D's MI loss. The
shared core (``maskbench.ffw.core``) runs it; this module is the track's ``FFWAdapter`` and its task term.

**Features.** The bias head reads the last layer's [CLS] vector, the very vector the track's SEAT encoding scores
(``encoding.cls_vectors``: paper B's SEAT reads the last layer's [CLS], not a mean over tokens), so the head is
asked for the gender in the representation SEAT measures. Heads train on detached features (the core's heads).

**Gates.** ``ffw``: one gate per weight of every Q, K, V, attention-output and FFN matrix of every layer
(``ENCODER_KINDS``, the matrices paper B prunes; unstructured, paper D's ``gating_weights.py``), biases untouched.
``ffw_structured``: one gate per attention head and one per FFN neuron, each multiplying the unit's whole output
(paper D eq. (9)): a head's gate sits on its rows of the value matrix and their bias (the head's output is a convex
combination of its value vectors, so it is the head's output times the gate), a neuron's on its row of the FFN's
input matrix and its bias (GELU(0) = 0: a closed gate silences it). The saved mask of a structured run is expanded
to every matrix a pruned unit owns (the head's Q, K, V rows and attention-output columns; the neuron's FFN output
column, ``expand_structured``), which computes the same function (those weights only ever meet the unit's zeroed
output) and gives a density comparable with paper B's head pruning, which masks the same six matrices.

**Task term.** The encoder has no task head, so paper D's CE(task) is replaced by what keeps the representation:
the regulariser of paper B's objective (Kaneko & Bollegala) between the gated encoder's hidden states and the
original's (the same network with its gates bypassed, no copy), on the batch's own attribute sentences, every layer
(embedding output included). ``task_term``: ``kaneko`` (ours by default) — context-debias's form, the mean over
every real token and layer of mean_h (h - h0)^2 (``objective.regulariser_kaneko``); ``paper_b`` — paper B's code's
form, the mean over sentences and layers of ||e - e0||^2 of the keyword embeddings (``objective.regulariser_paper_b``).
Why kaneko by default: it covers every real token, the [CLS] the bias head and SEAT read among them, so the gates
cannot buy a lower MI by wrecking the sentence feature unseen; paper B's form sees only the attribute words'
positions, where the gender lives, and leaves [CLS] and the rest of the sentence free to drift.

**A short run's gates** (measured on MiniLM-L6 and the real MultiNLI corpus, 3 gate epochs of 23 steps): this
task term has zero gradient at the original encoder (a distance to it is smallest there), and as long as every gate
is >= 0 the gated encoder *is* the original (the forward is clamped at 1), so at first only the MI moves the gates,
each by Adam's ~gate_lr a step whatever its gradient's size. With paper D's start (gates at 0, T = 1) about half of
all gates end just below 0 after a few epochs: the hard mask keeps 50 % of the weights, the encoder is wrecked (the
held-out bias head at chance because nothing is left to read), though the soft-gated encoder the loss saw was
nearly the original. ``gate_init`` > 0 (a margin a gate must be pushed through, still the original encoder at the
start) with a low starting ``temperature`` (the soft gates close to the hard ones once crossed, so the task term
pushes back) prunes selectively instead: 0.05 and 0.01 kept 98.3 % (structured) / 99.4 % (unstructured) of the
weights and lowered the held-out bias-head accuracy from 98.5 % to 82.5 % / 63.9 % (gamma 10, one seed).

The encoder is loaded with its dropout off (``disable_dropout``): FFW trains gates on a frozen model computing as
at inference, so the gated and the original pass differ only by the gates (with dropout the regulariser would be a
noise floor the gates chase).

    loss = alpha * task_term + gamma * MI(gender, softmax(head(features)))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from maskbench.ffw.core import FFWSettings
from maskbench.masking.selectors import ENCODER_KINDS
from maskbench.tracks.gender.encoding import encoder_of, hidden_states
from maskbench.tracks.gender.objective import keyword_embeddings, regulariser_kaneko, regulariser_paper_b

METHODS = {"ffw": False, "ffw_structured": True}  # method name -> structured
TASK_TERMS = ("kaneko", "paper_b")
_LAYER = re.compile(r"^(.*layer\.\d+\.)")


@dataclass
class GenderFFWSettings(FFWSettings):
    """``FFWSettings`` (config ``gender.ffw`` and the run's method and gamma) and the gender track's own:
    the task term's form and the sentences' length."""

    CONFIG_KEY: ClassVar[str] = "gender.ffw"
    task_term: str = "kaneko"
    max_length: int = 32

    def __post_init__(self):
        super().__post_init__()
        if self.task_term not in TASK_TERMS:
            raise ValueError(f"{self.CONFIG_KEY}.task_term: {self.task_term!r} is unknown; choose one of "
                             f"{', '.join(TASK_TERMS)}")


def disable_dropout(model: nn.Module) -> None:
    """Every dropout of the model at p = 0 (train mode then computes as eval mode; the weights are untouched)."""
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    config = getattr(model, "config", None)
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
        if config is not None and hasattr(config, key):
            setattr(config, key, 0.0)


def head_size_of(model) -> int:
    config = encoder_of(model).config
    return config.hidden_size // config.num_attention_heads


def representation_term(states: torch.Tensor, original: torch.Tensor, batch: dict, form: str) -> torch.Tensor:
    """The task term on (L+1, B, T, H) hidden states of the gated and the original encoder: ``kaneko`` the mean
    over real tokens and layers of mean_h (h - h0)^2, ``paper_b`` the mean over sentences and layers of the squared
    distance of the keyword embeddings."""
    if form == "kaneko":
        return regulariser_kaneko(states, original, batch["attention_mask"])
    if form == "paper_b":
        mask = batch["keyword_mask"]
        return regulariser_paper_b(keyword_embeddings(states, mask), keyword_embeddings(original, mask))
    raise ValueError(f"task term {form!r} is unknown; choose one of {TASK_TERMS}")


class GenderFFW:
    """The gender track's ``FFWAdapter``: a BERT-family encoder, batches of ``AttributeSentences``."""

    family = "bert"

    def __init__(self, task_term: str = "kaneko"):
        if task_term not in TASK_TERMS:
            raise ValueError(f"task term {task_term!r} is unknown; choose one of {TASK_TERMS}")
        self.form = task_term

    def features(self, model, batch, device):
        out = encoder_of(model)(input_ids=batch["input_ids"].to(device, non_blocking=True),
                                attention_mask=batch["attention_mask"].to(device, non_blocking=True))
        return out.last_hidden_state[:, 0, :]

    def task_term(self, model, batch, device, masked):
        """(features, term): one pass of the gated encoder gives both; the original's pass has the gates bypassed
        and no gradient."""
        states = hidden_states(model, batch, device)
        with torch.no_grad(), masked.bypass():
            original = hidden_states(model, batch, device)
        return states[-1][:, 0, :], representation_term(states, original, batch, self.form)

    def logits(self, model, features):
        raise NotImplementedError("the gender encoder has no task head; FFW's task term is task_term")

    def labels(self, batch):
        return torch.zeros(batch["input_ids"].shape[0], dtype=torch.long)  # no task label: read by no loss

    def bias(self, batch):
        return batch["bias"]

    def gate_plan(self, model, structured):
        if not structured:
            return list(ENCODER_KINDS), "weight", False
        return ["value", "ffn_in"], {"value": {"head": head_size_of(model)}, "ffn_in": "row"}, True

    def loader(self, data, batch_size):
        return DataLoader(data, batch_size=batch_size, shuffle=False, collate_fn=data.collate)


def expand_structured(keep: dict[str, np.ndarray], model) -> dict[str, np.ndarray]:
    """A structured run's keep masks (value rows per head, FFN input rows per neuron) spread over every matrix a
    pruned unit owns: the head's rows of Q and K and columns of the attention output, the neuron's column of the FFN
    output matrix. The expanded masks compute the same function (those weights only meet a zeroed output)."""
    modules = dict(model.named_modules())  # the model the gates were attached to: the names of ``keep``
    out = dict(keep)
    for name, mask in keep.items():
        layer = _LAYER.match(name)
        if layer is None:
            raise ValueError(f"structured FFW mask: module {name!r} has no layer index")
        base = layer.group(1)
        if name.endswith("attention.self.value"):
            rows = mask.all(axis=1)  # a head's rows are kept or gone together
            if not (mask == rows[:, None]).all():
                raise ValueError(f"{name}: a structured mask keeps whole rows, this one does not")
            for kind in ("query", "key"):
                out[f"{base}attention.self.{kind}"] = np.repeat(rows[:, None], mask.shape[1], axis=1)
            width = modules[f"{base}attention.output.dense"].weight.shape[0]
            out[f"{base}attention.output.dense"] = np.repeat(rows[None, :], width, axis=0)
        elif name.endswith("intermediate.dense"):
            rows = mask.all(axis=1)
            if not (mask == rows[:, None]).all():
                raise ValueError(f"{name}: a structured mask keeps whole rows, this one does not")
            width = modules[f"{base}output.dense"].weight.shape[0]
            out[f"{base}output.dense"] = np.repeat(rows[None, :], width, axis=0)
        else:
            raise ValueError(f"structured FFW mask: module {name!r} is neither a value nor an FFN input matrix")
    return out


def density_of(keep: dict[str, np.ndarray]) -> float:
    kept = sum(int(m.sum()) for m in keep.values())
    total = sum(int(m.size) for m in keep.values())
    return kept / total
