"""SEAT (May et al. 2019): the effect size of a sentence-embedding association test and its one-sided permutation
p-value, on embeddings (the encoder that produces them — paper B: the last layer's [CLS] — is the caller's).

A test (sent-bias's files, data/gender/seat/) has two target sets X, Y and two attribute sets A, B, each
{category, examples}. With s(w, A, B) = mean_{a in A} cos(w, a) - mean_{b in B} cos(w, b):

    effect size = (mean_{x in X} s(x, A, B) - mean_{y in Y} s(y, A, B)) / std_{w in X u Y} s(w, A, B)

(sample standard deviation, ddof = 1, as sent-bias and paper B's code; 0 when every s is equal). The p-value is the
share of the equal-size partitions (X_i, Y_i) of X u Y whose statistic sum_{x in X_i} s(x, A, B) is at least the
observed one — ties count, sent-bias's conservative test: every partition when there are at most ``n_samples`` of
them, else ``n_samples`` random ones drawn from a seeded generator with one extra success counted (sent-bias's
bias for a sampled estimate). Paper B's code reports no p-value.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KEYS = ("targ1", "targ2", "attr1", "attr2")


class SeatFileError(ValueError):
    """A SEAT file that cannot be used, named with the key at fault."""


@dataclass(frozen=True)
class SeatSet:
    category: str
    examples: tuple[str, ...]


@dataclass(frozen=True)
class SeatTest:
    name: str
    targ1: SeatSet
    targ2: SeatSet
    attr1: SeatSet
    attr2: SeatSet


def read_seat(path: str | Path) -> SeatTest:
    """A sent-bias test file: one JSON object with targ1, targ2, attr1, attr2, each {category, examples}."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SeatFileError(f"{path}: the SEAT file does not exist") from None
    except json.JSONDecodeError as err:
        raise SeatFileError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(data, dict):
        raise SeatFileError(f"{path}: a SEAT file holds one JSON object, got {type(data).__name__}")
    sets = {}
    for key in KEYS:
        if key not in data:
            raise SeatFileError(f"{path}: key {key!r} is missing (a SEAT test needs {', '.join(KEYS)})")
        part = data[key]
        if not isinstance(part, dict) or "examples" not in part:
            raise SeatFileError(f"{path}: key {key!r} has no 'examples' list")
        examples = part["examples"]
        if not isinstance(examples, list) or not examples or not all(isinstance(e, str) and e.strip()
                                                                     for e in examples):
            raise SeatFileError(f"{path}: {key}.examples must be a non-empty list of non-empty strings")
        sets[key] = SeatSet(str(part.get("category", key)), tuple(examples))
    if len(sets["targ1"].examples) != len(sets["targ2"].examples):
        # the permutation test splits X u Y into two halves of equal size
        raise SeatFileError(f"{path}: targ1 has {len(sets['targ1'].examples)} examples and targ2 "
                            f"{len(sets['targ2'].examples)}; the permutation test needs equal sizes")
    return SeatTest(path.name.removesuffix(".jsonl"), **sets)


def _unit(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def associations(words: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """s(w, A, B) for every row w: mean cosine with A minus mean cosine with B."""
    w = _unit(words)
    return (w @ _unit(A).T).mean(axis=1) - (w @ _unit(B).T).mean(axis=1)


def effect_size(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray) -> float:
    sx, sy = associations(X, A, B), associations(Y, A, B)
    spread = float(np.std(np.concatenate([sx, sy]), ddof=1))
    if spread == 0.0:
        return 0.0  # every association is equal: the numerator is 0 as well
    return float((sx.mean() - sy.mean()) / spread)


def p_value(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, n_samples: int = 100_000,
            seed: int = 0) -> tuple[float, bool]:
    """The one-sided permutation p-value and whether it is exact (every partition) or sampled."""
    if len(X) != len(Y):
        raise ValueError(f"the permutation test needs targets of equal size, got {len(X)} and {len(Y)}")
    s = np.concatenate([associations(X, A, B), associations(Y, A, B)])
    n, size = len(s), len(X)
    observed = s[:size].sum()
    tolerance = 1e-12 * max(1.0, float(np.abs(s).sum()))  # the same sum in another order is a tie
    if math.comb(n, size) <= n_samples:
        hits = total = 0
        for subset in itertools.combinations(range(n), size):
            hits += s[list(subset)].sum() >= observed - tolerance
            total += 1
        return hits / total, True
    rng = np.random.default_rng(seed)
    hits = total = 1  # sent-bias's bias for a sampled estimate: one success assumed
    remaining = n_samples - 1
    while remaining > 0:  # random partitions in chunks: a row's first `size` ranks of uniform keys
        chunk = min(remaining, 4096)
        picks = np.argsort(rng.random((chunk, n)), axis=1)[:, :size]
        hits += int((s[picks].sum(axis=1) >= observed - tolerance).sum())
        total += chunk
        remaining -= chunk
    return hits / total, False
