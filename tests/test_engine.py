"""The masking engine: every decider x every granularity on a Linear and a Conv2d (shapes, one value per tile,
straight-through gradients against the surrogate, bit-exact removal, ``bypass``), per-module-kind granularity
plans, masks moved between heads of one encoder, and fingerprints over buffers."""

import copy
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from tiny_models import tiny_bert, tiny_conv_net
from torch import nn
from torch.nn.utils import parametrize
from transformers import BertForMaskedLM, BertForSequenceClassification, BertModel

from maskbench.masking.apply import (
    MaskMismatchError,
    MaskSet,
    MaskSwitch,
    map_prefix,
    masked_modules_fingerprint,
    model_fingerprint,
)
from maskbench.masking.deciders import (
    DECIDERS,
    Magnitude,
    MovementSigmoid,
    MovementTopK,
    TemperatureGate,
    ThresholdMaskTraining,
)
from maskbench.masking.engine import attach
from maskbench.masking.granularity import GranularityError, Head
from maskbench.masking.ranking import prune_count
from maskbench.masking.selectors import ENCODER_KINDS, module_kind, select_linear
from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec, attach_scores

DECIDER_NAMES = ["movement_sigmoid", "movement_topk", "mask_training", "magnitude", "temperature_gate"]
GRAINS = {"weight": "weight", "block": [2, 2], "row": "row", "channel": "channel", "column": "column",
          "head": Head(2), "head_column": Head(2, "column")}
# nn.Linear(8, 6): weight (6, 8); nn.Conv2d(4, 6, 3): weight (6, 4, 3, 3)
SCORE_SHAPES = {("linear", "weight"): (6, 8), ("linear", "block"): (3, 4), ("linear", "row"): (6,),
                ("linear", "column"): (8,), ("linear", "head"): (3, 1), ("linear", "head_column"): (1, 4),
                ("conv", "weight"): (6, 4, 3, 3), ("conv", "channel"): (6,), ("conv", "column"): (4,)}
COMBOS = list(SCORE_SHAPES)
TEMPERATURE = 0.5


def test_the_matrix_covers_every_decider():
    assert sorted(DECIDERS) == sorted(DECIDER_NAMES)


