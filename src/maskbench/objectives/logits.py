"""Objectives for the training loop: ``objective(model, batch) -> (loss, logs)``.

The losses of ``maskbench.objectives.losses`` stay pure functions of logits and labels with their formulas; one adapter,
``logits_objective``, turns any of them into an objective: it runs the model on the batch (through the track's
``inputs`` function), reads the batch's rows of per-example tensors (bias or teacher probabilities) and adds a
regulariser (a mask search's penalty on its scores) when there is one.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def logits_of(output) -> torch.Tensor:
    """The logits of a model's output: a Hugging Face output's ``.logits`` or a plain tensor."""
    return output.logits if hasattr(output, "logits") else output


def logits_objective(loss_fn: Callable[..., torch.Tensor], inputs: Callable[[dict, object], dict], device,
                     example_tensors: dict[str, torch.Tensor] | None = None,
                     regularizer: Callable[[], torch.Tensor | None] | None = None):
    """``loss_fn(logits, labels, **per-example rows) [+ regularizer()]`` as an objective.

    ``inputs(batch, device)`` gives the model's keyword arguments; ``example_tensors`` hold one row per training
    example (row i for example i), indexed by the batch's ``index``; ``regularizer()`` may return None (no
    penalty)."""
    example_tensors = example_tensors or {}

    def objective(model, batch):
        logits = logits_of(model(**inputs(batch, device)))
        extra = {k: v[batch["index"]].to(device, non_blocking=True) for k, v in example_tensors.items()}
        loss = loss_fn(logits, batch["labels"].to(device, non_blocking=True), **extra)
        if regularizer is not None:
            penalty = regularizer()
            if penalty is not None:
                loss = loss + penalty
        return loss, {}

    return objective
