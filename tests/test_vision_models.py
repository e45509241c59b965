"""Paper D's vision models, the IRENE mutual information and the shrinking of structured masks, on values: parameter
counts against torchvision's and hand computations, bit-exact save/load, MI on cases with known answers, and
shrunk models whose outputs equal the masked ones."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from maskbench.ffw.mutual_information import empirical_mi
from maskbench.masking.deciders import TemperatureGate
from maskbench.masking.engine import attach
from maskbench.masking.savings import count_parameters
from maskbench.masking.selectors import select_modules
from maskbench.metrics import mutual_information
from maskbench.tracks.vision.models import (
    MLP,
    SimpleConvNet,
    build_model,
    from_rebias_state_dict,
    load_model,
    read_model_config,
    resnet18,
    save_model,
)
from maskbench.tracks.vision.shrink import cpu_latency, keep_vectors, shrink

# ------------------------------------------------------------------------------------------------ models


def test_resnet18_matches_torchvision_parameter_counts_and_names():
    model = resnet18(1000)
    assert count_parameters(model) == 11_689_512  # torchvision.models.resnet18().parameters()
    assert count_parameters(resnet18(10)) == 11_689_512 - 513 * 1000 + 513 * 10 == 11_181_642
    state = model.state_dict()
    # torchvision's state_dict: 62 parameters + 3 buffers x 20 BatchNorms
    assert len(state) == 122
    assert state["conv1.weight"].shape == (64, 3, 7, 7)
    assert state["layer2.0.downsample.0.weight"].shape == (128, 64, 1, 1)
    assert state["layer2.0.downsample.1.running_var"].shape == (128,)
    assert state["layer4.1.conv2.weight"].shape == (512, 512, 3, 3)
    assert state["fc.weight"].shape == (1000, 512)
    assert "layer1.0.downsample.0.weight" not in state
    assert model.features(torch.zeros(1, 3, 64, 64)).shape == (1, 512)


def test_resnet18_small_input_stem():
    model = resnet18(10, small_input=True)
    assert model.conv1.weight.shape == (64, 3, 3, 3)
    assert isinstance(model.maxpool, nn.Identity)
    assert count_parameters(model) == 11_181_642 - 64 * 3 * 49 + 64 * 3 * 9
    assert model.features(torch.zeros(2, 3, 28, 28)).shape == (2, model.bottleneck_dim) == (2, 512)


def test_simple_conv_net_parameter_count_by_hand():
    model = SimpleConvNet(10)
    convs = sum(cin * cout * 7 * 7 + cout for cin, cout in ((3, 16), (16, 32), (32, 64), (64, 128)))
    batchnorm = 2 * (16 + 32 + 64 + 128)
    assert convs == 2352 + 16 + 25088 + 32 + 100352 + 64 + 401408 + 128
    assert count_parameters(model) == convs + batchnorm + 128 * 10 + 10 == 531_210
    # ReBias' layer list: every block conv (k=7, padding 3, with bias) -> BatchNorm -> ReLU, no Tanh
    kinds = [type(m).__name__ for m in model.extracter]
    assert kinds == ["Conv2d", "BatchNorm2d", "ReLU"] * 4
    assert model.extracter.conv1.padding == (3, 3) and model.extracter.conv4.bias is not None


def test_mlp_parameter_count_by_hand():
    model = MLP(10)
    assert count_parameters(model) == (2352 * 100 + 100) + 2 * (100 * 100 + 100) + (100 * 10 + 10) == 256_510
    assert model.bottleneck_dim == 100


@pytest.mark.parametrize("name,shape", [("simple_conv", (3, 28, 28)), ("mlp", (3, 28, 28)),
                                        ("resnet18", (3, 32, 32))])
def test_features_are_the_bottleneck_and_forward_is_fc_of_features(name, shape):
    torch.manual_seed(0)
    model = build_model(name, 7).eval()
    x = torch.randn(3, *shape)
    feats = model.features(x)
    assert feats.shape == (3, model.bottleneck_dim)
    assert model.bottleneck_dim == {"simple_conv": 128, "mlp": 100, "resnet18": 512}[name]
    assert model.head is model.fc
    assert torch.equal(model(x), model.fc(feats))


def _targets(model: nn.Module) -> list[str]:
    """The vision kinds the model has (a kind that matches nothing is an error)."""
    return ["conv", "linear"] if any(isinstance(m, nn.Conv2d) for m in model.modules()) else ["linear"]


@pytest.mark.parametrize("name", ["simple_conv", "mlp", "resnet18"])
def test_vision_kinds_select_every_conv_and_linear(name):
    model = build_model(name, 10)
    every = {n for n, m in model.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))}
    assert set(select_modules(model, _targets(model), family="vision")) == every
    assert set(select_modules(model, ["linear"], family="vision")) == {
        n for n, m in model.named_modules() if isinstance(m, nn.Linear)}


def test_build_model_names_the_choices():
    with pytest.raises(ValueError, match="mlp, resnet18, simple_conv"):
        build_model("vgg", 10)


def test_rebias_keys_are_renamed():
    ours = SimpleConvNet(10).state_dict()
    rebias = {}
    for key, value in ours.items():
        for i in range(1, 5):
            key = key.replace(f"extracter.conv{i}.", f"extracter.{3 * (i - 1)}.")
            key = key.replace(f"extracter.bn{i}.", f"extracter.{3 * (i - 1) + 1}.")
        rebias[key] = value
    assert "extracter.9.weight" in rebias and "extracter.10.running_mean" in rebias
    assert from_rebias_state_dict(rebias).keys() == ours.keys()


def _with_running_stats(model: nn.Module, shape, steps: int = 2) -> nn.Module:
    model.train()
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(8, *shape))
    return model.eval()


@pytest.mark.parametrize("name,kwargs", [("simple_conv", {"channels": (4, 5, 6, 7)}), ("mlp", {"hidden": 20}),
                                         ("resnet18", {"small_input": True})])
def test_save_load_round_trip_is_bit_exact(tmp_path, name, kwargs):
    torch.manual_seed(1)
    model = _with_running_stats(build_model(name, 3, **kwargs), (3, 28, 28))
    path = tmp_path / "model.safetensors"
    save_model(model, path, {"seed": 1})
    loaded = load_model(path)
    assert read_model_config(path)["meta"] == {"seed": 1}
    assert type(loaded) is type(model) and not loaded.training
    for key, value in model.state_dict().items():  # buffers too: BatchNorm running statistics
        assert torch.equal(loaded.state_dict()[key], value), key
    x = torch.randn(4, 3, 28, 28)
    assert torch.equal(loaded(x), model(x))


def test_save_refuses_a_masked_model(tmp_path):
    model = MLP(3, hidden=5)
    attach(model, TemperatureGate(), ["linear"], "row", family="vision")
    with pytest.raises(ValueError, match="detach"):
        save_model(model, tmp_path / "m.safetensors")


# ------------------------------------------------------------------------------------ mutual information


def test_mi_of_independent_prediction_is_zero():
    labels = torch.arange(4).repeat(25)  # uniform bias
    probs = torch.full((100, 4), 0.25)
    assert float(empirical_mi(labels, probs, 4)) == pytest.approx(0.0, abs=1e-12)


def test_mi_of_a_perfect_head_is_one():
    for k in (2, 3, 10):
        labels = torch.arange(k).repeat(7)
        probs = nn.functional.one_hot(labels, k).double()
        assert float(empirical_mi(labels, probs, k)) == pytest.approx(1.0, abs=1e-9)
        assert float(empirical_mi(probs, probs, k)) == pytest.approx(1.0, abs=1e-9)  # one-hot bias rows


def test_mi_two_by_two_by_hand():
    labels = torch.tensor([0, 0, 1, 1])
    probs = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], dtype=torch.float64)
    joint = np.array([[1.5, 0.5], [0.5, 1.5]]) / 4  # rows: true bias, columns: predicted
    p_b, p_hat = joint.sum(1), joint.sum(0)
    expected = sum(joint[i, j] * math.log(joint[i, j] / (p_b[i] * p_hat[j])) for i in range(2) for j in range(2))
    expected /= math.log(2)
    assert expected == pytest.approx(0.75 * math.log2(1.5) + 0.25 * math.log2(0.5), abs=1e-12)
    assert float(empirical_mi(labels, probs, 2)) == pytest.approx(expected, abs=1e-6)
    assert mutual_information(labels.tolist(), probs.numpy(), 2) == pytest.approx(expected, abs=1e-6)


def test_mi_gradient_reaches_the_logits():
    torch.manual_seed(0)
    logits = torch.randn(20, 3, requires_grad=True)
    labels = torch.randint(0, 3, (20,))
    empirical_mi(labels, torch.softmax(logits, dim=1), 3).backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0


def test_numpy_and_torch_mi_agree():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 5, 200)
    probs = rng.dirichlet(np.ones(5), 200)
    torch_value = float(empirical_mi(torch.from_numpy(labels), torch.from_numpy(probs), 5))
    assert mutual_information(labels, probs, 5) == pytest.approx(torch_value, abs=1e-12)
    assert 0.0 < torch_value < 0.1


# ------------------------------------------------------------------------------------------------ shrink


def _randomise_norms(model: nn.Module, seed: int) -> nn.Module:
    """BatchNorm statistics and affines of both signs, so pruned channels output constants of both signs."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.5)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.randn(n, generator=gen))
                m.bias.copy_(torch.randn(n, generator=gen))
    return model.eval()


