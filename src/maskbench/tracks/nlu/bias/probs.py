"""Per-example label probabilities (of a bias model or a teacher) keyed by example id, and their checks.

A probabilities file is parquet with an ``id`` column and one ``prob_<label>`` column per label, in the task's
label order; its schema metadata records the task and the label names, and a checksum over both and the data
(`maskbench.data.checksum`). Anything that would make a debiasing loss silently wrong — a cut or damaged file,
other ids than the training set, NaN, rows that do not sum to 1, another number of classes, another task — is
refused with the file's name before any training.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from maskbench.data.checksum import read_checked_table, write_checked_table
from maskbench.data.schema import DataError
from maskbench.runtime import atomic_path

META_KEY = b"maskbench"
ROW_SUM_TOLERANCE = 1e-3


def write_probs(path: str | Path, ids, probs: np.ndarray, labels: list[str], meta: dict) -> None:
    """Write atomically (``maskbench.runtime.atomic_path``): a temporary file in the same folder, then a rename;
    with a checksum over the probabilities and the metadata that `read_probs` checks."""
    path = Path(path)
    frame = pd.DataFrame({"id": [str(i) for i in ids]})
    for j, name in enumerate(labels):
        frame[f"prob_{name}"] = np.asarray(probs, dtype=np.float64)[:, j]
    table = pa.Table.from_pandas(frame, preserve_index=False)
    table = table.replace_schema_metadata({META_KEY: json.dumps({**meta, "labels": labels}).encode()})
    with atomic_path(path) as tmp:
        write_checked_table(table, tmp)


def read_probs(path: str | Path, ids, labels: list[str], task: str | None = None) -> np.ndarray:
    """Probabilities aligned to ``ids`` (the training set's order), checked against the training set."""
    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: no such probabilities file")
    table = read_checked_table(path, DataError, META_KEY)  # a cut or damaged file is refused here, named
    raw = table.schema.metadata[META_KEY]
    try:
        meta = json.loads(raw)
    except json.JSONDecodeError as err:
        raise DataError(f"{path}: field 'metadata' has invalid JSON value {raw[:80]!r}") from err
    frame = table.to_pandas()
    if task is not None and meta.get("task") not in (None, task):
        raise DataError(f"{path}: field 'task' has value {meta.get('task')!r}, but the training set is task {task!r}")
    columns = [c for c in frame.columns if c.startswith("prob_")]
    if len(columns) != len(labels):
        raise DataError(f"{path}: field 'prob_*' has {len(columns)} classes {columns}, the task has "
                        f"{len(labels)} {labels}")
    expected = [f"prob_{name}" for name in labels]
    if columns != expected:
        raise DataError(f"{path}: field 'prob_*' has columns {columns}, expected {expected} (label order)")
    if "id" not in frame:
        raise DataError(f"{path}: field 'id' is missing")
    frame["id"] = frame["id"].astype(str)
    if frame.id.duplicated().any():
        raise DataError(f"{path}: field 'id' has duplicated value {frame.id[frame.id.duplicated()].iloc[0]!r}")
    wanted = pd.Index([str(i) for i in ids])
    missing = wanted.difference(frame.id)
    if len(missing):
        raise DataError(f"{path}: field 'id' lacks value {missing[0]!r} of the training set "
                        f"({len(missing)} of {len(wanted)} ids missing)")
    extra = pd.Index(frame.id).difference(wanted)
    if len(extra):
        raise DataError(f"{path}: field 'id' has value {extra[0]!r}, which is not in the training set")
    values = frame.set_index("id").loc[wanted, expected].to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        raise DataError(f"{path}: field 'prob_*' has value NaN/inf for id {wanted[np.argmax(bad)]!r}")
    if (values < 0).any():
        raise DataError(f"{path}: field 'prob_*' has a negative value")
    sums = values.sum(axis=1)
    off = np.abs(sums - 1) > ROW_SUM_TOLERANCE
    if off.any():
        i = int(np.argmax(off))
        raise DataError(f"{path}: field 'prob_*' sums to {sums[i]:.4f} for id {wanted[i]!r}, not 1")
    return values
