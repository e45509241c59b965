"""Whether a run's mechanism engaged, read from the run's own outputs, so that a table can tell "not run long enough
to act" from "acted and changed nothing".

A run is **engaged** when what its method changes did change:

- a mask (paper A's movement search, paper B's block and head pruning, paper D's FFW gates, a matrix cell's mask):
  it keeps less than ``MASK_KEPT_MAX`` (99.9 %) of the weights (or gates) it scores. For a movement search the
  share of scores past the final threshold *is* the pruned share, since the binary mask is 1[σ(S) > τ_f];
- a mask with a target sparsity (paper C's mask training and IMP): its reached sparsity is within
  ``SPARSITY_TOLERANCE`` (1 point) of the target;
- a fine-tuning: its last development accuracy is at least ``CHANCE_MARGIN`` (5) points above chance (100 / the
  number of labels). Its curve over the last epoch is reported beside it — "still rising" when the last epoch's
  dev accuracy gained more than ``RISING_POINTS`` (1 point) over the epoch before, "flat" otherwise, "one epoch"
  when there is nothing to compare — but does not decide engagement.

A row is engaged when every seed's run is; a row that is not reads **not engaged** in every table, never "no
effect". These thresholds are the project's one definition (docs/glossary.md); changing one changes every table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

MASK_KEPT_MAX = 0.999
SPARSITY_TOLERANCE = 0.01
CHANCE_MARGIN = 5.0
RISING_POINTS = 1.0
LOSS_TAIL = 0.25  # the share of a loss curve's logged points whose trend the table reports

ENGAGED = "engaged"
NOT_ENGAGED = "not engaged"


@dataclass(frozen=True)
class Engagement:
    """One run's engagement: ``kind`` (mask, sparsity_target, fine_tuning), ``engaged``, a reason in words and the
    measures it was read from (density, pruned share, reached and target sparsity, dev accuracy, trends)."""

    kind: str
    engaged: bool
    reason: str
    measures: dict = field(default_factory=dict)

    @property
    def word(self) -> str:
        return ENGAGED if self.engaged else NOT_ENGAGED

    def record(self) -> dict:
        out = asdict(self)
        out["word"] = self.word
        return out


def mask(density: float, what: str = "weights") -> Engagement:
    """A mask that keeps ``density`` (0-1) of the ``what`` it scores."""
    density = float(density)
    if not 0.0 <= density <= 1.0 or math.isnan(density):
        raise ValueError(f"density must be within [0, 1], got {density}")
    pruned = 1.0 - density
    engaged = density < MASK_KEPT_MAX
    reason = (f"prunes {100 * pruned:.3g} % of its {what}" if engaged else
              f"keeps {100 * density:.4g} % of its {what} (engaged below {100 * MASK_KEPT_MAX:g} %)")
    return Engagement("mask", engaged, reason, {"density": density, "pruned_share": pruned})


def loss_trend(curve: Sequence[Mapping], key: str = "train_loss") -> float:
    """The relative change of the logged ``key`` over the curve's last ``LOSS_TAIL`` of points (at least two):
    (last - first) / |first| of that tail; NaN with fewer than two logged points."""
    values = [float(p[key]) for p in curve if p.get(key) is not None and not _isnan(p.get(key))]
    if len(values) < 2:
        return math.nan
    tail = values[-max(2, math.ceil(LOSS_TAIL * len(values))):]
    return (tail[-1] - tail[0]) / abs(tail[0]) if tail[0] else math.nan


def mask_search(summary: Mapping) -> Engagement:
    """A movement search's ``.search.json`` (its density and its loss curve)."""
    found = mask(summary["density"])
    trend = loss_trend(summary.get("curve") or [])
    return Engagement(found.kind, found.engaged, found.reason, {**found.measures, "loss_tail_change": trend,
                                                                 "steps": summary.get("steps")})


def sparsity_target(reached: float, target: float) -> Engagement:
    """A mask trained or pruned to ``target`` sparsity (0-1) that reached ``reached``."""
    reached, target = float(reached), float(target)
    engaged = abs(reached - target) <= SPARSITY_TOLERANCE
    reason = (f"reaches {100 * reached:.1f} % sparsity of its {100 * target:g} % target" if engaged else
              f"reaches {100 * reached:.1f} % sparsity against a {100 * target:g} % target "
              f"(engaged within {100 * SPARSITY_TOLERANCE:g} point)")
    return Engagement("sparsity_target", engaged, reason, {"reached": reached, "target": target})


def dev_trend(dev_by_epoch: Sequence[float]) -> str:
    """"still rising" when the last epoch's dev accuracy gained more than RISING_POINTS over the one before,
    "flat" otherwise (a fall included), "one epoch" with a single point."""
    points = [float(v) for v in dev_by_epoch if not _isnan(v)]
    if len(points) < 2:
        return "one epoch"
    return "still rising" if points[-1] - points[-2] > RISING_POINTS else "flat"


def fine_tuning(dev_by_epoch: Sequence[float], n_labels: int) -> Engagement:
    """A fine-tuning with its development accuracy (percent) after each epoch and ``n_labels`` classes."""
    if n_labels < 2:
        raise ValueError(f"n_labels must be at least 2, got {n_labels}")
    points = [float(v) for v in dev_by_epoch if not _isnan(v)]
    if not points:
        raise ValueError("a fine-tuning's engagement needs at least one dev accuracy")
    chance = 100.0 / n_labels
    last = points[-1]
    engaged = last >= chance + CHANCE_MARGIN
    trend = dev_trend(points)
    reason = (f"dev {last:.1f} against chance {chance:.1f}, {trend}" if engaged else
              f"dev {last:.1f}: within {CHANCE_MARGIN:g} points of chance {chance:.1f}")
    return Engagement("fine_tuning", engaged, reason, {"dev_accuracy": last, "chance": chance, "trend": trend,
                                                       "epochs": len(points)})


def seeds_word(found: Sequence[Engagement | None]) -> str:
    """A row's word from its seeds' runs: "engaged" when every seed's is, "not engaged" (with how many seeds did not
    act) when one is not, "—" when no run of the row has a mechanism to judge (None)."""
    judged = [f for f in found if f is not None]
    if not judged:
        return "—"
    idle = sum(not f.engaged for f in judged)
    if not idle:
        return ENGAGED
    return NOT_ENGAGED if idle == len(judged) else f"{NOT_ENGAGED} ({idle} of {len(judged)} seeds)"


def _isnan(value) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return True
