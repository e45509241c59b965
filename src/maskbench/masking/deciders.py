"""How scores become a binary mask: one small class per decider, one interface.

A decider owns what every masked module of one run shares (a threshold schedule, a temperature) and says, for
one module's scores, what the {0, 1} tile mask is during training (with its straight-through gradient) and at the
end (``hard_tiles``). Per-module state (a threshold per matrix, a fixed keep mask) lives as buffers of the
module's ``Masked`` parametrization (``engine.py``), created by ``init_state``.

Deciders:

* ``MovementSigmoid`` — movement pruning (Sanh et al. 2020, nn_pruning; paper A): m = 1[sigmoid(S) > tau], tau on
  a cubic schedule, L1 penalty ``lambda * mean sigmoid(S)`` per group (attention, dense);
* ``MovementTopK`` — movement pruning keeping the top ``tau`` fraction of each matrix's scores;
* ``ThresholdMaskTraining`` — paper C's mask training: magnitude-initialised real-valued scores, m = 1[S > t_j]
  with a per-module threshold t_j re-set to a target sparsity (``tracks.nlu.srnets.pruning.SparsityController``);
* ``Magnitude`` — iterative magnitude pruning: no trained scores, a fixed keep mask per module that
  ``prune_to`` recomputes from |W| (the weights train; pruned ones stay pruned);
* ``TemperatureGate`` — paper D's FFW gates: keep where the gate m >= 0; the backward pass goes through
  sigmoid(m / T); T is lowered (``set_temperature``) by a plateau-driven schedule.

Adding a decider is one class here plus its name in ``DECIDERS``.
"""

from __future__ import annotations

import math

import torch

from maskbench.masking.binarizers import sigmoid_threshold_as_score, threshold_ste, topk_mask, topk_ste
from maskbench.masking.granularity import Granularity
from maskbench.masking.ranking import ascending_rank_prune, local_threshold, magnitude_init, prune_count
from maskbench.masking.schedules import SCHEDULES, cubic
from maskbench.masking.selectors import ATTENTION_KINDS


class Decider:
    """The interface. ``module`` below is the ``Masked`` parametrization of one weight (its ``scores`` and the
    buffers ``init_state`` created)."""

    name = "decider"
    trains_scores = True  # scores are an nn.Parameter (else a buffer)

    def init_state(self, weight: torch.Tensor, granularity: Granularity, where: str) -> tuple[torch.Tensor, dict]:
        """The initial score tensor (score-shaped, detached) and the module's buffers."""
        raise NotImplementedError

    def threshold(self, module, training: bool):
        """t such that the tile mask is exactly ``scores > t`` (float or 0-dim tensor), or None. Lets the engine
        compute a per-weight mask in one fused pass (``binarizers.masked_weight``)."""
        return None

    def tiles(self, module, training: bool) -> torch.Tensor:
        """The {0, 1} float tile mask of the module's scores, with the decider's straight-through gradient."""
        raise NotImplementedError

    def hard_tiles(self, module) -> torch.Tensor:
        """The final bool tile mask (True = kept), no gradient."""
        raise NotImplementedError

    def set_step(self, step: int, total: int) -> None:
        """Move the decider's schedule to ``step`` (a training loop's step hook)."""

    def regularizer(self, modules: dict) -> torch.Tensor | None:
        """A penalty on the scores of all modules (by name), added to the objective; None for none."""
        return None

    def describe(self) -> dict:
        return {"decider": self.name}

    @classmethod
    def from_search_spec(cls, spec, total_steps: int) -> Decider:
        """This decider as a mask search (config ``mask_search``, ``tracks.nlu.mask_search_spec.MaskSearchSpec``)
        configures it; a
        decider that a mask search cannot drive leaves this unimplemented."""
        raise NotImplementedError(f"decider {cls.name!r} cannot be used by a mask search")


