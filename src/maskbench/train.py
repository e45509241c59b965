"""The one training loop: ``fit(model, data, objective, hp, ...)`` — seeded batches, AdamW parameter groups each
with its own learning rate, weight decay and schedule, hooks that evaluate and may stop the run, normalisation
statistics optionally frozen, a progress bar on a terminal, progress lines in the job's log at least every 30 s
(``maskbench.progress``) and a training curve.

What is trainable is decided by the caller (``requires_grad``, or explicit ``groups``); the objective runs the
model itself (``maskbench.objectives.logits`` adapts the pure losses of ``maskbench.objectives.losses``).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.data import DataLoader, RandomSampler
from tqdm.auto import tqdm

from maskbench import stop as stop_requests
from maskbench.masking.engine import is_no_decay, plain_parameter_name
from maskbench.masking.schedules import Plateau
from maskbench.precision import FP32, Precision, current
from maskbench.progress import Progress, examples_in, host_floats
from maskbench.resume import Resume, rng_state, set_rng_state

log = logging.getLogger(__name__)


@dataclass
class TrainHParams:
    epochs: float = 3.0
    batch_size: int = 32
    learning_rate: float = 3e-5
    weight_decay: float = 0.1
    warmup: float = 0.2  # a fraction of all steps when < 1, else a number of steps
    max_grad_norm: float = 1.0
    max_length: int = 128
    eval_batch_size: int = 256
    log_every: int = 50
    lr_schedule: str = "linear"  # linear warm-up and decay, or "constant" (paper A's mask search: its scheduler
    # was returned under a key Lightning ignores, docs/paper-a.md, "Mask search")
    adam_eps: float = 1e-8
    eval_every_epoch: bool = True  # score the dev set after every epoch (False: after the last one only)
    optimizer: str = "adamw"  # "adamw" (decoupled decay, BERT's), "adam" (L2 decay in the gradient, paper D's
    # gates and MLP) or "sgd" (with ``momentum``, paper D's vanilla conv nets)
    momentum: float = 0.9
    milestones: tuple[float, ...] = ()  # lr_schedule "multistep": the epochs at which the rate is multiplied by
    # ``gamma`` (paper D: epochs 40 and 60 of 80, x0.1)
    gamma: float = 0.1
    # stop once the dev score has not risen for this many epochs in a row and keep the best epoch's weights (0: off;
    # needs a dev set): a baseline trained until its held-out accuracy stops rising (EarlyStop)
    early_stop_patience: int = 0
    early_stop_min_delta: float = 0.0  # a rise of at most this many points does not count
    # 0: batches of random examples. k > 0: length-grouped batches (LengthGroupedBatches): runs of k batches' worth
    # of a random order are sorted by length before they are cut, so a batch pads to little more than its rows
    length_grouped: int = 0
    length_sorted_eval: bool = False  # the run's own scoring (dev accuracy, training-set probabilities) in batches of
    # similar length, put back in order (predict_proba's length_sorted): the same predictions up to float-sum order


def parse_hparams(text: str) -> TrainHParams:
    """``TrainHParams`` from a step's ``--hparams`` JSON; an unknown field is an error naming it."""
    import json

    values = json.loads(text)
    known = set(TrainHParams.__dataclass_fields__)
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"--hparams: unknown field(s) {unknown}; known: {sorted(known)}")
    return TrainHParams(**values)


class LengthGroupedBatches(torch.utils.data.Sampler):
    """Batches of similar length, in a random order: each epoch draws a permutation from ``generator``, sorts each
    run of ``group * batch_size`` items of it by length (longest first, ties in drawn order), cuts the runs into
    batches and shuffles the batches with the same generator. Every item appears once an epoch; the number of
    batches is ``ceil(n / batch_size)`` as with random batches, only the last run's last batch may be short.
    Text batches are padded to their longest row, so this cuts the padding a random batch carries (on real MNLI
    pairs of mean length 39 a random batch of 32 pads to 87 tokens)."""

    def __init__(self, lengths: Sequence[int], batch_size: int, group: int, generator: torch.Generator):
        if group < 1:
            raise ValueError(f"length_grouped must be a positive number of batches per group, got {group}")
        self.lengths = torch.as_tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.group, self.generator = batch_size, group, generator

    def __len__(self) -> int:
        return math.ceil(len(self.lengths) / self.batch_size)

    def __iter__(self):
        order = torch.randperm(len(self.lengths), generator=self.generator)
        run = self.group * self.batch_size
        batches = []
        for start in range(0, len(order), run):
            chunk = order[start:start + run]
            chunk = chunk[torch.sort(self.lengths[chunk], descending=True, stable=True).indices]
            batches += [chunk[i:i + self.batch_size].tolist() for i in range(0, len(chunk), self.batch_size)]
        for i in torch.randperm(len(batches), generator=self.generator).tolist():
            yield batches[i]


