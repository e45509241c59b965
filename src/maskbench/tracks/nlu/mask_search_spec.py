"""Paper A's mask search: movement-pruning scores on frozen weights, as a spec (config ``mask_search``) that the
engine turns into deciders and granularities.

Every selected module gets a ``Masked`` parametrization (``engine.py``): its weight becomes ``W * m(S)``, with
``W`` frozen and untouched and ``m`` a binary function of the scores ``S`` with a straight-through gradient, so
that ``dL/dS = dL/dW' * W`` — the movement-pruning signal of Sanh et al. 2020.

Deciders (``MaskSearchSpec.method``, ``deciders.py``):
* ``movement_sigmoid``: m = 1[sigmoid(S) > tau], tau on a cubic schedule, plus an L1-style penalty
  ``lambda * mean sigmoid(S)`` averaged per group (attention matrices, FFN matrices) as nn_pruning does;
* ``movement_topk``: m keeps the top ``tau`` fraction of S per matrix, tau on a cubic schedule (e.g. 1 -> 0.85).

Granularity is orthogonal (``granularity.py``): ``block = [rows, cols]`` for every module ([1, 1] = per weight),
and ``granularity`` per module kind (``{query: [32, 32], ffn_in: row, value: {head: 64}}``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from torch import nn

from maskbench.masking.deciders import DECIDERS, SEARCH_DECIDERS, Decider
from maskbench.masking.engine import MaskedModules, attach
from maskbench.masking.granularity import parse_granularity
from maskbench.masking.selectors import ENCODER_KINDS

METHODS = SEARCH_DECIDERS
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
    # paper A's code passes no warm-up, so nn_pruning's defaults -1 x (1, 10) apply (docs/paper-a.md, "Mask search")
    threshold_warmup_start: float = -1
    threshold_warmup_end: float = -10
    l1_lambda: float = 1.0  # paper A's effective lambda (its configured final lambda 10 is never applied)
    l1_schedule: str = "constant"  # or "threshold_ratio": lambda * tau / tau_end, nn_pruning's own trainer
    zero_bias_of_empty_rows: bool = True
    # per module kind, a granularity overriding `block` (see masking.granularity): {query: [32, 32], ffn_in: row}
    granularity: dict | None = None

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"mask_search.method {self.method!r} is unknown; choose one of {METHODS}")
        if self.l1_schedule not in L1_SCHEDULES:
            raise ValueError(f"mask_search.l1_schedule {self.l1_schedule!r} is unknown; choose one of {L1_SCHEDULES}")
        if len(self.block) != 2 or min(self.block) < 1:
            raise ValueError(f"mask_search.block must be two positive integers [rows, cols], got {self.block}")
        for kind, value in (self.granularity or {}).items():
            parse_granularity(value, f"mask_search.granularity.{kind}")
        if self.method == "movement_topk" and not (0 <= self.threshold_start <= 1 and 0 <= self.threshold_end <= 1):
            raise ValueError("mask_search: movement_topk keeps a fraction: threshold_start/end must lie in [0, 1]")

    @classmethod
    def from_dict(cls, values: dict) -> MaskSearchSpec:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"mask_search: unknown field(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


def decider_of(spec: MaskSearchSpec, total_steps: int) -> Decider:
    """The decider a spec names (``deciders.DECIDERS``), its schedule spanning ``total_steps``."""
    return DECIDERS[spec.method].from_search_spec(spec, total_steps)


def granularity_plan(spec: MaskSearchSpec) -> dict:
    """Per module kind: ``spec.granularity`` where it names the kind, ``spec.block`` for the rest."""
    return {"default": list(spec.block), **(spec.granularity or {})}


def attach_scores(model: nn.Module, spec: MaskSearchSpec, total_steps: int) -> MaskedModules:
    """Freeze every weight of the model and give each selected module trainable movement scores."""
    return attach(model, decider_of(spec, total_steps), spec.modules, granularity_plan(spec),
                  zero_bias_of_empty_rows=spec.zero_bias_of_empty_rows, where="mask_search.modules")


