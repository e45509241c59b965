"""What the nlu training steps share beyond text classification: a weak learner's training subset and a run's
inputs (training set, the objective's per-example bias or teacher probabilities, dev set) read and checked before
any model is built."""

from __future__ import annotations

import numpy as np
import pandas as pd

from maskbench.data.schema import read_prepared
from maskbench.objectives.losses import NEEDS
from maskbench.text.classifier_training import read_dev
from maskbench.tracks.nlu.bias.probs import read_probs


def training_subset(n_examples: int, size: int, seed: int, where: str) -> np.ndarray:
    """Row positions of a random subset: shuffle with the run's seed and keep the first `size`, as paper A's
    undertrained weak learners do."""
    if not 0 < size <= n_examples:
        raise ValueError(f"{where}: --train-subset {size} must lie in 1..{n_examples} (the training set's size)")
    return np.random.default_rng(seed).permutation(n_examples)[:size]


def objective_inputs(args, train_df: pd.DataFrame, labels: list[str], task: str | None) -> dict:
    """The per-example tensors the objective needs, read and checked before any model is built."""
    import torch

    needs = NEEDS[args.loss]
    files = {"bias": ("bias_probs", args.bias_probs), "teacher": ("teacher_probs", args.teacher_probs)}
    out = {}
    for need, (key, path) in files.items():
        if need in needs and path is None:
            raise ValueError(f"loss {args.loss!r} needs --{key.replace('_', '-')}")
        if need not in needs and path is not None:
            raise ValueError(f"loss {args.loss!r} does not use --{key.replace('_', '-')} {path}")
        if path is not None:
            out[key] = torch.tensor(read_probs(path, train_df.id, labels, task), dtype=torch.float32)
    unsupported = needs - set(files) - {"gate"}  # the gate is computed by a head trained with the run
    if unsupported:
        raise ValueError(f"loss {args.loss!r} needs {sorted(unsupported)}, which fine-tuning does not provide")
    return out


def read_training_inputs(args) -> tuple[pd.DataFrame, list[str], dict, dict, pd.DataFrame | None]:
    """Training set, its labels and metadata, the objective's per-example tensors and the dev set of a run with
    ``train``, ``dev``, ``loss``, ``bias_probs`` and ``teacher_probs`` arguments — all read and checked before
    any model is built."""
    train_df, labels, train_meta = read_prepared(args.train)
    example_tensors = objective_inputs(args, train_df, labels, train_meta.get("task"))
    return train_df, labels, train_meta, example_tensors, read_dev(args.dev, labels)
