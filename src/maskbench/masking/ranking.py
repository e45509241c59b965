"""Ranking a matrix's entries into a mask: how many entries a sparsity prunes, the threshold that prunes them, a
stable rank-based prune, and the magnitude initialisation of mask-training scores built on them.

The engine's deciders (``deciders.py``) and the tracks' pruning methods import these; this module imports no other
masking module, so nothing in ``maskbench.masking`` imports in a circle.

Conventions:

* sparsity s is the *pruned* fraction; a matrix with ``n`` entries at sparsity s prunes exactly
  ``k = prune_count(n, s) = int(round(s * n))`` of them (Python's ``round``: exact halves go to the even
  integer, e.g. 0.5 of 5 entries prunes 2). Rounding rather than truncating keeps ``0.29 * 100 =
  28.999999999999996`` at 29.
* masks are bool tensors of the weight's shape with True = kept.

Two ways of turning a ranking into a mask are used, on purpose:

* **rank-based** (``ascending_rank_prune``, ``magnitude_init(kind="hard")``): a stable ascending sort and the
  first k entries pruned. Always exact, ties broken by flat position (lower index pruned first). Used where the
  mask itself is the product, so that "s = 30 %" means exactly ``prune_count(n, 0.3)`` zeros.
* **threshold-based** (``local_threshold``, soft initialisation, threshold resets during mask training):
  ``keep = scores > t``. A threshold is what mask training learns against, and a threshold cannot separate
  tied scores: see ``local_threshold`` for the rule.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

InitKind = Literal["hard", "soft"]
INIT_KINDS = ("hard", "soft")


# ----------------------------------------------------------------------------------------------- counting
def check_sparsity(sparsity: float) -> float:
    sparsity = float(sparsity)
    if not 0.0 <= sparsity <= 1.0:  # also refuses NaN
        raise ValueError(f"sparsity must lie in [0, 1] (the pruned fraction), got {sparsity}")
    return sparsity


def prune_count(numel: int, sparsity: float) -> int:
    """k = int(round(sparsity * numel)): how many of ``numel`` entries a matrix at ``sparsity`` prunes.

    The single definition every function of this module uses, so a mask and its reported sparsity agree."""
    return int(round(check_sparsity(sparsity) * int(numel)))


def local_threshold(scores: torch.Tensor, sparsity: float) -> float:
    """The threshold t for which ``keep = scores > t`` prunes k = ``prune_count(numel, sparsity)`` entries.

    t = v_(k), the k-th smallest score (``kthvalue``), with the edges k = 0 -> t = -inf (keep everything)
    and k = numel -> t = +inf (prune everything). Pruned are the entries with ``score <= t``.

    Why v_(k) and not a midpoint between v_(k) and v_(k+1): any t in [v_(k), v_(k+1)) prunes the same k
    entries, and v_(k) is an existing score, so ``scores > t`` is decided exactly (a float midpoint of two
    adjacent floats can round onto v_(k+1) and prune one entry too many). It is also paper C's code's rule
    (``reset_threshold``: the k-th smallest score).

    Ties: when v_(k) == v_(k+1) no threshold separates the tied entries. Then every entry equal to v_(k) is
    pruned, i.e. ``#(scores <= v_(k))`` entries, ``#(scores <= v_(k)) - k`` more than asked: the sparsity
    errs on the high side and is never below the target (a subnetwork reported at 90 % is at least 90 %
    sparse). Without ties at the boundary the count is exact.
    """
    flat = scores.detach().flatten()
    k = prune_count(flat.numel(), sparsity)
    if k == 0:
        return -math.inf
    if k == flat.numel():
        return math.inf
    if torch.isnan(flat).any():
        raise ValueError("local_threshold: the scores contain NaN; no threshold orders them")
    return float(flat.kthvalue(k).values)


def ascending_rank_prune(values: torch.Tensor, k: int) -> torch.Tensor:
    """Bool mask (True = kept) pruning the k smallest ``values``; ties broken by flat position (stable)."""
    flat = values.detach().flatten()
    keep = torch.ones(flat.numel(), dtype=torch.bool, device=flat.device)
    if k:
        keep[torch.argsort(flat, stable=True)[:k]] = False
    return keep.view_as(values)


# ------------------------------------------------------------------------------------- initialisation
def magnitude_init(weight: torch.Tensor, sparsity: float, kind: InitKind, alpha: float,
                   phi: float) -> tuple[torch.Tensor, float]:
    """Initial real-valued mask scores S and threshold t of one matrix (paper C, eq. 5 and 6).

    * ``hard`` (eq. 5): S_ij = 0 if W_ij is among the ``prune_count(numel, s)`` smallest |W| (stable rank, ties
      by position, so exactly k are 0), else alpha * phi; t = phi. With alpha > 1 the initial mask
      ``S > t`` is exactly the magnitude-pruning mask, and a kept score must move by (alpha - 1) * phi before
      it flips: alpha sets how sticky the magnitude mask is (paper C's values: ``MaskTrainingSpec``).
    * ``soft`` (eq. 6): S = |W|, t = ``local_threshold(|W|, s)``: the same initial mask (up to ties), but
      the scores keep the magnitudes' ordering, so small-magnitude kept weights flip first; paper C uses it
      with gradual sparsity, where the hard variant trained badly.

    Returns fresh float scores of the weight's shape (no gradient, not sharing memory with W).
    """
    if kind not in INIT_KINDS:
        raise ValueError(f"magnitude_init: kind {kind!r} is unknown; choose one of {INIT_KINDS}")
    magnitude = weight.detach().abs()
    k = prune_count(magnitude.numel(), sparsity)
    if kind == "soft":
        return magnitude.clone(), local_threshold(magnitude, sparsity)
    if alpha * phi <= phi:
        raise ValueError(f"magnitude_init(hard): alpha * phi = {alpha * phi} must exceed phi = {phi}, or the kept "
                         "scores would not pass the threshold (paper C requires alpha >= 1; 1 keeps nothing)")
    keep = ascending_rank_prune(magnitude, k)
    scores = torch.zeros_like(magnitude)
    scores[keep] = alpha * phi
    return scores, float(phi)
