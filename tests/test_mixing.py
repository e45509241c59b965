"""Paper C's OOD-informed training sets: other prepared sets mixed in, relabelled, repeated, test pairs dropped."""

import pandas as pd
import pytest

from maskbench.data.mixing import MixSpec, mix_training_sets, parse_mix
from maskbench.data.schema import DataError, write_prepared

NLI = ["entailment", "neutral", "contradiction"]


def frame(pairs, labels, prefix):
    return pd.DataFrame({"id": [f"{prefix}{i}" for i in range(len(pairs))], "text_a": [a for a, _ in pairs],
                         "text_b": [b for _, b in pairs], "label": labels})


@pytest.fixture
def files(tmp_path):
    hans = frame([("p1", "h1"), ("p2", "h2"), ("p3", "h3")], [0, 1, 0], "hans")  # non-entailment, entailment, ...
    write_prepared(hans, ["non-entailment", "entailment"], tmp_path / "hans_train.parquet", {"task": "mnli"})
    test = frame([("p2", "h2"), ("x", "y")], [1, 0], "test")  # shares the pair (p2, h2) with hans_train
    write_prepared(test, ["non-entailment", "entailment"], tmp_path / "hans_test.parquet", {"task": "mnli"})
    return tmp_path


def test_mixing_relabels_repeats_and_drops_the_test_pairs(files):
    train = frame([("a", "b")], [1], "mnli")
    spec = MixSpec(files / "hans_train.parquet", repeat=2, label_map={"non-entailment": "contradiction"})
    mixed, report = mix_training_sets(train, NLI, [spec], exclude=[files / "hans_test.parquet"])
    # (p2, h2) is a test pair: dropped; p1 and p3 (non-entailment -> contradiction = 2) twice each
    assert list(mixed.id) == ["mnli0", "hans0#0", "hans2#0", "hans0#1", "hans2#1"]
    assert list(mixed.label) == [1, 2, 2, 2, 2]
    assert list(mixed.text_b) == ["b", "h1", "h3", "h1", "h3"]
    assert report == [{"path": str(spec.path), "n_file": 3, "n_dropped_as_test": 1, "repeat": 2, "n_added": 4,
                       "label_map": {"non-entailment": "contradiction"}}]
    mixed, _ = mix_training_sets(train, NLI, [spec])  # nothing excluded: the entailment pair maps by name
    assert list(mixed.label) == [1, 2, 0, 2, 2, 0, 2]


def test_mixing_errors_name_the_file_and_the_label(files):
    train = frame([("a", "b")], [1], "mnli")
    with pytest.raises(DataError, match=r"hans_train.parquet: field 'label' has value 'non-entailment'.*label_map"):
        mix_training_sets(train, NLI, [MixSpec(files / "hans_train.parquet")])
    with pytest.raises(DataError, match=r"hans_train.parquet: field 'label_map' names \['neutral'\]"):
        mix_training_sets(train, NLI, [MixSpec(files / "hans_train.parquet", 1, {"neutral": "contradiction"})])
    with pytest.raises(DataError, match="missing.parquet"):
        mix_training_sets(train, NLI, [MixSpec(files / "missing.parquet")])
    with pytest.raises(ValueError, match=r"--mix-train\[0\]: field 'repeat' must be a positive integer, got 0"):
        parse_mix('[{"path": "x.parquet", "repeat": 0}]')
    with pytest.raises(ValueError, match=r"--mix-train\[0\]: must be an object with 'path'"):
        parse_mix('[{"file": "x.parquet"}]')
    assert parse_mix('[{"path": "x.parquet", "repeat": 10}]') == [MixSpec(files.__class__("x.parquet"), 10, {})]
