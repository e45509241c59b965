"""A bias source the user computed elsewhere: columns of bias-model probabilities in the task's own training file
(config ``bias.sources.<name>: {kind: precomputed, ...}``), checked without torch so that the workflow refuses a
bad column while it plans (rules/nlu/common.smk) and ``maskbench.steps.nlu.precomputed_bias`` again before it
writes the probabilities file the debiasing losses read (``maskbench.tracks.nlu.bias.probs``).

Two forms, per task:
* ``columns: {<task>: {<label>: <column>, ...}}`` — the bias model's distribution, one column per label of the
  task: every value in [0, 1], every row summing to 1 (within ``probs.ROW_SUM_TOLERANCE``); any loss may read it;
* ``gold_column: {<task>: <column>}`` — the bias model's probability of each example's own (gold) label, p_b(y),
  in [0, 1]. Only the losses that read p_b(y) alone may use it (``workflow_plan.GOLD_ONLY_LOSSES``); the file written for them
  puts the rest, 1 - p_b(y), evenly on the other labels, which those losses never read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from maskbench.data.schema import DataError
from maskbench.tracks.nlu.bias.probs import ROW_SUM_TOLERANCE


def columns_of(spec: Mapping, task: str) -> tuple[str, dict[str, str] | str] | None:
    """("distribution", {label: column}) or ("gold", column) of a precomputed source for ``task``; None when the
    source gives no column for the task."""
    if task in (spec.get("columns") or {}):
        return "distribution", dict(spec["columns"][task])
    if task in (spec.get("gold_column") or {}):
        return "gold", str(spec["gold_column"][task])
    return None


def checked_values(frame: pd.DataFrame, spec: Mapping, task: str, labels: list[str], where: str,
                   position: Callable[[int], str]) -> np.ndarray:
    """The bias columns of a training file's rows, checked: (n, len(labels)) for a distribution, (n, 1) for a gold
    column. Every failure is one line naming ``where`` (the file and the source), the column, the value and its
    position in the file."""
    form, named = columns_of(spec, task)
    if form == "distribution":
        if sorted(named) != sorted(labels):
            raise DataError(f"{where}: field 'columns.{task}' names labels {sorted(named)}, but the task's labels "
                            f"are {labels}: give one column per label")
        wanted = [named[label] for label in labels]
    else:
        wanted = [named]
    have = ", ".join(map(str, frame.columns))
    for column in wanted:
        if column not in frame.columns:
            raise DataError(f"{where}: field {column!r} is missing from the file (a bias column of task "
                            f"{task!r}); it has: {have}")
    values = np.empty((len(frame), len(wanted)), dtype=np.float64)
    for j, column in enumerate(wanted):
        numbers = pd.to_numeric(frame[column], errors="coerce")
        raw = frame[column]
        missing = raw.isna().to_numpy()
        if missing.any():
            row = int(np.flatnonzero(missing)[0])
            raise DataError(f"{where}: field {column!r} has no value at {position(row)} ({int(missing.sum())} rows "
                            f"without a bias probability)")
        not_number = numbers.isna().to_numpy()
        if not_number.any():
            row = int(np.flatnonzero(not_number)[0])
            raise DataError(f"{where}: field {column!r} has value {raw.iloc[row]!r} at {position(row)}, not a "
                            "probability")
        values[:, j] = numbers.to_numpy(dtype=np.float64)
        outside = ~((values[:, j] >= 0) & (values[:, j] <= 1))  # NaN and inf are outside too
        if outside.any():
            row = int(np.flatnonzero(outside)[0])
            raise DataError(f"{where}: field {column!r} has value {float(values[row, j])!r} at {position(row)}, outside "
                            "[0, 1]")
    if form == "distribution":
        sums = values.sum(axis=1)
        off = np.abs(sums - 1) > ROW_SUM_TOLERANCE
        if off.any():
            row = int(np.flatnonzero(off)[0])
            raise DataError(f"{where}: fields {wanted} sum to {sums[row]:.4f} at {position(row)}, not 1 (a bias "
                            "model's distribution over the labels)")
    return values


def probabilities(values: np.ndarray, gold: np.ndarray, n_labels: int) -> np.ndarray:
    """Per-example distributions over the labels from ``checked_values``: a distribution as it is; a gold column's
    p_b(y) on each example's label ``gold`` and (1 - p_b(y)) / (n_labels - 1) on every other label."""
    if values.shape[1] == n_labels:  # a distribution (a task has at least two labels; a gold column is one)
        return values
    p = values[:, 0]
    out = np.repeat(((1.0 - p) / (n_labels - 1))[:, None], n_labels, axis=1)
    out[np.arange(len(p)), np.asarray(gold, dtype=np.int64)] = p
    return out