def total_steps(n_examples: int, hp: TrainHParams) -> int:
    """Optimiser steps of a run: ``epochs`` (may be fractional) times the batches per epoch."""
    return max(1, math.ceil(hp.epochs * math.ceil(n_examples / hp.batch_size)))


def warmup_steps(warmup: float, total_steps: int) -> int:
    return int(round(warmup * total_steps)) if warmup < 1 else int(warmup)


def linear_factor(warmup: int, total: int) -> Callable[[int], float]:
    """Linear warm-up from 0 to the peak rate over `warmup` steps, then linear decay to 0 at `total`."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def linear_schedule(optimizer, warmup: int, total: int):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, linear_factor(warmup, total))


LR_SCHEDULES = ("linear", "constant", "multistep", "cosine", "plateau")
OPTIMIZERS = ("adamw", "adam", "sgd")


def fused_on(groups: list[dict]) -> bool:
    """Whether Adam(W)'s fused CUDA kernel can take every parameter: all on CUDA and floating point. The fused
    kernel updates every parameter in a few launches and reads fp16's GradScaler state on the device (no host
    sync); on the CPU the default implementation runs, so CPU runs are untouched."""
    params = [p for g in groups for p in g["params"]]
    return bool(params) and all(p.is_cuda and p.is_floating_point() for p in params)


def make_optimizer(groups: list[dict], hp: TrainHParams) -> torch.optim.Optimizer:
    """The run's optimiser over its parameter groups (the keys only the schedule reads dropped); Adam(W) fused
    where every parameter is on CUDA (``fused_on``)."""
    plain = [{k: v for k, v in g.items() if k not in ("schedule", "warmup")} for g in groups]
    fused = {"fused": True} if hp.optimizer in ("adamw", "adam") and fused_on(plain) else {}
    if hp.optimizer == "adamw":
        return torch.optim.AdamW(plain, lr=hp.learning_rate, eps=hp.adam_eps, **fused)
    if hp.optimizer == "adam":
        return torch.optim.Adam(plain, lr=hp.learning_rate, eps=hp.adam_eps, **fused)
    if hp.optimizer == "sgd":
        return torch.optim.SGD(plain, lr=hp.learning_rate, momentum=hp.momentum)
    raise ValueError(f"optimizer {hp.optimizer!r} is unknown; choose one of {OPTIMIZERS}")


def trainable_groups(model: torch.nn.Module, lr: float, weight_decay: float, *, scores=None,
                     score_lr: float | None = None, score_weight_decay: float = 0.0, weights: bool = True,
                     decay_by_name: bool = True, extra: dict | None = None) -> list[dict]:
    """The optimiser's parameter groups, for every track: the one builder.

    * ``scores`` (a ``MaskedModules``): its trainable scores in a group of their own, at ``score_lr`` with
      ``score_weight_decay`` (paper A's search leaves them among the model's parameters instead);
    * the model's other trainable parameters at ``lr`` (``weights`` False: none, only the scores train):
      with ``decay_by_name`` biases and LayerNorm weights get no weight decay (as BERT), decided on each
      parameter's plain name (a masked bias is still a bias); without it every parameter decays alike (paper B's
      and D's optimisers);
    * ``extra``: name -> parameters trained beside the model (a learned-mixin gate) at ``lr``, without decay.
    Empty groups are left out; nothing to train at all is an error."""
    groups = []
    known: set[int] = set()
    if scores is not None:
        trained = [p for p in scores.parameters() if p.requires_grad]
        known = {id(p) for p in trained}
        groups.append({"name": "scores", "params": trained, "lr": score_lr, "weight_decay": score_weight_decay})
    if weights:
        named = [(name, p) for name, p in model.named_parameters() if p.requires_grad and id(p) not in known]
        if decay_by_name:
            decay = [p for name, p in named if not is_no_decay(plain_parameter_name(name))]
            no_decay = [p for name, p in named if is_no_decay(plain_parameter_name(name))]
            groups += [{"name": "decay", "params": decay, "lr": lr, "weight_decay": weight_decay},
                       {"name": "no_decay", "params": no_decay, "lr": lr, "weight_decay": 0.0}]
        else:
            groups.append({"name": "weights", "params": [p for _, p in named], "lr": lr,
                           "weight_decay": weight_decay})
    for name, params in (extra or {}).items():
        groups.append({"name": name, "params": list(params), "lr": lr, "weight_decay": 0.0})
    groups = [g for g in groups if g["params"]]
    if not groups:
        raise ValueError("nothing to train: every parameter of the model has requires_grad False")
    return groups


def adamw(model: torch.nn.Module, lr: float, weight_decay: float, eps: float = 1e-8) -> torch.optim.Optimizer:
    """AdamW over the trainable parameters (``trainable_groups``)."""
    return torch.optim.AdamW(trainable_groups(model, lr, weight_decay), lr=lr, eps=eps)


def group_schedule(optimizer, groups: list[dict], hp: TrainHParams, total: int, plateau: LRPlateau | None = None):
    """One LambdaLR over every group, each with its own schedule (``group["schedule"]``: linear or constant;
    ``group["warmup"]``), by default the run's (``hp.lr_schedule``, ``hp.warmup``); "plateau" reads the factor of
    ``plateau`` (an ``LRPlateau`` the run's hooks update)."""
    factors = []
    for group in groups:
        kind = group.get("schedule", hp.lr_schedule)
        if kind == "constant":
            factors.append(lambda step: 1.0)
        elif kind == "linear":
            factors.append(linear_factor(warmup_steps(group.get("warmup", hp.warmup), total), total))
        elif kind == "multistep":
            per_epoch = total / max(hp.epochs, 1e-12)
            steps = sorted(int(round(m * per_epoch)) for m in hp.milestones)
            factors.append(lambda step, steps=steps: hp.gamma ** sum(step >= s for s in steps))
        elif kind == "cosine":
            factors.append(lambda step: 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total)))
        elif kind == "plateau":
            if plateau is None:
                raise ValueError(f"schedule 'plateau' of parameter group {group.get('name', '?')!r} needs an "
                                 "LRPlateau (fit's lr_plateau)")
            factors.append(lambda step: plateau.scale)
        else:
            raise ValueError(f"schedule {kind!r} of parameter group {group.get('name', '?')!r} is unknown; choose "
                             f"one of {LR_SCHEDULES}")
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factors)


