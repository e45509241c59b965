import random

import pytest
from sklearn.metrics import f1_score

from maskbench.metrics import accuracy, compute_metrics, group_accuracy, per_label_accuracy, weighted_f1

GOLD = ["e", "e", "n", "c"]
PRED = ["e", "n", "n", "e"]


def test_accuracy_by_hand():
    # hits at positions 0 and 2 -> 2 / 4
    assert accuracy(GOLD, PRED) == 50.0


def test_weighted_f1_by_hand():
    # e: support 2, predicted 2 (pos 0, 3), TP 1 -> P 1/2, R 1/2, F1 1/2
    # n: support 1, predicted 2 (pos 1, 2), TP 1 -> P 1/2, R 1,   F1 2/3
    # c: support 1, predicted 0,            TP 0 -> F1 0
    # weighted by support: (2 * 1/2 + 1 * 2/3 + 1 * 0) / 4 = (5/3) / 4 = 5/12
    assert weighted_f1(GOLD, PRED) == pytest.approx(100 * 5 / 12)


def test_per_label_accuracy_by_hand():
    assert per_label_accuracy(GOLD, PRED) == {"c": 0.0, "e": 50.0, "n": 100.0}


@pytest.mark.parametrize("seed", range(20))
def test_weighted_f1_matches_sklearn(seed):
    rng = random.Random(seed)
    # pred may use a label gold never has, and gold a label pred never uses
    gold_labels = ["a", "b", "c"][: rng.randint(1, 3)]
    pred_labels = ["a", "b", "c", "d"][: rng.randint(1, 4)]
    n = rng.randint(1, 60)
    gold = [rng.choice(gold_labels) for _ in range(n)]
    pred = [rng.choice(pred_labels) for _ in range(n)]
    expected = 100 * f1_score(gold, pred, average="weighted", zero_division=0)
    assert weighted_f1(gold, pred) == pytest.approx(expected)


def test_accuracy_kind_keys():
    m = compute_metrics("accuracy", GOLD, PRED)
    assert set(m) == {"accuracy", "weighted_f1", "accuracy/label=e", "accuracy/label=n", "accuracy/label=c"}
    assert compute_metrics("fever_symmetric", GOLD, PRED) == m


def test_hans_breakdown_by_hand():
    ent, non = "entailment", "non-entailment"
    gold = [ent, ent, non, non, ent, non]
    pred = [ent, ent, ent, non, non, ent]
    # hits:  1    1    0    1    0    0   -> 3 / 6
    groups = {
        "heuristic": ["lexical_overlap"] * 3 + ["subsequence"] * 2 + ["constituent"],
        "subcase": ["ln_a", "ln_a", "ln_b", "sn_a", "sn_a", "cn_a"],
    }
    m = compute_metrics("hans", gold, pred, groups)
    expected = {
        "accuracy": 50.0,
        "accuracy/label=entailment": 100 * 2 / 3,  # positions 0, 1, 4
        "accuracy/label=non-entailment": 100 * 1 / 3,  # positions 2, 3, 5
        "accuracy/heuristic=lexical_overlap": 100 * 2 / 3,
        "accuracy/heuristic=subsequence": 50.0,
        "accuracy/heuristic=constituent": 0.0,
        "accuracy/heuristic=lexical_overlap/label=entailment": 100.0,
        "accuracy/heuristic=lexical_overlap/label=non-entailment": 0.0,
        "accuracy/heuristic=subsequence/label=entailment": 0.0,
        "accuracy/heuristic=subsequence/label=non-entailment": 100.0,
        "accuracy/heuristic=constituent/label=non-entailment": 0.0,
        "accuracy/subcase=ln_a": 100.0,
        "accuracy/subcase=ln_b": 0.0,
        "accuracy/subcase=sn_a": 50.0,
        "accuracy/subcase=cn_a": 0.0,
    }
    weighted = m.pop("weighted_f1")
    assert m == pytest.approx(expected)
    assert 0.0 <= weighted <= 100.0


