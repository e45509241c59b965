"""A training run's settings (``TrainHParams``, from a step's ``--hparams`` JSON) and the steps they make."""

from __future__ import annotations

import math
from dataclasses import dataclass

LR_SCHEDULES = ("linear", "constant", "multistep", "cosine", "plateau")
OPTIMIZERS = ("adamw", "adam", "sgd")


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


def total_steps(n_examples: int, hp: TrainHParams) -> int:
    """Optimiser steps of a run: ``epochs`` (may be fractional) times the batches per epoch."""
    return max(1, math.ceil(hp.epochs * math.ceil(n_examples / hp.batch_size)))


def warmup_steps(warmup: float, total_steps: int) -> int:
    return int(round(warmup * total_steps)) if warmup < 1 else int(warmup)