# ------------------------------------------------------------------------------------------------ helpers
def tile_index(grain: str, shape) -> tuple[torch.Tensor, ...]:
    """Per weight entry, the index of its tile in the score tensor, written out here independently of
    ``granularity.py`` (blocks 2 x 2, heads of 2 rows or 2 columns)."""
    grids = torch.meshgrid(*[torch.arange(n) for n in shape], indexing="ij")
    zeros = torch.zeros_like(grids[0])
    return {"weight": lambda: grids, "block": lambda: (grids[0] // 2, grids[1] // 2),
            "row": lambda: (grids[0],), "channel": lambda: (grids[0],), "column": lambda: (grids[1],),
            "head": lambda: (grids[0] // 2, zeros), "head_column": lambda: (zeros, grids[1] // 2)}[grain]()


def tile_sum(values: torch.Tensor, index, score_shape) -> torch.Tensor:
    """The per-tile sum of a weight-shaped tensor."""
    return torch.zeros(score_shape, dtype=values.dtype).index_put_(index, values, accumulate=True)


def make_module(kind: str) -> nn.Module:
    torch.manual_seed(0)
    return nn.Linear(8, 6) if kind == "linear" else nn.Conv2d(4, 6, 3)


def make_input(kind: str, dtype=torch.float32) -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    shape = (5, 8) if kind == "linear" else (2, 4, 5, 5)
    return torch.randn(shape, generator=g).to(dtype)


def functional(kind: str, x, weight, bias):
    return F.linear(x, weight, bias) if kind == "linear" else F.conv2d(x, weight, bias)


def make_decider(name: str):
    return {"movement_sigmoid": lambda: MovementSigmoid(10, 0.5, 0.5),  # keep where S > logit(0.5) = 0
            "movement_topk": lambda: MovementTopK(10, 0.5, 0.5),  # keep the top half of the tiles
            "mask_training": lambda: ThresholdMaskTraining(0.5, "soft", 2.0, 0.01),  # threshold set to 0 below
            "magnitude": lambda: Magnitude(),  # keep buffer set below
            "temperature_gate": lambda: TemperatureGate(init=1.0, temperature=TEMPERATURE)}[name]()


def attached(decider_name: str, kind: str, grain: str, module: nn.Module | None = None, **options):
    """A module masked by the decider at the granularity, with seeded tile values that keep some tiles and
    prune others (one tile's score exactly 0: pruned by ``S > 0``, kept by the gate's ``m >= 0``)."""
    module = module if module is not None else make_module(kind)
    model = nn.Sequential(module)
    masked = attach(model, make_decider(decider_name), ["0"], GRAINS[grain],
                    train_weights=decider_name == "magnitude", **options)
    mask = masked.masks["0"]
    g = torch.Generator().manual_seed(7)
    values = torch.randn(mask.scores.shape, generator=g)
    flat = values.view(-1)
    flat[0], flat[1], flat[2] = 1.5, -1.5, 0.0
    with torch.no_grad():
        if decider_name == "magnitude":
            mask.keep.copy_(values > 0)
        else:
            mask.scores.copy_(values)
        if decider_name == "mask_training":
            mask.threshold.fill_(0.0)
    return model, masked, mask


def expected_tiles(decider_name: str, mask) -> torch.Tensor:
    """The bool tile mask each decider should give, computed here from the scores."""
    scores = mask.scores.detach()
    if decider_name in ("movement_sigmoid", "mask_training"):
        return scores > 0
    if decider_name == "movement_topk":
        keep = torch.zeros(scores.numel(), dtype=torch.bool)
        keep[scores.flatten().argsort(descending=True)[: int(0.5 * scores.numel())]] = True
        return keep.view_as(scores)
    if decider_name == "magnitude":
        return mask.keep.clone()
    return scores >= 0


# ------------------------------------------------------------------------------- decider x granularity
@pytest.mark.parametrize("kind, grain", COMBOS)
@pytest.mark.parametrize("decider_name", DECIDER_NAMES)
def test_hard_mask_has_the_weight_shape_and_one_value_per_tile(decider_name, kind, grain):
    model, masked, mask = attached(decider_name, kind, grain)
    module = model[0]
    weight = module.parametrizations.weight.original.detach()
    assert tuple(mask.scores.shape) == SCORE_SHAPES[kind, grain]
    index = tile_index(grain, weight.shape)
    expected = expected_tiles(decider_name, mask)[index]
    assert expected.any() and not expected.all()
    hard = mask.hard_mask()
    assert hard.dtype == torch.bool and hard.shape == weight.shape
    assert torch.equal(hard, expected)
    assert torch.equal(mask.mask(), expected.float())  # the forward pass's mask (training mode) agrees
    saved = masked.hard_masks()["0"]
    assert saved.dtype == bool and saved.shape == tuple(weight.shape) and np.array_equal(saved, expected.numpy())
    assert masked.density() == pytest.approx(expected.float().mean().item())
    # the module computes with W * m (the bias untouched without zero_bias_of_empty_rows)
    assert torch.equal(module.weight, weight * expected)
    x = make_input(kind)
    torch.testing.assert_close(module(x), functional(kind, x, weight * expected, module.bias), rtol=0, atol=1e-6)


@pytest.mark.parametrize("grain, message", [("block", r"block \[2, 2\] needs a 2-D weight"),
                                            ("head", "'head' needs a 2-D weight")])
@pytest.mark.parametrize("decider_name", DECIDER_NAMES)
def test_blocks_and_heads_refuse_a_convolution_naming_it(decider_name, grain, message):
    model = nn.Sequential(OrderedDict(conv=nn.Conv2d(4, 6, 3)))
    with pytest.raises(GranularityError, match=f"^conv: {message}"):
        attach(model, make_decider(decider_name), ["conv"], GRAINS[grain], family="vision")


def surrogate_loss(kind, x, weight, bias, target):
    """The loss as a function of the masked weight W' = W * M (M real-valued in the surrogate)."""
    return ((functional(kind, x, weight, bias) - target) ** 2).sum()


def surrogate_gradient(kind, mask, module, grain):
    """dL/dM of L(W * M) at M = the current mask, in float64 by autograd, and the surrogate itself."""
    weight = module.parametrizations.weight.original.detach().double()
    bias = module.bias.detach().double()
    x = make_input(kind, torch.float64)
    target = torch.ones_like(functional(kind, x, weight, bias))
    current = mask.hard_mask().double().requires_grad_()
    (grad_m,) = torch.autograd.grad(surrogate_loss(kind, x, weight * current, bias, target), current)

    def loss_at(m):
        return surrogate_loss(kind, x, weight * m, bias, target).item()

    return grad_m, loss_at, current.detach()


def backward_through_module(model, kind):
    out = model(make_input(kind))
    ((out - torch.ones_like(out)) ** 2).sum().backward()


@pytest.mark.parametrize("kind, grain", COMBOS)
@pytest.mark.parametrize("decider_name", ["movement_sigmoid", "movement_topk", "mask_training"])
def test_score_gradient_is_the_tile_sum_of_the_surrogate_gradient(decider_name, kind, grain):
    """Straight through: dL/dS_tile = sum over the tile of dL/dW' * W = sum over the tile of dL/dM of the
    surrogate L(W * M); checked against autograd on the surrogate and against its central finite differences
    (one tile of M moved at a time: L is quadratic in M, so the differences are exact up to rounding)."""
    model, _, mask = attached(decider_name, kind, grain)
    backward_through_module(model, kind)
    module = model[0]
    shape = SCORE_SHAPES[kind, grain]
    index = tile_index(grain, module.parametrizations.weight.original.shape)
    grad_m, loss_at, current = surrogate_gradient(kind, mask, module, grain)
    expected = tile_sum(grad_m, index, shape)
    torch.testing.assert_close(mask.scores.grad.double(), expected, rtol=1e-5, atol=1e-4)
    tile_ids = torch.arange(int(np.prod(shape))).view(shape)[index]
    eps = 1e-3
    numeric = torch.tensor([(loss_at(current + eps * (tile_ids == t)) - loss_at(current - eps * (tile_ids == t)))
                            / (2 * eps) for t in range(int(np.prod(shape)))], dtype=torch.float64).view(shape)
    torch.testing.assert_close(mask.scores.grad.double(), numeric, rtol=1e-4, atol=1e-3)
    pruned = ~expected_tiles(decider_name, mask)
    assert mask.scores.grad[pruned].abs().max() > 0  # a pruned tile still receives its signal
    assert module.parametrizations.weight.original.grad is None  # frozen weights


@pytest.mark.parametrize("kind, grain", COMBOS)
def test_temperature_gate_gradient_goes_through_the_sigmoid(kind, grain):
    """Forward: keep where m >= 0; backward: dL/dm_tile = (sum over the tile of dL/dM) * sigmoid'(m/T) / T."""
    model, masked, mask = attached("temperature_gate", kind, grain)
    module = model[0]
    shape = SCORE_SHAPES[kind, grain]
    index = tile_index(grain, module.parametrizations.weight.original.shape)
    for temperature in (TEMPERATURE, 0.2):
        masked.decider.set_temperature(temperature)
        mask.scores.grad = None
        backward_through_module(model, kind)
        grad_m, _, _ = surrogate_gradient(kind, mask, module, grain)
        upstream = tile_sum(grad_m, index, shape)
        gates = mask.scores.detach().double().requires_grad_()
        (expected,) = torch.autograd.grad(torch.sigmoid(gates / temperature), gates, grad_outputs=upstream)
        sig = torch.sigmoid(gates.detach() / temperature)
        torch.testing.assert_close(expected, upstream * sig * (1 - sig) / temperature)
        torch.testing.assert_close(mask.scores.grad.double(), expected, rtol=1e-5, atol=1e-4)
    # the forward mask does not depend on T; T must stay positive
    assert torch.equal(mask.hard_mask(), expected_tiles("temperature_gate", mask)[index])
    with pytest.raises(ValueError, match="temperature must be > 0"):
        masked.decider.set_temperature(0.0)
    assert masked.decider.describe() == {"decider": "temperature_gate", "init": 1.0, "temperature": 0.2}


@pytest.mark.parametrize("kind, grain", COMBOS)
def test_magnitude_trains_the_kept_weights_and_no_score(kind, grain):
    model, masked, mask = attached("magnitude", kind, grain)
    module = model[0]
    assert masked.parameters() == [] and not isinstance(mask.scores, nn.Parameter)
    backward_through_module(model, kind)
    grad_m, _, _ = surrogate_gradient(kind, mask, module, grain)
    original = module.parametrizations.weight.original
    weight = original.detach().double()
    kept = mask.hard_mask()
    # dL/dW = dL/dW' on kept weights (dL/dW' = dL/dM / W), 0 on pruned ones
    torch.testing.assert_close(original.grad.double()[kept], (grad_m / weight)[kept], rtol=1e-4, atol=1e-4)
    assert bool((original.grad[~kept] == 0).all())


@pytest.mark.parametrize("grain", ["weight", "block", "row", "column", "head", "head_column"])
def test_mask_training_initialises_on_the_mean_magnitude_of_each_tile(grain):
    """Hard magnitude init per tile: the prune_count(tiles, s) tiles of smallest mean |W| get 0, the others
    alpha * phi = 0.02, the threshold is phi = 0.01."""
    model = nn.Sequential(make_module("linear"))
    masked = attach(model, ThresholdMaskTraining(0.5, "hard", 2.0, 0.01), ["0"], GRAINS[grain])
    mask = masked.masks["0"]
    weight = model[0].parametrizations.weight.original.detach()
    shape = SCORE_SHAPES["linear", grain]
    index = tile_index(grain, weight.shape)
    mean_magnitude = tile_sum(weight.abs(), index, shape) / tile_sum(torch.ones_like(weight), index, shape)
    k = prune_count(int(np.prod(shape)), 0.5)
    pruned = torch.zeros(int(np.prod(shape)), dtype=torch.bool)
    pruned[mean_magnitude.flatten().argsort()[:k]] = True
    pruned = pruned.view(shape)
    torch.testing.assert_close(mask.scores.detach(), torch.where(pruned, 0.0, 0.02))
    assert float(mask.threshold) == pytest.approx(0.01)
    assert torch.equal(mask.hard_mask(), (~pruned)[index])


# ------------------------------------------------------------------------------------- removal, bypass
@pytest.mark.parametrize("kind, grain", COMBOS)
@pytest.mark.parametrize("decider_name", DECIDER_NAMES)
def test_detach_leaves_the_module_bit_identical(decider_name, kind, grain):
    module = make_module(kind)
    weight, bias = module.weight, module.bias
    pointers = (weight.data_ptr(), bias.data_ptr())
    values = (weight.detach().clone(), bias.detach().clone())
    x = make_input(kind)
    with torch.no_grad():
        plain = module(x)
    model, masked, mask = attached(decider_name, kind, grain, module, zero_bias_of_empty_rows=True)
    backward_through_module(model, kind)  # gradients flowed, masks computed
    masked.detach()
    assert type(module) in (nn.Linear, nn.Conv2d) and not parametrize.is_parametrized(module)
    assert module.weight is weight and module.bias is bias
    assert (module.weight.data_ptr(), module.bias.data_ptr()) == pointers
    assert torch.equal(module.weight, values[0]) and torch.equal(module.bias, values[1])
    assert [n for n, _ in module.named_parameters()] == ["weight", "bias"] and not list(module.buffers())
    with torch.no_grad():
        assert torch.equal(module(x), plain)


@pytest.mark.parametrize("kind, grain", COMBOS)
def test_detach_keeping_values_writes_the_masked_weight(kind, grain):
    model, masked, mask = attached("movement_sigmoid", kind, grain)
    module = model[0]
    expected = module.parametrizations.weight.original.detach() * mask.hard_mask()
    masked.detach(keep_values=True)
    assert not parametrize.is_parametrized(module) and torch.equal(module.weight, expected)


@pytest.mark.parametrize("kind, grain", COMBOS)
@pytest.mark.parametrize("decider_name", DECIDER_NAMES)
def test_bypass_computes_exactly_as_the_unmasked_module(decider_name, kind, grain):
    module = make_module(kind)
    reference = copy.deepcopy(module)
    model, masked, mask = attached(decider_name, kind, grain, module, zero_bias_of_empty_rows=True)
    x = make_input(kind)
    with torch.no_grad():
        masked_out = model(x)
        with masked.bypass():
            bypassed = model(x)
            assert torch.equal(module.weight, reference.weight) and torch.equal(module.bias, reference.bias)
        after = model(x)
        unmasked = reference(x)
    assert torch.equal(bypassed, unmasked)
    assert not torch.allclose(masked_out, unmasked)  # the mask did something outside the context
    assert torch.equal(after, masked_out)
    # the bias of output units without a kept weight is zeroed outside the context
    alive = mask.hard_mask().reshape(module.weight.shape[0], -1).any(dim=1)
    assert torch.equal(module.bias, reference.bias * alive)


# ------------------------------------------------------------------------------- per-kind granularity
def test_granularity_is_chosen_per_module_kind():
    model = tiny_bert()  # hidden 16, 2 heads of 8, FFN 32
    plan = {"query": [2, 2], "ffn_in": "row", "value": {"head": 8}, "attention_output": {"head": 8, "axis": "column"},
            "default": "weight"}
    masked = attach(model, MovementSigmoid(10, 0.0, 0.1), ENCODER_KINDS, plan)
    expected = {"query": ((8, 8), [2, 2]), "key": ((16, 16), "weight"), "value": ((2, 1), {"head": 8, "axis": "row"}),
                "attention_output": ((1, 2), {"head": 8, "axis": "column"}), "ffn_in": ((32,), "row"),
                "ffn_out": ((16, 32), "weight")}
    assert len(masked.masks) == 12
    for name, mask in masked.masks.items():
        assert mask.kind == module_kind(name)
        shape, spelling = expected[mask.kind]
        assert tuple(mask.scores.shape) == shape, name
        assert mask.granularity.describe() == spelling, name
        assert mask.hard_mask().shape == model.get_submodule(name).parametrizations.weight.original.shape
    # the config path: MaskSearchSpec.block for every kind the granularity plan does not name
    model = tiny_bert()
    scores = attach_scores(model, MaskSearchSpec(block=[4, 4], granularity={"ffn_in": "row"}), total_steps=10)
    shapes = {mask.kind: tuple(mask.scores.shape) for mask in scores.masks.values()}
    assert shapes == {"query": (4, 4), "key": (4, 4), "value": (4, 4), "attention_output": (4, 4), "ffn_in": (32,),
                      "ffn_out": (4, 8)}


def test_a_block_that_does_not_divide_a_weight_names_the_module():
    with pytest.raises(GranularityError, match=r"^bert\.encoder\.layer\.0\.attention\.self\.query: weight \(16, 16\) "
                                               r"does not split into 3x3 blocks"):
        attach(tiny_bert(), MovementSigmoid(10, 0.0, 0.1), ["query"], {"query": [3, 3]})
    with pytest.raises(GranularityError, match=r"^bert\.encoder\.layer\.0\.intermediate\.dense: weight \(32, 16\) "
                                               r"does not split into 5x1 blocks"):
        attach(tiny_bert(), MovementSigmoid(10, 0.0, 0.1), ["ffn_in"], {"ffn_in": [5, 1]})
    with pytest.raises(GranularityError, match=r"granularity\.query: 'diagonal' is not a granularity"):
        attach(tiny_bert(), MovementSigmoid(10, 0.0, 0.1), ["query"], {"query": "diagonal"})
    with pytest.raises(GranularityError, match=r"block \[0, 2\]: sizes must be positive integers"):
        MaskSearchSpec(granularity={"query": [0, 2]})


def test_a_single_head_granularity_spelled_as_a_dict_applies_to_every_module():
    masked = attach(nn.Sequential(nn.Linear(8, 6)), MovementSigmoid(10, 0.5, 0.5), ["0"], {"head": 2})
    assert tuple(masked.masks["0"].scores.shape) == (3, 1)


# ------------------------------------------------------------------- one encoder under several heads
def encoder_masks(model, seed, prefix="bert.", with_classifier=False):
    """Random masks (70 % kept) over the encoder's six matrices per layer, one dead row among them."""
    rng = np.random.default_rng(seed)
    chosen = select_linear(model, list(ENCODER_KINDS))
    masks = {name: rng.random(tuple(m.weight.shape)) < 0.7 for name, m in chosen.items()}
    masks[f"{prefix}encoder.layer.0.intermediate.dense"][3] = False
    if with_classifier:
        masks["classifier"] = rng.random((3, 16)) < 0.7
    assert all(name.startswith(f"{prefix}encoder.layer.") for name in masks if name != "classifier")
    return masks


def encoder_state(model):
    return {k.removeprefix("bert."): v for k, v in model.state_dict().items() if k.startswith("bert.")}


def same_encoder_under_a_masked_lm_head():
    """Model A (3-class classifier) and model B (masked LM) with the same encoder weights."""
    a = tiny_bert(seed=0)
    torch.manual_seed(1)
    b = BertForMaskedLM(a.config).eval()
    missing, unexpected = b.bert.load_state_dict(encoder_state(a), strict=False)
    assert missing == [] and sorted(unexpected) == ["pooler.dense.bias", "pooler.dense.weight"]
    return a, b


def mask_set(model, masks, tmp_path, name="enc.mask"):
    meta = {"model_fingerprint": model_fingerprint(model), "masked_fingerprint": masked_modules_fingerprint(model, masks),
            "model_dir": "ckpt/a"}
    MaskSet(masks, meta).save(tmp_path / name)
    return MaskSet.load(tmp_path / name)


def hidden_states(model, x):
    encoder = model.bert if hasattr(model, "bert") else model
    with torch.no_grad():
        return encoder(input_ids=x).last_hidden_state


def test_a_mask_moves_between_two_heads_of_one_encoder(tmp_path):
    a, b = same_encoder_under_a_masked_lm_head()
    masks = encoder_masks(a, seed=1)
    loaded = mask_set(a, masks, tmp_path)
    assert model_fingerprint(a) != model_fingerprint(b)
    assert loaded.meta["masked_fingerprint"] == masked_modules_fingerprint(b, masks)
    x = torch.randint(5, 50, (2, 7))
    unmasked_b = hidden_states(b, x)
    MaskSwitch(a).apply(loaded)
    MaskSwitch(b).apply(loaded)
    masked_a, masked_b = hidden_states(a, x), hidden_states(b, x)
    assert torch.equal(masked_a, masked_b)
    assert not torch.allclose(masked_b, unmasked_b)
    ffn = b.bert.encoder.layer[0].intermediate.dense
    assert torch.equal(ffn.weight, ffn.parametrizations.weight.original
                       * torch.from_numpy(masks["bert.encoder.layer.0.intermediate.dense"]))
    assert ffn.bias[3].item() == 0.0
    with torch.no_grad():
        assert b(input_ids=x).logits.shape == (2, 7, 50)  # B's own head runs on the masked encoder


def test_a_mask_is_refused_on_another_encoder_naming_both_fingerprints(tmp_path):
    a, b = same_encoder_under_a_masked_lm_head()
    masks = encoder_masks(a, seed=1)
    loaded = mask_set(a, masks, tmp_path)
    with torch.no_grad():
        b.bert.encoder.layer[1].intermediate.dense.weight[0, 0] += 1e-3
    ours = masked_modules_fingerprint(b, masks)
    assert ours != loaded.meta["masked_fingerprint"]
    with pytest.raises(MaskMismatchError) as refused:
        MaskSwitch(b).apply(loaded)
    message = str(refused.value)
    assert "enc.mask" in message and "different encoder" in message and "ckpt/a" in message
    assert loaded.meta["masked_fingerprint"][:16] in message and ours[:16] in message
    assert not any(parametrize.is_parametrized(m) for m in b.modules())  # nothing half-applied
    # without a masked-modules fingerprint only the whole-model one is compared
    whole_only = MaskSet(masks, {"model_fingerprint": model_fingerprint(a)})
    with pytest.raises(MaskMismatchError, match="field 'meta.model_fingerprint'.*different model"):
        MaskSwitch(same_encoder_under_a_masked_lm_head()[1]).apply(whole_only)


def test_a_mask_that_includes_the_classifier_is_refused_under_another_head(tmp_path):
    a, b = same_encoder_under_a_masked_lm_head()
    masks = encoder_masks(a, seed=2, with_classifier=True)
    loaded = mask_set(a, masks, tmp_path, "with_head.mask")
    with pytest.raises(MaskMismatchError, match="module 'classifier' does not exist"):
        MaskSwitch(b).apply(loaded)
    # a classifier of the same shape on the same encoder, but its own head weights
    torch.manual_seed(3)
    c = BertForSequenceClassification(a.config).eval()
    c.bert.load_state_dict(a.bert.state_dict())
    assert not torch.equal(c.classifier.weight, a.classifier.weight)
    with pytest.raises(MaskMismatchError, match="meta.masked_fingerprint"):
        MaskSwitch(c).apply(loaded)
    assert not any(parametrize.is_parametrized(m) for m in c.modules())
    # a 2-class head: the shapes differ
    torch.manual_seed(4)
    d = BertForSequenceClassification(a.config.__class__(**{**a.config.to_dict(), "num_labels": 2})).eval()
    d.bert.load_state_dict(a.bert.state_dict())
    with pytest.raises(MaskMismatchError, match=r"'classifier' has shape \(3, 16\) in the mask but \(2, 16\)"):
        MaskSwitch(d).apply(loaded)
    # the encoder part of the same mask is accepted on both
    encoder_only = {n: m for n, m in masks.items() if n != "classifier"}
    for other in (c, d):
        MaskSwitch(other).apply(mask_set(a, encoder_only, tmp_path))
        assert torch.equal(hidden_states(other, torch.arange(5, 12)[None]), hidden_states(c, torch.arange(5, 12)[None]))


def test_a_bare_encoder_mask_applies_under_a_classifier_through_a_prefix_map(tmp_path):
    a = tiny_bert(seed=0)
    bare = BertModel(a.config).eval()
    bare.load_state_dict(a.bert.state_dict())
    masks = encoder_masks(bare, seed=3, prefix="")
    loaded = mask_set(bare, masks, tmp_path, "bare.mask")
    prefix_map = {"encoder.": "bert.encoder."}
    assert map_prefix("encoder.layer.0.output.dense", prefix_map) == "bert.encoder.layer.0.output.dense"
    assert map_prefix("encoder.layer.0.output.dense", {**prefix_map, "encoder.layer.0.": "x."}) == "x.output.dense"
    assert masked_modules_fingerprint(a, masks, prefix_map) == loaded.meta["masked_fingerprint"]
    with pytest.raises(MaskMismatchError, match="module 'encoder.layer.0.attention.self.query' does not exist"):
        MaskSwitch(a).apply(loaded)
    before = {n: t.clone() for n, t in a.state_dict().items()}
    x = torch.randint(5, 50, (2, 7))
    unmasked = hidden_states(a, x)
    switch = MaskSwitch(a, prefix_map=prefix_map)
    switch.apply(loaded)
    MaskSwitch(bare).apply(loaded)
    assert torch.equal(hidden_states(a, x), hidden_states(bare, x))
    assert not torch.allclose(hidden_states(a, x), unmasked)
    query = a.bert.encoder.layer[0].attention.self.query
    assert torch.equal(query.weight, query.parametrizations.weight.original
                       * torch.from_numpy(masks["encoder.layer.0.attention.self.query"]))
    switch.revert()
    assert all(torch.equal(a.state_dict()[n], t) for n, t in before.items())
    assert torch.equal(hidden_states(a, x), unmasked)


# --------------------------------------------------------------------------------------- fingerprints
def test_model_fingerprint_covers_buffers():
    net = tiny_conv_net()
    fingerprint = model_fingerprint(net)
    saved = net.bn.running_mean.clone()
    with torch.no_grad():
        net.bn.running_mean[0] += 1e-3
    assert model_fingerprint(net) != fingerprint
    net.bn.running_mean.copy_(saved)
    assert model_fingerprint(net) == fingerprint
    net.bn.num_batches_tracked += 1
    assert model_fingerprint(net) != fingerprint
    net.bn.num_batches_tracked -= 1
    # an attached decider's scores and buffers are not part of the model
    attach(net, ThresholdMaskTraining(0.5, "hard", 2.0, 0.01), ["conv", "linear"], family="vision")
    assert model_fingerprint(net) == fingerprint
    # the masked-modules fingerprint covers the named modules' buffers too
    only_bn = masked_modules_fingerprint(net, ["bn"])
    with torch.no_grad():
        net.bn.running_var[1] *= 2
    assert masked_modules_fingerprint(net, ["bn"]) != only_bn


def test_the_schema_lists_exactly_the_deciders_a_mask_search_can_drive():
    import yaml

    from maskbench.masking.deciders import SEARCH_DECIDERS

    schema = yaml.safe_load(open(Path(__file__).parents[1] / "schemas" / "nlu.schema.yaml"))
    assert schema["properties"]["mask_search"]["properties"]["method"]["enum"] == list(SEARCH_DECIDERS)
