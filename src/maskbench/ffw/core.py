"""FFW, paper D's "debiasing surgeon", on any model: gates on a frozen model, trained so that the task stays solved
while a bias-extraction head can no longer read the bias from the features the task classifier reads; weights
(or units) whose gate ends below 0 are removed. No weight of the model changes.

What is track-specific sits behind an ``FFWAdapter``: how a batch becomes features (the classifier's input) and
task logits, the batch's task labels and bias attributes, which modules carry gates at which granularity, and how a
dataset is batched in file order. Everything else is here and shared: the ``temperature_gate`` decider with paper
D's forward min(2 sigmoid(m / T), 1) and gates initialised at 0 (the gated model's outputs equal the vanilla
model's bit for bit), the objective

    loss = alpha * CE(task) + gamma * mean_b MI_b,

MI_b the normalised empirical mutual information between bias attribute b and its head's softmax
(``mutual_information.empirical_mi``), the head fixed during the gate step (its gradient reaches the model, the
head itself does not move), and ``FFWSchedule``, a hook of the loop doing what paper D's outer loop does between
gate epochs: re-trains the heads on the current features (detached), lowers T by ``temperature_factor`` after more
than ``gate_patience`` epochs without a relative ``mi_rel_tol`` improvement of the validation MI, snapshots the
pruned gates at every drop (a fresh head's bias accuracy on the validation split decides the best snapshot), and
stops when T falls below ``min_temperature`` or after ``max_gate_epochs``.

How the heads follow the gated model is selectable (``head_update``, ``validation_mi``; paper D's code: online
heads, refined after each epoch before the validation MI is measured; ours by default: a fresh head per epoch,
the validation MI measured with it after the epoch). The tracks' modules (``tracks/vision/ffw.py``,
``tracks/nlu/ffw.py``) document what their adapter reads and the departures of their setting.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field
from typing import ClassVar, Protocol

import torch
from torch import nn

from maskbench.ffw.heads import (
    HeadSettings,
    bias_accuracy,
    extract_features,
    head_optimizer,
    online_head_step,
    refine_head,
    train_head,
)
from maskbench.ffw.mutual_information import empirical_mi
from maskbench.masking.deciders import TemperatureGate
from maskbench.masking.engine import MaskedModules, attach
from maskbench.resume import Resume
from maskbench.training.hooks import Hook
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups

log = logging.getLogger("maskbench.ffw")
HEAD_UPDATES = ("refit", "online")
VALIDATION_MI = ("pre_epoch", "refined")


class FFWAdapter(Protocol):
    """What FFW needs to know about a track's model and batches."""

    family: str  # the model family of the engine's module kinds (``masking.module_kinds.FAMILIES``)

    def features(self, model: nn.Module, batch: dict, device) -> torch.Tensor:
        """The features the task classifier reads (N x D, on ``device``, differentiable w.r.t. the gates)."""

    def logits(self, model: nn.Module, features: torch.Tensor) -> torch.Tensor:
        """The task logits computed from ``features``."""

    def labels(self, batch: dict) -> torch.Tensor:
        """The batch's task labels (N,)."""

    def bias(self, batch: dict) -> torch.Tensor:
        """The batch's bias attributes (N x B, one column per attribute, integer classes)."""

    def gate_plan(self, model: nn.Module, structured: bool) -> tuple[list[str], object, bool]:
        """(targets, granularity, gate_unit_output) for ``engine.attach``."""

    def loader(self, data, batch_size: int):
        """Batches of ``data`` in file order (feature extraction, validation)."""

    # optional: ``task_term(model, batch, device, masked) -> (features, term)`` replaces CE(task) in the objective
    # (``gate_objective``); an adapter without a task head (the gender track's) defines it


