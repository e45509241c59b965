"""Training objectives, each a pure function of the main model's logits and the gold labels.

Every function keeps the signature ``loss(logits, labels, **extra) -> scalar tensor``; the training loop passes
the tensors it has as keywords (``bias_probs``, ``teacher_probs``, ``gate``) and hyper-parameters are bound with
``get_loss(name, **hparams)`` (a ``functools.partial``). Keywords a loss does not use are ignored.

Notation (one example i of a batch of N, C classes):
    z_i       logits of the main model (row of ``logits``)
    y_i       gold label
    p_b,i     bias model's probabilities (row of ``bias_probs``, sums to 1); p_b,i(y) = p_b,i[y_i] is the bias
              degree called "beta" in paper C section 3.3
    p_t,i     teacher probabilities (row of ``teacher_probs``; the CE-fine-tuned baseline's predictions)
    CE_i      -log softmax(z_i)[y_i]

Bias and teacher probabilities are treated as constants (detached): no gradient reaches them. Probabilities that
enter a log are clamped to at least ``EPS`` so that bias probabilities of exactly 0 stay finite.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import torch
import torch.nn.functional as F

from maskbench.objectives.needs import NEEDS  # noqa: F401 (re-exported: losses.NEEDS)

EPS = 1e-12

Loss = Callable[..., torch.Tensor]


# ----------------------------------------------------------------------------------------------- checks
def _float(t: torch.Tensor) -> torch.Tensor:
    """Compute in at least float32 (the original code casts fp16 logits with ``logits.float()``)."""
    return t.to(torch.promote_types(t.dtype, torch.float32))


def _check(logits: torch.Tensor, labels: torch.Tensor) -> None:
    if logits.dim() != 2:
        raise ValueError(f"logits must be N x C, got shape {tuple(logits.shape)}")
    if labels.shape != logits.shape[:1]:
        raise ValueError(f"labels must have shape ({logits.shape[0]},) to match logits {tuple(logits.shape)}, "
                         f"got {tuple(labels.shape)}")


def _probs(name: str, probs: torch.Tensor | None, logits: torch.Tensor, loss: str) -> torch.Tensor:
    """Validate an N x C probability tensor and return it detached, in the logits' dtype and device."""
    if probs is None:
        raise ValueError(f"loss {loss!r} needs {name} (N x C probabilities), got None")
    if probs.shape != logits.shape:
        raise ValueError(f"{name} must have the same shape as logits: {name} {tuple(probs.shape)} "
                         f"vs logits {tuple(logits.shape)}")
    return probs.detach().to(dtype=logits.dtype, device=logits.device)