def _random_keep(model: nn.Module, seed: int, share: float = 0.5, empty: str | None = None) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    keep = {}
    for name, m in select_modules(model, _targets(model), family="vision").items():
        keep[name] = rng.random(m.weight.shape[0]) < share
    if empty is not None:
        keep[empty][:] = False
    return keep


def _masked_outputs(model: nn.Module, keep: dict[str, np.ndarray], x: torch.Tensor, zero_bias: bool = False):
    """The masked model's outputs through the engine: channel gates at +1 (kept) or -1 (pruned)."""
    masked = _copy(model)
    modules = attach(masked, TemperatureGate(), _targets(masked), "channel", family="vision",
                     zero_bias_of_empty_rows=zero_bias)
    with torch.no_grad():
        for name, mask in modules.masks.items():
            mask.scores.copy_(torch.where(torch.from_numpy(keep[name]), 1.0, -1.0))
    masked.eval()
    with torch.no_grad():
        return masked(x), modules.hard_masks()


def _copy(model):
    import copy

    return copy.deepcopy(model)


@pytest.mark.parametrize("zero_bias", [False, True])
@pytest.mark.parametrize("empty", [None, "extracter.conv2"])
def test_shrunk_simple_conv_net_equals_the_masked_one(zero_bias, empty):
    torch.manual_seed(0)
    model = _randomise_norms(SimpleConvNet(10), 0)
    keep = _random_keep(model, 1, empty=empty)
    x = torch.randn(4, 3, 28, 28)
    expected, hard = _masked_outputs(model, keep, x, zero_bias)
    small, report = shrink(model, keep_vectors(hard), zero_bias=zero_bias)
    with torch.no_grad():
        assert torch.allclose(small(x), expected, atol=1e-5, rtol=0)
        assert not torch.allclose(model(x), expected, atol=1e-3)  # the mask did change the outputs
    assert count_parameters(small) < count_parameters(model)
    by_name = {r["name"]: r for r in report}
    for i in range(1, 5):
        name = f"extracter.conv{i}"
        conv = getattr(small.extracter, f"conv{i}")
        row = by_name[name]
        assert row["pruned"] == int((~keep[name]).sum())
        assert row["removed_zero"] + row["merged_constant"] + row["folded_into_bias"] == row["pruned"]
        assert conv.out_channels == int(keep[name].sum()) + int(row["constant_channel"])
        assert getattr(small.extracter, f"bn{i}").num_features == conv.out_channels
    assert small.fc.in_features == small.bottleneck_dim == small.extracter.conv4.out_channels
    # constants folded across the padded convs are merged into one channel, never into a bias
    assert by_name["extracter.conv1"]["folded_into_bias"] == 0
    assert by_name["extracter.conv4"]["merged_constant"] == 0
    assert sum(r["merged_constant"] for r in report) > 0 and sum(r["removed_zero"] for r in report) > 0
    if empty:
        assert small.extracter.conv2.out_channels == 1


