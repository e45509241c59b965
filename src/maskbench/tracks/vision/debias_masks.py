"""Papers A's and C's pruning methods on the vision track's frozen vanilla model (the cross-paper matrix, config
``vision.masks``), with a debiasing loss (``maskbench.objectives.losses``: product of experts or reweighting)
against the colour-only bias model (``colour_bias``), on the engine (``maskbench.masking``):

* ``movement_poe`` / ``movement_reweight`` (paper A): movement scores on the frozen weights, ``MovementTopK``
  keeping the top fraction of each matrix's scores, the kept fraction falling on the cubic schedule from 1 to
  ``1 - sparsity`` (paper A's code passes no warm-up: nn_pruning's -1 / -10); the loss is PoE or reweighting at
  full strength (paper A's);
* ``mask_training`` (paper C, Algorithm 2): magnitude-initialised real scores on the frozen weights
  (``ThresholdMaskTraining``, hard init), every matrix's threshold re-set to the target sparsity every
  ``reset_every`` steps and once more at the end (the saved mask meets it exactly);
* ``imp`` (paper C, Algorithm 1 with weight rewinding): the training budget cut into as many intervals as prunes;
  at the start of interval n every matrix is magnitude-pruned to n x ``imp_step`` of its original weights (pruned
  weights stay pruned), every weight is rewound to the vanilla model's value, and the surviving weights train with
  the debiasing loss (a fresh optimiser each interval, paper C's). Unlike paper C's BERT, the vanilla model's
  classifier has a trained start value, so it is rewound too. The weights change: the mask alone does not
  reproduce the run on the vanilla model (its record says so).

The strength knob of every one of these cells is the sparsity, paper A's movement masks included (paper A's own
knob is the loss; here its loss stays at paper A's full strength): the final sparsity is what paper C sweeps, it
puts the three methods at the same densities beside FFW's, and it is exactly met (``MovementTopK`` keeps a fixed
fraction per matrix, where ``movement_sigmoid``'s density would follow the scores). Larger is stronger.

The masked modules are the track's (``ffw.gate_targets``): every conv and linear weight, the classifier's too.
Sparsity is the pruned fraction of each matrix (local), as paper C's.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import torch
from torch import nn

from maskbench.masking.deciders import Magnitude, MovementTopK, ThresholdMaskTraining
from maskbench.masking.engine import MaskedModules, attach, plain_parameter_name
from maskbench.objectives.losses import get_loss
from maskbench.tracks.vision.ffw import gate_targets
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups

log = logging.getLogger(__name__)

METHODS = ("movement_poe", "movement_reweight", "mask_training", "imp")
METHOD_PAPER = {"movement_poe": "A", "movement_reweight": "A", "mask_training": "C", "imp": "C"}
DEBIAS_LOSSES = ("poe", "reweight")


@dataclass
class MaskSettings:
    """One run's settings (config ``vision.masks`` but its run lists)."""

    epochs: float = 2.0
    batch_size: int = 100
    score_lr: float = 0.01  # movement and mask-training scores (Adam)
    weight_lr: float = 0.001  # IMP's surviving weights (Adam, the vanilla MLP's rate)
    weight_decay: float = 0.0
    paper_c_loss: str = "poe"  # mask_training's and imp's debiasing loss
    reset_every: int = 50  # mask training: threshold reset interval (steps)
    imp_step: float = 0.1  # IMP: the fraction of the original weights pruned per interval

    def __post_init__(self):
        if self.paper_c_loss not in DEBIAS_LOSSES:
            raise ValueError(f"vision.masks.paper_c_loss {self.paper_c_loss!r} is unknown; choose one of "
                             f"{DEBIAS_LOSSES}")
        if not 0 < self.imp_step < 1:
            raise ValueError(f"vision.masks.imp_step must lie in (0, 1), got {self.imp_step}")

    def loss_of(self, method: str) -> str:
        if method not in METHODS:
            raise ValueError(f"vision.masks.methods: {method!r} is unknown; choose one of {METHODS}")
        return {"movement_poe": "poe", "movement_reweight": "reweight"}.get(method, self.paper_c_loss)


class ProbImages(torch.utils.data.Dataset):
    """An ``ImageDataset`` with each example's bias-model probabilities in its batches (``bias_probs``)."""

    def __init__(self, images, bias_probs: np.ndarray):
        if len(bias_probs) != len(images):
            raise ValueError(f"bias probabilities: {len(bias_probs)} rows for {len(images)} images")
        self.images, self.bias_probs = images, torch.as_tensor(bias_probs, dtype=torch.float32)

    def __len__(self) -> int:
        return len(self.images)

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        batch = self.images.__getitems__(indices)
        return {**batch, "bias_probs": self.bias_probs[torch.as_tensor(indices, dtype=torch.long)]}

    def __getitem__(self, i: int):
        return self.__getitems__([i])

    def collate(self, items):
        return items if isinstance(items, dict) else {k: torch.cat([it[k] for it in items]) for k in items[0]}


def debias_objective(loss_fn: Callable) -> Callable:
    """``fit``'s objective: the model's logits on the batch, the loss given the batch's bias probabilities."""

    def objective(model, batch):
        device = next(model.parameters()).device
        logits = model(batch["image"].to(device, non_blocking=True))
        return loss_fn(logits, batch["label"].to(device, non_blocking=True),
                       bias_probs=batch["bias_probs"].to(device, non_blocking=True)), {}

    return objective


