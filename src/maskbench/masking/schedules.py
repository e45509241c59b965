"""Schedules of a value over training steps (movement pruning's threshold, gradual sparsity)."""

from __future__ import annotations


def cubic(step: float, total: float, start: float, end: float, warmup_start: float = 0, warmup_end: float = 0) -> float:
    """nn_pruning's cubic schedule: ``start`` for ``step <= warmup_start``, ``end`` after ``total - warmup_end``,
    and in between ``end + (start - end) * m**3`` with ``m = 1 - (step - w_i) / (total - (w_i + w_f))``.

    Paper A's code calls it without warm-up steps, so its w_i = -1 and w_f = -10 (method_details.md §1): the
    cubic then spans the whole run, ``m = 1 - (step + 1) / (total + 11)``. Paper C's gradual sparsity is the
    same curve with w_i = w_f = 0 over fractional epochs.
    """
    if total - (warmup_start + warmup_end) <= 0:
        raise ValueError(f"cubic schedule: total {total} leaves no room after warm-ups {warmup_start}, {warmup_end}")
    if step <= warmup_start:
        return float(start)
    if step > total - warmup_end:
        return float(end)
    m = 1.0 - (step - warmup_start) / (total - (warmup_start + warmup_end))
    return float(end + (start - end) * m**3)
