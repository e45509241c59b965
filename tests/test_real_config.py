"""configs/real.yaml's data, read through the registry from the shipped files: the three parts of MultiNLI
dev-matched (sizes and label counts by hand), HANS at 100 per subcase, and paper A's negation subset of the test
part against a count made without maskbench's negation code."""

import re
from pathlib import Path

import yaml

from maskbench.data.negation import NEGATION_WORDS, negation_subset
from maskbench.data.registry import load_dataset

REPO = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((REPO / "configs/real.yaml").read_text(encoding="utf-8"))


def load(name):
    return load_dataset(name, CONFIG["datasets"][name], base_dir=REPO)


def test_the_three_parts_of_mnli_are_disjoint_with_the_hand_computed_label_counts():
    parts = {name: load(name)[0] for name in ("mnli_train", "mnli_dev", "mnli_test")}
    counts = {name: df["label"].value_counts().sort_index().tolist() for name, df in parts.items()}
    # dev 1,000 and test 2,000 shared over 3,479 / 3,123 / 3,213 by largest remainder (tests/test_parts.py)
    assert counts == {"mnli_train": [2415, 2169, 2231], "mnli_dev": [355, 318, 327], "mnli_test": [709, 636, 655]}
    ids = [set(df["id"]) for df in parts.values()]
    assert sum(map(len, ids)) == 9815 and len(set().union(*ids)) == 9815


def test_hans_is_a_sample_of_100_per_subcase():
    hans, labels = load("hans")
    assert len(hans) == 3000 and hans["subcase"].value_counts().eq(100).all() and hans["subcase"].nunique() == 30
    assert labels == ["entailment", "non-entailment"]
    assert hans["label"].value_counts().tolist() == [1500, 1500]  # each subcase has one gold label
    assert hans["heuristic"].value_counts().eq(1000).all()


def test_the_negation_subset_of_the_test_part_matches_a_count_by_hand():
    test, labels = load("mnli_test")
    subset = negation_subset(test, labels, "entailment")

    def negated(text):  # whole lower-case words, either apostrophe, "n't" also split off ("did n't")
        text = text.lower().replace("\u2019", "'")
        tokens = re.findall(r"[a-z]+(?:'[a-z]+)?", text)
        return any(w in tokens for w in NEGATION_WORDS) or re.search(r"\b\w+ n't\b", text) is not None

    entailed = test[test["label"] == labels.index("entailment")]
    assert len(entailed) == 709
    assert len(subset) == int(entailed["text_b"].map(negated).sum()) == 105
