"""Schedules of a value over training steps: cubic (movement pruning's threshold, gradual sparsity), linear
(paper B's threshold), constant, and plateau-driven (paper D's temperature)."""

from __future__ import annotations


def cubic(step: float, total: float, start: float, end: float, warmup_start: float = 0, warmup_end: float = 0) -> float:
    """nn_pruning's cubic schedule: ``start`` for ``step <= warmup_start``, ``end`` after ``total - warmup_end``,
    and in between ``end + (start - end) * m**3`` with ``m = 1 - (step - w_i) / (total - (w_i + w_f))``.

    Paper A's code calls it without warm-up steps, so its w_i = -1 and w_f = -10 (docs/paper-a.md, "Mask search"): the
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


def linear(step: float, total: float, start: float, end: float) -> float:
    """``start`` at step 0 rising (or falling) linearly to ``end`` at ``total``, then ``end`` (paper B's
    threshold tau, 0 -> 0.1 over training)."""
    if total <= 0:
        raise ValueError(f"linear schedule: total must be positive, got {total}")
    fraction = min(max(step / total, 0.0), 1.0)
    return float(start + (end - start) * fraction)


def constant(step: float, total: float, start: float, end: float | None = None) -> float:
    """``start`` throughout."""
    return float(start)


SCHEDULES = {"cubic": cubic, "linear": linear, "constant": constant}


class Plateau:
    """A value lowered when a monitored score stops improving (paper D's temperature; torch's ReduceLROnPlateau for
    the "plateau" learning-rate schedule, ``training.hooks.LRPlateau``).

    ``update(score)`` after every evaluation: a score better than the best by more than ``threshold`` (an absolute
    margin, or with ``relative`` a fraction of the best, torch's "rel" mode) resets the count, otherwise after
    ``patience`` evaluations without improvement the value is multiplied by ``factor`` (and the count restarts);
    the ``cooldown`` evaluations after a lowering count as neither. ``stop`` turns True once the value would fall
    below ``minimum`` — the run's stop criterion. ``mode`` is "max" (accuracy) or "min" (a loss).
    """

    def __init__(self, value: float, factor: float = 0.5, patience: int = 2, minimum: float = 0.0,
                 threshold: float = 0.0, mode: str = "max", relative: bool = False, cooldown: int = 0):
        if not 0.0 < factor < 1.0:
            raise ValueError(f"plateau schedule: factor must lie in (0, 1), got {factor}")
        if patience < 0 or mode not in ("max", "min"):
            raise ValueError(f"plateau schedule: patience must be >= 0 and mode max or min, got {patience}, {mode!r}")
        if cooldown < 0 or threshold < 0 or minimum < 0:
            raise ValueError(f"plateau schedule: cooldown, threshold and minimum must be >= 0, got {cooldown}, "
                             f"{threshold}, {minimum}")
        self.value, self.factor, self.patience = float(value), float(factor), int(patience)
        self.minimum, self.threshold, self.mode = float(minimum), float(threshold), mode
        self.relative, self.cooldown = bool(relative), int(cooldown)
        self.best: float | None = None
        self.waited = 0
        self.cooling = 0
        self.stop = False
        self.history: list[dict] = []

    def _improved(self, score: float) -> bool:
        if self.best is None:
            return True
        margin = self.threshold * abs(self.best) if self.relative else self.threshold
        return score > self.best + margin if self.mode == "max" else score < self.best - margin

    def update(self, score: float) -> float:
        """Record one evaluation; return the (possibly lowered) value."""
        if self._improved(score):
            self.best, self.waited = score, 0
        else:
            self.waited += 1
        if self.cooling > 0:
            self.cooling -= 1
            self.waited = 0
        if self.waited > self.patience:
            lowered = self.value * self.factor
            if lowered < self.minimum:
                self.stop = True
            else:
                self.value = lowered
            self.waited, self.cooling = 0, self.cooldown
        self.history.append({"score": float(score), "value": self.value, "stop": self.stop})
        return self.value

    STATE = ("value", "best", "waited", "cooling", "stop", "history")

    def state(self) -> dict:
        """What a resumed run needs to go on as if never stopped."""
        return {key: (list(getattr(self, key)) if key == "history" else getattr(self, key)) for key in self.STATE}

    def load_state(self, state: dict) -> None:
        for key in self.STATE:
            setattr(self, key, list(state[key]) if key == "history" else state[key])