# ------------------------------------------------------------------------------------------------ movement
class Movement(Decider):
    """What both movement deciders share: a cubic threshold schedule and nn_pruning's grouped L1 penalty."""

    def __init__(self, total_steps: int, threshold_start: float, threshold_end: float, warmup_start: float = -1,
                 warmup_end: float = -10, score_init: float = 0.0, l1_lambda: float = 1.0,
                 l1_schedule: str = "constant", groups=None, schedule: str = "cubic"):
        if schedule not in SCHEDULES:
            raise ValueError(f"threshold schedule {schedule!r} is unknown; choose one of {sorted(SCHEDULES)}")
        self.schedule = schedule
        self.total_steps = max(1, int(total_steps))
        self.threshold_start, self.threshold_end = threshold_start, threshold_end
        self.warmup_start, self.warmup_end = warmup_start, warmup_end
        self.score_init = float(score_init)
        self.l1_lambda, self.l1_schedule = l1_lambda, l1_schedule
        self.groups = groups  # module kind -> group name for the L1 penalty (None: every module in "dense")
        self.current = threshold_start

    def init_state(self, weight, granularity, where):
        shape = granularity.score_shape(tuple(weight.shape), where)
        return torch.full(shape, self.score_init), {}

    def set_step(self, step, total):
        # the schedule spans the run's steps as counted when the masks were attached
        if self.schedule == "cubic":
            self.current = cubic(step, self.total_steps, self.threshold_start, self.threshold_end,
                                 self.warmup_start, self.warmup_end)
        else:
            self.current = SCHEDULES[self.schedule](step, self.total_steps, self.threshold_start, self.threshold_end)

    def tau(self, training: bool) -> float:
        """The current threshold; evaluation always uses the final one."""
        return self.current if training else self.threshold_end

    def l1_weight(self) -> float:
        if self.l1_schedule == "threshold_ratio":
            return self.l1_lambda * (self.current / self.threshold_end if self.threshold_end else 1.0)
        return self.l1_lambda

    def regularizer(self, modules):
        """lambda * sum over groups of (1 / n_groups) * mean over the group's matrices of mean sigmoid(S).

        Groups: attention (Q, K, V, attention output) and dense (FFN and anything else), as nn_pruning's
        ``regularization_loss`` with attention and dense lambda 1 each."""
        if self.l1_lambda <= 0:
            return None
        groups: dict[str, list[torch.Tensor]] = {}
        for module in modules.values():
            group = (self.groups or {}).get(module.kind, "dense")
            groups.setdefault(group, []).append(torch.sigmoid(module.scores).mean())
        terms = [torch.stack(values).mean() for values in groups.values()]
        return self.l1_weight() * torch.stack(terms).sum() / len(terms)

    def describe(self):
        return {"decider": self.name, "threshold_start": self.threshold_start, "threshold_end": self.threshold_end,
                "schedule": self.schedule}

    @classmethod
    def from_search_spec(cls, spec, total_steps):
        return cls(total_steps, spec.threshold_start, spec.threshold_end, spec.threshold_warmup_start,
                   spec.threshold_warmup_end, spec.score_init, spec.l1_lambda, spec.l1_schedule,
                   groups={kind: "attention" for kind in ATTENTION_KINDS})


class MovementSigmoid(Movement):
    """m = 1[sigmoid(S) > tau], decided as S > logit(tau) so the forward pass needs no sigmoid."""

    name = "movement_sigmoid"

    def threshold(self, module, training):
        return sigmoid_threshold_as_score(self.tau(training))

    def tiles(self, module, training):
        return threshold_ste(module.scores, self.threshold(module, training))

    def hard_tiles(self, module):
        return module.scores.detach() > sigmoid_threshold_as_score(self.threshold_end)


class MovementTopK(Movement):
    """m keeps the top ``tau`` fraction of each matrix's scores (ties by position)."""

    name = "movement_topk"

    def tiles(self, module, training):
        return topk_ste(module.scores, self.tau(training))

    def hard_tiles(self, module):
        return topk_mask(module.scores, self.threshold_end)


# ------------------------------------------------------------------------------------------- mask training
class ThresholdMaskTraining(Decider):
    """Paper C's mask training: scores S from ``ranking.magnitude_init`` (hard or soft, on |W| pooled per tile),
    m = 1[S > t] with a per-module threshold buffer t that only ``reset_threshold`` moves."""

    name = "mask_training"

    def __init__(self, sparsity: float, init: str, alpha: float, phi: float):
        self.sparsity, self.init, self.alpha, self.phi = sparsity, init, alpha, phi

    def init_state(self, weight, granularity, where):
        shape = tuple(weight.shape)
        granularity.score_shape(shape, where)
        scores, threshold = magnitude_init(granularity.pool(weight.detach().abs(), shape), self.sparsity,
                                           self.init, self.alpha, self.phi)
        return scores, {"threshold": torch.tensor(float(threshold), dtype=scores.dtype)}

    def threshold(self, module, training):
        return module.threshold

    def tiles(self, module, training):
        return threshold_ste(module.scores, float(module.threshold))

    def hard_tiles(self, module):
        return module.scores.detach() > module.threshold

    def reset_threshold(self, module, sparsity: float, keep_when_saturated: bool = False) -> float:
        """Move the module's t so that its scores alone meet ``sparsity`` now; return t.

        ``keep_when_saturated`` (paper C's code, ``reset_threshold``): leave t where it is when the new t would be
        the largest score (all scores tied: the reset would prune the whole module) or when nothing is to be
        pruned (k = 0)."""
        threshold = local_threshold(module.scores, sparsity)
        if keep_when_saturated and (threshold == -math.inf or threshold >= float(module.scores.detach().max())):
            return float(module.threshold)
        module.threshold.fill_(float(threshold))
        return threshold

    def describe(self):
        return {"decider": self.name, "sparsity": self.sparsity, "init": self.init, "alpha": self.alpha,
                "phi": self.phi}


