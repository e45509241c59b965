"""Paper C's run settings as typed specs, validated here and nowhere else: one dataclass per method (mask training,
IMP, retraining), built from the JSON a rule passes (``--spec``) with ``from_dict``.

Every default of paper C's methods is written once, in these fields (config ``srnets.mask_training`` and
``srnets.select_after`` leave a key unset to take it). A sweep's runs are ``dataclasses.replace`` of one spec,
which re-runs the same validation.

Sparsity is the *pruned* fraction throughout.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from maskbench.masking.ranking import INIT_KINDS

SCHEDULE_KINDS = ("fixed", "gradual")
SAVED_MASK_SPARSITIES = ("final", "initial")


def _spec_from_dict(cls, values: dict, where: str):
    if not isinstance(values, dict):
        raise ValueError(f"{where}: a spec is a JSON object of {cls.__name__} fields, got {values!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; known: {sorted(known)}")
    missing = sorted(f.name for f in dataclasses.fields(cls) if f.name not in values
                     and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    if missing:
        raise ValueError(f"{where}: field(s) {missing} missing")
    return cls(**values)


def _check_modules(modules, where: str):
    if modules is None:
        return None
    if not (isinstance(modules, (list, tuple)) and modules and all(isinstance(m, str) for m in modules)):
        raise ValueError(f"{where}.modules must be a non-empty list of module kinds or regexes, got {modules!r}")
    return tuple(modules)


def _check_flag(value, name: str, where: str) -> bool:
    if value not in (0, 1, True, False):
        raise ValueError(f"{where}.{name} must be true or false (1 or 0), got {value!r}")
    return bool(value)


@dataclass(frozen=True)
class MaskTrainingSpec:
    """One mask-training run (paper C, Algorithm 2) on frozen weights."""

    sparsity: float  # the target pruned fraction of every masked matrix
    init: str = "hard"  # magnitude initialisation: hard (eq. 5) or soft (eq. 6)
    alpha: float = 2.0  # hard init: kept scores start at alpha * phi (paper C: 2)
    phi: float = 0.01  # hard init: the threshold (paper C: 0.01)
    schedule: str = "fixed"  # fixed, or gradual (cubic from initial_sparsity)
    initial_sparsity: float | None = None  # gradual: the starting sparsity (paper C: 0.7 -> 0.9)
    gradual_end: float = 1.0  # gradual: the fraction of training at which `sparsity` is reached
    reset_every: int = 1000  # threshold reset interval (steps; paper C's logging_steps)
    eval_every: int = 1000  # dev evaluation interval (steps)
    # only steps >= this fraction of training are selection candidates (paper C B.3.3: 0.7 on a fine-tuned start;
    # the rules give 0 on a pre-trained one)
    select_after: float = 0.7
    saved_mask_sparsity: str = "final"  # the sparsity the saved mask's thresholds are re-set to: final or initial
    score_first_and_last: bool = True  # also score the initial mask and the last step
    # also score the dev set before the selection window (false: skip those evaluations, which select nothing and
    # are only recorded; each evaluation draws one number from torch's generator, so the scores then train on
    # another random stream, as under another seed)
    score_before_window: bool = True
    keep_threshold_when_saturated: bool = False  # paper C's code: leave a threshold whose reset would saturate
    modules: tuple[str, ...] | None = None  # kinds or regexes to mask (None: paper C's, srnets.DEFAULT_MODULES)

    def __post_init__(self):
        where = "mask_training"
        set_ = object.__setattr__
        for name in ("sparsity", "alpha", "phi", "gradual_end", "select_after", "initial_sparsity"):
            value = getattr(self, name)
            if value is not None:
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ValueError(f"{where}.{name} must be a number, got {value!r}")
                set_(self, name, float(value))
        if not 0.0 < float(self.sparsity) < 1.0:  # also refuses NaN
            raise ValueError(f"{where}.sparsity must lie in (0, 1) (the pruned fraction), got {self.sparsity}")
        if self.init not in INIT_KINDS:
            raise ValueError(f"{where}.init {self.init!r} is unknown; choose one of {INIT_KINDS}")
        if self.schedule not in SCHEDULE_KINDS:
            raise ValueError(f"{where}.schedule {self.schedule!r} is unknown; choose one of {SCHEDULE_KINDS}")
        if self.schedule == "gradual":
            if self.initial_sparsity is None:
                raise ValueError(f"{where}: schedule gradual needs initial_sparsity (paper C: 0.7 -> 0.9)")
            if not 0.0 <= self.initial_sparsity <= self.sparsity:
                raise ValueError(f"{where}.initial_sparsity must lie in [0, sparsity = {self.sparsity}], got "
                                 f"{self.initial_sparsity}")
        elif self.initial_sparsity is not None:
            raise ValueError(f"{where}.initial_sparsity is only used by schedule gradual")
        if not 0.0 < self.gradual_end <= 1.0:
            raise ValueError(f"{where}.gradual_end must lie in (0, 1], got {self.gradual_end}")
        if self.init == "hard" and not self.alpha * self.phi > self.phi:
            raise ValueError(f"{where}: alpha {self.alpha} x phi {self.phi} must exceed phi (alpha > 1, phi > 0)")
        for name in ("reset_every", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{where}.{name} must be a positive number of steps, got {value!r}")
        if not 0.0 <= self.select_after <= 1.0:
            raise ValueError(f"{where}.select_after must lie in [0, 1] (a fraction of training), got "
                             f"{self.select_after}")
        if self.saved_mask_sparsity not in SAVED_MASK_SPARSITIES:
            raise ValueError(f"{where}.saved_mask_sparsity must be one of {SAVED_MASK_SPARSITIES}, got "
                             f"{self.saved_mask_sparsity!r}")
        for name in ("score_first_and_last", "score_before_window", "keep_threshold_when_saturated"):
            set_(self, name, _check_flag(getattr(self, name), name, where))
        set_(self, "modules", _check_modules(self.modules, where))

    @property
    def start_sparsity(self) -> float:
        """The sparsity of the initial mask: the target, or a gradual schedule's start."""
        return self.sparsity if self.schedule == "fixed" else self.initial_sparsity

    @property
    def saved_sparsity(self) -> float:
        """The sparsity the saved mask's thresholds are re-set to."""
        return self.sparsity if self.saved_mask_sparsity == "final" else self.start_sparsity

    @classmethod
    def from_dict(cls, values: dict) -> MaskTrainingSpec:
        return _spec_from_dict(cls, values, "mask_training")