def _hparams(settings: MaskSettings, epochs: float, lr: float, n: int) -> TrainHParams:
    return TrainHParams(epochs=epochs, batch_size=settings.batch_size, learning_rate=lr, weight_decay=0.0, warmup=0,
                        max_grad_norm=0.0, lr_schedule="constant", optimizer="adam",
                        log_every=max(1, math.ceil(n / settings.batch_size)))


def _steps(n: int, hp: TrainHParams) -> int:
    return int(math.ceil(n / hp.batch_size) * hp.epochs)


class _Resets:
    """Mask training's threshold resets (paper C): every ``every`` steps each matrix's threshold is re-set so that
    its scores alone meet the sparsity."""

    def __init__(self, masked: MaskedModules, sparsity: float, every: int):
        self.masked, self.sparsity, self.every = masked, sparsity, every

    def reset(self) -> None:
        for mask in self.masked.masks.values():
            self.masked.decider.reset_threshold(mask, self.sparsity)

    def __call__(self, step: int, total: int) -> None:
        if step % self.every == 0:
            self.reset()


def run_mask(method: str, model: nn.Module, data: ProbImages, sparsity: float, settings: MaskSettings, seed: int,
             device) -> tuple[dict[str, np.ndarray], dict]:
    """Train one method's mask on ``model`` (the vanilla one) at ``sparsity``; return the keep masks by module
    name and a record (loss, curve, seconds, exact density). The model is left with its masks detached: unchanged
    for the score-based methods, with IMP's retrained weights (pruned entries zeroed) for ``imp``."""
    if not 0 < sparsity < 1:
        raise ValueError(f"vision.masks.sparsities: {sparsity} is not a fraction strictly between 0 and 1")
    loss_name = settings.loss_of(method)
    loss_fn = get_loss(loss_name)
    targets = gate_targets(model, structured=False)
    model.to(device)
    started = time.perf_counter()
    if method == "imp":
        keep, curve = _imp(model, data, loss_fn, targets, sparsity, settings, seed, device)
    else:
        hp = _hparams(settings, settings.epochs, settings.score_lr, len(data))
        total = _steps(len(data), hp)
        if method == "mask_training":
            decider = ThresholdMaskTraining(sparsity, "hard", 2.0, 0.01)
        else:
            decider = MovementTopK(total, 1.0, 1.0 - sparsity, l1_lambda=0.0)
        masked = attach(model, decider, targets, "weight", family="vision", where="vision.masks")
        try:
            resets = _Resets(masked, sparsity, settings.reset_every) if method == "mask_training" else None
            groups = trainable_groups(model, settings.score_lr, 0.0, scores=masked, score_lr=settings.score_lr,
                                      weights=False)
            curve = fit(model, data, debias_objective(loss_fn), hp, seed, device, groups=groups,
                        step_hook=resets if resets is not None else masked.set_step, freeze_norm_stats=True)
            if resets is not None:
                resets.reset()  # the saved mask meets the sparsity exactly (paper C's saved_mask_sparsity final)
            keep = masked.hard_masks()
        finally:
            masked.detach()
    seconds = time.perf_counter() - started
    kept = sum(int(m.sum()) for m in keep.values())
    total_weights = sum(m.size for m in keep.values())
    record = {"method": method, "loss": loss_name, "sparsity_target": sparsity, "density": kept / total_weights,
              "train_seconds": seconds, "curve": curve, "settings": asdict(settings),
              "weights_retrained": method == "imp"}
    return keep, record


def _imp(model, data, loss_fn, targets, sparsity, settings: MaskSettings, seed, device):
    n_levels = round(sparsity / settings.imp_step)
    if n_levels < 1 or abs(n_levels * settings.imp_step - sparsity) > 1e-9:
        raise ValueError(f"vision.masks: imp sparsity {sparsity} is not a multiple of imp_step {settings.imp_step}")
    start = {k: v.detach().clone() for k, v in model.state_dict().items()}
    masked = attach(model, Magnitude(), targets, "weight", family="vision", train_weights=True,
                    where="vision.masks imp")
    curve = []
    try:
        hp = _hparams(settings, settings.epochs / n_levels, settings.weight_lr, len(data))
        for n in range(1, n_levels + 1):
            level = round(n * settings.imp_step, 10)
            masked.prune_to(level)
            _rewind(model, start)
            groups = trainable_groups(model, settings.weight_lr, settings.weight_decay, decay_by_name=False)
            part = fit(model, data, debias_objective(loss_fn), hp, seed + 10_000 * (n - 1), device, groups=groups)
            curve += [{**point, "imp_round": n, "imp_sparsity": level} for point in part]
            log.info("IMP round %d/%d: sparsity %.2f", n, n_levels, level)
        keep = masked.hard_masks()
    finally:
        masked.detach(keep_values=True)  # the retrained weights, pruned entries zero
    return keep, curve


@torch.no_grad()
def _rewind(model: nn.Module, start: dict[str, torch.Tensor]) -> None:
    """Every parameter back to its start value (into ``parametrizations.weight.original`` for a masked weight)."""
    for name, param in model.named_parameters():
        param.copy_(start[plain_parameter_name(name)])
