"""Bias-extraction heads on a vision model's bottleneck: the shared heads of ``maskbench.ffw.heads`` (paper D's
"privacy head"), with the features read as ``VisionModel.features`` gives them."""

from __future__ import annotations

import torch
from torch import nn

from maskbench.ffw.heads import (  # noqa: F401 (re-exported)
    HeadSettings,
    head_accuracy,
    head_optimizer,
    online_head_step,
    refine_head,
    train_head,
)
from maskbench.ffw.heads import extract_features as _extract_features
from maskbench.tracks.vision.ffw_adapter import VISION


def extract_features(model: nn.Module, loader) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(features, task labels, bias labels N x B) of every batch, the model in eval mode (its modes restored)."""
    return _extract_features(VISION, model, loader)
