"""Paper C's pruning methods (Liu et al., "A Win-win Deal", 2022) on top of the masking engine: mask training
with magnitude initialisation and a per-matrix ("local") sparsity constraint, and iterative magnitude pruning
(IMP) with optional weight rewinding.

Conventions shared by every function here:

* sparsity s is the *pruned* fraction; a matrix with ``n`` entries at sparsity s prunes exactly
  ``k = prune_count(n, s) = int(round(s * n))`` of them (Python's ``round``: exact halves go to the even
  integer, e.g. 0.5 of 5 entries prunes 2). Rounding rather than truncating keeps ``0.29 * 100 =
  28.999999999999996`` at 29.
* sparsity is *local*: every selected matrix meets the same s on its own (paper C, appendix A.1.2), rather
  than one global threshold over all matrices.
* masks are bool tensors/arrays of the weight's shape with True = kept, as ``maskbench.masking.apply.MaskSet``.
* weights are never written by a mask: masks are ``torch.nn.utils.parametrize`` parametrizations, so the
  stored tensor lives on as ``<module>.parametrizations.weight.original`` and removing the parametrization gives
  it back bit for bit.

Two ways of turning a ranking into a mask are used, on purpose:

* **rank-based** (``magnitude_init(kind="hard")``, ``magnitude_masks``): a stable ascending sort of |W| and
  the first k entries pruned. Always exact, ties broken by flat position (lower index pruned first). Used
  where the mask itself is the product (IMP's masks, the hard initial mask), so that "s = 30 %" means exactly
  ``prune_count(n, 0.3)`` zeros.
* **threshold-based** (``local_threshold``, soft initialisation, threshold resets during mask training):
  ``keep = scores > t``. A threshold is what mask training learns against, and a threshold cannot separate
  tied scores: see ``local_threshold`` for the rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.deciders import Magnitude, ThresholdMaskTraining
from maskbench.masking.engine import Masked, MaskedModules, attach, plain_parameter_name
from maskbench.masking.granularity import Weight
from maskbench.masking.schedules import cubic

InitKind = Literal["hard", "soft"]
ScheduleKind = Literal["fixed", "gradual"]

INIT_KINDS = ("hard", "soft")
SCHEDULE_KINDS = ("fixed", "gradual")
_PARAMETRIZED = ".parametrizations."


# ----------------------------------------------------------------------------------------------- counting
def _check_sparsity(sparsity: float) -> float:
    sparsity = float(sparsity)
    if not 0.0 <= sparsity <= 1.0:  # also refuses NaN
        raise ValueError(f"sparsity must lie in [0, 1] (the pruned fraction), got {sparsity}")
    return sparsity


def prune_count(numel: int, sparsity: float) -> int:
    """k = int(round(sparsity * numel)): how many of ``numel`` entries a matrix at ``sparsity`` prunes.

    The single definition every function of this module uses, so a mask and its reported sparsity agree."""
    return int(round(_check_sparsity(sparsity) * int(numel)))


def local_threshold(scores: torch.Tensor, sparsity: float) -> float:
    """The threshold t for which ``keep = scores > t`` prunes k = ``prune_count(numel, sparsity)`` entries.

    t = v_(k), the k-th smallest score (``kthvalue``), with the edges k = 0 -> t = -inf (keep everything)
    and k = numel -> t = +inf (prune everything). Pruned are the entries with ``score <= t``.

    Why v_(k) and not a midpoint between v_(k) and v_(k+1): any t in [v_(k), v_(k+1)) prunes the same k
    entries, and v_(k) is an existing score, so ``scores > t`` is decided exactly (a float midpoint of two
    adjacent floats can round onto v_(k+1) and prune one entry too many). It is also paper C's code's rule
    (``reset_threshold``: the k-th smallest score).

    Ties: when v_(k) == v_(k+1) no threshold separates the tied entries. Then every entry equal to v_(k) is
    pruned, i.e. ``#(scores <= v_(k))`` entries, ``#(scores <= v_(k)) - k`` more than asked: the sparsity
    errs on the high side and is never below the target (a subnetwork reported at 90 % is at least 90 %
    sparse). Without ties at the boundary the count is exact.
    """
    flat = scores.detach().flatten()
    k = prune_count(flat.numel(), sparsity)
    if k == 0:
        return -math.inf
    if k == flat.numel():
        return math.inf
    if torch.isnan(flat).any():
        raise ValueError("local_threshold: the scores contain NaN; no threshold orders them")
    return float(flat.kthvalue(k).values)


def ascending_rank_prune(values: torch.Tensor, k: int) -> torch.Tensor:
    """Bool mask (True = kept) pruning the k smallest ``values``; ties broken by flat position (stable)."""
    flat = values.detach().flatten()
    keep = torch.ones(flat.numel(), dtype=torch.bool, device=flat.device)
    if k:
        keep[torch.argsort(flat, stable=True)[:k]] = False
    return keep.view_as(values)


# ------------------------------------------------------------------------------------- initialisation
def magnitude_init(weight: torch.Tensor, sparsity: float, kind: InitKind = "hard", alpha: float = 2.0,
                   phi: float = 0.01) -> tuple[torch.Tensor, float]:
    """Initial real-valued mask scores S and threshold t of one matrix (paper C, eq. 5 and 6).

    * ``hard`` (eq. 5): S_ij = 0 if W_ij is among the ``prune_count(numel, s)`` smallest |W| (stable rank, ties
      by position, so exactly k are 0), else alpha * phi; t = phi. With alpha > 1 the initial mask
      ``S > t`` is exactly the magnitude-pruning mask, and a kept score must move by (alpha - 1) * phi before
      it flips: alpha sets how sticky the magnitude mask is. Paper C: alpha = 2, phi = 0.01.
    * ``soft`` (eq. 6): S = |W|, t = ``local_threshold(|W|, s)``: the same initial mask (up to ties), but
      the scores keep the magnitudes' ordering, so small-magnitude kept weights flip first; paper C uses it
      with gradual sparsity, where the hard variant trained badly.

    Returns fresh float scores of the weight's shape (no gradient, not sharing memory with W).
    """
    if kind not in INIT_KINDS:
        raise ValueError(f"magnitude_init: kind {kind!r} is unknown; choose one of {INIT_KINDS}")
    magnitude = weight.detach().abs()
    k = prune_count(magnitude.numel(), sparsity)
    if kind == "soft":
        return magnitude.clone(), local_threshold(magnitude, sparsity)
    if alpha * phi <= phi:
        raise ValueError(f"magnitude_init(hard): alpha * phi = {alpha * phi} must exceed phi = {phi}, or the kept "
                         "scores would not pass the threshold (paper C requires alpha >= 1; 1 keeps nothing)")
    keep = ascending_rank_prune(magnitude, k)
    scores = torch.zeros_like(magnitude)
    scores[keep] = alpha * phi
    return scores, float(phi)


# ------------------------------------------------------------------------------------------ mask training
class MaskTraining(MaskedModules):
    """The masks of one mask-training run (``deciders.ThresholdMaskTraining`` on the engine): per module a score
    tensor and a threshold buffer that only ``reset_thresholds`` moves — between two resets the mask moves
    because the scores do, so the sparsity may drift away from the target (paper C, Algorithm 2, line 14)."""

    def reset_thresholds(self, sparsity: float, keep_when_saturated: bool = False) -> dict[str, float]:
        """Re-set every module's threshold so that each matrix alone meets ``sparsity`` (local control);
        ``keep_when_saturated``: see ``ThresholdMaskTraining.reset_threshold``."""
        return {name: self.decider.reset_threshold(mask, sparsity, keep_when_saturated)
                for name, mask in self.masks.items()}

    def thresholds(self) -> dict[str, float]:
        return {name: float(mask.threshold) for name, mask in self.masks.items()}

    def pruned_counts(self) -> dict[str, int]:
        return {name: int((mask.scores.detach() <= mask.threshold).sum()) for name, mask in self.masks.items()}

    def module_sparsity(self) -> dict[str, float]:
        """Pruned fraction of each masked matrix."""
        counts = self.pruned_counts()
        return {name: counts[name] / max(1, mask.scores.numel()) for name, mask in self.masks.items()}

    def sparsity(self) -> float:
        """Pruned fraction over all masked matrices together (paper C's |theta_pr|: only the masked ones)."""
        pruned = sum(self.pruned_counts().values())
        return pruned / max(1, sum(mask.scores.numel() for mask in self.masks.values()))


def attach_mask_training(model: nn.Module, modules: list[str] | tuple[str, ...], sparsity: float,
                         init: InitKind = "hard", alpha: float = 2.0, phi: float = 0.01,
                         granularity="weight") -> MaskTraining:
    """Freeze the whole model and give each selected module magnitude-initialised scores (paper C, Alg. 2).

    ``modules`` are kinds or regular expressions (``selectors.select_modules``; paper C: the six encoder
    matrices of every layer, the pooler and the classifier). Biases are not masked, as in paper C's code.
    The initial mask meets ``sparsity`` per matrix (see ``magnitude_init``).
    """
    if init not in INIT_KINDS:
        raise ValueError(f"magnitude_init: kind {init!r} is unknown; choose one of {INIT_KINDS}")
    attached = attach(model, ThresholdMaskTraining(sparsity, init, alpha, phi), modules, granularity,
                      where="mask_training.modules")
    return MaskTraining(attached.decider, attached.masks, attached.modules)


class SparsityController:
    """Paper C's sparsity control for mask training, as a ``train.fit`` step hook.

    Every ``reset_every`` steps (step 0 included) every threshold is re-set to meet the scheduled sparsity
    exactly (per matrix); in between the thresholds stay put and the sparsity may drift as the scores train
    (paper C resets every ``logging_steps`` = 1000 steps).

    Schedules:
    * ``fixed``: s(step) = ``final_sparsity`` throughout (paper C's default);
    * ``gradual``: the cubic schedule (Zhu & Gupta 2017; ``schedules.cubic`` without warm-up)
      s(step) = s_f + (s_i - s_f) * (1 - step / (f * total))**3 for step < f * total, then s_f, where
      f = ``final_fraction`` is the fraction of training at which s_f is reached. Paper C's code counts
      fractional epochs, e / e_f; with e_f = f * epochs that is the same ratio step / (f * total).
      Paper C: s_i = 0.7, s_f = 0.9, f = 1, soft initialisation.
    """

    def __init__(self, masks: MaskTraining, final_sparsity: float, reset_every: int = 1000,
                 schedule: ScheduleKind = "fixed", initial_sparsity: float | None = None,
                 final_fraction: float = 1.0, keep_when_saturated: bool = False):
        if schedule not in SCHEDULE_KINDS:
            raise ValueError(f"sparsity schedule {schedule!r} is unknown; choose one of {SCHEDULE_KINDS}")
        if schedule == "gradual" and initial_sparsity is None:
            raise ValueError("a gradual sparsity schedule needs initial_sparsity (paper C: 0.7 -> 0.9)")
        if not 0.0 < final_fraction <= 1.0:
            raise ValueError(f"final_fraction must lie in (0, 1], got {final_fraction}")
        if int(reset_every) < 1:
            raise ValueError(f"reset_every must be a positive number of steps, got {reset_every}")
        self.masks = masks
        self.schedule = schedule
        self.final_sparsity = _check_sparsity(final_sparsity)
        self.initial_sparsity = _check_sparsity(final_sparsity if initial_sparsity is None else initial_sparsity)
        self.final_fraction = float(final_fraction)
        self.reset_every = int(reset_every)
        self.keep_when_saturated = bool(keep_when_saturated)
        self.current: float | None = None
        self.history: list[dict] = []

    def sparsity_at(self, step: int, total: int) -> float:
        """The scheduled sparsity at ``step`` of ``total`` optimiser steps."""
        if self.schedule == "fixed":
            return self.final_sparsity
        return cubic(step, self.final_fraction * max(1, int(total)), self.initial_sparsity, self.final_sparsity)

    def step_hook(self, step: int, total: int) -> None:
        """``train.fit``'s hook (runs before each step's forward pass): reset the thresholds on schedule."""
        if step % self.reset_every:
            return
        sparsity = self.sparsity_at(step, total)
        self.masks.reset_thresholds(sparsity, self.keep_when_saturated)
        self.current = sparsity
        self.history.append({"step": int(step), "target": sparsity, "pruned": self.masks.pruned_counts(),
                             "sparsity": self.masks.sparsity()})

    __call__ = step_hook


# ------------------------------------------------------------------------------------------------------ IMP
def _magnitude_mask_of(module: nn.Module) -> Masked | None:
    if not parametrize.is_parametrized(module, "weight"):
        return None
    found = [p for p in module.parametrizations.weight if isinstance(p, Masked) and isinstance(p.decider, Magnitude)]
    return found[0] if found else None


def magnitude_masks(model_modules: Mapping[str, nn.Linear], sparsity: float,
                    current: Mapping[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """One IMP pruning step: per matrix, the mask with ``prune_count(numel, sparsity)`` zeros in total.

    The count is of the ORIGINAL number of weights, so successive calls at 0.1, 0.2, ... each prune another
    10 % of the original matrix (paper C's code removes 1/(10 - r) of the remaining weights at round r, the
    same thing). Already pruned weights (``current`` False) stay pruned; the rest are ranked by |W| of the
    effective weight (stable ascending, ties by position) and the smallest pruned, so the count is exact.
    Local per matrix, as paper C (``--prune_global_imp false``).

    ``current``: previous masks (True = kept) by name; None (or a missing name) takes the mask attached with
    ``apply_fixed_masks`` if the module has one, else all weights alive. Asking for fewer pruned weights than
    already are is an error: IMP never regrows.
    """
    out: dict[str, torch.Tensor] = {}
    for name, module in model_modules.items():
        weight = module.weight.detach()
        if current is not None and name in current:
            alive = torch.as_tensor(current[name], device=weight.device).to(torch.bool)
        else:
            attached = _magnitude_mask_of(module)
            alive = ~attached.pruned_weights() if attached is not None else torch.ones_like(weight, dtype=torch.bool)
        if alive.shape != weight.shape:
            raise ValueError(f"magnitude_masks: mask of {name!r} has shape {tuple(alive.shape)}, weight "
                             f"{tuple(weight.shape)}")
        k = prune_count(weight.numel(), sparsity)
        already = int((~alive).sum())
        if k < already:
            raise ValueError(f"magnitude_masks: {name!r} already has {already} pruned weights, more than the "
                             f"{k} of sparsity {sparsity}; IMP only adds pruned weights")
        # dead entries rank first (-1 < any |W|), so the first k of the order are the dead ones plus the
        # k - already smallest alive ones
        ranked = weight.abs().to(torch.float32).masked_fill(~alive, -1.0)
        out[name] = ascending_rank_prune(ranked, k)
    return out


def imp_schedule(total_steps: int, rounds: int = 10, step_fraction: float = 0.1,
                 final_sparsity: float | None = 0.9) -> list[tuple[int, float]]:
    """When IMP prunes and to which sparsity: [(step, sparsity), ...] in step order.

    Training is cut into ``rounds`` intervals of dt = total_steps // rounds steps (paper C: dt = 0.1 t_max);
    pruning n = 1, 2, ... happens at step (n - 1) * dt, the first at step 0 (Algorithm 1 prunes whenever
    t mod dt == 0), and brings every matrix to n * ``step_fraction`` of its original weights (10 % more each
    time). Pruning stops at ``final_sparsity`` (default 0.9, paper C's highest level: the default 10
    intervals then give 9 prunes and one last interval of training at 90 %), or after ``rounds`` prunes when
    ``final_sparsity`` is None. Sparsities are rounded to 10 decimals so that 3 x 0.1 reads 0.3.
    """
    if rounds < 1 or not 0.0 < step_fraction <= 1.0:
        raise ValueError(f"imp_schedule: need rounds >= 1 and step_fraction in (0, 1], got {rounds}, {step_fraction}")
    if total_steps < rounds:
        raise ValueError(f"imp_schedule: {total_steps} steps cannot hold {rounds} pruning intervals")
    interval = total_steps // rounds
    limit = 1.0 if final_sparsity is None else _check_sparsity(final_sparsity)
    events = []
    for n in range(1, rounds + 1):
        sparsity = round(min(1.0, n * step_fraction), 10)
        if sparsity > limit + 1e-9:
            break
        events.append(((n - 1) * interval, sparsity))
    return events


_MAGNITUDE = Magnitude()


def apply_fixed_masks(modules: Mapping[str, nn.Module], masks: Mapping[str, torch.Tensor]) -> dict[str, Masked]:
    """Attach (or, on later IMP rounds, update in place) a magnitude mask per module, with the given keep masks.

    The weights keep requires_grad as they were: IMP trains the surviving weights. Updating rather than
    stacking a second parametrization keeps ``parametrizations.weight.original`` the one stored tensor.
    """
    attached: dict[str, Masked] = {}
    for name, keep in masks.items():
        if name not in modules:
            raise KeyError(f"apply_fixed_masks: no module {name!r} among {sorted(modules)[:4]}...")
        module = modules[name]
        keep = torch.as_tensor(keep).to(device=module.weight.device, dtype=torch.bool)
        existing = _magnitude_mask_of(module)
        if existing is None:
            if parametrize.is_parametrized(module, "weight"):
                raise ValueError(f"apply_fixed_masks: {name!r} carries another parametrization; detach it first")
            existing = Masked(_MAGNITUDE, Weight(), module.weight.detach(), name).to(module.weight.device)
            parametrize.register_parametrization(module, "weight", existing, unsafe=True)
        if keep.shape != existing.keep.shape:
            raise ValueError(f"apply_fixed_masks: mask of {name!r} has shape {tuple(keep.shape)}, weight "
                             f"{tuple(existing.keep.shape)}")
        existing.keep = keep.detach().clone()
        attached[name] = existing
    return attached


def fixed_masks(modules: Mapping[str, nn.Module]) -> dict[str, np.ndarray]:
    """The attached IMP masks (True = kept) as numpy bool arrays, e.g. for ``MaskSet``."""
    out = {}
    for name, module in modules.items():
        attached = _magnitude_mask_of(module)
        if attached is not None:
            out[name] = attached.hard_mask().cpu().numpy().astype(bool)
    return out


def _excluded(name: str, exclude: Iterable[str]) -> bool:
    dotted = f".{name}."
    return any(f".{prefix.strip('.')}." in dotted for prefix in exclude)


@torch.no_grad()
def rewind_weights(model: nn.Module, pretrained_state: Mapping[str, torch.Tensor],
                   exclude: Iterable[str] = ("classifier",)) -> list[str]:
    """Copy the pre-trained values back into every parameter not excluded (IMP with weight rewinding).

    Parameters are matched by their unmasked name (``plain_parameter_name``), so a state_dict taken before any
    mask was attached fits; the copy is into ``parametrizations.weight.original``, so the masks stay attached
    and keep zeroing the pruned weights. ``exclude`` names module paths (dotted components, e.g.
    ``"classifier"``) that keep their trained values: paper C rewinds the encoder (keys containing ``bert``)
    but not the freshly initialised classifier, which has no pre-trained value. Parametrization internals
    (e.g. mask-training scores) are not weights and are left alone. Values are copied bit for bit (same
    dtype required). Returns the rewound names; a missing or misshapen pre-trained tensor is an error.

    The optimiser must be re-created afterwards (its moments belong to the old trajectory): paper C re-creates
    optimiser and LR schedule after every prune.
    """
    exclude = tuple(exclude)
    rewound = []
    for name, param in model.named_parameters():
        if _PARAMETRIZED in name and not name.endswith(".original"):
            continue
        plain = plain_parameter_name(name)
        if _excluded(plain, exclude):
            continue
        source = pretrained_state.get(plain, pretrained_state.get(name))
        if source is None:
            raise KeyError(f"rewind_weights: the pre-trained state has no {plain!r}; exclude it or pass a "
                           "complete state_dict")
        if source.shape != param.shape or source.dtype != param.dtype:
            raise ValueError(f"rewind_weights: {plain!r} is {tuple(param.shape)} {param.dtype} in the model but "
                             f"{tuple(source.shape)} {source.dtype} in the pre-trained state")
        param.copy_(source)
        rewound.append(plain)
    return rewound
