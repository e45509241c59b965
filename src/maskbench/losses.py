"""Training objectives, each a pure function of the main model's logits and the gold labels.

Debiasing losses (product-of-experts, example reweighting, confidence regularisation) join this module with
the bias sources; every function keeps the signature ``loss(logits, labels, **extra) -> scalar tensor``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, **_: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy  L = -1/N * sum_i log softmax(z_i)[y_i]  (the baseline objective)."""
    return F.cross_entropy(logits, labels)


LOSSES = {"ce": cross_entropy}


def get_loss(name: str):
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"loss {name!r} is unknown; choose one of {sorted(LOSSES)}") from None
