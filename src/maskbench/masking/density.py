"""Kept and pruned counts of masks: the one place where a mask becomes a density or a sparsity.

A mask is ``{module name: array}`` with True (or non-zero) meaning the weight is kept. Without torch, so that
the report steps read mask files without loading a model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np


def as_bool(values) -> np.ndarray:
    arr = np.asarray(values)
    return arr if arr.dtype == np.bool_ else arr.astype(bool)


def kept_counts(masks: Mapping[str, object]) -> dict[str, tuple[int, int]]:
    """module -> (n_weights, n_kept), in the order of ``masks``."""
    counts = {}
    for name, values in masks.items():
        kept = as_bool(values)
        counts[name] = (int(kept.size), int(np.count_nonzero(kept)))
    return counts


def module_density(masks: Mapping[str, object]) -> dict[str, float]:
    """module -> kept fraction (NaN for a module without weights)."""
    return {name: n_kept / n if n else math.nan for name, (n, n_kept) in kept_counts(masks).items()}


def density(masks: Mapping[str, object]) -> float:
    """Kept fraction over all modules together (0.0 when there is no weight at all)."""
    counts = kept_counts(masks).values()
    return sum(n_kept for _, n_kept in counts) / max(1, sum(n for n, _ in counts))


def sparsity(masks: Mapping[str, object]) -> tuple[dict[str, float], float]:
    """Pruned fraction of every mask and over all of them together."""
    counts = kept_counts(masks)
    per_module = {name: 1.0 - n_kept / n if n else math.nan for name, (n, n_kept) in counts.items()}
    pruned = sum(n - n_kept for n, n_kept in counts.values())
    return per_module, pruned / max(1, sum(n for n, _ in counts.values()))
