"""What ``fit`` calls around its steps: evaluations, early stopping, the plateau schedule, the checks that every
loss is finite, step timing; and the train / eval modes they keep."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

from maskbench.masking.schedules import Plateau

log = logging.getLogger(__name__)


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