# ---------------------------------------------------------------------------------------------- magnitude
class Magnitude(Decider):
    """Iterative magnitude pruning: the scores are |W| (a buffer, read when pruning), the mask a fixed keep
    buffer per module. Nothing trains through the mask; the weights train (attach with ``train_weights``)."""

    name = "magnitude"
    trains_scores = False

    def init_state(self, weight, granularity, where):
        shape = granularity.score_shape(tuple(weight.shape), where)
        return torch.ones(shape), {"keep": torch.ones(shape, dtype=torch.bool)}

    def tiles(self, module, training):
        return module.keep.to(module.scores.dtype)

    def hard_tiles(self, module):
        return module.keep.clone()

    def forward(self, module, weight):
        """W with the pruned entries zeroed (``masked_fill``: pruned weights get no gradient)."""
        return weight.masked_fill(module.pruned_weights(), 0.0)

    def prune_to(self, module, weight: torch.Tensor, sparsity: float) -> None:
        """Prune the module's tiles to ``sparsity`` of all its tiles: the alive tiles with the smallest mean |W|
        go (stable ranking, ties by position); pruned tiles stay pruned (IMP never regrows)."""
        alive = module.keep
        k = prune_count(alive.numel(), sparsity)
        already = int((~alive).sum())
        if k < already:
            raise ValueError(f"magnitude: {module.name!r} already has {already} pruned tiles, more than the {k} of "
                             f"sparsity {sparsity}; IMP only adds pruned weights")
        magnitude = module.granularity.pool(weight.detach().abs().to(torch.float32), module.shape)
        module.keep = ascending_rank_prune(magnitude.masked_fill(~alive, -1.0), k)


# ------------------------------------------------------------------------------------------ temperature gate
class _GateSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gates: torch.Tensor, temperature: float) -> torch.Tensor:
        ctx.save_for_backward(gates)
        ctx.temperature = temperature
        return (gates >= 0).to(gates.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (gates,) = ctx.saved_tensors
        sig = torch.sigmoid(gates / ctx.temperature)
        return grad * sig * (1 - sig) / ctx.temperature, None


class _TwoSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gates: torch.Tensor, temperature: float) -> torch.Tensor:
        ctx.save_for_backward(gates)
        ctx.temperature = temperature
        return torch.clamp(2 * torch.sigmoid(gates / temperature), max=1.0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (gates,) = ctx.saved_tensors
        sig = torch.sigmoid(gates / ctx.temperature)
        return grad * 2 * sig * (1 - sig) / ctx.temperature, None


def gate_ste(gates: torch.Tensor, temperature: float) -> torch.Tensor:
    """1 where the gate is >= 0, else 0; gradient d sigmoid(m / T) / dm."""
    return _GateSTE.apply(gates, float(temperature))


def two_sigmoid(gates: torch.Tensor, temperature: float) -> torch.Tensor:
    """Paper D's gate: min(2 sigmoid(m / T), 1) forward (exactly 1 at m = 0, so gates initialised at 0 leave the
    model bit-identical), and the gradient of the *unclipped* 2 sigmoid(m / T) backward (its ``TwoSigmoid``), so a
    gate above 0 still feels the loss. As T -> 0 the forward becomes the step 1[m >= 0] the final pruning uses."""
    return _TwoSigmoid.apply(gates, float(temperature))


GATE_FORWARDS = {"hard": gate_ste, "two_sigmoid": two_sigmoid}


class TemperatureGate(Decider):
    """Paper D's gates: kept where the gate m >= 0 at the end. During training the weight is scaled by
    ``forward``: ``two_sigmoid`` (paper D: min(2 sigmoid(m / T), 1), gates initialised at 0) or ``hard`` (1[m >= 0]
    with the sigmoid(m / T) gradient); ``set_temperature`` lowers T (a plateau-driven schedule)."""

    name = "temperature_gate"

    def __init__(self, init: float = 1.0, temperature: float = 1.0, forward: str = "hard"):
        if temperature <= 0:
            raise ValueError(f"temperature_gate: the temperature must be > 0, got {temperature}")
        if forward not in GATE_FORWARDS:
            raise ValueError(f"temperature_gate: forward {forward!r} is unknown; choose one of {sorted(GATE_FORWARDS)}")
        self.init, self.temperature, self.gate_forward = float(init), float(temperature), forward

    def init_state(self, weight, granularity, where):
        return torch.full(granularity.score_shape(tuple(weight.shape), where), self.init), {}

    def set_temperature(self, temperature: float) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature_gate: the temperature must be > 0, got {temperature}")
        self.temperature = float(temperature)

    def tiles(self, module, training):
        return GATE_FORWARDS[self.gate_forward](module.scores, self.temperature)

    def hard_tiles(self, module):
        return module.scores.detach() >= 0

    def describe(self):
        out = {"decider": self.name, "init": self.init, "temperature": self.temperature}
        if self.gate_forward != "hard":
            out["forward"] = self.gate_forward
        return out


DECIDERS = {cls.name: cls for cls in (MovementSigmoid, MovementTopK, ThresholdMaskTraining, Magnitude,
                                      TemperatureGate)}
# the deciders a mask search (paper A's `mask_search.method`) can drive
SEARCH_DECIDERS = tuple(name for name, cls in DECIDERS.items()
                        if cls.from_search_spec.__func__ is not Decider.from_search_spec.__func__)
