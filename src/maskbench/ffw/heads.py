"""Bias-extraction heads (paper D's "privacy head"): one linear layer per bias attribute on the bottleneck
features (whatever the track's ``FFWAdapter`` calls its features), trained with CE on the bias labels over
*detached* features, until its training loss plateaus.

The features of a frozen (or gated-but-fixed) model do not change while a head trains, so they are computed once
and the head trains on the cached matrix: the same updates as paper D's loop over images, at a fraction of the
cost. Paper D's head: SGD lr 0.1, momentum 0.9, weight decay 1e-4, batch 100, until the loss stops improving by
a relative 1e-3 for 5 epochs, or 200 epochs (docs/paper-d.md, "What runs").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from maskbench.precision import current
from maskbench.progress import Progress, batches_in


@dataclass
class HeadSettings:
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 1e-4
    batch_size: int = 100
    max_epochs: int = 200
    patience: int = 5
    rel_tol: float = 1e-3


@torch.no_grad()
def extract_features(adapter, model: nn.Module, loader) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(features, task labels, bias labels N x B) of every batch, the model in eval mode (its modes restored);
    ``adapter`` (``maskbench.ffw.core.FFWAdapter``) says how a batch becomes features, labels and bias labels."""
    modes = {m: m.training for m in model.modules()}
    model.eval()
    device = next(model.parameters()).device
    feats, labels, biases = [], [], []
    progress = Progress("features", batches_in(loader), "batch")
    for batch in loader:
        # the model's forward pass in the step's precision (CUDA autocast; nothing on the CPU); the features and the
        # small bias heads trained on them stay fp32
        with current().autocast(device):
            features = adapter.features(model, batch, device)
        feats.append(features.float().cpu())
        labels.append(adapter.labels(batch))
        biases.append(adapter.bias(batch))
        progress.update(1, len(feats[-1]))
    progress.close()
    for module, training in modes.items():
        module.training = training
    return torch.cat(feats), torch.cat(labels), torch.cat(biases)


def bias_accuracy(adapter, model: nn.Module, train_data, test_data, bias_classes: list[int], settings: HeadSettings,
                  seed: int) -> dict[str, float]:
    """Per bias attribute: a fresh linear head on the model's features, trained on ``train_data`` (detached
    features), its accuracy (%) on ``test_data`` (paper D's bias accuracy)."""
    train_feats, _, train_bias = extract_features(adapter, model, train_data)
    test_feats, _, test_bias = extract_features(adapter, model, test_data)
    out = {}
    for b, k in enumerate(bias_classes):
        head, _ = train_head(train_feats, train_bias[:, b], k, settings, seed + 101 * b)
        out[str(b)] = head_accuracy(head, test_feats, test_bias[:, b])
    return out


def head_optimizer(head: nn.Linear, settings: HeadSettings) -> torch.optim.SGD:
    """The head's SGD (paper D: lr 0.1, momentum 0.9, weight decay 1e-4)."""
    return torch.optim.SGD(head.parameters(), lr=settings.lr, momentum=settings.momentum,
                           weight_decay=settings.weight_decay)


def train_head(features: torch.Tensor, targets: torch.Tensor, num_classes: int, settings: HeadSettings,
               seed: int) -> tuple[nn.Linear, dict]:
    """A fresh linear head fitted on fixed features; returns it and {epochs, final_loss}."""
    generator = torch.Generator().manual_seed(seed)
    head = nn.Linear(features.shape[1], num_classes)
    with torch.no_grad():  # a seeded init independent of the global RNG
        bound = 1.0 / np.sqrt(features.shape[1])
        head.weight.uniform_(-bound, bound, generator=generator)
        head.bias.uniform_(-bound, bound, generator=generator)
    info = _fit(head, head_optimizer(head, settings), features, targets, settings, generator)
    return head, info


def refine_head(head: nn.Linear, optimizer: torch.optim.Optimizer, features: torch.Tensor, targets: torch.Tensor,
                settings: HeadSettings, seed: int) -> dict:
    """Train an existing head further (its weights and its optimiser's momentum carried on) on fixed features
    until its loss plateaus or ``settings.max_epochs`` (paper D's ``train_PH_double`` on the persistent privacy
    heads); returns {epochs, final_loss}."""
    return _fit(head, optimizer, features, targets, settings, torch.Generator().manual_seed(seed))


def online_head_step(head: nn.Linear, optimizer: torch.optim.Optimizer, features: torch.Tensor,
                     targets: torch.Tensor) -> float:
    """One SGD step of the head on its CE over one batch of (detached) features (paper D's per-batch privacy-head
    update during a gate epoch); returns the batch loss."""
    head.requires_grad_(True)
    try:
        # the head stays where it was trained (the CPU); the batch's features may be on the model's GPU
        where = head.weight.device
        loss = nn.functional.cross_entropy(head(features.detach().to(where)), targets.to(where))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    finally:
        head.requires_grad_(False)
    return float(loss.detach())


def _fit(head: nn.Linear, optimizer: torch.optim.Optimizer, features: torch.Tensor, targets: torch.Tensor,
         settings: HeadSettings, generator: torch.Generator) -> dict:
    head.requires_grad_(True)
    n = features.shape[0]
    best, bad, epochs_run, loss_value = float("inf"), 0, 0, float("nan")
    for epoch in range(1, settings.max_epochs + 1):
        epochs_run = epoch
        order = torch.randperm(n, generator=generator)
        total = 0.0
        for start in range(0, n, settings.batch_size):
            index = order[start:start + settings.batch_size]
            loss = nn.functional.cross_entropy(head(features[index]), targets[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.item() * len(index)
        loss_value = total / n
        # a plateau as torch's ReduceLROnPlateau reads one (mode min, relative threshold)
        if loss_value < best * (1 - settings.rel_tol):
            best, bad = loss_value, 0
        else:
            bad += 1
            if bad > settings.patience:
                break
    head.requires_grad_(False)
    return {"epochs": epochs_run, "final_loss": loss_value}


@torch.no_grad()
def head_accuracy(head: nn.Linear, features: torch.Tensor, targets: torch.Tensor) -> float:
    return 100.0 * float((head(features).argmax(dim=1) == targets).float().mean())
