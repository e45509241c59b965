"""Paper C's pruning methods (Liu et al., "A Win-win Deal", 2022) on top of the masking engine: the masks of mask
training (magnitude-initialised scores, ``deciders.ThresholdMaskTraining``) with a per-matrix ("local") sparsity
controller, and the fixed masks of iterative magnitude pruning (IMP) with optional weight rewinding. Their settings
are ``srnets.spec``'s typed specs; the counting and ranking rules are the engine's (``maskbench.masking.ranking``).

Conventions:

* sparsity s is the *pruned* fraction, counted as ``ranking.prune_count``;
* sparsity is *local*: every selected matrix meets the same s on its own (paper C, appendix A.1.2), rather
  than one global threshold over all matrices;
* masks are bool tensors/arrays of the weight's shape with True = kept, as ``maskbench.masking.apply.MaskSet``;
* weights are never written by a mask: masks are ``torch.nn.utils.parametrize`` parametrizations, so the
  stored tensor lives on as ``<module>.parametrizations.weight.original`` and removing the parametrization gives
  it back bit for bit.

IMP's masks are rank-based (exact counts, ties by position); mask training's threshold-based (see
``ranking.local_threshold``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.deciders import Magnitude, ThresholdMaskTraining
from maskbench.masking.engine import Masked, MaskedModules, attach, plain_parameter_name
from maskbench.masking.granularity import Weight
from maskbench.masking.ranking import ascending_rank_prune, prune_count
from maskbench.masking.schedules import cubic
from maskbench.tracks.nlu.srnets.spec import MaskTrainingSpec

_PARAMETRIZED = ".parametrizations."


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


def attach_mask_training(model: nn.Module, modules: list[str] | tuple[str, ...], spec: MaskTrainingSpec,
                         granularity="weight") -> MaskTraining:
    """Freeze the whole model and give each selected module magnitude-initialised scores (paper C, Alg. 2).

    ``modules`` are kinds or regular expressions (``selectors.select_modules``; paper C: the six encoder
    matrices of every layer, the pooler and the classifier). Biases are not masked, as in paper C's code.
    The initial mask meets ``spec.start_sparsity`` per matrix (see ``ranking.magnitude_init``).
    """
    decider = ThresholdMaskTraining(spec.start_sparsity, spec.init, spec.alpha, spec.phi)
    attached = attach(model, decider, modules, granularity, where="mask_training.modules")
    return MaskTraining(attached.decider, attached.masks, attached.modules)


class SparsityController:
    """Paper C's sparsity control for mask training, as a ``training.loop.fit`` step hook.

    Every ``spec.reset_every`` steps (step 0 included) every threshold is re-set to meet the scheduled sparsity
    exactly (per matrix); in between the thresholds stay put and the sparsity may drift as the scores train
    (paper C resets every ``logging_steps`` steps).

    Schedules (``spec.schedule``):
    * ``fixed``: s(step) = ``spec.sparsity`` throughout (paper C's default);
    * ``gradual``: the cubic schedule (Zhu & Gupta 2017; ``schedules.cubic`` without warm-up)
      s(step) = s_f + (s_i - s_f) * (1 - step / (f * total))**3 for step < f * total, then s_f, where
      f = ``spec.gradual_end`` is the fraction of training at which s_f is reached. Paper C's code counts
      fractional epochs, e / e_f; with e_f = f * epochs that is the same ratio step / (f * total).
      Paper C: s_i = 0.7, s_f = 0.9, f = 1, soft initialisation.
    """

    def __init__(self, masks: MaskTraining, spec: MaskTrainingSpec):
        self.masks = masks
        self.schedule = spec.schedule
        self.final_sparsity = spec.sparsity
        self.initial_sparsity = spec.start_sparsity
        self.final_fraction = spec.gradual_end
        self.reset_every = spec.reset_every
        self.keep_when_saturated = spec.keep_threshold_when_saturated
        self.current: float | None = None
        self.history: list[dict] = []

    def sparsity_at(self, step: int, total: int) -> float:
        """The scheduled sparsity at ``step`` of ``total`` optimiser steps."""
        if self.schedule == "fixed":
            return self.final_sparsity
        return cubic(step, self.final_fraction * max(1, int(total)), self.initial_sparsity, self.final_sparsity)

    def step_hook(self, step: int, total: int) -> None:
        """``training.loop.fit``'s hook (runs before each step's forward pass): reset the thresholds on schedule."""
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