def test_shrunk_mlp_equals_the_masked_one_and_drops_whole_neurons():
    torch.manual_seed(0)
    model = MLP(10, hidden=40).eval()
    keep = _random_keep(model, 2, share=0.4)
    x = torch.randn(5, 3, 28, 28)
    expected, _ = _masked_outputs(model, keep, x)
    small, report = shrink(model, keep)
    with torch.no_grad():
        assert torch.allclose(small(x), expected, atol=1e-5, rtol=0)
    for i in range(1, 4):
        assert getattr(small.extracter, f"fc{i}").out_features == int(keep[f"extracter.fc{i}"].sum())
    assert sum(r["merged_constant"] for r in report) == 0
    assert sum(r["folded_into_bias"] for r in report) > 0  # positive biases of pruned neurons, folded exactly
    assert count_parameters(small) < count_parameters(model) * 0.5


def test_shrunk_resnet18_inner_channels_equal_the_masked_one(tmp_path):
    torch.manual_seed(0)
    model = _randomise_norms(resnet18(10, small_input=True), 3)
    keep = _random_keep(model, 3, share=0.6)
    x = torch.randn(2, 3, 28, 28)
    expected, _ = _masked_outputs(model, keep, x)
    small, report = shrink(model, keep)
    with torch.no_grad():
        assert torch.allclose(small(x), expected, atol=1e-5, rtol=0)
    for name, block in small.blocks():
        row = next(r for r in report if r["name"] == f"{name}.conv1")
        assert block.conv1.out_channels == int(keep[f"{name}.conv1"].sum()) + int(row["constant_channel"])
        assert block.conv2.out_channels == dict(model.blocks())[name].conv2.out_channels  # residual: kept
    assert count_parameters(small) < count_parameters(model)
    save_model(small, tmp_path / "small.safetensors")  # the shrunk model rebuilds from its config
    with torch.no_grad():
        assert torch.equal(load_model(tmp_path / "small.safetensors")(x), small(x))


