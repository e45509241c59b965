"""The cross-paper matrix's vision cells (config vision.masks): the colour-only bias model cannot read the digit,
the debiasing objectives on a hand-made batch, the three mask methods on a tiny model, the biased dev split, the
records and the plan (a dry run of the smoke config)."""

import json
import math
import re

import numpy as np
import pytest
import torch
import yaml
from test_vision_data import fake_digits
from test_workflow import REPO, planned_jobs, snakemake

from maskbench.config_checks import ConfigError
from maskbench.tracks.vision.biased_dev import biased_dev_split
from maskbench.tracks.vision.biased_mnist import (
    COLOUR_MAP,
    colour_background,
    colour_biased_mnist,
    multi_color_mnist,
)
from maskbench.tracks.vision.colour_bias import (
    ColourModelSettings,
    accuracy,
    colour_features,
    colour_probs,
    fit_colour_model,
)
from maskbench.tracks.vision.config_checks import check_masks
from maskbench.tracks.vision.debias_masks import MaskSettings, ProbImages, debias_objective, run_mask
from maskbench.tracks.vision.images import ImageDataset
from maskbench.tracks.vision.models import build_model
from maskbench.tracks.vision.workflow_plan import VisionPlan

# ----------------------------------------------------------------------------------------- colour-only model


def test_colour_features_are_the_painted_colours_whatever_the_digit():
    digits_a, labels = fake_digits(10, seed=1)
    digits_b, _ = fake_digits(10, seed=2)  # other strokes, same colours
    colours = COLOUR_MAP[np.arange(len(labels)) % 10]
    feats_a = colour_features(colour_background(digits_a, colours))
    feats_b = colour_features(colour_background(digits_b, colours))
    assert np.array_equal(feats_a, feats_b)
    assert np.array_equal(feats_a, np.concatenate([colours, colours], axis=1).astype(np.float32))


def test_multi_colour_features_do_not_move_with_the_digit():
    digits_a, labels = fake_digits(10, seed=3)
    digits_b, _ = fake_digits(10, seed=4)
    a = multi_color_mnist(digits_a, labels, 0.99, 0.95, seed=5)
    b = multi_color_mnist(digits_b, labels, 0.99, 0.95, seed=5)  # same colour draws, other digits
    assert np.array_equal(a.bias, b.bias)
    assert np.array_equal(colour_features(a.images), colour_features(b.images))
    # and the halves differ (left colour, right complement), so both attributes are seen
    assert not np.array_equal(colour_features(a.images)[:, :3], colour_features(a.images)[:, 3:])


def test_the_colour_model_fits_the_bias_and_is_at_chance_on_unbiased_digits():
    digits, labels = fake_digits(60, seed=6)
    train = colour_biased_mnist(digits, labels, rho=0.99, seed=0)
    test_digits, test_labels = fake_digits(60, seed=7)
    test = colour_biased_mnist(test_digits, test_labels, rho=0.1, seed=1)
    model = fit_colour_model(colour_features(train.images), train.label, 10, ColourModelSettings(steps=300))
    train_acc = accuracy(colour_probs(model, colour_features(train.images)), train.label)
    test_acc = accuracy(colour_probs(model, colour_features(test.images)), test.label)
    aligned = 100.0 * float((test.bias[:, 0] == test.label).mean())  # what predicting the colour's class scores
    assert train_acc >= 97.0
    assert abs(test_acc - 10.0) <= 5.0 and abs(test_acc - aligned) <= 2.0, (test_acc, aligned)


# ----------------------------------------------------------------------------------------- the objectives


class FixedLogits(torch.nn.Module):
    def __init__(self, logits):
        super().__init__()
        self.logits = torch.nn.Parameter(torch.tensor(logits))

    def forward(self, x):
        return self.logits


BATCH = {"image": torch.zeros(2, 1), "label": torch.tensor([0, 1]),
         "bias_probs": torch.tensor([[0.9, 0.1], [0.5, 0.5]])}