def _at_label(probs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """p[i, y_i] for every row i."""
    return probs.gather(1, labels.unsqueeze(1)).squeeze(1)


def _weighted_mean(weights: torch.Tensor, per_example: torch.Tensor) -> torch.Tensor:
    """sum_i w_i l_i / sum_i w_i (0 if every weight is 0)."""
    return (weights * per_example).sum() / weights.sum().clamp_min(EPS)


# ----------------------------------------------------------------------------------------------- losses
def cross_entropy(logits: torch.Tensor, labels: torch.Tensor, **_: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy  L = -1/N * sum_i log softmax(z_i)[y_i]  (the baseline objective)."""
    return F.cross_entropy(logits, labels)


def product_of_experts(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
                       bias_weight: float = 1.0, **_: torch.Tensor) -> torch.Tensor:
    """Product of experts:  L = 1/N * sum_i CE( log softmax(z_i) + log p_b,i , y_i ).

    Paper C section 3.3 writes it as L_poe = -y . log softmax(log p_m + log p_b); Clark et al. (2019). Paper A
    uses it for its HypOnly mask (appendix B.2). Both original codes add log p_b to log_softmax(z) and call
    cross-entropy (A: ``ProductOfExperts`` takes probabilities and logs them, unclamped; C: ``BiasProductBaseline``
    receives log-probabilities). Here p_b is clamped to >= EPS before the log. Since CE is invariant to adding the
    same constant to every logit, a uniform bias gives plain CE.

    ``bias_weight`` w (the trade-off curves' strength knob, not in either paper) scales the bias expert's
    log-probabilities, CE(log softmax(z) + w log p_b): w = 1 is PoE, w = 0 plain CE, between them a bias expert
    at temperature 1/w.
    """
    _check(logits, labels)
    logits = _float(logits)
    p_b = _probs("bias_probs", bias_probs, logits, "poe")
    if bias_weight < 0:
        raise ValueError(f"poe: bias_weight must be >= 0, got {bias_weight}")
    log_bias = p_b.clamp_min(EPS).log()
    if bias_weight != 1.0:
        log_bias = bias_weight * log_bias
    return F.cross_entropy(F.log_softmax(logits, dim=1) + log_bias, labels)


def reweight_by_teacher(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
                        strength: float = 1.0, **_: torch.Tensor) -> torch.Tensor:
    """Example reweighting, normalised:  w_i = 1 - p_b,i(y);  L = sum_i w_i CE_i / sum_i w_i.

    This is what paper A actually trains with: its text says "focal loss" following Clark et al. (2019) (sections
    3 and B.2), but its code (``src/losses.py::ReweightByTeacher``, loss_fn ``reweight-by-teacher``) is this
    gamma-free reweighting by the weak learner's ("teacher's") probabilities. Paper C's code
    (``ReweightBaseline``) computes the same quantity from log-probabilities. A constant bias gives plain CE.

    A's ``reweight-by-teacher-scaled`` first divides the weights by their mean: with w'_i = w_i / mean(w),
    sum_i w'_i CE_i / sum_i w'_i = sum_i w_i CE_i / sum_i w_i -- the scale cancels, so it is the same loss and
    has no separate function here. If every weight is 0 (all p_b(y) = 1) the loss is 0 instead of 0/0.

    ``strength`` s in [0, 1] (the trade-off curves' knob, not in paper A): w_i = 1 - s p_b,i(y); s = 1 is the
    loss above, s = 0 plain CE.
    """
    _check(logits, labels)
    logits = _float(logits)
    p_b = _probs("bias_probs", bias_probs, logits, "reweight")
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"reweight: strength must lie in [0, 1] so that weights stay >= 0, got {strength}")
    at_label = _at_label(p_b, labels)
    weights = 1.0 - (at_label if strength == 1.0 else strength * at_label)
    return _weighted_mean(weights, F.cross_entropy(logits, labels, reduction="none"))


def reweight_beta(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
                  beta: float = 1.0, **_: torch.Tensor) -> torch.Tensor:
    """Example reweighting as paper C's text writes it:  L = 1/N * sum_i (1 - beta * p_b,i(y)) CE_i.

    Paper C appendix A.2, eq. (7): L_reweight = -(1 - beta_C) y . log p_m, where beta_C = p_b(y) is the bias
    degree (section 3.3) -- in C, "beta" is not a hyper-parameter. The hyper-parameter ``beta`` here (in [0, 1])
    scales the bias degree: beta = 1 is eq. (7) exactly, beta = 0 is plain CE. The batch is averaged with a plain
    mean (1/N), as the equation reads per example; C's code (``ReweightBaseline``) instead normalises by
    sum_i w_i -- that variant is ``reweight_by_teacher``.
    """
    if not 0.0 <= beta <= 1.0:
        raise ValueError(f"reweight_beta: beta must lie in [0, 1] so that weights stay >= 0, got {beta}")
    _check(logits, labels)
    logits = _float(logits)
    p_b = _probs("bias_probs", bias_probs, logits, "reweight_beta")
    weights = 1.0 - beta * _at_label(p_b, labels)
    return (weights * F.cross_entropy(logits, labels, reduction="none")).mean()


def focal_loss(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
               gamma: float = 1.0, **_: torch.Tensor) -> torch.Tensor:
    """Focal-style reweighting, normalised:  w_i = (1 - p_i(y))^gamma;  L = sum_i w_i CE_i / sum_i w_i.

    p_i(y) is
      - the bias model's probability p_b,i(y) when ``bias_probs`` is given: the "debiased focal loss" (Mahabadi
        et al. 2020; the bias-weighted reweighting of Schuster et al. 2019 / Clark et al. 2019 is gamma = 1). This
        is the "focal loss" paper A refers to (sections 2.2, 3, B.2); with gamma = 1 it equals
        ``reweight_by_teacher``, which is what A's code runs.
      - the main model's own probability softmax(z_i)[y_i], detached, when ``bias_probs`` is None: paper C's code
        ``FocalLoss`` (default gamma 1.0; defined but unused by C's scripts). Unlike Lin et al.'s focal loss
        no gradient flows through the weight.
    Normalisation by sum_i w_i follows both codes (not Lin et al.'s plain mean). gamma = 0 gives plain CE.
    """
    if gamma < 0:
        raise ValueError(f"focal_loss: gamma must be >= 0, got {gamma}")
    _check(logits, labels)
    logits = _float(logits)
    if bias_probs is None:
        p = F.softmax(logits, dim=1).detach()
    else:
        p = _probs("bias_probs", bias_probs, logits, "focal")
    weights = (1.0 - _at_label(p, labels)).clamp_min(0.0) ** gamma
    return _weighted_mean(weights, F.cross_entropy(logits, labels, reduction="none"))


def confidence_regularization(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
                              teacher_probs: torch.Tensor | None = None, **_: torch.Tensor) -> torch.Tensor:
    """Confidence regularisation (Utama et al. 2020a) as paper C implements it.

        s_ij = p_t,ij^(1 - p_b,i(y)) / sum_k p_t,ik^(1 - p_b,i(y))      (scaled teacher, constant)
        L    = 1/N * sum_i ( - sum_j s_ij log softmax(z_i)_j )

    Paper C appendix A.2 eq. (8) with beta = p_b(y); C's code ``SmoothedDistillLoss`` (teacher = probabilities of
    the CE-fine-tuned BERT on the training set). A biased example (p_b(y) -> 1) gets a flat target, an unbiased
    one (p_b(y) = 0) the teacher itself. C takes log(softmax(z)); log_softmax is used here (same value, stable).
    Following torch (and C's code), 0^0 = 1. Teacher and bias receive no gradient.
    """
    _check(logits, labels)
    logits = _float(logits)
    p_b = _probs("bias_probs", bias_probs, logits, "conf_reg")
    p_t = _probs("teacher_probs", teacher_probs, logits, "conf_reg")
    exponent = (1.0 - _at_label(p_b, labels)).unsqueeze(1)
    scaled = p_t.clamp_min(0.0) ** exponent
    scaled = scaled / scaled.sum(1, keepdim=True).clamp_min(EPS)
    return -(scaled * F.log_softmax(logits, dim=1)).sum(1).mean()


def learned_mixin(logits: torch.Tensor, labels: torch.Tensor, bias_probs: torch.Tensor | None = None,
                  gate: torch.Tensor | None = None, entropy_weight: float = 0.0, **_: torch.Tensor) -> torch.Tensor:
    """Learned-mixin (+H) of Clark et al. (2019).

        g_i  = softplus(gate_i) >= 0                       (gate_i: scalar the model computes from example i)
        L    = 1/N * sum_i CE( log softmax(z_i) + g_i log p_b,i , y_i )
               + entropy_weight * 1/N * sum_i H( softmax(g_i log p_b,i) ),   H(q) = - sum_j q_j log q_j

    entropy_weight = 0 is learned-mixin, > 0 is learned-mixin +H (the penalty stops g from collapsing to 0).
    Named in paper A section 2.2 (not used in its experiments); C's code has it as ``LearnedMixinBaseline``
    (gate = softplus(Linear(768, 1)(pooled hidden)), bias given as log-probabilities, unused by C's scripts).
    Here the gate's pre-activation is an input (N or N x 1), so the module producing it lives in the model.
    As g -> 0 the loss tends to plain CE (+ entropy_weight * log C).
    """
    if entropy_weight < 0:
        raise ValueError(f"learned_mixin: entropy_weight must be >= 0, got {entropy_weight}")
    _check(logits, labels)
    logits = _float(logits)
    p_b = _probs("bias_probs", bias_probs, logits, "learned_mixin")
    if gate is None:
        raise ValueError("loss 'learned_mixin' needs gate (N gate pre-activations), got None")
    if gate.dim() == 2 and gate.shape[1] == 1:
        gate = gate.squeeze(1)
    if gate.shape != logits.shape[:1]:
        raise ValueError(f"gate must have shape ({logits.shape[0]},) or ({logits.shape[0]}, 1) to match logits "
                         f"{tuple(logits.shape)}, got {tuple(gate.shape)}")
    g = F.softplus(gate.to(logits.dtype)).unsqueeze(1)
    scaled_bias = g * p_b.clamp_min(EPS).log()
    loss = F.cross_entropy(F.log_softmax(logits, dim=1) + scaled_bias, labels)
    if entropy_weight > 0:
        log_q = F.log_softmax(scaled_bias, dim=1)
        loss = loss + entropy_weight * -(log_q.exp() * log_q).sum(1).mean()
    return loss


# ----------------------------------------------------------------------------------------------- registry
LOSSES: dict[str, Loss] = {
    "ce": cross_entropy,
    "poe": product_of_experts,
    "reweight": reweight_by_teacher,
    "reweight_beta": reweight_beta,
    "focal": focal_loss,
    "conf_reg": confidence_regularization,
    "learned_mixin": learned_mixin,
}

_INPUTS = {"logits", "labels", "bias_probs", "teacher_probs", "gate"}


def hyperparameters(name: str) -> dict[str, object]:
    """The hyper-parameters loss ``name`` accepts, with their defaults."""
    fn = get_loss(name)
    return {p.name: p.default for p in inspect.signature(fn).parameters.values()
            if p.name not in _INPUTS and p.kind is not inspect.Parameter.VAR_KEYWORD}


def get_loss(name: str, **hparams: object) -> Loss:
    """The loss called ``name``, with ``hparams`` bound (e.g. ``get_loss("focal", gamma=2.0)``)."""
    try:
        fn = LOSSES[name]
    except KeyError:
        raise ValueError(f"loss {name!r} is unknown; choose one of {sorted(LOSSES)}") from None
    if not hparams:
        return fn
    allowed = hyperparameters(name)
    for key in hparams:
        if key not in allowed:
            raise ValueError(f"loss {name!r} has no hyper-parameter {key!r}; "
                             f"it accepts {sorted(allowed) or 'none'}")
    return functools.partial(fn, **hparams)
