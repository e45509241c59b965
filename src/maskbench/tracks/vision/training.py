"""Vanilla training of the vision track's models (paper D trains them from scratch on the biased split, then
never changes a weight again), and the magnitude-pruning baseline (paper D figure 6), both on the shared loop and
engine."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from maskbench.masking.deciders import Magnitude
from maskbench.masking.engine import attach
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups


def classification_objective(model, batch):
    device = next(model.parameters()).device
    logits = model(batch["image"].to(device, non_blocking=True))
    return nn.functional.cross_entropy(logits, batch["label"].to(device, non_blocking=True)), {}


def augment_images(images: torch.Tensor, crop_padding: int = 0, hflip: bool = False,
                   fill: torch.Tensor | float = 0.0) -> torch.Tensor:
    """torchvision's RandomCrop(size, padding) then RandomHorizontalFlip() on a normalised N x C x H x W batch,
    per image, drawing from torch's global generator (seeded by the run, saved by a resumable run): pad every side
    with ``fill`` (the normalised value of a black pixel, as torchvision pads raw pixels with 0), take an H x W
    window at a uniform offset in [0, 2 * padding], mirror it left-right with probability 1/2."""
    n, _, h, w = images.shape
    out = images
    if crop_padding:
        p = crop_padding
        padded = torch.empty((n, images.shape[1], h + 2 * p, w + 2 * p), dtype=images.dtype, device=images.device)
        padded[:] = torch.as_tensor(fill, dtype=images.dtype, device=images.device).view(1, -1, 1, 1)
        padded[:, :, p:p + h, p:p + w] = images
        offsets = torch.randint(0, 2 * p + 1, (n, 2))
        out = torch.stack([padded[i, :, dy:dy + h, dx:dx + w] for i, (dy, dx) in enumerate(offsets.tolist())])
    if hflip:
        flip = torch.rand(n) < 0.5
        out = torch.where(flip.view(-1, 1, 1, 1).to(out.device), out.flip(-1), out)
    return out


def augmented_objective(crop_padding: int, hflip: bool, fill: torch.Tensor):
    """The CE objective on augmented training batches (paper D's CIFAR-10-C recipe: crop with padding 4, flip)."""

    def objective(model, batch):
        images = augment_images(batch["image"], crop_padding, hflip, fill)
        return classification_objective(model, {**batch, "image": images})

    return objective


def train_vanilla(model: nn.Module, train_data, hp: TrainHParams, seed: int, device, evaluate=None,
                  resume=None, hooks=(), objective=classification_objective, lr_plateau=None) -> list[dict]:
    """Train every parameter with CE on the biased split. One parameter group: paper D's optimisers decay every
    parameter alike (torch's SGD / Adam ``weight_decay``), unlike BERT's no-decay list. ``lr_plateau`` drives the
    "plateau" schedule (``training.hooks.LRPlateau``)."""
    groups = trainable_groups(model, hp.learning_rate, hp.weight_decay, decay_by_name=False)
    return fit(model, train_data, objective, hp, seed, device, evaluate, groups=groups,
               resume=resume, hooks=hooks, lr_plateau=lr_plateau)


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