# ------------------------------------------------------------------------------------------------ the loop
Objective = Callable[[torch.nn.Module, dict], tuple[torch.Tensor, dict]]
"""``objective(model, batch) -> (loss, logs)``: runs the model on a batch itself; ``logs`` are floats to
average into the training curve (e.g. the terms of a composite loss)."""

NORM_LAYERS = (torch.nn.modules.batchnorm._BatchNorm, torch.nn.InstanceNorm1d, torch.nn.InstanceNorm2d,
               torch.nn.InstanceNorm3d)


def set_training(model: torch.nn.Module, freeze_norm_stats: bool = False) -> None:
    """``model.train()``, but with ``freeze_norm_stats`` every normalisation layer with running statistics stays
    in eval mode, so a "frozen" model's BatchNorm statistics do not move."""
    model.train()
    if freeze_norm_stats:
        for module in model.modules():
            if isinstance(module, NORM_LAYERS):
                module.eval()


class Hook:
    """What ``fit`` calls around each step; ``after_step`` returning True stops the run."""

    def before_step(self, step: int, total: int) -> None:
        pass

    def after_step(self, step: int, total: int, model: torch.nn.Module) -> bool:
        return False


def restore_modes(model: torch.nn.Module, modes: dict) -> None:
    """Put every module back in the train/eval mode recorded in ``modes`` (``{module: training}``)."""
    for module, training in modes.items():
        module.training = training


