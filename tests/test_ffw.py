"""Paper D's FFW on the engine: the gate's forward and gradient, bit-identical outputs at initialisation, whole
channels under structured gates, the objective's value, the plateau-driven temperature, the evaluation metrics
and the report's tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from maskbench.ffw.mutual_information import empirical_mi
from maskbench.masking.apply import model_fingerprint
from maskbench.masking.deciders import two_sigmoid
from maskbench.tracks.vision import ffw as ffw_module
from maskbench.tracks.vision.evaluation import sparsity_report, task_accuracy
from maskbench.tracks.vision.ffw import FFWSchedule, FFWSettings, attach_gates, gate_objective, run_ffw
from maskbench.tracks.vision.images import ImageDataset, ImageSet
from maskbench.tracks.vision.models import MLP, SimpleConvNet
from maskbench.tracks.vision.report.tables import dataset_table, gamma_table, runs_frame, summary_frame
from maskbench.workflow.workflow_config import ConfigError, check_references


def test_two_sigmoid_forward_is_clipped_and_its_gradient_is_the_unclipped_one():
    gates = torch.tensor([-2.0, -0.5, 0.0, 0.5, 2.0], requires_grad=True)
    temperature = 0.5
    out = two_sigmoid(gates, temperature)
    expected = torch.clamp(2 * torch.sigmoid(gates.detach() / temperature), max=1.0)
    assert torch.equal(out, expected)
    assert out[2].item() == 1.0 and out[3].item() == 1.0  # exactly 1 at and above 0
    out.sum().backward()
    sig = torch.sigmoid(gates.detach() / temperature)
    torch.testing.assert_close(gates.grad, 2 * sig * (1 - sig) / temperature)
    assert gates.grad[3] > 0  # a gate above 0 still feels the loss (paper D's TwoSigmoid)


@pytest.mark.parametrize("structured", [False, True])
@pytest.mark.parametrize("arch", ["conv", "mlp"])
def test_gates_at_initialisation_leave_the_outputs_bit_identical(arch, structured):
    torch.manual_seed(0)
    model = SimpleConvNet(10, 3, (4, 8, 8, 8)) if arch == "conv" else MLP(10, 3 * 28 * 28, 16, 3)
    model.eval()
    x = torch.randn(5, 3, 28, 28)
    with torch.no_grad():
        before = model(x)
    fingerprint = model_fingerprint(model)
    masked = attach_gates(model, FFWSettings(structured=structured))
    with torch.no_grad():
        gated = model(x)
    assert torch.equal(gated, before)
    assert all(float(m.scores.detach().abs().max()) == 0.0 for m in masked.masks.values())
    if structured:  # one gate per output channel / neuron, none on the task classifier
        assert "fc" not in masked.masks
        assert all(tuple(m.scores.shape) == (m.shape[0],) for m in masked.masks.values())
    else:
        assert "fc" in masked.masks
    masked.detach()
    assert model_fingerprint(model) == fingerprint


def test_structured_gates_prune_whole_channels():
    torch.manual_seed(1)
    model = SimpleConvNet(10, 3, (4, 8, 8, 8)).eval()
    masked = attach_gates(model, FFWSettings(structured=True))
    with torch.no_grad():
        for mask in masked.masks.values():
            mask.scores.copy_(torch.randn(mask.scores.shape))
    for name, keep in masked.hard_masks().items():
        rows = keep.reshape(keep.shape[0], -1)
        assert (rows.all(axis=1) | ~rows.any(axis=1)).all(), name  # every channel all kept or all pruned
        expected = masked.masks[name].scores.detach().numpy() >= 0
        assert (rows[:, 0] == expected).all()
    masked.detach()


def test_gate_objective_is_alpha_ce_plus_gamma_mean_mi():
    torch.manual_seed(2)
    model = MLP(3, 4, 5, 1).eval()
    heads = [torch.nn.Linear(5, 2), torch.nn.Linear(5, 3)]
    batch = {"image": torch.randn(6, 4), "label": torch.tensor([0, 1, 2, 0, 1, 2]),
             "bias": torch.tensor([[0, 0], [1, 1], [0, 2], [1, 0], [0, 1], [1, 2]])}
    settings = FFWSettings(alpha=0.5, gamma=3.0)
    loss, logs = gate_objective(heads, [2, 3], settings)(model, batch)
    feats = model.features(batch["image"])
    ce = torch.nn.functional.cross_entropy(model.fc(feats), batch["label"])
    mis = [empirical_mi(batch["bias"][:, b], torch.softmax(h(feats), 1), k) for b, (h, k) in
           enumerate(zip(heads, [2, 3], strict=True))]
    torch.testing.assert_close(loss, 0.5 * ce + 3.0 * (mis[0] + mis[1]) / 2)
    assert float(logs["ce"]) == pytest.approx(ce.item()) and float(logs["mi"]) == pytest.approx(((mis[0] + mis[1]) / 2).item())


def test_schedule_lowers_the_temperature_after_patience_bad_epochs_and_stops(monkeypatch):
    """MI 1.0, 0.9 (good), then 0.9 x4: bad epochs 1, 2 (> patience 1) -> T drops to 0.1, then again to 0.01;
    min_temperature 0.05 stops the run at the second drop."""
    model = MLP(2, 4, 3, 1).eval()
    masked = attach_gates(model, FFWSettings())
    values = iter([1.0, 0.9, 0.9, 0.9, 0.9, 0.9])
    monkeypatch.setattr(ffw_module, "validation_mi", lambda *a: next(values))
    monkeypatch.setattr(ffw_module, "mean_bias_accuracy", lambda *a: 50.0)
    settings = FFWSettings(gate_patience=1, min_temperature=0.05)
    schedule = FFWSchedule(masked, [], 2, settings, None, None, [2], 0)
    stops = [schedule.after_step(step, 100, model) for step in range(2, 14, 2)]
    assert stops == [False, False, False, False, False, True]
    assert [h["temperature"] for h in schedule.history] == pytest.approx([1.0, 1.0, 1.0, 0.1, 0.1, 0.01])
    assert [h["temperature_dropped"] for h in schedule.history] == [False, False, False, True, False, True]
    assert [s["epoch"] for s in schedule.snapshots] == [4, 6]
    masked.detach()


def tiny_set(n: int, seed: int, rho: float) -> ImageSet:
    """Two classes; bias = a bright pixel at (0, 0) aligned with the label with probability rho; the task signal
    is the mean of the image's right half."""
    rng = np.random.default_rng(seed)
    label = rng.integers(0, 2, n)
    bias = np.where(rng.random(n) < rho, label, 1 - label)
    images = rng.integers(0, 80, (n, 1, 6, 6)).astype(np.uint8)
    images[:, 0, :, 3:] += (label * 100).astype(np.uint8)[:, None, None]
    images[:, 0, 0, 0] = (bias * 255).astype(np.uint8)
    return ImageSet(images, label.astype(np.int64), bias[:, None].astype(np.int64), np.arange(n), ["a", "b"],
                    ["pixel"], [2], "tiny", "train")


