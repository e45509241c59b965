"""Trainable pruning scores on frozen weights: how a score tensor becomes a binary mask during a search.

Each selected Linear gets a ``ScoreMask`` parametrization (torch.nn.utils.parametrize): the module's weight
becomes ``W * m(S)``, with ``W`` frozen and untouched (it lives on as ``parametrizations.weight.original``) and
``m`` a binary function of the scores ``S`` with a straight-through gradient, so that
``dL/dS = dL/dW' * W`` — the movement-pruning signal of Sanh et al. 2020. ``detach_scores`` removes the
parametrizations and leaves every module bit-identical to before.

Deciders (``MaskSearchSpec.method``):
* ``movement_sigmoid``: m = 1[sigmoid(S) > tau], tau on a cubic schedule, plus an L1-style penalty
  ``lambda * mean sigmoid(S)`` averaged per group (attention matrices, FFN matrices) as nn_pruning does;
* ``movement_topk``: m keeps the top ``tau`` fraction of S per matrix, tau on a cubic schedule (e.g. 1 -> 0.85).

Granularity is orthogonal: ``block = [rows, cols]`` gives one score per tile ([1, 1] = per weight; [1, in] =
per output row; [head_dim, in] = per attention head of Q/K/V).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.binarizers import (
    masked_weight,
    sigmoid_threshold_as_score,
    threshold_ste,
    topk_mask,
    topk_ste,
)
from maskbench.masking.schedules import cubic
from maskbench.masking.selectors import ATTENTION_KINDS, ENCODER_KINDS, module_kind, select_linear

METHODS = ("movement_sigmoid", "movement_topk")
L1_SCHEDULES = ("constant", "threshold_ratio")


@dataclass
class MaskSearchSpec:
    """How a mask search decides its masks (config ``mask_search``, without the optimiser's settings)."""

    method: str = "movement_sigmoid"
    modules: list[str] = field(default_factory=lambda: list(ENCODER_KINDS))
    block: list[int] = field(default_factory=lambda: [1, 1])
    score_init: float = 0.0  # nn_pruning never forwards its mask_init settings: scores start at 0
    threshold_start: float = 0.0
    threshold_end: float = 0.1
    # paper A's code passes no warm-up, so nn_pruning's defaults -1 x (1, 10) apply (method_details.md §1)
    threshold_warmup_start: float = -1
    threshold_warmup_end: float = -10
    l1_lambda: float = 1.0  # paper A's effective lambda (its configured final lambda 10 is never applied)
    l1_schedule: str = "constant"  # or "threshold_ratio": lambda * tau / tau_end, nn_pruning's own trainer
    zero_bias_of_empty_rows: bool = True

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"mask_search.method {self.method!r} is unknown; choose one of {METHODS}")
        if self.l1_schedule not in L1_SCHEDULES:
            raise ValueError(f"mask_search.l1_schedule {self.l1_schedule!r} is unknown; choose one of {L1_SCHEDULES}")
        if len(self.block) != 2 or min(self.block) < 1:
            raise ValueError(f"mask_search.block must be two positive integers [rows, cols], got {self.block}")
        if self.method == "movement_topk" and not (0 <= self.threshold_start <= 1 and 0 <= self.threshold_end <= 1):
            raise ValueError("mask_search: movement_topk keeps a fraction: threshold_start/end must lie in [0, 1]")

    @classmethod
    def from_dict(cls, values: dict) -> MaskSearchSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"mask_search: unknown field(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


class MaskController:
    """The state every score mask of one search shares: the method and the current threshold."""

    def __init__(self, spec: MaskSearchSpec, total_steps: int):
        self.spec = spec
        self.total_steps = max(1, int(total_steps))
        self.threshold = spec.threshold_start

    def set_step(self, step: int, total: int | None = None) -> None:
        """Move the threshold to its value at ``step`` (a training loop's step hook)."""
        s = self.spec
        self.threshold = cubic(step, self.total_steps, s.threshold_start, s.threshold_end,
                               s.threshold_warmup_start, s.threshold_warmup_end)

    def tau(self, training: bool) -> float:
        """The current threshold; evaluation always uses the final one."""
        return self.threshold if training else self.spec.threshold_end

    def score_threshold(self, training: bool) -> float:
        """movement_sigmoid: the score value t with sigmoid(t) = tau (S > t keeps a weight)."""
        return sigmoid_threshold_as_score(self.tau(training))

    def binarize(self, scores: torch.Tensor, training: bool) -> torch.Tensor:
        """The {0, 1} mask of the scores (float, straight-through)."""
        if self.spec.method == "movement_sigmoid":
            return threshold_ste(scores, self.score_threshold(training))
        return topk_ste(scores, self.tau(training))

    def hard(self, scores: torch.Tensor) -> torch.Tensor:
        """The final bool mask (at the end threshold)."""
        if self.spec.method == "movement_sigmoid":
            return scores.detach() > sigmoid_threshold_as_score(self.spec.threshold_end)
        return topk_mask(scores, self.spec.threshold_end)

    def l1_weight(self) -> float:
        s = self.spec
        if s.l1_schedule == "threshold_ratio":
            return s.l1_lambda * (self.threshold / s.threshold_end if s.threshold_end else 1.0)
        return s.l1_lambda