def test_hans_without_subcase_has_no_subcase_keys():
    m = compute_metrics("hans", ["a", "b"], ["a", "a"], {"heuristic": ["x", "y"]})
    assert not any(k.startswith("accuracy/subcase=") for k in m)
    assert m["accuracy/heuristic=x"] == 100.0 and m["accuracy/heuristic=y"] == 0.0


def test_paws_subsets():
    gold = ["duplicate", "not_duplicate", "not_duplicate", "not_duplicate", "duplicate"]
    pred = ["duplicate", "duplicate", "not_duplicate", "not_duplicate", "not_duplicate"]
    m = compute_metrics("paws", gold, pred)
    assert m["accuracy"] == 60.0
    assert m["non_duplicate_accuracy"] == pytest.approx(100 * 2 / 3)  # positions 1, 2, 3
    assert m["duplicate_accuracy"] == 50.0  # positions 0, 4


def test_paws_subset_without_gold_examples_is_left_out():
    m = compute_metrics("paws", ["duplicate"], ["duplicate"])
    assert "non_duplicate_accuracy" not in m and m["duplicate_accuracy"] == 100.0


def test_group_accuracy_uses_string_keys():
    assert group_accuracy([1, 1, 0], [1, 0, 0], [3, 3, 4]) == {"3": 50.0, "4": 100.0}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: accuracy(["a"], ["a", "b"]), "1 labels but pred has 2"),
        (lambda: weighted_f1([], []), "empty"),
        (lambda: compute_metrics("accuracy", [], []), "empty"),
        (lambda: compute_metrics("accuracy", ["a", "b"], ["a"]), "2 labels but pred has 1"),
        (lambda: compute_metrics("bleu", ["a"], ["a"]), "unknown metric kind"),
        (lambda: compute_metrics("hans", ["a"], ["a"]), "heuristic"),
        (lambda: compute_metrics("hans", ["a"], ["a"], {"heuristic": ["x", "y"]}), "heuristic"),
        (lambda: group_accuracy(["a"], ["a"], []), "group keys"),
    ],
)
def test_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_glue_metrics_by_hand():
    """A 2x2 confusion: gold 1,1,1,0,0,0,0,0 / pred 1,1,0,1,0,0,0,0 -> TP 2, FN 1, FP 1, TN 4.
    Matthews = (2*4 - 1*1) / sqrt(3 * 3 * 5 * 5) = 7 / 15; F1 of class 1 = 2*2 / (2*2 + 1 + 1) = 2 / 3;
    accuracy 6 / 8."""
    from maskbench.metrics import binary_f1, glue_scores, matthews_corrcoef

    gold = [1, 1, 1, 0, 0, 0, 0, 0]
    pred = [1, 1, 0, 1, 0, 0, 0, 0]
    assert matthews_corrcoef(gold, pred) == pytest.approx(100 * 7 / 15)
    assert binary_f1(gold, pred, positive=1) == pytest.approx(100 * 2 / 3)
    assert glue_scores(gold, pred, "matthews") == pytest.approx({"accuracy": 75.0, "matthews": 100 * 7 / 15,
                                                                 "score": 100 * 7 / 15})
    assert glue_scores(gold, pred, "f1_accuracy", positive=1) == pytest.approx(
        {"accuracy": 75.0, "f1": 100 * 2 / 3, "score": (75.0 + 100 * 2 / 3) / 2})
    assert glue_scores(gold, pred, "accuracy") == {"accuracy": 75.0, "score": 75.0}
    assert matthews_corrcoef([0, 0, 1], [0, 0, 0]) == 0.0          # one predicted class: sklearn's 0
    assert matthews_corrcoef([0, 1, 2], [0, 1, 2]) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="'f1'"):
        glue_scores(gold, pred, "f1")
