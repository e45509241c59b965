"""Training sets with other prepared sets mixed in: paper C's OOD-informed upper bound (section 4.5).

Paper C trains masks on the ID training set concatenated with OOD *training* data (MNLI + HANS train, QQP +
PAWS train, FEVER + FEVER-Symmetric v2 dev repeated 10 times). Here a mixed-in set is any prepared parquet,
repeated ``repeat`` times, its label names mapped onto the ID set's (``label_map``: HANS's ``non-entailment``
becomes ``contradiction``, as paper C's label ids do: HANS non-entailment 0 = MNLI contradiction 0). Examples
that also occur in an excluded set (the OOD *test* sets: same ``text_a`` and ``text_b``) are dropped, so the
upper bound never trains on what it is scored on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.data.schema import DataError, read_prepared


@dataclass(frozen=True)
class MixSpec:
    """One set to mix in: a prepared parquet, how often, and how its label names map onto the ID labels."""

    path: Path
    repeat: int = 1
    label_map: dict[str, str] = field(default_factory=dict)


def parse_mix(text: str, where: str = "--mix-train") -> list[MixSpec]:
    """``[{"path": P, "repeat": 10, "label_map": {"non-entailment": "contradiction"}}, ...]`` -> specs."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not JSON ({err}): {text[:80]!r}") from err
    if not isinstance(items, list):
        raise ValueError(f"{where}: must be a JSON list of {{path, repeat, label_map}}, got {text[:80]!r}")
    specs = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or "path" not in item or set(item) - {"path", "repeat", "label_map"}:
            raise ValueError(f"{where}[{i}]: must be an object with 'path' and optionally 'repeat', 'label_map'; "
                             f"got {item!r}")
        repeat = item.get("repeat", 1)
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise ValueError(f"{where}[{i}]: field 'repeat' must be a positive integer, got {repeat!r}")
        label_map = item.get("label_map", {})
        if not isinstance(label_map, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                      for k, v in label_map.items()):
            raise ValueError(f"{where}[{i}]: field 'label_map' must map label names to label names, got "
                             f"{label_map!r}")
        specs.append(MixSpec(Path(item["path"]), repeat, dict(label_map)))
    return specs


def pair_keys(frame: pd.DataFrame) -> pd.Series:
    return frame.text_a.astype(str) + "\x00" + frame.text_b.astype(str)


def mix_training_sets(train_df: pd.DataFrame, labels: list[str], specs: list[MixSpec],
                      exclude: list[Path] = ()) -> tuple[pd.DataFrame, list[dict]]:
    """The ID training frame with every spec's examples appended ``repeat`` times (labels re-indexed to
    ``labels``), minus the examples whose pair occurs in an ``exclude`` set. Every file is read and every label
    checked before anything is built. Returns the frame (a fresh ``id`` per row: ``<id>#<repeat>``) and one
    report record per spec."""
    excluded = set()
    for path in exclude:
        frame, _, _ = read_prepared(path)
        excluded.update(pair_keys(frame))
    parts, report = [train_df], []
    for spec in specs:
        frame, names, _ = read_prepared(spec.path)
        unknown = sorted(set(spec.label_map) - set(names))
        if unknown:
            raise DataError(f"{spec.path}: field 'label_map' names {unknown}, which are not labels of the file "
                            f"({names})")
        index = {}
        for name in names:
            target = spec.label_map.get(name, name)
            if target not in labels:
                raise DataError(f"{spec.path}: field 'label' has value {name!r}, which maps to {target!r}, not one of "
                                f"the training labels {labels}; give it a label_map entry")
            index[names.index(name)] = labels.index(target)
        keep = ~pair_keys(frame).isin(excluded).to_numpy()
        kept = frame.loc[keep].reset_index(drop=True)
        mapped = kept.assign(label=np.array([index[int(v)] for v in kept.label], dtype=np.int64))
        for r in range(spec.repeat):
            parts.append(mapped.assign(id=mapped.id.astype(str) + f"#{r}"))
        report.append({"path": str(spec.path), "n_file": len(frame), "n_dropped_as_test": int((~keep).sum()),
                       "repeat": spec.repeat, "n_added": len(kept) * spec.repeat, "label_map": spec.label_map})
    columns = ["id", "text_a", "text_b", "label"]
    mixed = pd.concat([p[columns] for p in parts], ignore_index=True)
    return mixed, report
