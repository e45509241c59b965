"""Hand-crafted lexical-overlap features of a (premise, hypothesis) pair (paper C appendix B.3.1, after
Clark et al. 2019), and the claim-only features of a FEVER claim.

Per pair (the ``project`` set): (1) every hypothesis word occurs in the premise, (2) the hypothesis is a
contiguous subsequence of the premise, (3) the fraction of hypothesis words that occur in the premise, (4) the
mean and (5) the minimum over hypothesis words of the highest cosine similarity to any premise word. The
``chrisc36`` set (chrisc36/debias ``build_mnli_bias_only.py``, which papers A and C used) adds (6)
log(max(len(premise) - len(hypothesis), 1)) and (7) the second-smallest of those highest similarities (the
smallest again for a one-word hypothesis). Word vectors come from a fastText ``.vec`` file (the papers' choice)
or, offline, from a model's input-embedding matrix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from maskbench.text.models import words

FEATURE_NAMES = ("all_in_premise", "contiguous_subsequence", "fraction_in_premise", "mean_max_cosine",
                 "min_max_cosine")
FEATURE_SETS = {"project": FEATURE_NAMES,
                "chrisc36": (*FEATURE_NAMES, "log_length_difference", "second_min_max_cosine")}


def is_contiguous_subsequence(needle: Sequence[str], haystack: Sequence[str]) -> bool:
    n = len(needle)
    return n == 0 or any(list(haystack[i:i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def pair_features(premise: str, hypothesis: str, vector: Callable[[str], np.ndarray],
                  feature_set: str = "project") -> np.ndarray:
    """The features of ``FEATURE_SETS[feature_set]`` for one pair, in that order."""
    if feature_set not in FEATURE_SETS:
        raise ValueError(f"feature set {feature_set!r} is unknown; choose one of {sorted(FEATURE_SETS)}")
    p, h = words(premise), words(hypothesis)
    extra = feature_set == "chrisc36"
    length = [float(np.log(max(len(p) - len(h), 1)))] if extra else []
    if not h:
        return np.array([1.0, 1.0, 1.0, 1.0, 1.0, *length, *([1.0] if extra else [])])
    in_premise = [w in set(p) for w in h]
    if p:
        pv = _unit(np.stack([vector(w) for w in p]))
        hv = _unit(np.stack([vector(w) for w in h]))
        best = (hv @ pv.T).max(axis=1)
    else:
        best = np.zeros(len(h))
    ranked = np.sort(best)
    second = [float(ranked[min(1, len(ranked) - 1)])] if extra else []
    return np.array([float(all(in_premise)), float(is_contiguous_subsequence(h, p)), float(np.mean(in_premise)),
                     float(best.mean()), float(ranked[0]), *length, *second])


def claim_features(claim: str, vector: Callable[[str], np.ndarray]) -> np.ndarray:
    """Max-pooled word vectors of the claim (the claim-only bias features for FEVER)."""
    ws = words(claim)
    return np.stack([vector(w) for w in ws]).max(axis=0) if ws else vector("")


def _unit(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1, norms)


def fasttext_vectors(path: str | Path) -> Callable[[str], np.ndarray]:
    """Word -> vector from a fastText .vec text file (first line: count and dimension); zeros when unknown."""
    table: dict[str, np.ndarray] = {}
    with open(path, encoding="utf-8") as handle:
        _, dim = (int(x) for x in handle.readline().split())
        for line in handle:
            parts = line.rstrip("\n").split(" ")
            table[parts[0]] = np.asarray(parts[1:1 + dim], dtype=np.float32)
    zero = np.zeros(dim, dtype=np.float32)
    return lambda w: table.get(w, table.get(w.lower(), zero))


def embedding_vectors(model, tokenizer) -> Callable[[str], np.ndarray]:
    """Word -> mean input embedding of its word pieces, from a model (the offline stand-in for fastText)."""
    matrix = model.get_input_embeddings().weight.detach().cpu().numpy()
    cache: dict[str, np.ndarray] = {}

    def vector(word: str) -> np.ndarray:
        if word not in cache:
            ids = tokenizer(word, add_special_tokens=False)["input_ids"] or [tokenizer.unk_token_id]
            cache[word] = matrix[ids].mean(axis=0)
        return cache[word]

    return vector
