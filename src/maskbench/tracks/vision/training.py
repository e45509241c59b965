"""Vanilla training of the vision track's models (paper D trains them from scratch on the biased split, then
never changes a weight again), and the magnitude-pruning baseline (paper D figure 6), both on the shared loop and
engine."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from maskbench.masking.deciders import Magnitude
from maskbench.masking.engine import attach
from maskbench.train import TrainHParams, fit


def classification_objective(model, batch):
    device = next(model.parameters()).device
    logits = model(batch["image"].to(device))
    return nn.functional.cross_entropy(logits, batch["label"].to(device)), {}


def train_vanilla(model: nn.Module, train_data, hp: TrainHParams, seed: int, device, evaluate=None,
                  resume=None, hooks=()) -> list[dict]:
    """Train every parameter with CE on the biased split. One parameter group: paper D's optimisers decay every
    parameter alike (torch's SGD / Adam ``weight_decay``), unlike BERT's no-decay list."""
    groups = [{"name": "all", "params": [p for p in model.parameters() if p.requires_grad],
               "lr": hp.learning_rate, "weight_decay": hp.weight_decay}]
    return fit(model, train_data, classification_objective, hp, seed, device, evaluate, groups=groups,
               resume=resume, hooks=hooks)


def magnitude_masks(model: nn.Module, targets: list[str], sparsity: float) -> dict[str, np.ndarray]:
    """Layer-wise magnitude pruning of ``targets`` at ``sparsity`` (each module keeps its largest |w|), without
    retraining: the keep masks by module name. The model is left as it was."""
    masked = attach(model, Magnitude(), targets, "weight", family="vision", train_weights=True,
                    where="magnitude baseline")
    try:
        masked.prune_to(sparsity)
        return masked.hard_masks()
    finally:
        masked.detach()


@torch.no_grad()
def apply_keep(model: nn.Module, keep: dict[str, np.ndarray]) -> None:
    """Zero the pruned weights in place (for a pruned model that is evaluated or saved as it is)."""
    modules = dict(model.named_modules())
    for name, mask in keep.items():
        weight = modules[name].weight
        weight.mul_(torch.from_numpy(mask).to(weight.device, weight.dtype))