def expand_blocks(tile_values: torch.Tensor, block: tuple[int, int]) -> torch.Tensor:
    rows, cols = block
    if rows == 1 and cols == 1:
        return tile_values
    return tile_values.repeat_interleave(rows, dim=0).repeat_interleave(cols, dim=1)


class ScoreMask(nn.Module):
    """Parametrization W -> W * m(S) of one Linear weight; S has one entry per (block) tile."""

    def __init__(self, weight_shape: torch.Size, controller: MaskController, block=(1, 1), init: float = 0.0,
                 name: str = ""):
        super().__init__()
        out_features, in_features = weight_shape
        rows, cols = block
        if out_features % rows or in_features % cols:
            raise ValueError(f"{name}: weight {tuple(weight_shape)} does not split into {rows}x{cols} blocks")
        self.block = (int(rows), int(cols))
        self.scores = nn.Parameter(torch.full((out_features // rows, in_features // cols), float(init)))
        self._controller = (controller,)  # a tuple: not a submodule, not in state_dict
        self.name = name

    @property
    def controller(self) -> MaskController:
        return self._controller[0]

    def mask(self) -> torch.Tensor:
        return expand_blocks(self.controller.binarize(self.scores, self.training), self.block)

    def hard_mask(self) -> torch.Tensor:
        return expand_blocks(self.controller.hard(self.scores), self.block)

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        if self.block == (1, 1) and self.controller.spec.method == "movement_sigmoid":
            return masked_weight(weight, self.scores, self.controller.score_threshold(self.training))
        return weight * self.mask().to(weight.dtype)

    def alive_rows(self) -> torch.Tensor:
        """1 for every output row that keeps at least one weight, else 0 (no gradient)."""
        with torch.no_grad():
            if self.controller.spec.method == "movement_sigmoid":
                # a row survives iff its highest score passes the threshold: no full mask needed
                alive = self.scores.amax(dim=1) > self.controller.score_threshold(self.training)
                return alive.repeat_interleave(self.block[0])
            return self.mask().amax(dim=1) > 0


class EmptyRowBias(nn.Module):
    """Parametrization of a Linear bias: zero the bias of every output row whose weights are all masked, as
    nn_pruning's MaskedLinear does (``bias_mask``)."""

    def __init__(self, owner: ScoreMask):
        super().__init__()
        self._owner = (owner,)

    def forward(self, bias: torch.Tensor) -> torch.Tensor:
        return bias * self._owner[0].alive_rows().to(bias.dtype)


@dataclass
class ScoreMasks:
    """The result of attaching scores: the controller and each module's ScoreMask, by module name."""

    controller: MaskController
    masks: dict[str, ScoreMask]

    def parameters(self) -> list[nn.Parameter]:
        return [m.scores for m in self.masks.values()]

    def regularization(self) -> torch.Tensor:
        """lambda * sum over groups of (1 / n_groups) * mean over the group's matrices of mean sigmoid(S).

        Groups: attention (Q, K, V, attention output) and dense (FFN and anything else), as nn_pruning's
        ``regularization_loss`` with attention and dense lambda 1 each.
        """
        groups: dict[str, list[torch.Tensor]] = {}
        for name, mask in self.masks.items():
            group = "attention" if module_kind(name) in ATTENTION_KINDS else "dense"
            groups.setdefault(group, []).append(torch.sigmoid(mask.scores).mean())
        terms = [torch.stack(values).mean() for values in groups.values()]
        return self.controller.l1_weight() * torch.stack(terms).sum() / len(terms)

    def hard_masks(self) -> dict[str, np.ndarray]:
        """The final binary masks (True = kept), as numpy bool arrays of the weights' shapes."""
        return {name: m.hard_mask().cpu().numpy().astype(bool) for name, m in self.masks.items()}


def freeze(model: nn.Module) -> None:
    for param in model.parameters():
        param.requires_grad_(False)


def attach_scores(model: nn.Module, spec: MaskSearchSpec, total_steps: int) -> ScoreMasks:
    """Freeze every weight of the model and give each selected Linear trainable scores."""
    freeze(model)
    controller = MaskController(spec, total_steps)
    masks = {}
    for name, module in select_linear(model, spec.modules, "mask_search.modules").items():
        score_mask = ScoreMask(module.weight.shape, controller, tuple(spec.block), spec.score_init, name)
        score_mask.to(module.weight.device)
        parametrize.register_parametrization(module, "weight", score_mask)
        if spec.zero_bias_of_empty_rows and module.bias is not None:
            parametrize.register_parametrization(module, "bias", EmptyRowBias(score_mask))
        masks[name] = score_mask
    return ScoreMasks(controller, masks)


def detach_parametrizations(model: nn.Module) -> None:
    """Remove every parametrization, restoring the original tensors (bit-identical: they were never written)."""
    for module in list(model.modules()):
        if parametrize.is_parametrized(module):
            for tensor_name in list(module.parametrizations.keys()):
                parametrize.remove_parametrizations(module, tensor_name, leave_parametrized=False)
