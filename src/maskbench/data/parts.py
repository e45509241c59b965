"""Seeded cuts of one loaded dataset: a stratified part of a split (``part:``) and a fixed number of examples per
group (``sample:``), so that one real file serves as training, development and test data, and a large evaluation
set can be scored on a stratified sample with the full set one key away.

``part: {name, sizes, seed}``: the examples are dealt, label by label, into the parts named in ``sizes`` (each
exactly that many examples) and one more part, every other ``name``, that takes the rest. Within a label the file
order is permuted with ``numpy.random.default_rng(seed)``; each part's share of a label is its size times the
label's fraction, rounded by the largest remainder so that the part sizes are exact. Every entry that cuts the
same file with the same ``sizes`` and ``seed`` sees the same cut, so the parts never overlap.

``sample: {n, per, seed}``: ``n`` examples of every value of the prepared column ``per`` (HANS: ``subcase``), a
seeded choice without replacement, in file order.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from maskbench.data.schema import DataError


def part_sizes(label_counts: Mapping[int, int], sizes: Mapping[str, int], rest: str) -> dict[str, dict[int, int]]:
    """Per part, per label: how many examples it takes. The named parts take exactly ``sizes`` in all, shared
    over the labels in proportion (largest remainder per part), ``rest`` takes what is left of each label."""
    total = sum(label_counts.values())
    asked = sum(sizes.values())
    if asked >= total:
        raise DataError(f"part sizes {dict(sizes)} add up to {asked}, which leaves nothing of the {total} examples "
                        f"for part {rest!r}")
    left = dict(label_counts)
    shares: dict[str, dict[int, int]] = {}
    for part, size in sizes.items():
        exact = {label: size * count / total for label, count in label_counts.items()}
        share = {label: int(np.floor(value)) for label, value in exact.items()}
        # the largest remainders first; ties by label, so the result does not depend on dict order
        order = sorted(exact, key=lambda label: (-(exact[label] - share[label]), label))
        for label in order[:size - sum(share.values())]:
            share[label] += 1
        for label, n in share.items():
            if n > left[label]:
                raise DataError(f"part {part!r} needs {n} examples of label {label}, only {left[label]} are left")
            left[label] -= n
        shares[part] = share
    shares[rest] = left
    return shares


def stratified_part(labels: np.ndarray, name: str, sizes: Mapping[str, int], seed: int) -> np.ndarray:
    """The row indices (ascending) of part ``name`` of a split of examples with these labels: one of ``sizes``'
    parts, or any other name for the rest."""
    labels = np.asarray(labels)
    if any(int(n) < 1 for n in sizes.values()):
        raise DataError(f"part sizes must be positive, got {dict(sizes)}")
    rest = name if name not in sizes else "_rest"
    counts = {int(label): int((labels == label).sum()) for label in np.unique(labels)}
    shares = part_sizes(counts, {k: int(v) for k, v in sizes.items()}, rest)
    rng = np.random.default_rng(seed)
    chosen = []
    for label in sorted(counts):
        rows = rng.permutation(np.flatnonzero(labels == label))
        start = 0
        for part in [*sizes, rest]:
            n = shares[part][label]
            if part == name:
                chosen.append(rows[start:start + n])
            start += n
    return np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=int)


def sample_per_group(groups: pd.Series, n: int, seed: int, where: str) -> np.ndarray:
    """Row indices (ascending) of ``n`` seeded examples of every value of ``groups``."""
    rng = np.random.default_rng(seed)
    values = groups.astype(str).to_numpy()
    chosen = []
    for value in sorted(set(values)):
        rows = np.flatnonzero(values == value)
        if len(rows) < n:
            raise DataError(f"{where}: sample needs {n} examples of every {groups.name!r}, but {value!r} has "
                            f"{len(rows)}")
        chosen.append(rng.choice(rows, size=n, replace=False))
    return np.sort(np.concatenate(chosen))


def cut(df: pd.DataFrame, spec: Mapping, where: str) -> pd.DataFrame:
    """``df`` cut by the spec's ``part`` and then its ``sample`` (either may be absent)."""
    part = spec.get("part")
    if part is not None:
        rows = stratified_part(df["label"].to_numpy(), part["name"], part["sizes"], int(part.get("seed", 0)))
        df = df.iloc[rows].reset_index(drop=True)
    sample = spec.get("sample")
    if sample is not None:
        column = sample["per"]
        if column not in df.columns:
            raise DataError(f"{where}: field 'sample.per' names column {column!r}, which the prepared data does not "
                            f"have (it has: {', '.join(df.columns)}); map it under 'columns'")
        rows = sample_per_group(df[column], int(sample["n"]), int(sample.get("seed", 0)), where)
        df = df.iloc[rows].reset_index(drop=True)
    return df