@dataclass(frozen=True)
class ImpSpec:
    """One iterative-magnitude-pruning run (paper C, Algorithm 1): ``rounds`` intervals, each pruning another
    ``step`` of every matrix's original weights, up to ``final_sparsity``; ``rewind``: weights back to the start
    checkpoint after every prune (IMP-rewind)."""

    rewind: bool = False
    final_sparsity: float = 0.9  # the last level (paper C's highest)
    rounds: int = 10  # pruning intervals; each lasts total // rounds steps
    step: float = 0.1  # the fraction of the original weights pruned per round
    modules: tuple[str, ...] | None = None  # kinds or regexes to prune (None: paper C's, srnets.DEFAULT_MODULES)

    def __post_init__(self):
        where = "imp"
        object.__setattr__(self, "rewind", _check_flag(self.rewind, "rewind", where))
        for name in ("final_sparsity", "step"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{where}.{name} must be a number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise ValueError(f"{where}.rounds must be >= 1, got {self.rounds!r}")
        if not 0.0 < self.step < 1.0:
            raise ValueError(f"{where}.step must lie in (0, 1), got {self.step}")
        if not 0.0 < self.final_sparsity < 1.0:
            raise ValueError(f"{where}.final_sparsity must lie in (0, 1), got {self.final_sparsity}")
        n_levels = round(self.final_sparsity / self.step)
        if abs(n_levels * self.step - self.final_sparsity) > 1e-9:
            raise ValueError(f"{where}.final_sparsity {self.final_sparsity} is not a multiple of step {self.step}")
        if n_levels > self.rounds:
            raise ValueError(f"{where}.final_sparsity {self.final_sparsity} needs {n_levels} prunes, more than "
                             f"rounds {self.rounds}")
        object.__setattr__(self, "modules", _check_modules(self.modules, where))

    @property
    def levels(self) -> list[float]:
        """The sparsity after every prune, rounded to 10 decimals so that 3 x 0.1 reads 0.3."""
        return [round(n * self.step, 10) for n in range(1, round(self.final_sparsity / self.step) + 1)]

    @property
    def method(self) -> str:
        """The name outputs record: imp, or imp_rewind."""
        return "imp_rewind" if self.rewind else "imp"

    def schedule(self, total_steps: int) -> list[tuple[int, float]]:
        """When IMP prunes and to which sparsity: [(step, sparsity), ...]. Training is cut into ``rounds`` intervals
        of total_steps // rounds steps (paper C: 0.1 t_max); prune n happens at step (n - 1) x interval, the first
        at step 0 (Algorithm 1 prunes whenever t mod dt == 0), bringing every matrix to ``levels[n - 1]``."""
        if total_steps < self.rounds:
            raise ValueError(f"imp: {total_steps} steps cannot hold {self.rounds} pruning intervals")
        interval = total_steps // self.rounds
        return [((n - 1) * interval, level) for n, level in enumerate(self.levels, 1)]

    @classmethod
    def from_dict(cls, values: dict) -> ImpSpec:
        return _spec_from_dict(cls, values, "imp")


@dataclass(frozen=True)
class RetrainSpec:
    """Paradigm (b): fine-tune the start weights under a fixed mask found elsewhere."""

    mask_classifier: bool = False  # apply the mask's classifier entry too (paper C: no, the head trains dense)

    def __post_init__(self):
        object.__setattr__(self, "mask_classifier", _check_flag(self.mask_classifier, "mask_classifier", "retrain"))

    @classmethod
    def from_dict(cls, values: dict) -> RetrainSpec:
        return _spec_from_dict(cls, values, "retrain")