class EvalHook(Hook):
    """Every ``every`` steps (and at the last): ``score = evaluate(model)``, then ``on_result(step, score)``; a
    True result (a plateau's stop criterion, say) stops the run. Every module goes back to the mode it had before
    the evaluation (frozen normalisation statistics stay frozen)."""

    def __init__(self, every: int, evaluate: Callable[[torch.nn.Module], float],
                 on_result: Callable[[int, float], bool] | None = None):
        if int(every) < 1:
            raise ValueError(f"EvalHook: every must be a positive number of steps, got {every}")
        self.every, self.evaluate, self.on_result = int(every), evaluate, on_result
        self.history: list[dict] = []

    def after_step(self, step, total, model):
        if step % self.every and step != total:
            return False
        modes = {module: module.training for module in model.modules()}
        score = self.evaluate(model)
        restore_modes(model, modes)
        self.history.append({"step": step, "score": score})
        return bool(self.on_result(step, score)) if self.on_result is not None else False


class EarlyStop:
    """Stop when the dev score (higher is better: an accuracy) has not risen by more than ``min_delta`` for
    ``patience`` evaluations in a row, keeping the weights of the best evaluation (a copy on the CPU), which
    ``restore_best`` puts back. ``fit`` calls ``update`` after every epoch's evaluation; ``state`` /
    ``load_state`` travel with a resumable run."""

    def __init__(self, patience: int, min_delta: float = 0.0):
        if int(patience) < 1:
            raise ValueError(f"early stopping: patience must be at least 1 epoch, got {patience}")
        if min_delta < 0:
            raise ValueError(f"early stopping: min_delta must be >= 0, got {min_delta}")
        self.patience, self.min_delta = int(patience), float(min_delta)
        self.best, self.best_epoch, self.bad, self.best_weights = -math.inf, 0, 0, None
        self.stopped_epoch: int | None = None

    def update(self, epoch: int, score: float, model: torch.nn.Module) -> bool:
        """Record the epoch's score; True when the run should stop."""
        if score > self.best + self.min_delta:
            self.best, self.best_epoch, self.bad = float(score), int(epoch), 0
            self.best_weights = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            return False
        self.bad += 1
        if self.bad >= self.patience:
            self.stopped_epoch = int(epoch)
            return True
        return False

    def restore_best(self, model: torch.nn.Module) -> None:
        if self.best_weights is not None:
            model.load_state_dict(self.best_weights)

    def summary(self) -> dict:
        return {"patience": self.patience, "min_delta": self.min_delta, "best_epoch": self.best_epoch,
                "best_score": self.best, "stopped_epoch": self.stopped_epoch}

    def state(self) -> dict:
        return {"best": self.best, "best_epoch": self.best_epoch, "bad": self.bad, "best_weights": self.best_weights,
                "stopped_epoch": self.stopped_epoch}

    def load_state(self, state: dict) -> None:
        self.best, self.best_epoch, self.bad = state["best"], state["best_epoch"], state["bad"]
        self.best_weights, self.stopped_epoch = state["best_weights"], state["stopped_epoch"]


