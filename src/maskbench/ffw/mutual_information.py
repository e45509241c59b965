"""The empirical mutual information between a bias attribute and a head's predicted distribution, as IRENE
(Tartaglione, BMVC 2022, ``irene/core.py``) computes it and paper D (FFW) minimises it: differentiable in the
probabilities, so its gradient reaches the model through the head.

With N samples, bias labels b_i in {0..K-1} (one-hot rows Y, N x K) and the head's softmax rows Q (N x K):

    P        = max(Y^T Q, 1e-15) / N          joint of (true bias, predicted bias), K x K
    p_b      = P 1          (row sums)        marginal of the true bias
    p_hat    = 1^T P        (column sums)     marginal of the prediction
    M        = max(p_b p_hat, 1e-15)          outer product
    MI       = sum_{jk} P_jk log(P_jk / M_jk) / log K

Dividing by log K (the entropy of a uniform K-class variable) maps the MI to [0, 1] for a balanced bias; it is 0
when prediction and bias are independent and 1 when the head predicts a uniform bias perfectly. As in IRENE the
clamp is applied to the count matrix Y^T Q before dividing by N, and the marginals come from the clamped joint.
``maskbench.metrics.mutual_information`` is the same estimator in numpy, for evaluation JSONs.
"""

from __future__ import annotations

import math

import torch

CLAMP = 1e-15


def empirical_mi(bias: torch.Tensor, probs: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Normalised empirical MI (a 0-d tensor, differentiable w.r.t. ``probs``) between ``bias`` — labels (N,) or
    one-hot rows (N, K) — and ``probs`` (N, K), a softmax over the K = ``num_classes`` bias classes."""
    if num_classes < 2:
        raise ValueError(f"empirical_mi: needs at least 2 bias classes, got {num_classes}")
    if probs.dim() != 2 or probs.shape[1] != num_classes:
        raise ValueError(f"empirical_mi: probs must be (N, {num_classes}), got {tuple(probs.shape)}")
    if bias.dim() == 1:
        onehot = torch.nn.functional.one_hot(bias.long(), num_classes).to(probs.dtype)
    elif bias.shape == probs.shape:
        onehot = bias.to(probs.dtype)
    else:
        raise ValueError(f"empirical_mi: bias must be labels (N,) or one-hot (N, {num_classes}), got "
                         f"{tuple(bias.shape)} for probs {tuple(probs.shape)}")
    n = probs.shape[0]
    if n == 0 or onehot.shape[0] != n:
        raise ValueError(f"empirical_mi: {onehot.shape[0]} bias labels for {n} probability rows")
    joint = torch.clamp(onehot.t() @ probs, min=CLAMP) / n
    marginal_bias = joint.sum(dim=1, keepdim=True)
    marginal_pred = joint.sum(dim=0, keepdim=True)
    marginals = torch.clamp(marginal_bias @ marginal_pred, min=CLAMP)
    return torch.sum(joint * torch.log(joint / marginals)) / math.log(num_classes)
