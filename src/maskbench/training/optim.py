"""The optimiser of a run and its learning-rate schedules: one builder of parameter groups for every track
(``trainable_groups``), Adam(W) fused on CUDA, one LambdaLR with a schedule per group."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from maskbench.masking.engine import is_no_decay, plain_parameter_name
from maskbench.training.hooks import LRPlateau
from maskbench.training.hparams import LR_SCHEDULES, OPTIMIZERS, TrainHParams, warmup_steps


def linear_factor(warmup: int, total: int) -> Callable[[int], float]:
    """Linear warm-up from 0 to the peak rate over `warmup` steps, then linear decay to 0 at `total`."""

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))

    return factor


def linear_schedule(optimizer, warmup: int, total: int):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, linear_factor(warmup, total))


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