@dataclass
class FFWSettings:
    CONFIG_KEY: ClassVar[str] = "ffw"  # where the settings sit in the config (error messages)
    structured: bool = False
    gamma: float = 10.0
    alpha: float = 1.0
    gate_lr: float = 1e-3
    gate_weight_decay: float = 1e-4
    # the gates' starting value m0 (paper D: 0). Any m0 >= 0 leaves the gated model bit-identical to the vanilla one
    # (min(2 sigmoid(m / T), 1) = 1); m0 > 0 is a margin a gate must be pushed through before it is pruned
    gate_init: float = 0.0
    batch_size: int = 100
    temperature: float = 1.0
    temperature_factor: float = 0.1
    gate_patience: int = 5
    mi_rel_tol: float = 0.05
    min_temperature: float = 1e-8
    max_gate_epochs: int = 200
    # how the bias heads follow the gated model: "refit" (ours) a fresh head fitted before each gate epoch and
    # fixed during it; "online" (paper D's code) the same heads throughout, an SGD step on their CE every gate batch
    # and refined (warm, until a plateau) after each gate epoch and after each temperature drop
    head_update: str = "refit"
    # which heads measure the validation MI that drives the temperature: "pre_epoch" (ours) the heads the epoch
    # trained against; "refined" (paper D's code) heads brought up to date on the gated model after the epoch
    validation_mi: str = "pre_epoch"
    head: HeadSettings = field(default_factory=HeadSettings)

    def __post_init__(self):
        for key, value, choices in (("head_update", self.head_update, HEAD_UPDATES),
                                    ("validation_mi", self.validation_mi, VALIDATION_MI)):
            if value not in choices:
                raise ValueError(f"{self.CONFIG_KEY}.{key}: {value!r} is unknown; choose one of {', '.join(choices)}")

    @classmethod
    def from_dict(cls, values: dict):
        values = dict(values)
        head = HeadSettings(**values.pop("head", {}))
        return cls(**values, head=head)


def attach_gates(adapter: FFWAdapter, model: nn.Module, settings: FFWSettings) -> MaskedModules:
    if settings.gate_init < 0:
        raise ValueError(f"{settings.CONFIG_KEY}.gate_init: {settings.gate_init} would prune every weight at the "
                         "start; use a value >= 0")
    decider = TemperatureGate(init=settings.gate_init, temperature=settings.temperature, forward="two_sigmoid")
    targets, grain, gate_unit_output = adapter.gate_plan(model, settings.structured)
    return attach(model, decider, targets, grain, family=adapter.family, gate_unit_output=gate_unit_output,
                  where="ffw gates")


class HardGates:
    """Inside, the gates act as the final pruning will (keep where m >= 0)."""

    def __init__(self, masked: MaskedModules):
        self.decider = masked.decider

    def __enter__(self):
        self.previous = self.decider.gate_forward
        self.decider.gate_forward = "hard"

    def __exit__(self, *exc):
        self.decider.gate_forward = self.previous


def fit_heads(adapter: FFWAdapter, model, data, bias_classes: list[int], settings: HeadSettings,
              seed: int) -> list[nn.Linear]:
    feats, _, bias = extract_features(adapter, model, data)
    return [train_head(feats, bias[:, b], k, settings, seed + 101 * b)[0] for b, k in enumerate(bias_classes)]


class OnlineHeads:
    """Paper D's code's privacy heads (``head_update: online``): persistent heads, each with its own SGD whose
    momentum lives on across per-batch steps and refinements."""

    def __init__(self, heads: list[nn.Linear], settings: HeadSettings, adapter: FFWAdapter | None = None):
        self.optimizers = [head_optimizer(head, settings) for head in heads]
        self.adapter = adapter

    def step(self, heads: list[nn.Linear], feats: torch.Tensor, bias: torch.Tensor) -> None:
        for b, (head, optimizer) in enumerate(zip(heads, self.optimizers, strict=True)):
            online_head_step(head, optimizer, feats, bias[:, b])

    def refine(self, model, heads: list[nn.Linear], data, settings: HeadSettings, seed: int) -> None:
        feats, _, bias = extract_features(self.adapter, model, data)
        for b, (head, optimizer) in enumerate(zip(heads, self.optimizers, strict=True)):
            refine_head(head, optimizer, feats, bias[:, b], settings, seed + 101 * b)


