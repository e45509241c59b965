"""Seeded cuts of one dataset (maskbench.data.parts): stratified parts with exact sizes that never overlap, a fixed
number of examples per group, and the config check that keeps entries cutting one file consistent."""

import numpy as np
import pandas as pd
import pytest

from maskbench.config_checks import ConfigError, check_datasets
from maskbench.data.parts import cut, part_sizes, sample_per_group, stratified_part
from maskbench.data.schema import DataError


def test_part_sizes_share_each_part_over_the_labels_by_largest_remainder():
    # 7 of label 0, 3 of label 1; dev 4: exact 2.8 / 1.2 -> 2 + 1 and the larger remainder (0.8) to label 0;
    # test 3: exact 2.1 / 0.9 -> 2 + 0 and the larger remainder (0.9) to label 1; the rest takes what is left
    assert part_sizes({0: 7, 1: 3}, {"dev": 4, "test": 3}, "train") == {
        "dev": {0: 3, 1: 1}, "test": {0: 2, 1: 1}, "train": {0: 2, 1: 1}}
    with pytest.raises(DataError, match=r"add up to 10, which leaves nothing of the 10 examples for part 'train'"):
        part_sizes({0: 7, 1: 3}, {"dev": 4, "test": 6}, "train")


def test_stratified_parts_are_exact_disjoint_cover_everything_and_are_seeded():
    labels = np.array([0] * 7 + [1] * 3)
    sizes = {"dev": 4, "test": 3}
    parts = {name: stratified_part(labels, name, sizes, seed=5) for name in ("dev", "test", "train")}
    assert [len(parts[n]) for n in ("dev", "test", "train")] == [4, 3, 3]
    assert sorted(np.concatenate(list(parts.values())).tolist()) == list(range(10))
    assert [int((labels[parts[n]] == 1).sum()) for n in ("dev", "test", "train")] == [1, 1, 1]
    assert np.array_equal(stratified_part(labels, "dev", sizes, seed=5), parts["dev"])
    others = [stratified_part(labels, "dev", sizes, seed=s) for s in range(6)]
    assert any(not np.array_equal(o, parts["dev"]) for o in others)


def test_sample_per_group_keeps_n_of_each_value_in_file_order():
    groups = pd.Series(["a", "b", "a", "c", "b", "a", "c"], name="subcase")
    rows = sample_per_group(groups, 2, seed=0, where="toy")
    assert len(rows) == 6 and list(rows) == sorted(rows)
    assert sorted(groups.iloc[rows]) == ["a", "a", "b", "b", "c", "c"]
    with pytest.raises(DataError, match=r"toy: sample needs 3 examples of every 'subcase', but 'b' has 2"):
        sample_per_group(groups, 3, seed=0, where="toy")


def test_cut_applies_the_part_then_the_sample_and_names_a_missing_column():
    df = pd.DataFrame({"id": [str(i) for i in range(8)], "label": [0, 1] * 4, "subcase": list("xxyyxxyy")})
    out = cut(df, {"part": {"name": "rest", "sizes": {"test": 4}, "seed": 0}, "sample": {"n": 1, "per": "subcase"}},
              "toy")
    assert len(out) == 2 and sorted(out["subcase"]) == ["x", "y"]
    with pytest.raises(DataError, match=r"field 'sample.per' names column 'heuristic'"):
        cut(df, {"sample": {"n": 1, "per": "heuristic"}}, "toy")


def entry(name, sizes=None, seed=0):
    return {"task": "mnli", "source": "local:x.tsv", "labels": ["a", "b"],
            "part": {"name": name, "sizes": sizes or {"test": 10}, "seed": seed}}


def test_entries_cutting_one_file_must_split_it_alike():
    check_datasets({"datasets": {"train": entry("train"), "test": entry("test"), "again": entry("train")}})
    with pytest.raises(ConfigError, match=r"datasets.test.part cuts 'local:x.tsv' with .*seed': 1.*would overlap"):
        check_datasets({"datasets": {"train": entry("train"), "test": entry("test", seed=1)}})


def test_the_shipped_mnli_split_has_the_hand_computed_label_counts():
    """MultiNLI dev-matched (3,479 / 3,123 / 3,213) cut into dev 1,000 and test 2,000: test's exact shares 708.9 /
    636.4 / 654.7 floor to 1,998, the two largest remainders (0.9, 0.7) get one more -> 709 / 636 / 655; dev's
    354.45 / 318.2 / 327.4 -> 355 / 318 / 327; the rest 6,815."""
    from pathlib import Path

    from maskbench.data.registry import load_dataset

    root = Path(__file__).resolve().parents[1]
    spec = {"task": "mnli", "source": "local:data/nli/mnli_dev_matched.tsv", "format": "tsv",
            "columns": {"id": "index", "text_a": "premise", "text_b": "hypothesis", "label": "gold_label"},
            "labels": ["entailment", "neutral", "contradiction"]}
    counts = {}
    for name in ("dev", "test", "train"):
        df, _ = load_dataset("mnli", {**spec, "part": {"name": name, "sizes": {"dev": 1000, "test": 2000}}},
                             base_dir=root)
        counts[name] = df["label"].value_counts().sort_index().tolist()
        assert df["id"].is_unique
    assert counts == {"dev": [355, 318, 327], "test": [709, 636, 655], "train": [2415, 2169, 2231]}
