"""Classification metrics for the evaluation JSONs (all values are percentages, 0-100).

Paper A ("Debiasing Masks") Table 1 reports plain accuracy for MNLI Val., HANS, MNLI Neg., QQP Val.,
FEVER Val. and FEVER Symmetric, and for PAWS both the overall score and "PAWS (¬)", the accuracy on
the examples whose gold label is not_duplicate (the anti-bias subset for lexical overlap).
HANS is additionally broken down by heuristic and label, the way McCoy et al. (2019) report it.

gold and pred are label *names* in the evaluation set's label space; the caller has already merged
labels where needed (e.g. neutral/contradiction -> non-entailment for HANS).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

KINDS = ("accuracy", "hans", "paws", "fever_symmetric")

PAWS_NEGATIVE = "not_duplicate"
PAWS_POSITIVE = "duplicate"


def _check_pair(gold: Sequence, pred: Sequence) -> tuple[list, list]:
    gold, pred = list(gold), list(pred)
    if len(gold) != len(pred):
        raise ValueError(f"gold has {len(gold)} labels but pred has {len(pred)}")
    if not gold:
        raise ValueError("cannot compute metrics on an empty evaluation set")
    return gold, pred


def accuracy(gold: Sequence, pred: Sequence) -> float:
    """Share of examples whose prediction equals the gold label, in percent.

    This is the number paper A reports in every Table 1 column except PAWS' overall score.
    """
    gold, pred = _check_pair(gold, pred)
    return 100.0 * sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)


def weighted_f1(gold: Sequence, pred: Sequence) -> float:
    """Per-class F1 averaged with weights proportional to each class's gold support, in percent.

    Equal to sklearn's ``f1_score(average="weighted")``: classes that only occur in pred have zero
    weight, and a class with no true positives has F1 = 0. Reported for every eval set as a
    secondary score; a Table 1 column can select it in the columns config (e.g. for PAWS).
    """
    gold, pred = _check_pair(gold, pred)
    support = Counter(gold)
    predicted = Counter(pred)
    true_pos = Counter(g for g, p in zip(gold, pred, strict=True) if g == p)
    total = 0.0
    for label, n_gold in support.items():
        # F1 = 2TP / (2TP + FP + FN) = 2TP / (|gold == label| + |pred == label|); never 0/0 since n_gold > 0
        total += n_gold * 2 * true_pos[label] / (n_gold + predicted[label])
    return 100.0 * total / len(gold)


def matthews_corrcoef(gold: Sequence, pred: Sequence) -> float:
    """Matthews correlation (GLUE's CoLA metric), in percent: for two classes (TP*TN - FP*FN) /
    sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN)); for more, Gorodkin's R_K (what sklearn's ``matthews_corrcoef`` computes):
    (c*s - sum_k p_k t_k) / sqrt((s^2 - sum_k p_k^2)(s^2 - sum_k t_k^2)), c correct, s examples, p_k / t_k the
    predicted / gold counts of class k. 0 when a denominator is 0 (one class only, as sklearn)."""
    gold, pred = _check_pair(gold, pred)
    s = len(gold)
    c = sum(g == p for g, p in zip(gold, pred, strict=True))
    t, q = Counter(gold), Counter(pred)
    classes = set(t) | set(q)
    cov_tp = c * s - sum(t[k] * q[k] for k in classes)
    cov_pp = s * s - sum(q[k] ** 2 for k in classes)
    cov_tt = s * s - sum(t[k] ** 2 for k in classes)
    if cov_pp == 0 or cov_tt == 0:
        return 0.0
    return 100.0 * cov_tp / math.sqrt(cov_pp * cov_tt)


def binary_f1(gold: Sequence, pred: Sequence, positive) -> float:
    """F1 of the ``positive`` class (GLUE's MRPC and QQP metric beside accuracy), in percent: 2TP / (2TP + FP + FN);
    0 when the class is neither gold nor predicted."""
    gold, pred = _check_pair(gold, pred)
    tp = sum(g == positive and p == positive for g, p in zip(gold, pred, strict=True))
    n = sum(g == positive for g in gold) + sum(p == positive for p in pred)
    return 100.0 * 2 * tp / n if n else 0.0


# GLUE's per-task metrics (Wang et al. 2018): a task's score is its metric, or the mean of its two metrics
GLUE_METRICS = ("accuracy", "matthews", "f1_accuracy")


def glue_scores(gold: Sequence, pred: Sequence, metric: str, positive=None) -> dict[str, float]:
    """``{"accuracy", the metric's own values, "score"}`` in percent: ``accuracy`` (score = accuracy),
    ``matthews`` (CoLA: score = Matthews correlation), ``f1_accuracy`` (MRPC, QQP: F1 of ``positive`` and
    accuracy, score = their mean as on the GLUE leaderboard)."""
    if metric not in GLUE_METRICS:
        raise ValueError(f"task metric {metric!r} is unknown; choose one of {list(GLUE_METRICS)}")
    out = {"accuracy": accuracy(gold, pred)}
    if metric == "accuracy":
        out["score"] = out["accuracy"]
    elif metric == "matthews":
        out["matthews"] = matthews_corrcoef(gold, pred)
        out["score"] = out["matthews"]
    else:
        if positive is None:
            raise ValueError("task metric 'f1_accuracy' needs the positive class")
        out["f1"] = binary_f1(gold, pred, positive)
        out["score"] = (out["f1"] + out["accuracy"]) / 2
    return out


def group_accuracy(gold: Sequence, pred: Sequence, keys: Sequence) -> dict[str, float]:
    """Accuracy within each group of examples sharing the same key, in percent (keys as str)."""
    gold, pred = _check_pair(gold, pred)
    keys = list(keys)
    if len(keys) != len(gold):
        raise ValueError(f"group keys have {len(keys)} entries but there are {len(gold)} examples")
    hits: Counter = Counter()
    counts: Counter = Counter()
    for g, p, k in zip(gold, pred, keys, strict=True):
        counts[str(k)] += 1
        hits[str(k)] += g == p
    return {k: 100.0 * hits[k] / counts[k] for k in sorted(counts)}


def per_label_accuracy(gold: Sequence, pred: Sequence) -> dict[str, float]:
    """Accuracy on the examples of each gold label (i.e. per-class recall), in percent.

    Only labels that occur in gold get an entry: a label absent from the eval set has no accuracy.
    """
    return group_accuracy(gold, pred, gold)


def _hans_breakdown(gold: list, pred: list, groups: dict[str, Sequence] | None) -> dict[str, float]:
    if not groups or "heuristic" not in groups:
        raise ValueError('metric kind "hans" needs groups["heuristic"] (one heuristic per example)')
    heuristics = [str(h) for h in groups["heuristic"]]
    out = {f"accuracy/heuristic={h}": v for h, v in group_accuracy(gold, pred, heuristics).items()}
    # "\x00" cannot occur in a heuristic or label name, so splitting the joint key back is unambiguous
    joint = group_accuracy(gold, pred, [f"{h}\x00{g}" for h, g in zip(heuristics, gold, strict=True)])
    for key, value in joint.items():
        h, label = key.split("\x00")
        out[f"accuracy/heuristic={h}/label={label}"] = value
    if "subcase" in groups:
        for s, v in group_accuracy(gold, pred, groups["subcase"]).items():
            out[f"accuracy/subcase={s}"] = v
    return out


def _paws_subsets(gold: list, pred: list) -> dict[str, float]:
    by_label = per_label_accuracy(gold, pred)
    out = {}
    # a named subset with no gold examples is left out rather than reported as NaN (not valid JSON)
    if PAWS_NEGATIVE in by_label:
        out["non_duplicate_accuracy"] = by_label[PAWS_NEGATIVE]
    if PAWS_POSITIVE in by_label:
        out["duplicate_accuracy"] = by_label[PAWS_POSITIVE]
    return out


def compute_metrics(
    kind: str, gold: Sequence, pred: Sequence, groups: dict[str, Sequence] | None = None
) -> dict[str, float]:
    """All metrics of one evaluation set, keyed as in the evaluation JSON's "metrics" field.

    Every kind reports ``accuracy``, ``weighted_f1`` and ``accuracy/label=<gold label>``.
    ``"hans"`` adds ``accuracy/heuristic=<h>``, ``accuracy/heuristic=<h>/label=<l>`` and, when
    groups has "subcase", ``accuracy/subcase=<s>``; it requires groups["heuristic"].
    ``"paws"`` adds ``non_duplicate_accuracy`` (paper A's "PAWS (¬)": accuracy on gold == not_duplicate)
    and ``duplicate_accuracy``. ``"accuracy"`` and ``"fever_symmetric"`` add nothing else.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown metric kind {kind!r}; expected one of {', '.join(KINDS)}")
    gold, pred = _check_pair(gold, pred)
    for name, values in (groups or {}).items():
        if len(values) != len(gold):
            raise ValueError(f"groups[{name!r}] has {len(values)} entries but there are {len(gold)} examples")
    metrics = {"accuracy": accuracy(gold, pred), "weighted_f1": weighted_f1(gold, pred)}
    metrics.update({f"accuracy/label={k}": v for k, v in per_label_accuracy(gold, pred).items()})
    if kind == "hans":
        metrics.update(_hans_breakdown(gold, pred, groups))
    elif kind == "paws":
        metrics.update(_paws_subsets(gold, pred))
    return metrics


def mutual_information(bias_labels: Sequence[int], probs, num_bias_classes: int) -> float:
    """Paper D's normalised empirical mutual information between a bias attribute and a head's predicted
    distribution, in [0, 1] (not a percentage): IRENE's estimator, the numpy twin of
    ``maskbench.ffw.mutual_information.empirical_mi`` (see its docstring for the formula).

    ``bias_labels``: N labels in 0..K-1; ``probs``: N x K rows of the head's softmax; K = ``num_bias_classes``.
    """
    import numpy as np

    probs = np.asarray(probs, dtype=np.float64)
    labels = np.asarray(bias_labels, dtype=np.int64)
    k = int(num_bias_classes)
    if k < 2 or probs.ndim != 2 or probs.shape[1] != k:
        raise ValueError(f"mutual_information: probs must be N x {k} with at least 2 classes, got {probs.shape}")
    if labels.shape != (probs.shape[0],) or not len(labels):
        raise ValueError(f"mutual_information: {labels.shape} bias labels for {probs.shape[0]} probability rows")
    if labels.min() < 0 or labels.max() >= k:
        raise ValueError(f"mutual_information: bias labels must lie in 0..{k - 1}")
    onehot = np.eye(k)[labels]
    joint = np.maximum(onehot.T @ probs, 1e-15) / len(labels)
    marginals = np.maximum(np.outer(joint.sum(axis=1), joint.sum(axis=0)), 1e-15)
    return float(np.sum(joint * np.log(joint / marginals)) / np.log(k))
