"""Bias sources: probability files and their checks, overlap features, the logistic bias model, subsets."""

import json

import numpy as np
import pandas as pd
import pytest

from maskbench.data.schema import DataError, write_prepared
from maskbench.data.synthetic import generate
from maskbench.steps.nlu import finetune as finetune_cli
from maskbench.steps.nlu.bias_overlap import BiasModel
from maskbench.tracks.nlu.bias.overlap_features import (
    claim_features,
    is_contiguous_subsequence,
    pair_features,
)
from maskbench.tracks.nlu.bias.probs import read_probs, write_probs
from maskbench.tracks.nlu.training import training_subset

LABELS = ["entailment", "neutral", "contradiction"]


def one_hot_vectors(vocabulary):
    index = {w: i for i, w in enumerate(vocabulary)}

    def vector(word):
        v = np.zeros(len(vocabulary))
        if word in index:
            v[index[word]] = 1.0
        return v

    return vector


VEC = one_hot_vectors("the cat sat on mat a dog".split())


@pytest.mark.parametrize("hypothesis,expected", [
    # all in premise, contiguous, fraction, mean max-cosine, min max-cosine
    ("the cat sat", [1, 1, 1, 1, 1]),
    ("the mat sat", [1, 0, 1, 1, 1]),          # every word occurs, not as a contiguous run
    ("a dog sat", [0, 0, 1 / 3, 1 / 3, 0]),    # only 'sat' occurs; one-hot cosines are 1 or 0
])
def test_pair_features_on_hand_made_pairs(hypothesis, expected):
    np.testing.assert_allclose(pair_features("the cat sat on the mat", hypothesis, VEC), expected)


@pytest.mark.parametrize("premise,hypothesis,expected", [
    # chrisc36's set: the five above, log(max(len p - len h, 1)), the second-smallest max-cosine
    ("the cat sat on the mat", "a dog sat", [0, 0, 1 / 3, 1 / 3, 0, np.log(3), 0]),   # 6 - 3 words
    ("the cat sat on the mat", "the cat sat", [1, 1, 1, 1, 1, np.log(3), 1]),
    ("the cat", "a dog sat", [0, 0, 0, 0, 0, 0, 0]),                                 # longer hypothesis: log 1
    ("the cat sat on the mat", "dog", [0, 0, 0, 0, 0, np.log(5), 0]),                # one word: smallest again
    ("the cat sat on the mat", "dog sat a", [0, 0, 1 / 3, 1 / 3, 0, np.log(3), 0]),
    ("the cat sat on the mat", "mat dog sat", [0, 0, 2 / 3, 2 / 3, 0, np.log(3), 1]),  # maxima 1, 0, 1
])
def test_chrisc36_pair_features_on_hand_made_pairs(premise, hypothesis, expected):
    np.testing.assert_allclose(pair_features(premise, hypothesis, VEC, "chrisc36"), expected)
    np.testing.assert_array_equal(pair_features(premise, hypothesis, VEC, "chrisc36")[:5],
                                  pair_features(premise, hypothesis, VEC))  # the project's five come first


def test_chrisc36_bias_model_is_liblinear_balanced_and_refuses_unknown_settings():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 2))
    y = np.where(x[:, 0] > 1.0, 0, 2)  # few entailments: balancing moves the boundary towards them
    plain = BiasModel(LABELS, "entailment").fit(x, y).predict_proba(x)
    chris = BiasModel(LABELS, "entailment", "liblinear", 100.0, "balanced")
    assert (chris.lr.solver, chris.lr.C, chris.lr.class_weight) == ("liblinear", 100.0, "balanced")
    probs = chris.fit(x, y).predict_proba(x)
    assert (probs.argmax(1) == 0).sum() > (plain.argmax(1) == 0).sum()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="--solver 'sag' is unknown"):
        BiasModel(LABELS, solver="sag")
    with pytest.raises(ValueError, match="--solver liblinear fits two classes only"):
        BiasModel(LABELS, solver="liblinear")  # before any feature is computed
    with pytest.raises(ValueError, match="--class-weight 'even' is unknown"):
        BiasModel(LABELS, class_weight="even")
    with pytest.raises(ValueError, match="feature set 'clark' is unknown"):
        pair_features("a", "a", VEC, "clark")