class LRPlateau(Hook):
    """torch's ReduceLROnPlateau (mode "min", relative threshold, cooldown) as a hook of ``fit``, driving the
    "plateau" learning-rate schedule: after every epoch's last step ``score = evaluate(model)`` (a validation loss:
    paper D's CelebA monitors the unbiased-validation loss) updates a ``masking.schedules.Plateau`` over the factor
    on the groups' initial rates (``scale``). The run stops once the rate falls below ``min_lr`` (paper D: lr <
    1e-3). The hook sets the optimiser's rates itself, so the next step already uses a lowered rate. ``state()`` /
    ``load_state()`` travel with a resumable run."""

    def __init__(self, steps_per_epoch: int, evaluate: Callable[[torch.nn.Module], float], factor: float = 0.1,
                 patience: int = 10, cooldown: int = 0, threshold: float = 1e-4, min_lr: float = 0.0):
        if not 0.0 < factor < 1.0:
            raise ValueError(f"plateau schedule: factor must lie in (0, 1), got {factor}")
        if patience < 0 or cooldown < 0 or threshold < 0 or min_lr < 0:
            raise ValueError(f"plateau schedule: patience, cooldown, threshold and min_lr must be >= 0, got "
                             f"{patience}, {cooldown}, {threshold}, {min_lr}")
        self.plateau = Plateau(1.0, factor=factor, patience=patience, threshold=threshold, mode="min",
                               relative=True, cooldown=cooldown)
        self.per_epoch, self.evaluate, self.min_lr = max(1, int(steps_per_epoch)), evaluate, float(min_lr)
        self.history: list[dict] = []
        self.optimizer = None

    @property
    def scale(self) -> float:
        return self.plateau.value

    def bind(self, optimizer) -> None:
        """The optimiser whose groups' rates the hook lowers (``fit`` binds it)."""
        self.optimizer = optimizer

    def update(self, score: float) -> bool:
        """Record one epoch's score; return True when the rate has fallen below ``min_lr`` (stop)."""
        before = self.plateau.value
        self.plateau.update(score)
        rates = self._rates()
        self.history.append({"score": score, "scale": self.scale, "lowered": self.scale < before,
                             "lr": rates[0] if rates else None})
        return bool(rates) and max(rates) < self.min_lr

    def _rates(self) -> list[float]:
        if self.optimizer is None:
            return []
        for group in self.optimizer.param_groups:
            group["lr"] = group["initial_lr"] * self.scale
        return [group["lr"] for group in self.optimizer.param_groups]

    def after_step(self, step, total, model):
        if step % self.per_epoch and step != total:
            return False
        modes = {module: module.training for module in model.modules()}
        score = float(self.evaluate(model))
        restore_modes(model, modes)
        stop = self.update(score)
        self.history[-1]["step"] = step
        if stop:
            log.info("plateau schedule: the rate fell below %.1e at step %d, stopping", self.min_lr, step)
        return stop

    def state(self) -> dict:
        return {"plateau": self.plateau.state(), "history": list(self.history)}

    def load_state(self, state: dict) -> None:
        self.plateau.load_state(state["plateau"])
        self.history = list(state["history"])


class FiniteLosses:
    """The check that every training loss is finite. On the CPU each loss is checked before its backward pass
    (reading a CPU scalar costs nothing). On CUDA reading it would make every step wait for the device, so a device
    flag gathers the losses and ``check`` reads it: at every logged step, before a resume state is saved and when
    the run ends. A non-finite loss stops the run either way, with a ``FloatingPointError``; on CUDA the steps up to
    the check have run (their weights are never saved)."""

    def __init__(self, device):
        self.deferred = torch.device(device).type == "cuda"
        self.flag: torch.Tensor | None = None
        self.first_step: int | None = None

    def add(self, loss: torch.Tensor, step: int) -> None:
        if not self.deferred:
            if not torch.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss.item()} at step {step}")
            return
        bad = ~torch.isfinite(loss.detach())
        self.flag = bad if self.flag is None else self.flag | bad
        self.first_step = step if self.first_step is None else self.first_step

    def check(self, step: int) -> None:
        if self.flag is not None:
            bad, first = bool(self.flag), self.first_step
            self.flag, self.first_step = None, None
            if bad:
                raise FloatingPointError(f"training loss became non-finite between steps {first} and {step} (CUDA: "
                                         "losses are checked on the device, read at every logged step)")


@dataclass
class StepTimes:
    """Wall-clock marks of one ``train_step`` (seconds): after the objective, the backward pass, the update."""

    objective: float = 0.0
    backward: float = 0.0
    update: float = 0.0