def test_keep_vectors_refuse_unstructured_masks():
    with pytest.raises(ValueError, match="not structured"):
        keep_vectors({"fc": np.array([[True, False], [True, True]])})


def test_cpu_latency_is_a_positive_median():
    assert 0 < cpu_latency(MLP(10, hidden=8), (3, 28, 28), batch=2, repeats=3, warmup=1) < 1


def test_augmentation_crops_a_padded_window_and_flips_by_hand():
    """RandomCrop(padding p) + RandomHorizontalFlip on a normalised batch: every output is a window of the padded
    image (fill outside) at an offset in [0, 2p], mirrored or not; the draws come from torch's seeded generator."""
    from maskbench.tracks.vision.training import augment_images

    images = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).view(2, 3, 4, 5)
    fill = torch.tensor([-1.0, -2.0, -3.0])
    torch.manual_seed(0)
    out = augment_images(images, crop_padding=2, hflip=True, fill=fill)
    torch.manual_seed(0)
    assert torch.equal(out, augment_images(images, crop_padding=2, hflip=True, fill=fill))  # seeded
    assert out.shape == images.shape
    padded = torch.empty(2, 3, 8, 9)
    padded[:] = fill.view(1, 3, 1, 1)
    padded[:, :, 2:6, 2:7] = images
    for i in range(2):
        windows = [padded[i, :, dy:dy + 4, dx:dx + 5] for dy in range(5) for dx in range(5)]
        assert any(torch.equal(out[i], w) or torch.equal(out[i], w.flip(-1)) for w in windows)
    # no padding, no flip: unchanged; flip only: each image is itself or its mirror, both happen over many images
    assert torch.equal(augment_images(images), images)
    many = torch.rand(64, 1, 3, 3)
    flipped = augment_images(many, hflip=True)
    same = [torch.equal(flipped[i], many[i]) for i in range(64)]
    mirrored = [torch.equal(flipped[i], many[i].flip(-1)) for i in range(64)]
    assert all(s or m for s, m in zip(same, mirrored, strict=True)) and 0 < sum(mirrored) < 64
    # a crop at the largest offset shows the fill of the top and left border
    corner = augment_images(torch.zeros(200, 1, 2, 2), crop_padding=1, fill=torch.tensor([7.0]))
    assert (corner == 7.0).any() and ((corner == 0.0) | (corner == 7.0)).all()