def test_contiguous_subsequence_and_claim_pooling():
    assert is_contiguous_subsequence(["b", "c"], ["a", "b", "c"])
    assert not is_contiguous_subsequence(["a", "c"], ["a", "b", "c"])
    np.testing.assert_array_equal(claim_features("the cat", VEC), VEC("the") + VEC("cat"))  # max of one-hots


def test_binary_bias_model_splits_the_rest_equally():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 3))
    y = (x[:, 0] > 0).astype(int) * 2  # entailment (0) vs contradiction (2)
    probs = BiasModel(LABELS, "entailment").fit(x, y).predict_proba(x)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs[:, 1], probs[:, 2])
    assert ((probs.argmax(1) == 0) == (y == 0)).mean() > 0.95


@pytest.fixture
def probs_file(tmp_path):
    ids = ["a", "b", "c"]
    probs = np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]])
    path = tmp_path / "bias.parquet"
    write_probs(path, ids, probs, LABELS, {"task": "mnli"})
    return path, ids, probs


def test_probabilities_round_trip_bit_exactly_in_training_order(probs_file):
    path, ids, probs = probs_file
    np.testing.assert_array_equal(read_probs(path, ids, LABELS, "mnli"), probs)
    np.testing.assert_array_equal(read_probs(path, ["c", "a", "b"], LABELS), probs[[2, 0, 1]])


@pytest.mark.parametrize("ids,labels,task,message", [
    (["a", "b"], LABELS, "mnli", "field 'id' has value 'c', which is not in the training set"),
    (["a", "b", "c", "d"], LABELS, "mnli", "field 'id' lacks value 'd'"),
    (["a", "b", "c"], ["entailment", "non-entailment"], "mnli", "has 3 classes"),
    (["a", "b", "c"], LABELS, "qqp", "field 'task' has value 'mnli'"),
])
def test_mismatched_probabilities_are_refused_naming_the_file(probs_file, ids, labels, task, message):
    path = probs_file[0]
    with pytest.raises(DataError, match=message) as err:
        read_probs(path, ids, labels, task)
    assert str(path) in str(err.value)


@pytest.mark.parametrize("bad,message", [
    ([[np.nan, 0.5, 0.5]], "NaN"),
    ([[0.5, 0.5, 0.5]], "sums to 1.5000"),
])
def test_nan_and_unnormalised_rows_are_refused(tmp_path, bad, message):
    path = tmp_path / "bad.parquet"
    write_probs(path, ["a"], np.array(bad), LABELS, {"task": "mnli"})
    with pytest.raises(DataError, match=message):
        read_probs(path, ["a"], LABELS, "mnli")


def test_undertrained_subset_is_deterministic_by_seed():
    first, again, other = training_subset(100, 20, 1, "t"), training_subset(100, 20, 1, "t"), training_subset(100, 20, 2, "t")
    np.testing.assert_array_equal(first, again)
    assert set(first) != set(other) and len(set(first)) == 20
    with pytest.raises(ValueError, match="--train-subset 101"):
        training_subset(100, 101, 1, "t")


def test_finetuning_refuses_a_foreign_bias_file_before_building_a_model(tmp_path):
    frame, labels = generate("nli", "train", 20, seed=0)
    train = tmp_path / "train.parquet"
    write_prepared(frame, labels, train, {"dataset": "mnli_train", "task": "mnli"})
    wrong = tmp_path / "bias.parquet"
    write_probs(wrong, frame.id[:19], np.full((19, 3), 1 / 3), labels, {"task": "mnli"})
    args = ["--train", str(train), "--out-dir", str(tmp_path / "out"), "--seed", "1", "--loss", "reweight",
            "--model-spec", json.dumps({"init": "scratch", "bert_config": {"hidden_size": 8}})]
    with pytest.raises(DataError, match=r"bias.parquet: field 'id' lacks value"):
        finetune_cli.main([*args, "--bias-probs", str(wrong)])
    with pytest.raises(ValueError, match="needs --bias-probs"):
        finetune_cli.main(args)
    assert not (tmp_path / "out").exists()