def train_step(model: torch.nn.Module, batch: dict, objective: Objective, optimizer, scheduler,
               clip_params: list, max_grad_norm: float, step: int,
               times: StepTimes | None = None, *, precision: Precision = FP32, device=None,
               scaler=None, finite: FiniteLosses | None = None) -> tuple[torch.Tensor, dict]:
    """One optimisation step: objective, backward, gradient clipping, update, schedule. The loop and the
    benchmarks run this same function.

    ``precision`` (on CUDA ``device`` only): the objective — forward pass and loss — runs under its autocast;
    backward, clipping and the update stay outside it, on the fp32 parameters and gradients. ``scaler`` (fp16's
    ``torch.amp.GradScaler``, ``Precision.grad_scaler``) scales the loss before backward and unscales the gradients
    before clipping; a step whose gradients overflowed is skipped by the scaler (the schedule still moves, as in
    Lightning's and Hugging Face's fp16 loops). With fp32, or on the CPU, the step is exactly the fp32 step.
    ``finite`` (``FiniteLosses``; None: checked here, at once) checks the loss; nothing in the step reads a value
    back to the host, so on CUDA the host queues the next step while the device runs this one."""
    started = time.perf_counter()
    with precision.autocast(device):
        loss, logs = objective(model, batch)
    if finite is None:
        if not torch.isfinite(loss):
            raise FloatingPointError(f"training loss became {loss.item()} at step {step}")
    else:
        finite.add(loss, step)
    marked = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
    else:
        loss.backward()
    backward = time.perf_counter()
    if max_grad_norm > 0:
        if scaler is not None:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(clip_params, max_grad_norm)
    if scaler is not None:
        scaler.step(optimizer)
        scaler.update()
    else:
        optimizer.step()
    if scheduler is not None:
        scheduler.step()
    if times is not None:
        times.objective, times.backward, times.update = (marked - started, backward - marked,
                                                         time.perf_counter() - backward)
    return loss, logs


def clip_parameters(model: torch.nn.Module, groups: list[dict]) -> list:
    """The model's parameters in model order, then any group parameter outside the model (a separate head)."""
    params = list(model.parameters())
    known = {id(p) for p in params}
    return params + [p for g in groups for p in g["params"] if id(p) not in known]