def validation_mi(adapter: FFWAdapter, model, heads: list[nn.Linear], data, bias_classes: list[int]) -> float:
    """Mean over bias attributes of the normalised MI between the bias labels and each head's softmax."""
    feats, _, bias = extract_features(adapter, model, data)
    with torch.no_grad():
        values = [float(empirical_mi(bias[:, b], torch.softmax(head(feats), dim=1), k))
                  for b, (head, k) in enumerate(zip(heads, bias_classes, strict=True))]
    return sum(values) / len(values)


def mean_bias_accuracy(adapter: FFWAdapter, model, train_data, eval_data, bias_classes: list[int],
                       settings: HeadSettings, seed: int) -> float:
    """Paper D's bias ("private") accuracy, the mean over bias attributes (``heads.bias_accuracy``)."""
    per_attribute = bias_accuracy(adapter, model, train_data, eval_data, bias_classes, settings, seed)
    return sum(per_attribute.values()) / len(per_attribute)


class FFWSchedule(Hook):
    """Paper D's outer loop as a hook of ``fit``: heads re-trained before every gate epoch, the temperature lowered
    on a plateau of the validation MI, a snapshot of the pruned gates at every drop, and the stop criterion.
    ``fit_heads``, ``validation_mi`` and ``bias_accuracy`` are the three measurements it takes of the model (a
    track may route them through its own module)."""

    def __init__(self, masked: MaskedModules, heads: list, steps_per_epoch: int, settings: FFWSettings,
                 train_data, val_data, bias_classes: list[int], seed: int, online: OnlineHeads | None = None,
                 *, adapter: FFWAdapter | None = None):
        self.masked, self.heads, self.per_epoch, self.settings = masked, heads, steps_per_epoch, settings
        self.online, self.adapter = online, adapter
        self.train_data, self.val_data, self.bias_classes, self.seed = train_data, val_data, bias_classes, seed
        self.best_mi, self.bad, self.epoch, self.stale = math.inf, 0, 0, False
        self.history: list[dict] = []
        self.snapshots: list[dict] = []
        self.model = None

    def state(self) -> dict:
        """What a resumed run needs besides the gates and their optimiser (``fit`` saves those): the schedule's
        counters, history and snapshots, the temperature, the heads (and the online heads' optimisers)."""
        return {"best_mi": self.best_mi, "bad": self.bad, "epoch": self.epoch, "stale": self.stale,
                "history": self.history, "snapshots": self.snapshots,
                "temperature": self.masked.decider.temperature,
                "heads": [{k: v.detach().clone() for k, v in head.state_dict().items()} for head in self.heads],
                "online": [o.state_dict() for o in self.online.optimizers] if self.online is not None else None}

    def load_state(self, state: dict) -> None:
        self.best_mi, self.bad, self.epoch, self.stale = state["best_mi"], state["bad"], state["epoch"], state["stale"]
        self.history, self.snapshots = state["history"], state["snapshots"]
        self.masked.decider.set_temperature(state["temperature"])
        for head, saved in zip(self.heads, state["heads"], strict=True):
            head.load_state_dict(saved)
        if self.online is not None:
            for optimizer, saved in zip(self.online.optimizers, state["online"], strict=True):
                optimizer.load_state_dict(saved)

    def fit_heads(self, model, seed: int) -> list[nn.Linear]:
        return fit_heads(self.adapter, model, self.train_data, self.bias_classes, self.settings.head, seed)

    def validation_mi(self, model) -> float:
        return validation_mi(self.adapter, model, self.heads, self.val_data, self.bias_classes)

    def bias_accuracy(self, model, seed: int) -> float:
        return mean_bias_accuracy(self.adapter, model, self.train_data, self.val_data, self.bias_classes,
                                  self.settings.head, seed)

    def refresh_heads(self, model) -> None:
        """Bring the heads up to date on the gated model: fresh ones (``refit``) or the same ones trained further
        (``online``)."""
        if self.online is not None:
            self.online.refine(model, self.heads, self.train_data, self.settings.head, self.seed + 7919 * self.epoch)
        else:
            self.heads[:] = self.fit_heads(model, self.seed + 7919 * self.epoch)
        self.stale = False

    def before_step(self, step, total):
        if step % self.per_epoch == 0 and self.stale and self.model is not None:
            self.refresh_heads(self.model)

    def snapshot(self, model, reason: str) -> dict:
        with HardGates(self.masked):
            accuracy = self.bias_accuracy(model, self.seed + 31 * len(self.snapshots))
            density = self.masked.density()
        gates = {name: m.scores.detach().clone() for name, m in self.masked.masks.items()}
        shot = {"epoch": self.epoch, "reason": reason, "temperature": self.masked.decider.temperature,
                "val_bias_accuracy": accuracy, "density": density, "gates": gates}
        self.snapshots.append(shot)
        log.info("snapshot at epoch %d (%s): val bias accuracy %.2f, density %.4f", self.epoch, reason, accuracy,
                 density)
        return shot

    def after_step(self, step, total, model):
        self.model = model
        if step % self.per_epoch and step != total:
            return False
        self.epoch += 1
        if self.settings.validation_mi == "refined":  # paper D's code: refine, then measure
            self.refresh_heads(model)
        mi = self.validation_mi(model)
        decider = self.masked.decider
        drop = False
        if mi < self.best_mi * (1 - self.settings.mi_rel_tol):
            self.best_mi, self.bad = mi, 0
        else:
            self.bad += 1
            if self.bad > self.settings.gate_patience:
                decider.set_temperature(decider.temperature * self.settings.temperature_factor)
                self.bad, drop = 0, True
        self.history.append({"epoch": self.epoch, "step": step, "val_mi": mi, "temperature": decider.temperature,
                             "temperature_dropped": drop, "density": self.masked.density()})
        log.info("gate epoch %d: val MI %.4f, T %.1e%s", self.epoch, mi, decider.temperature,
                 " (dropped)" if drop else "")
        if drop:
            self.snapshot(model, "temperature drop")
        # the heads are brought up to date before the next epoch, unless they just were and T did not move (a new
        # T changes the gated model: paper D's code refines its heads again after a drop)
        self.stale = self.settings.validation_mi == "pre_epoch" or drop
        return decider.temperature < self.settings.min_temperature


