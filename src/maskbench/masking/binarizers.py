"""Scores -> binary masks with a straight-through gradient: the forward pass thresholds, the backward pass
hands the mask's gradient to the scores unchanged (the identity estimator nn_pruning uses, no sigmoid
derivative)."""

from __future__ import annotations

import math

import torch


class _Threshold(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores: torch.Tensor, threshold: float) -> torch.Tensor:
        return (scores > threshold).to(scores.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


class _TopK(torch.autograd.Function):
    @staticmethod
    def forward(ctx, scores: torch.Tensor, keep: float) -> torch.Tensor:
        return topk_mask(scores, keep).to(scores.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return grad, None


def threshold_ste(scores: torch.Tensor, threshold: float) -> torch.Tensor:
    """1 where ``scores > threshold``, else 0; d mask / d scores = identity."""
    return _Threshold.apply(scores, threshold)


def topk_mask(scores: torch.Tensor, keep: float) -> torch.Tensor:
    """Bool mask of the ``int(keep * numel)`` highest scores of the tensor (ties broken by position, as a
    stable descending sort does)."""
    if not 0.0 <= keep <= 1.0:
        raise ValueError(f"top-k keep fraction must lie in [0, 1], got {keep}")
    flat = scores.detach().flatten()
    n_keep = int(keep * flat.numel())
    out = torch.zeros(flat.numel(), dtype=torch.bool, device=scores.device)
    if n_keep:
        order = torch.argsort(flat, descending=True, stable=True)
        out[order[:n_keep]] = True
    return out.view_as(scores)


def topk_ste(scores: torch.Tensor, keep: float) -> torch.Tensor:
    """1 on the top ``keep`` fraction of the scores, else 0; straight-through gradient."""
    return _TopK.apply(scores, keep)


def sigmoid_threshold_as_score(tau: float) -> float:
    """The score threshold equivalent to ``sigmoid(S) > tau`` (so the forward pass needs no sigmoid)."""
    if tau <= 0.0:
        return -math.inf
    if tau >= 1.0:
        return math.inf
    return math.log(tau / (1.0 - tau))


def widened(grad: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``grad`` in ``dtype`` (the scores' fp32) where it came in another (a bf16 matmul's), else itself."""
    return grad if grad.dtype == dtype else grad.to(dtype)


class _MaskedWeight(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight: torch.Tensor, scores: torch.Tensor, threshold) -> torch.Tensor:
        pruned = scores <= threshold
        ctx.save_for_backward(weight, pruned)
        ctx.scores_dtype = scores.dtype
        return weight.masked_fill(pruned, 0.0)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        weight, pruned = ctx.saved_tensors
        grad_weight = grad.masked_fill(pruned, 0.0) if ctx.needs_input_grad[0] else None
        grad_scores = widened(grad, ctx.scores_dtype) * weight if ctx.needs_input_grad[1] else None
        return grad_weight, grad_scores, None


class _ScaledWeight(torch.autograd.Function):
    @staticmethod
    def forward(ctx, weight: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(weight, mask)
        return weight * mask.to(weight.dtype)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        weight, mask = ctx.saved_tensors
        grad_weight = grad * mask.to(grad.dtype) if ctx.needs_input_grad[0] else None
        grad_mask = widened(grad, mask.dtype) * weight if ctx.needs_input_grad[1] else None
        return grad_weight, grad_mask


def masked_weight(weight: torch.Tensor, scores: torch.Tensor, threshold: float | torch.Tensor) -> torch.Tensor:
    """``W' = W * 1[S > t]`` in one pass, with the straight-through gradient ``dL/dS = dL/dW' * W``.

    The same values and gradients as ``weight * threshold_ste(scores, t)`` without materialising a float mask;
    every score gets the gradient its mask entry would, pruned ones included, which lets a weight come back.
    ``threshold`` may be a float or a 0-dim tensor (a per-module buffer)."""
    return _MaskedWeight.apply(weight, scores, threshold)


def scaled_weight(weight: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``W * m`` with ``m`` (a float mask, fp32) cast to W's dtype: a low-precision (bf16/fp16) frozen weight
    masked in its own precision. The mask's gradient ``dL/dW' * W`` is formed in the mask's dtype (fp32), not
    rounded to W's."""
    return _ScaledWeight.apply(weight, mask)