def test_poe_objective_on_a_hand_made_batch():
    # example 1: logits (2, 0), bias (0.9, 0.1), label 0: CE of (2 + ln 0.9, ln 0.1) = ln(1 + 0.1 / (0.9 e^2));
    # example 2: a uniform bias leaves plain CE of (0, 1) at label 1 = ln(1 + e^-1)
    loss, _ = debias_objective(_loss("poe"))(FixedLogits([[2.0, 0.0], [0.0, 1.0]]), BATCH)
    expected = (math.log(1 + 0.1 / (0.9 * math.e ** 2)) + math.log(1 + math.exp(-1))) / 2
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(0.164093, abs=1e-6)


def test_reweight_objective_on_a_hand_made_batch():
    # weights 1 - p_b(y) = (0.1, 0.5); CE (ln(1 + e^-2), ln(1 + e^-1)); normalised by the weights' sum
    loss, _ = debias_objective(_loss("reweight"))(FixedLogits([[2.0, 0.0], [0.0, 1.0]]), BATCH)
    expected = (0.1 * math.log(1 + math.exp(-2)) + 0.5 * math.log(1 + math.exp(-1))) / 0.6
    assert float(loss.detach()) == pytest.approx(expected, abs=1e-6)
    assert expected == pytest.approx(0.282206, abs=1e-6)


def _loss(name):
    from maskbench.objectives.losses import get_loss

    return get_loss(name)


def test_batches_carry_each_example_its_own_bias_probabilities():
    digits, labels = fake_digits(2, seed=8)
    images = ImageDataset(colour_biased_mnist(digits, labels, rho=0.99, seed=0))
    probs = np.eye(10, dtype=np.float32)[(np.arange(20) + 3) % 10]
    batch = ProbImages(images, probs).__getitems__([5, 0, 17])
    assert batch["bias_probs"].argmax(1).tolist() == [8, 3, 0]
    assert batch["label"].tolist() == labels[[5, 0, 17]].tolist()


# ----------------------------------------------------------------------------------------- the methods


@pytest.fixture(scope="module")
def tiny():
    digits, labels = fake_digits(20, seed=9)
    split = colour_biased_mnist(digits, labels, rho=0.99, seed=0)
    feats = colour_features(split.images)
    probs = colour_probs(fit_colour_model(feats, split.label, 10, ColourModelSettings(steps=50)), feats)
    return ProbImages(ImageDataset(split), probs)


@pytest.mark.parametrize("method", ["movement_poe", "movement_reweight", "mask_training", "imp"])
def test_each_method_meets_its_sparsity_per_matrix(tiny, method):
    torch.manual_seed(0)
    model = build_model("mlp", 10, hidden=8, layers=2)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    settings = MaskSettings(epochs=1, batch_size=50, reset_every=2, imp_step=0.25)
    keep, record = run_mask(method, model, tiny, 0.5, settings, seed=1, device=torch.device("cpu"))
    assert sorted(keep) == ["extracter.fc1", "extracter.fc2", "fc"]
    for name, mask in keep.items():
        assert int((~mask).sum()) == mask.size // 2, (name, int((~mask).sum()), mask.size)
    assert record["density"] == pytest.approx(0.5)
    assert record["loss"] == {"movement_reweight": "reweight"}.get(method, "poe")
    after = model.state_dict()
    if method == "imp":  # retrained, rewound each round, pruned weights zero
        assert record["weights_retrained"]
        modules = dict(model.named_modules())
        for name, mask in keep.items():
            assert (modules[name].weight.detach().numpy()[~mask] == 0).all()
        assert any(not torch.equal(before[k], after[k]) for k in before)
    else:  # frozen: the weights bit-identical
        assert all(torch.equal(before[k], after[k]) for k in before)


# ----------------------------------------------------------------------------------------- dev split, config


def test_the_biased_dev_split_uses_digits_outside_the_training_split():
    digits, labels = fake_digits(30, seed=10)
    mnist = {"train": (digits, labels)}
    train = colour_biased_mnist(digits[:200], labels[:200], rho=0.99, seed=0, ids=np.arange(200))
    dev = biased_dev_split(mnist, train, "biased_mnist", 50, {"rho": 0.99}, seed=0)
    assert len(dev) == 50 and set(dev.ids.tolist()).isdisjoint(range(200))
    assert np.array_equal(dev.label, labels[dev.ids])
    # coloured as the training split: ReBias gives int(5 x 0.99) = 4 of each class's 5 digits its colour
    assert float((dev.bias[:, 0] == dev.label).mean()) == 0.8
    with pytest.raises(ValueError, match="only 100 MNIST training digits are left"):
        biased_dev_split(mnist, train, "biased_mnist", 101, {"rho": 0.99}, seed=0)