def test_run_ffw_returns_weight_shaped_masks_and_leaves_the_model_unchanged():
    torch.manual_seed(3)
    model = MLP(2, 36, 8, 2).eval()
    fingerprint = model_fingerprint(model)
    train, val = ImageDataset(tiny_set(60, 0, 0.5)), ImageDataset(tiny_set(40, 1, 0.5))
    settings = FFWSettings(max_gate_epochs=3, gate_patience=0, batch_size=20)
    settings.head.max_epochs = 3
    keep, summary = run_ffw(model, train, val, [2], settings, seed=1, device="cpu")
    assert model_fingerprint(model) == fingerprint
    shapes = {name: tuple(m.weight.shape) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    assert {name: mask.shape for name, mask in keep.items()} == shapes
    assert len(summary["history"]) == 3 and summary["snapshots"]
    chosen = summary["snapshots"][summary["chosen_snapshot"]]
    assert chosen["val_bias_accuracy"] == min(s["val_bias_accuracy"] for s in summary["snapshots"])
    assert summary["density"] == pytest.approx(np.mean(np.concatenate([m.ravel() for m in keep.values()])))


def test_task_accuracy_groups_samples_by_bias_alignment():
    class Fixed(torch.nn.Module):  # predicts class 0 always
        def forward(self, x):
            return torch.stack([torch.ones(len(x)), torch.zeros(len(x))], dim=1)

        def parameters(self, recurse=True):
            return iter([torch.nn.Parameter(torch.zeros(1))])

    batch = {"image": torch.zeros(4, 1), "label": torch.tensor([0, 0, 1, 1]),
             "bias": torch.tensor([[0, 1], [1, 0], [1, 1], [0, 1]])}
    accuracy, groups = task_accuracy(Fixed(), [batch], ["left", "right"])
    assert accuracy == 50.0
    # (aligned, conflicting) etc.: sample 0 (0,0 -> A,C) right; 1 (C,A) right; 2 (A,A) wrong; 3 (C,A) wrong
    assert groups == {"left=aligned,right=conflicting": 100.0, "left=conflicting,right=aligned": 50.0,
                      "left=aligned,right=aligned": 0.0}


def test_sparsity_counts_an_ungated_classifier_as_dense():
    model = MLP(2, 4, 3, 1)
    keep = {"extracter.fc1": np.array([[True] * 4, [False] * 4, [True] * 4])}
    report = sparsity_report(keep, model, ["extracter.fc1", "fc"])
    assert report["weights"] == 12 + 6
    assert report["sparsity"] == pytest.approx(100 * 4 / 18)
    assert report["layer_sparsity"] == {"extracter.fc1": pytest.approx(100 / 3), "fc": 0.0}


def eval_record(seed, task_vanilla, task_ffw, gamma=10.0):
    runs = [{"run": "vanilla", "params": {"method": "vanilla", "start": "final"}, "task_accuracy": task_vanilla,
             "bias_accuracy": 98.0, "sparsity": 0.0, "biased_test_accuracy": 99.0, "task_groups": {}},
            {"run": f"ffw_gamma~{gamma:g}_start~final", "params": {"method": "ffw", "gamma": gamma, "start": "final"},
             "task_accuracy": task_ffw, "bias_accuracy": 20.0, "sparsity": 40.0, "biased_test_accuracy": 90.0,
             "task_groups": {}}]
    return {"dataset": "biased_mnist", "level": "0.99", "seed": seed, "runs": runs}


def test_table2_reports_mean_and_std_over_seeds_beside_the_paper():
    datasets = {"biased_mnist": {"generator": "biased_mnist", "table": 2, "levels": {"0.99": {"rho": 0.99}}}}
    summary = summary_frame(runs_frame([eval_record(1, 30.0, 50.0), eval_record(2, 34.0, 56.0)], datasets))
    table = dataset_table(summary, 2, gamma=10.0)
    rows = table.set_index("method")
    assert rows.loc["vanilla", "task"] == f"32.00 ± {math.sqrt(8):.2f}"
    assert rows.loc["ffw", "task"] == f"53.00 ± {math.sqrt(18):.2f}"
    assert rows.loc["ffw", "paper task"] == "97.79" and rows.loc["vanilla", "paper bias"] == "98.45"
    assert (rows.seeds == 2).all()
    sweep = gamma_table(summary, "biased_mnist", "0.99", "ffw")
    assert list(sweep.gamma) == ["10"] and sweep.task.iloc[0] == rows.loc["ffw", "task"]
    assert isinstance(summary, pd.DataFrame)


def vision_config(**changes):
    config = {"track": "vision", "seeds": [1], "vision": {
        "datasets": {"b": {"generator": "biased_mnist", "model": "m", "table": 2, "levels": {"0.99": {"rho": 0.99}}}},
        "models": {"m": {"arch": "mlp", "train": {"epochs": 1, "batch_size": 10, "learning_rate": 0.1},
                         "snapshot_epochs": []}},
        "ffw": {"methods": ["ffw"], "gamma": 10}}}
    config["vision"].update(changes)
    return config


@pytest.mark.parametrize("changes, message", [
    ({"datasets": {"b": {"generator": "biased_mnist", "model": "nope", "table": 2, "levels": {"x": {"rho": 0.9}}}}},
     "vision.datasets.b.model has value 'nope'"),
    ({"datasets": {"b": {"generator": "multi_color_mnist", "model": "m", "table": 5, "levels": {"x": {"rho_left": 0.9}}}}},
     "vision.datasets.b.levels.x.rho_right is required"),
    ({"gamma_sweep": {"dataset": "b", "level": "0.5", "values": [1]}}, "vision.gamma_sweep.level has value '0.5'"),
    ({"epochs_ablation": {"dataset": "b", "level": "0.99", "epochs": [3]}}, "vision.epochs_ablation.epochs has 3"),
])
def test_vision_config_references_are_checked(changes, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        check_references(vision_config(**changes))


class PredictsZero(torch.nn.Module):
    """Predicts class 0 for every input."""

    def forward(self, x):
        return torch.stack([torch.ones(len(x)), torch.zeros(len(x))], dim=1)

    def parameters(self, recurse=True):
        return iter([torch.nn.Parameter(torch.zeros(1))])


# four background groups of unequal size (left, right alignment with the label; the model always says 0):
# aligned/aligned 4 samples, all right (100); aligned/conflicting 2, one right (50); conflicting/aligned 1, wrong (0);
# conflicting/conflicting 3, one right (33.33). Pooled: 6 of 10 = 60; paper D's "Unbiased": the mean of the four
# group accuracies = (100 + 50 + 0 + 100/3) / 4 = 45.8333.
MC_BATCH = {"image": torch.zeros(10, 1),
            "label": torch.tensor([0, 0, 0, 0, 0, 1, 1, 0, 1, 1]),
            "bias": torch.tensor([[0, 0], [0, 0], [0, 0], [0, 0], [0, 1], [1, 0], [0, 1], [1, 1], [0, 0], [0, 0]])}
MC_GROUPS = {"left_colour=aligned,right_colour=aligned": 100.0, "left_colour=aligned,right_colour=conflicting": 50.0,
             "left_colour=conflicting,right_colour=aligned": 0.0,
             "left_colour=conflicting,right_colour=conflicting": 100.0 / 3}


def test_multi_color_unbiased_accuracy_is_the_mean_of_the_four_groups_not_the_pooled_accuracy():
    from maskbench.tracks.vision.evaluation import group_mean_accuracy

    pooled, groups = task_accuracy(PredictsZero(), [MC_BATCH], ["left_colour", "right_colour"])
    assert pooled == pytest.approx(60.0)
    assert groups == pytest.approx(MC_GROUPS)
    assert group_mean_accuracy(groups) == pytest.approx(45.833333, abs=1e-4)
    # paper D's vanilla row: mean(100, 97.7, 30.37, 7.68) = 58.94 (its "Unbiased" 58.9)
    assert group_mean_accuracy({"a": 100.0, "b": 97.7, "c": 30.37, "d": 7.68}) == pytest.approx(58.9375)
    assert group_mean_accuracy({}) is None


def test_table5_reports_the_group_mean_as_unbiased_the_pooled_apart_and_left_right_bias():
    from maskbench.tracks.vision.report.tables import group_table

    def record(seed, left, right):
        run = {"run": "vanilla", "params": {"method": "vanilla", "start": "final"}, "task_accuracy": 60.0,
               "bias_accuracy": (left + right) / 2, "bias_accuracy_per_attribute": {"left_colour": left,
                                                                                    "right_colour": right},
               "sparsity": 0.0, "biased_test_accuracy": 90.0, "task_groups": MC_GROUPS}
        return {"dataset": "multi_color_mnist", "level": "0.99-0.95", "seed": seed, "runs": [run]}

    datasets = {"multi_color_mnist": {"generator": "multi_color_mnist", "table": 5,
                                      "levels": {"0.99-0.95": {"rho_left": 0.99, "rho_right": 0.95}}}}
    summary = summary_frame(runs_frame([record(1, 96.0, 64.0), record(2, 98.0, 66.0)], datasets))
    row = group_table(summary, gamma=10.0).iloc[0]
    assert row["unbiased"] == "45.83 ± 0.00" and row["pooled"] == "60.00 ± 0.00"
    groups = [c for c in row.index if c.startswith("left_colour=")]
    assert groups == sorted(MC_GROUPS)  # paper D's order: A/A, A/C, C/A, C/C
    assert row["bias left_colour"] == f"97.00 ± {math.sqrt(2):.2f}"
    assert row["bias right_colour"] == f"65.00 ± {math.sqrt(2):.2f}"
    assert row["sparsity"] == "0.00 ± 0.00"


def one_layer_mlp() -> MLP:
    """extracter.fc1 = Linear(2, 2) with W = [[1, 2], [3, 4]], b = [3, -5]; x = [1, 1] gives pre-activations
    [1 + 2 + 3, 3 + 4 - 5] = [6, 2]."""
    model = MLP(2, 2, 2, 1).eval()
    with torch.no_grad():
        model.extracter.fc1.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
        model.extracter.fc1.bias.copy_(torch.tensor([3.0, -5.0]))
    return model


def test_a_structured_gate_at_zero_silences_the_unit_bias_included():
    """Paper D eq. (9): the gate multiplies the unit's output. A pruned unit outputs exactly 0, not its bias."""
    model = one_layer_mlp()
    masked = attach_gates(model, FFWSettings(structured=True))
    with torch.no_grad():
        masked.masks["extracter.fc1"].scores.copy_(torch.tensor([1.0, -1.0]))  # unit 1 pruned
    x = torch.tensor([[1.0, 1.0]])
    with ffw_module.HardGates(masked), torch.no_grad():
        out = model.extracter.fc1(x)
    assert out.tolist() == [[6.0, 0.0]]  # weight rows alone would leave unit 1 at its bias, -5
    masked.detach()


def test_the_gradient_of_a_structured_gate_is_the_unit_output_times_the_two_sigmoid_slope():
    """Gates at 0, T = 1: g = min(2 sigmoid(0), 1) = 1 and dg/dm = 2 sigmoid(0)(1 - sigmoid(0)) = 0.5, so for
    L = sum of fc1's outputs, dL/dm_c = 0.5 * (w_c . x + b_c) = 0.5 * [6, 2] = [3, 1] (the bias is gated too;
    weight rows alone would give 0.5 * [3, 7])."""
    model = one_layer_mlp()
    masked = attach_gates(model, FFWSettings(structured=True))
    model.extracter.fc1(torch.tensor([[1.0, 1.0]])).sum().backward()
    assert masked.masks["extracter.fc1"].scores.grad.tolist() == [3.0, 1.0]
    masked.detach()


@pytest.mark.parametrize("arch", ["conv", "mlp", "resnet"])
def test_the_shrunk_structured_model_computes_what_the_hard_gated_model_computes(arch):
    """Prune a random half of the units with structured gates; the shrunk model (pruned units removed, their
    constant downstream contribution f(0) folded) gives the hard-gated model's outputs."""
    from maskbench.masking.apply import MaskSet, MaskSwitch
    from maskbench.tracks.vision.models import resnet18
    from maskbench.tracks.vision.shrink import shrink

    torch.manual_seed(5)
    if arch == "conv":
        model, x = SimpleConvNet(10, 3, (4, 8, 8, 8)), torch.randn(3, 3, 12, 12)
    elif arch == "mlp":
        model, x = MLP(10, 3 * 28 * 28, 16, 3), torch.randn(3, 3, 28, 28)
    else:
        model, x = resnet18(10, small_input=True), torch.randn(2, 3, 8, 8)
    for module in model.modules():  # non-trivial BatchNorm statistics: f(0) != 0
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-1, 1)
            module.running_var.uniform_(0.5, 2)
            module.bias.data.uniform_(-1, 1)
    model.eval()
    masked = attach_gates(model, FFWSettings(structured=True))
    with torch.no_grad():
        for mask in masked.masks.values():
            mask.scores.copy_(torch.randn(mask.scores.shape))
    with ffw_module.HardGates(masked), torch.no_grad():
        gated = model(x)
    keep = masked.hard_masks()
    masked.detach()
    small, _ = shrink(model, keep, zero_bias=True)
    with torch.no_grad():
        torch.testing.assert_close(small(x), gated, rtol=1e-4, atol=1e-5)
    # the saved mask, applied as the evaluation applies it (FFW's structured masks zero the pruned units' bias)
    switch = MaskSwitch(model)
    switch.apply(MaskSet(keep, {"model_fingerprint": switch.fingerprint, "zero_bias_of_empty_rows": True}))
    with torch.no_grad():
        torch.testing.assert_close(model(x), gated, rtol=1e-5, atol=1e-6)
    switch.revert()


def test_head_update_and_validation_mi_choices_are_checked():
    with pytest.raises(ValueError, match=r"vision\.ffw\.head_update: 'sometimes' is unknown"):
        FFWSettings(head_update="sometimes")
    with pytest.raises(ValueError, match=r"vision\.ffw\.validation_mi: 'later' is unknown"):
        FFWSettings.from_dict({"validation_mi": "later"})


def test_online_heads_take_one_sgd_step_per_gate_batch_and_the_mi_uses_the_heads_before_it():
    """Paper D's code: the MI of a batch is read from the head as it was, then the head takes one SGD step
    (lr 0.5, no momentum or decay here: w <- w - 0.5 dCE/dw) on its CE over the batch's detached features."""
    torch.manual_seed(4)
    model = MLP(3, 4, 5, 1).eval()
    head = torch.nn.Linear(5, 2)
    head.requires_grad_(False)
    before = torch.nn.Linear(5, 2)
    before.load_state_dict(head.state_dict())
    batch = {"image": torch.randn(6, 4), "label": torch.tensor([0, 1, 2, 0, 1, 2]),
             "bias": torch.tensor([[0], [1], [0], [1], [0], [1]])}
    settings = FFWSettings(head_update="online")
    settings.head.lr, settings.head.momentum, settings.head.weight_decay = 0.5, 0.0, 0.0
    online = ffw_module.OnlineHeads([head], settings.head)
    loss, logs = gate_objective([head], [2], settings, online)(model, batch)
    feats = model.features(batch["image"]).detach()
    mi_before = empirical_mi(batch["bias"][:, 0], torch.softmax(before(feats), 1), 2)
    assert logs["mi"] == pytest.approx(float(mi_before.detach()))
    ce = torch.nn.functional.cross_entropy(before(feats), batch["bias"][:, 0])
    grad_w, grad_b = torch.autograd.grad(ce, [before.weight, before.bias])
    torch.testing.assert_close(head.weight, before.weight.detach() - 0.5 * grad_w)
    torch.testing.assert_close(head.bias, before.bias.detach() - 0.5 * grad_b)
    loss.backward()  # the head's step left the gates' graph intact


def test_refined_validation_mi_refreshes_the_heads_before_measuring_and_again_after_a_drop(monkeypatch):
    """validation_mi 'refined': at each epoch end the heads are refreshed, then the MI read; before the next epoch
    they are refreshed again only after a temperature drop. 'pre_epoch': the MI is read first, the heads refreshed
    before every next epoch."""
    calls = []
    monkeypatch.setattr(ffw_module, "fit_heads", lambda *a: calls.append("fit") or [])
    values = iter([1.0, 1.0, 1.0, 1.0])
    monkeypatch.setattr(ffw_module, "validation_mi", lambda *a: calls.append("mi") or next(values))
    monkeypatch.setattr(ffw_module, "mean_bias_accuracy", lambda *a: 50.0)
    model = MLP(2, 4, 3, 1).eval()
    masked = attach_gates(model, FFWSettings())
    schedule = FFWSchedule(masked, [], 2, FFWSettings(gate_patience=1, validation_mi="refined"), None, None, [2], 0)
    schedule.model = model
    for step in (2, 4, 6):  # epochs 1-3: MI 1.0 then bad, bad (> patience 1): a drop at epoch 3
        schedule.before_step(step - 2, 100)
        schedule.after_step(step, 100, model)
    schedule.before_step(6, 100)
    assert calls == ["fit", "mi", "fit", "mi", "fit", "mi", "fit"]
    calls.clear()
    schedule = FFWSchedule(masked, [], 2, FFWSettings(gate_patience=1), None, None, [2], 0)
    schedule.model = model
    values = iter([1.0, 1.0])
    for step in (2, 4):
        schedule.before_step(step - 2, 100)
        schedule.after_step(step, 100, model)
    assert calls == ["mi", "fit", "mi"]
    masked.detach()


def test_run_ffw_with_paper_d_codes_online_heads_runs_and_leaves_the_model_unchanged():
    torch.manual_seed(3)
    model = MLP(2, 36, 8, 2).eval()
    fingerprint = model_fingerprint(model)
    train, val = ImageDataset(tiny_set(60, 0, 0.5)), ImageDataset(tiny_set(40, 1, 0.5))
    settings = FFWSettings(max_gate_epochs=3, gate_patience=0, batch_size=20, head_update="online",
                           validation_mi="refined", structured=True)
    settings.head.max_epochs = 3
    keep, summary = run_ffw(model, train, val, [2], settings, seed=1, device="cpu")
    assert model_fingerprint(model) == fingerprint and len(summary["history"]) == 3
    assert summary["settings"]["head_update"] == "online" and summary["settings"]["validation_mi"] == "refined"


def test_vision_tables_say_whether_each_row_engaged_over_its_seeds():
    # FFW prunes 40 % on seed 1 and nothing on seed 2: not engaged on one of two seeds; the vanilla model scores 99
    # on the biased test (10 labels: chance 10) on both; an evaluation without num_labels leaves the vanilla row "—"
    datasets = {"biased_mnist": {"generator": "biased_mnist", "table": 2, "levels": {"0.99": {"rho": 0.99}}}}
    records = [eval_record(1, 30.0, 50.0), eval_record(2, 34.0, 56.0)]
    records[1]["runs"][1]["sparsity"] = 0.0
    table = dataset_table(summary_frame(runs_frame(records, datasets)), 2, gamma=10.0).set_index("method")
    assert table.loc["ffw", "engagement"] == "not engaged (1 of 2 seeds)"
    assert table.loc["vanilla", "engagement"] == "—"
    for record in records:
        for run in record["runs"]:
            run["num_labels"] = 10
        record["runs"][1]["sparsity"] = 0.05  # keeps 99.95 %: not engaged on either seed
    records[0]["runs"][0]["biased_test_accuracy"] = 14.0  # within 5 points of chance on seed 1
    table = dataset_table(summary_frame(runs_frame(records, datasets)), 2, gamma=10.0).set_index("method")
    assert table.loc["ffw", "engagement"] == "not engaged"
    assert table.loc["vanilla", "engagement"] == "not engaged (1 of 2 seeds)"
    records[0]["runs"][0]["biased_test_accuracy"] = 15.0  # chance + 5: engaged
    table = dataset_table(summary_frame(runs_frame(records, datasets)), 2, gamma=10.0).set_index("method")
    assert table.loc["vanilla", "engagement"] == "engaged"
