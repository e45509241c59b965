"""Fine-tuning a text classifier, shared by both text tracks: the dev-accuracy hook, the dev set read and checked, the
classification objective (with the learned-mixin gate when the loss needs one) and its parameter groups."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import torch

from maskbench.data.schema import DataError, read_prepared
from maskbench.objectives.logits import logits_objective
from maskbench.objectives.losses import NEEDS
from maskbench.text.batches import EncodedPairs, model_inputs, predict_proba
from maskbench.training.hparams import TrainHParams
from maskbench.training.optim import trainable_groups

log = logging.getLogger(__name__)


def accuracy_on(frame: pd.DataFrame, tokenizer, hp: TrainHParams, device, view: str):
    data = EncodedPairs(tokenizer, frame.text_a, frame.text_b, None, hp.max_length, view)

    def score(model) -> float:
        probs = predict_proba(model, data, hp.eval_batch_size, device, hp.length_sorted_eval)
        return float((probs.argmax(1) == frame.label.to_numpy()).mean() * 100)

    return score


def read_dev(dev_path: Path | None, labels: list[str]) -> pd.DataFrame | None:
    """The ID dev set, refused if its labels differ from the training set's."""
    if dev_path is None:
        return None
    dev, dev_labels, _ = read_prepared(dev_path)
    if dev_labels != labels:
        raise DataError(f"{dev_path}: field 'labels' is {dev_labels}, but the training set has {labels}")
    return dev


def classification_objective(loss_fn, device, example_tensors: dict | None = None, regularizer=None):
    """A loss of ``maskbench.objectives.losses`` as the loop's objective on text-pair batches."""
    return logits_objective(loss_fn, model_inputs, device, example_tensors, regularizer)


class MixinGate(torch.nn.Module):
    """Clark et al.'s learned-mixin gate: one pre-activation ``w . h + b`` per example from the features the
    classifier reads (BERT's pooled [CLS] representation); ``losses.learned_mixin`` applies the softplus. It
    trains with the run and is dropped afterwards: at test time the model predicts alone."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.linear = torch.nn.Linear(hidden_size, 1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.linear(features).squeeze(-1)


def gated_objective(model, loss_fn, device, example_tensors: dict | None = None, regularizer=None):
    """For a loss that needs a gate (``NEEDS[...]`` has "gate"): the objective and the ``MixinGate`` it trains.

    The gate reads the input of the model's ``classifier`` module, captured by a forward pre-hook during the
    model's own forward pass (no second pass). Give ``gate.parameters()`` to ``fit`` as a parameter group."""
    classifier = getattr(model, "classifier", None)
    if classifier is None:
        raise ValueError(f"{type(model).__name__} has no `classifier` module whose input the learned-mixin gate "
                         "could read")
    gate = MixinGate(model.config.hidden_size).to(device)
    captured: dict[str, torch.Tensor] = {}

    def capture(module, args):
        captured["features"] = args[0]

    classifier.register_forward_pre_hook(capture)

    def gated_loss(logits, labels, **extra):
        pre_activation = gate(captured["features"])
        captured["g"] = torch.nn.functional.softplus(pre_activation.detach()).mean()
        return loss_fn(logits, labels, gate=pre_activation, **extra)

    plain = logits_objective(gated_loss, model_inputs, device, example_tensors, regularizer)

    def inner(model, batch):
        loss, logs = plain(model, batch)
        return loss, {**logs, "mixin_gate": float(captured["g"])}  # mean g = softplus(gate) of the batch

    return inner, gate


def objective_and_groups(model, loss: str, loss_fn, device, hp: TrainHParams, example_tensors: dict | None = None,
                         regularizer=None) -> tuple:
    """The run's objective and its AdamW groups (None: the model's trainable parameters): a loss that needs a
    gate adds a ``MixinGate`` group at the run's learning rate, without weight decay."""
    if "gate" not in NEEDS[loss]:
        return classification_objective(loss_fn, device, example_tensors, regularizer), None
    objective, gate = gated_objective(model, loss_fn, device, example_tensors, regularizer)
    return objective, trainable_groups(model, hp.learning_rate, hp.weight_decay,
                                       extra={"mixin_gate": gate.parameters()})