def test_a_train_copy_dev_split_colours_digits_of_the_training_split_afresh():
    """dev_from train_copy (a training split that uses every digit): digits of the training split, class-balanced,
    with colours of a stream of their own."""
    digits, labels = fake_digits(30, seed=10)
    mnist = {"train": (digits, labels)}
    train = colour_biased_mnist(digits, labels, rho=0.99, seed=0, ids=np.arange(300))
    with pytest.raises(ValueError, match="only 0 MNIST training digits are left outside"):
        biased_dev_split(mnist, train, "biased_mnist", 50, {"rho": 0.99}, seed=0)
    dev = biased_dev_split(mnist, train, "biased_mnist", 50, {"rho": 0.99}, seed=0, dev_from="train_copy")
    assert len(dev) == 50 and set(dev.ids.tolist()) <= set(range(300))
    assert np.array_equal(dev.label, labels[dev.ids]) and np.bincount(dev.label).tolist() == [5] * 10
    assert float((dev.bias[:, 0] == dev.label).mean()) == 0.8
    assert dev.provenance["dev_from"] == "train_copy" and not dev.provenance["outside_training_split"]
    # a fresh colouring: not the training split's own images of those digits
    assert not np.array_equal(dev.images, train.images[dev.ids])
    with pytest.raises(ValueError, match="only 300 MNIST training digits are in the training split"):
        biased_dev_split(mnist, train, "biased_mnist", 301, {"rho": 0.99}, seed=0, dev_from="train_copy")
    with pytest.raises(ValueError, match="dev_from must be one of unused_train, train_copy, got 'test'"):
        biased_dev_split(mnist, train, "biased_mnist", 5, {"rho": 0.99}, seed=0, dev_from="test")


def test_the_dev_split_step_refuses_an_unknown_source_of_digits_before_reading_any(tmp_path):
    from maskbench.steps.vision.biased_dev import main

    spec = json.dumps({"generator": "biased_mnist", "levels": {"0.99": {"rho": 0.99}}})
    args = ["--source", "wheel:none.whl", "--train", str(tmp_path / "none.safetensors"), "--spec", spec,
            "--level", "0.99", "--size", "10", "--out", str(tmp_path / "dev.safetensors")]
    with pytest.raises(ValueError, match="--dev-from must be one of unused_train, train_copy, got 'test'"):
        main([*args, "--dev-from", "test"])
    assert not (tmp_path / "dev.safetensors").exists()


def smoke_vision():
    return yaml.safe_load((REPO / "configs/smoke.yaml").read_text())["vision"]


@pytest.mark.parametrize("edit, named", [
    (lambda m: m["benchmarks"].update(x={"dataset": "nope", "level": "0.99"}), "vision.masks.benchmarks.x.dataset"),
    (lambda m: m["benchmarks"].update(x={"dataset": "biased_mnist", "level": "0.5"}),
     "vision.masks.benchmarks.x.level"),
    (lambda m: m.update(sparsities=[0.3]), "vision.masks.imp_step"),
    (lambda m: m.update(dev_size=60_000), "vision.masks.dev_size"),
    (lambda m: m.update(dev_size=60_000, dev_from="train_copy"), "vision.masks.dev_size"),
])
def test_a_wrong_masks_section_is_refused_naming_the_key(edit, named):
    vision = smoke_vision()
    edit(vision["masks"])
    with pytest.raises(ConfigError, match=re.escape(named)):
        check_masks(vision)


def test_the_plan_of_the_smoke_cells():
    config = yaml.safe_load((REPO / "configs/smoke.yaml").read_text())
    plan = VisionPlan.of(config)
    assert len(plan.mask_runs) == 2 * 4 * 1
    job = plan.mask_job("multi_color_mnist", "0.99-0.95", "imp", "0.5")
    assert job["sparsity"] == 0.5 and job["settings"]["imp_step"] == 0.25 and "methods" not in job["settings"]
    manifest = plan.matrix_manifest().value
    assert sorted(manifest) == ["biased_mnist_0.99", "multi_color_mnist"]
    assert [(e["method"], e["gamma"]) for e in manifest["multi_color_mnist"]["ffw"][::2]] == \
        [("ffw", 10.0), ("ffw_structured", 10.0)]
    with pytest.raises(KeyError, match="not a run of vision.masks"):
        plan.mask_job("biased_mnist", "0.99", "imp", "0.9")