def fit(
    model: torch.nn.Module,
    data,
    objective: Objective,
    hp: TrainHParams,
    seed: int,
    device,
    evaluate: Callable[[torch.nn.Module], float] | None = None,
    *,
    groups: list[dict] | None = None,
    step_hook: Callable[[int, int], None] | None = None,
    hooks: Sequence[Hook] = (),
    freeze_norm_stats: bool = False,
    resume: Resume | None = None,
    lr_plateau: LRPlateau | None = None,
    samples_per_epoch: int | None = None,
    early_stop: EarlyStop | None = None,
    precision: Precision | None = None,
) -> list[dict]:
    """Train in place; return the curve (one dict per logged step and per epoch end).

    ``data`` is a torch Dataset with a ``collate`` method (batches in a seeded order); ``objective(model,
    batch)`` runs the model and returns the loss and what to log; ``groups`` are AdamW parameter groups, each
    with its own ``lr``, ``weight_decay`` and optional ``schedule`` / ``warmup`` (default: the model's
    trainable parameters at ``hp.learning_rate``, ``trainable_groups``). ``step_hook(step, total)`` runs
    before every step's forward pass (a mask search moves its threshold there); ``hooks`` run around every
    step and may stop the run (``EvalHook``); ``evaluate(model)`` scores the dev set after each epoch (or the
    last, ``hp.eval_every_epoch``). ``freeze_norm_stats`` keeps BatchNorm statistics as they are.
    ``resume`` saves the run's state every ``resume.every`` steps and, when a saved state exists, goes on from it
    (``maskbench.resume``): the result is bit-identical to an uninterrupted run on CPU. Asked to stop (SIGTERM
    while the loop runs, ``maskbench.stop``), the loop saves the state after the step it is in and raises
    ``StopRequested`` (without ``resume`` it raises at once: a rerun starts afresh); SIGUSR1 saves it and goes
    on. ``lr_plateau`` drives the
    "plateau" schedule (it runs after ``hooks`` at every epoch end and may stop the run; its state is saved too).
    ``samples_per_epoch``: an epoch is this many items instead of all of ``data`` (torch's ``RandomSampler`` with
    ``num_samples``: a fresh seeded draw without replacement each epoch, whole permutations first when it exceeds
    ``len(data)``).
    ``early_stop`` reads every epoch's dev score (``evaluate``, which it needs) and may stop the run; the caller puts
    the best epoch's weights back (``EarlyStop.restore_best``); its state is saved too.
    ``precision`` (``maskbench.precision``; None: the step's, ``precision.current()``): autocast around every step's
    objective, TF32 switches and, for fp16, a GradScaler whose state is saved with the resume state — on CUDA only;
    on the CPU it changes nothing.
    """
    generator = torch.Generator().manual_seed(seed)
    # on CUDA batches are collated into pinned memory, so their copies to the device (non_blocking) overlap a step
    pinned = {"pin_memory": True} if torch.device(device).type == "cuda" else {}
    if hp.length_grouped:
        if samples_per_epoch is not None or not hasattr(data, "lengths"):
            raise ValueError("length_grouped batches need a dataset with `lengths` and whole epochs "
                             "(no samples_per_epoch)")
        loader = DataLoader(data, batch_sampler=LengthGroupedBatches(data.lengths, hp.batch_size, hp.length_grouped,
                                                                     generator),
                            collate_fn=getattr(data, "collate", None), **pinned)
        total = total_steps(len(data), hp)
    elif samples_per_epoch is None:
        loader = DataLoader(data, batch_size=hp.batch_size, shuffle=True, generator=generator,
                            collate_fn=getattr(data, "collate", None), **pinned)
        total = total_steps(len(data), hp)
    else:
        sampler = RandomSampler(data, num_samples=samples_per_epoch, generator=generator)
        loader = DataLoader(data, batch_size=hp.batch_size, sampler=sampler, collate_fn=getattr(data, "collate", None),
                            **pinned)
        total = total_steps(samples_per_epoch, hp)
    groups = groups if groups is not None else trainable_groups(model, hp.learning_rate, hp.weight_decay)
    model.to(device)  # before the optimiser: a fused one needs its parameters on the device
    optimizer = make_optimizer(groups, hp)
    if early_stop is not None and evaluate is None:
        raise ValueError("early stopping needs a dev set to evaluate after every epoch")
    scheduler = group_schedule(optimizer, groups, hp, total, lr_plateau)
    if lr_plateau is not None:
        lr_plateau.bind(optimizer)
        hooks = [*hooks, lr_plateau]
    clip_params = clip_parameters(model, groups)
    outside = clip_params[len(list(model.parameters())):]  # trained beside the model (a gate, a bias head)
    precision = precision if precision is not None else current()
    precision.apply_tf32(device)
    scaler = precision.grad_scaler(device)
    set_training(model, freeze_norm_stats)
    curve, step, running, logged, started = [], 0, [], {}, time.perf_counter()
    finite = FiniteLosses(device)
    epoch, stop, skip = 0, False, 0
    saved = resume.load() if resume is not None else None
    if saved is not None:
        model.load_state_dict(saved["model"])
        with torch.no_grad():
            for param, value in zip(outside, saved["outside"], strict=True):
                param.copy_(value)
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        step, epoch, skip, curve = saved["step"], saved["epoch"] - 1, saved["batches_in_epoch"], saved["curve"]
        running, logged = saved["running"], saved["logged"]
        if lr_plateau is not None:
            lr_plateau.load_state(saved["plateau"])
        if early_stop is not None:
            early_stop.load_state(saved["early_stop"])
        if scaler is not None and saved.get("grad_scaler") is not None:
            scaler.load_state_dict(saved["grad_scaler"])
        if resume.restore is not None and saved.get("extra") is not None:
            resume.restore(saved["extra"])
    # the bar on a terminal only: in a log file its carriage returns run into the progress lines, which say more
    bar = tqdm(total=total, initial=step, desc="train", unit="step", mininterval=2.0, disable=None)
    progress = Progress("train", total, "step", done=step, tensorboard=True)

    def stopped(signal_name: str, at: int) -> stop_requests.StopRequested:
        err = stop_requests.StopRequested(signal_name, at, total, str(resume.path) if resume is not None else None)
        log.warning("%s", err)
        return err

    if stop_requests.requested() and step < total:  # asked before this run began (a sweep's earlier run)
        raise stopped(stop_requests.requested(), step)
    # until the loop ends SIGTERM and SIGUSR1 only set the flag read at every step boundary (maskbench.stop)
    with stop_requests.stop_signals():
        while step < total and not stop:
            epoch += 1
            if saved is not None:  # the data order of the interrupted epoch, then its batches already taken skipped
                generator.set_state(saved["epoch_generator"])
            epoch_generator = generator.get_state()
            taken = 0
            for batch in loader:
                if taken < skip:
                    taken += 1
                    continue
                if saved is not None:  # every generator as it was when the state was saved
                    set_rng_state(saved["rng"])
                    saved, skip = None, 0
                if step_hook is not None:
                    step_hook(step, total)
                for hook in hooks:
                    hook.before_step(step, total)
                loss, logs = train_step(model, batch, objective, optimizer, scheduler, clip_params, hp.max_grad_norm,
                                        step, precision=precision, device=device, scaler=scaler, finite=finite)
                step += 1
                taken += 1
                # losses and logged terms stay where they are (0-dim device tensors on CUDA) until a logged step
                # reads them all at once (host_floats): no step waits for the device
                running.append(loss.detach())
                for key, value in logs.items():
                    logged.setdefault(key, []).append(value.detach() if hasattr(value, "detach") else float(value))
                bar.update(1)
                progress.update(1, examples_in(batch), loss=running[-1], lr=scheduler.get_last_lr()[0])
                for hook in hooks:
                    stop = hook.after_step(step, total, model) or stop
                if step % hp.log_every == 0 or step == total or stop:
                    finite.check(step)
                    point = {"step": step, "epoch": epoch, "train_loss": float(np.mean(host_floats(running))),
                             "lr": scheduler.get_last_lr()[0], "seconds": time.perf_counter() - started,
                             **{key: float(np.mean(host_floats(values))) for key, values in logged.items()}}
                    curve.append(point)
                    log.info("step %d/%d epoch %d loss %.4f lr %.2e", step, total, epoch, point["train_loss"], point["lr"])
                    running, logged = [], {}
                    progress.curve(curve)
                going_on = step < total and not stop
                asked = stop_requests.requested() if going_on else None
                save_asked = stop_requests.take_save_request() if going_on else False
                if resume is not None and going_on and (step % resume.every == 0 or asked or save_asked):
                    if save_asked and not asked:
                        log.info("saving the state at step %d of %d when asked (SIGUSR1); going on", step, total)
                    finite.check(step)  # a non-finite step's weights are never saved
                    running = host_floats(running)  # the state holds plain floats, as written by every version
                    logged = {key: host_floats(values) for key, values in logged.items()}
                    resume.save({"step": step, "epoch": epoch, "batches_in_epoch": taken, "curve": curve,
                                 "running": running, "logged": logged, "model": model.state_dict(),
                                 "outside": [p.detach().clone() for p in outside],
                                 "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                                 "epoch_generator": epoch_generator, "rng": rng_state(),
                                 **({"plateau": lr_plateau.state()} if lr_plateau is not None else {}),
                                 **({"early_stop": early_stop.state()} if early_stop is not None else {}),
                                 **({"grad_scaler": scaler.state_dict()} if scaler is not None else {})})
                if asked:
                    raise stopped(asked, step)
                if step >= total or stop:
                    break
            if saved is not None:  # the state was taken after the epoch's last batch
                set_rng_state(saved["rng"])
                saved, skip = None, 0
            if evaluate is not None and (hp.eval_every_epoch or early_stop is not None or step >= total or stop):
                score = evaluate(model)
                set_training(model, freeze_norm_stats)
                curve.append({"step": step, "epoch": epoch, "dev_accuracy": score,
                              "seconds": time.perf_counter() - started})
                log.info("epoch %d done: dev accuracy %.2f", epoch, score)
                progress.curve(curve)
                if early_stop is not None and early_stop.update(epoch, score, model):
                    log.info("dev accuracy has not risen for %d epochs: stopping after epoch %d (best: epoch %d, %.2f)",
                             early_stop.patience, epoch, early_stop.best_epoch, early_stop.best)
                    stop = True
    finite.check(step)
    if stop:
        log.info("stopped by a hook at step %d of %d", step, total)
    bar.close()
    progress.curve(curve, final=True)
    progress.close()
    return curve