def test_reweighting_sees_each_examples_own_bias_probability(tmp_path):
    # the training loop hands the loss the rows of the batch's examples: with a bias that is certain of the
    # gold label everywhere the reweighted loss is 0 and the weights never move
    frame, labels = generate("nli", "train", 32, seed=0)
    train = tmp_path / "train.parquet"
    write_prepared(frame, labels, train, {"dataset": "mnli_train", "task": "mnli"})
    certain = np.eye(3)[frame.label.to_numpy()]
    bias = tmp_path / "bias.parquet"
    write_probs(bias, frame.id, certain, labels, {"task": "mnli"})
    spec = {"init": "scratch", "bert_config": {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                               "intermediate_size": 16, "max_position_embeddings": 64}}
    out = tmp_path / "out"
    assert finetune_cli.main(["--train", str(train), "--out-dir", str(out), "--seed", "1", "--loss", "reweight",
                              "--bias-probs", str(bias), "--model-spec", json.dumps(spec),
                              "--hparams", json.dumps({"epochs": 1, "batch_size": 8, "log_every": 1})]) == 0
    assert (pd.read_csv(out / "train_curve.csv").train_loss.dropna() == 0).all()


def test_learned_mixin_trains_its_gate_towards_a_bias_that_is_always_right(tmp_path):
    # Clark et al.'s gate g = softplus(w.h + b) scales log p_b: with a bias certain of the gold label, a larger g
    # lowers the loss, so the gate must grow over training (its mean per batch is logged in the curve)
    frame, labels = generate("nli", "train", 64, seed=0)
    train = tmp_path / "train.parquet"
    write_prepared(frame, labels, train, {"dataset": "mnli_train", "task": "mnli"})
    certain = np.full((64, 3), 0.05) + 0.85 * np.eye(3)[frame.label.to_numpy()]
    bias = tmp_path / "bias.parquet"
    write_probs(bias, frame.id, certain, labels, {"task": "mnli"})
    spec = {"init": "scratch", "bert_config": {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
                                               "intermediate_size": 16, "max_position_embeddings": 64}}
    out = tmp_path / "out"
    assert finetune_cli.main(["--train", str(train), "--out-dir", str(out), "--seed", "1", "--loss",
                              "learned_mixin", "--bias-probs", str(bias), "--model-spec", json.dumps(spec),
                              "--hparams", json.dumps({"epochs": 6, "batch_size": 8, "log_every": 8,
                                                       "learning_rate": 0.01, "warmup": 0})]) == 0
    gate = pd.read_csv(out / "train_curve.csv").mixin_gate.dropna().to_numpy()
    assert len(gate) == 6 and gate[-1] > gate[0] + 0.1
    # the gate is training-only: the checkpoint is a plain classifier
    assert "mixin_gate" not in (out / "config.json").read_text()


def test_workflow_knows_which_losses_need_a_teacher():
    import re
    from pathlib import Path

    from maskbench.objectives.losses import NEEDS
    from maskbench.objectives.needs import NEEDS as PLANNED
    from maskbench.objectives.needs import needing

    # the rules plan a loss's inputs from maskbench.objectives.needs (torch-free), the losses check keywords against NEEDS
    assert PLANNED == NEEDS
    assert needing("teacher") == {"conf_reg"}
    plan = (Path(__file__).resolve().parents[1] / "src" / "maskbench" / "tracks" / "nlu" / "workflow_plan.py").read_text()
    assert re.search(r'^TEACHER_LOSSES = needing\("teacher"\)$', plan, re.M)