def test_the_smoke_dry_run_plans_one_job_per_cell(tmp_path):
    result = snakemake("-n", "--cores", "1", "results/smoke/matrix/cells/vision.csv", "--configfile",
                       str(REPO / "configs/smoke.yaml"), workdir=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    jobs = planned_jobs(result.stdout)
    # 2 benchmarks x 4 methods x 1 sparsity x 2 seeds; per level the dev split and the colour model; per level and
    # seed the dev scores of the vanilla model and its FFW masks; one records file
    assert {k: jobs.get(k) for k in ("vision_debias_mask", "vision_biased_dev", "vision_colour_bias",
                                     "vision_dev_scores", "matrix_cells_vision")} == \
        {"vision_debias_mask": 16, "vision_biased_dev": 2, "vision_colour_bias": 2, "vision_dev_scores": 4,
         "matrix_cells_vision": 1}


def test_records_from_evaluation_outputs(tmp_path):
    """The matrix_cells step on hand-written evaluation outputs: the baseline, an FFW row and a cell run."""
    from maskbench.matrix.cells import read_cells
    from maskbench.steps.vision.matrix_cells import main

    groups = {"left_colour=aligned,right_colour=aligned": 90.0, "left_colour=conflicting,right_colour=aligned": 40.0}
    vanilla = {"run": "vanilla", "params": {}, "task_accuracy": 30.0, "task_groups": groups,
               "unbiased_accuracy": 65.0, "biased_test_accuracy": 95.0, "bias_accuracy": 80.0, "sparsity": 0.0}
    gated = {**vanilla, "run": "ffw_gamma~10_start~final", "biased_test_accuracy": 70.0, "sparsity": 60.0}
    (tmp_path / "eval.json").write_text(json.dumps({"runs": [vanilla, gated]}))
    (tmp_path / "dev.json").write_text(json.dumps({"runs": [{"run": "vanilla", "biased_dev_accuracy": 94.0},
                                                            {"run": "ffw_gamma~10_start~final",
                                                             "biased_dev_accuracy": 71.0}]}))
    (tmp_path / "ffw.json").write_text(json.dumps({"curve": [{"seconds": 3.0}, {"seconds": 12.5}]}))
    run = {**vanilla, "biased_dev_accuracy": 88.0, "sparsity": 50.0, "train_seconds": 4.0, "bias_classes": [10, 10],
           "n_train": 100}
    (tmp_path / "run.json").write_text(json.dumps(run))
    manifest = {"multi_color_mnist": {
        "dataset": "multi_color_mnist", "level": "0.99-0.95", "generator": "multi_color_mnist", "model": "mlp",
        "runs": [{"path": str(tmp_path / "run.json"), "method": "imp", "sparsity": 0.5, "seed": 1}],
        "evals": [{"path": str(tmp_path / "eval.json"), "seed": 1}],
        "dev": [{"path": str(tmp_path / "dev.json"), "seed": 1}],
        "ffw": [{"path": str(tmp_path / "ffw.json"), "method": "ffw", "gamma": 10.0,
                 "run": "ffw_gamma~10_start~final", "seed": 1}]}}
    assert main(["--manifest", json.dumps(manifest), "--out", str(tmp_path / "cells.csv")]) == 0
    cells = read_cells([tmp_path / "cells.csv"]).set_index("method")
    assert cells.loc["baseline", ["id", "ood", "id_dev", "density", "train_seconds"]].tolist() == \
        [95.0, 65.0, 94.0, 1.0, 0.0]
    assert cells.loc["ffw", ["id", "id_dev", "density", "train_seconds", "value"]].tolist() == \
        [70.0, 71.0, 0.4, 12.5, 10.0]
    assert bool(cells.loc["ffw", "native"]) and cells.loc["ffw", "method_paper"] == "D"
    assert cells.loc["imp", ["id_dev", "density", "bias_ideal", "knob"]].tolist() == [88.0, 0.5, 10.0, "sparsity"]
    assert cells.loc["imp", "method_paper"] == "C" and not bool(cells.loc["imp", "native"])