def head_weights(head: nn.Linear, device, copy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A head's weight and bias read on ``device`` (the batch's features'), detached copies with ``copy`` (the online
    heads' step must not touch the graph); the head itself stays where it was trained."""
    def read(t: torch.Tensor | None) -> torch.Tensor | None:
        if t is None:
            return None
        return (t.detach().clone() if copy else t).to(device)
    return read(head.weight), read(head.bias)


def gate_objective(adapter: FFWAdapter, heads: list[nn.Linear], bias_classes: list[int], settings: FFWSettings,
                   online: OnlineHeads | None = None, masked: MaskedModules | None = None):
    """alpha * CE(task) + gamma * mean_b MI_b(bias_b, softmax(head_b(features))) on one batch. With ``online``
    (paper D's code) each head then takes an SGD step on its own CE over the batch's detached features; the MI
    uses the heads as they were before that step (a copy of their weights, so the step does not touch the graph).

    An adapter with a ``task_term(model, batch, device, masked) -> (features, term)`` method replaces CE(task) by
    its own term (a model without a task head: the gender track keeps the encoder's hidden states near the
    original's, which it reads with ``masked.bypass()``); it is logged as ``task``."""
    task_term = getattr(adapter, "task_term", None)

    def objective(model, batch):
        device = next(model.parameters()).device
        if task_term is not None:
            feats, ce = task_term(model, batch, device, masked)
        else:
            feats = adapter.features(model, batch, device)
            logits = adapter.logits(model, feats)
            ce = nn.functional.cross_entropy(logits, adapter.labels(batch).to(device, non_blocking=True))
        bias = adapter.bias(batch).to(device, non_blocking=True)
        # the heads live where their features were extracted (the CPU: extract_features); the batch's features are
        # on the model's device, so each head's weights are read there (a no-op on the CPU)
        if online is None:
            outputs = [nn.functional.linear(feats, *head_weights(head, device)) for head in heads]
        else:
            outputs = [nn.functional.linear(feats, *head_weights(head, device, copy=True)) for head in heads]
            online.step(heads, feats, bias)
        mis = [empirical_mi(bias[:, b], torch.softmax(out, dim=1), k)
               for b, (out, k) in enumerate(zip(outputs, bias_classes, strict=True))]
        mi = torch.stack(mis).mean()
        return settings.alpha * ce + settings.gamma * mi, {"task" if task_term else "ce": ce.detach(), "mi": mi.detach()}

    return objective


def run_ffw(adapter: FFWAdapter, model: nn.Module, train_data, val_data, bias_classes: list[int],
            settings: FFWSettings, seed: int, device, length_grouped: int = 0,
            resume: Resume | None = None) -> tuple[dict, dict]:
    """Train FFW gates on ``train_data`` (a dataset with a ``collate``, its batches carrying bias attributes),
    select on ``val_data``; return the final keep masks by module name (numpy bool, weight-shaped) and a summary
    (history, snapshots, the chosen one, settings). The model is left unmasked and unchanged. ``length_grouped``:
    gate batches of similar length (``train.LengthGroupedBatches``, text; 0: random batches). With ``resume`` the
    run's state (the gates, their optimiser, the schedule and the heads: ``FFWSchedule.state``) is saved every
    ``resume.every`` gate steps and when the job is told to stop, and a rerun goes on from it, bit-identical on
    CPU."""
    model.to(device).eval()
    masked = attach_gates(adapter, model, settings)
    try:
        heads = fit_heads(adapter, model, adapter.loader(train_data, settings.batch_size), bias_classes,
                          settings.head, seed)
        steps_per_epoch = math.ceil(len(train_data) / settings.batch_size)
        train_loader = adapter.loader(train_data, settings.batch_size)
        val_loader = adapter.loader(val_data, settings.batch_size)
        online = OnlineHeads(heads, settings.head, adapter) if settings.head_update == "online" else None
        schedule = FFWSchedule(masked, heads, steps_per_epoch, settings, train_loader, val_loader, bias_classes, seed,
                               online, adapter=adapter)
        schedule.model = model
        hp = TrainHParams(epochs=settings.max_gate_epochs, batch_size=settings.batch_size,
                          learning_rate=settings.gate_lr, weight_decay=0.0, warmup=0, max_grad_norm=0.0,
                          lr_schedule="constant", optimizer="adam", log_every=max(1, steps_per_epoch),
                          length_grouped=length_grouped)
        groups = trainable_groups(model, settings.gate_lr, 0.0, scores=masked, score_lr=settings.gate_lr,
                                  score_weight_decay=settings.gate_weight_decay, weights=False)
        objective = gate_objective(adapter, heads, bias_classes, settings, online, masked)
        if resume is not None:
            resume.extra, resume.restore = schedule.state, schedule.load_state
        curve = fit(model, train_data, objective, hp, seed, device, groups=groups, hooks=[schedule],
                    freeze_norm_stats=True, resume=resume)
        final = schedule.snapshot(model, "end of run")
        best = min(schedule.snapshots, key=lambda s: (s["val_bias_accuracy"], -s["epoch"]))
        with torch.no_grad():
            for name, mask in masked.masks.items():
                mask.scores.copy_(best["gates"][name])
        keep = masked.hard_masks()
    finally:
        masked.detach()
    summary = {"settings": asdict(settings), "history": schedule.history, "curve": curve,
               "snapshots": [{k: v for k, v in s.items() if k != "gates"} for s in schedule.snapshots],
               "chosen_snapshot": schedule.snapshots.index(best), "final_epoch": final["epoch"],
               "density": best["density"]}
    return keep, summary
