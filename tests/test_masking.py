"""The masking engine: straight-through gradients, thresholds, schedules, frozen weights, apply/switch/revert."""

import math

import numpy as np
import pytest
import torch
from tiny_models import RandomBatches, tiny_bert
from torch import nn

from maskbench.masking.apply import MaskMismatchError, MaskSet, MaskSwitch, model_fingerprint
from maskbench.masking.binarizers import sigmoid_threshold_as_score, threshold_ste, topk_mask, topk_ste
from maskbench.masking.deciders import MovementSigmoid, MovementTopK
from maskbench.masking.engine import Masked, MaskedModules, detach_parametrizations
from maskbench.masking.granularity import Block, GranularityError, Weight
from maskbench.masking.schedules import cubic
from maskbench.masking.selectors import SelectorError, layer_index, module_kind, select_linear
from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec, attach_scores, decider_of


def snapshot(model):
    return {name: t.detach().clone() for name, t in model.state_dict().items()}


def assert_bit_identical(model, before):
    after = model.state_dict()
    assert set(after) == set(before)
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor), name


# ------------------------------------------------------------------------------------------ binarizers
def test_sigmoid_threshold_on_hand_made_scores():
    scores = torch.tensor([[-3.0, 0.0], [1.0, -1.0]])
    # sigmoid: 0.047, 0.5, 0.731, 0.269
    assert threshold_ste(scores, sigmoid_threshold_as_score(0.1)).tolist() == [[0, 1], [1, 1]]
    assert threshold_ste(scores, sigmoid_threshold_as_score(0.5)).tolist() == [[0, 0], [1, 0]]
    assert threshold_ste(scores, sigmoid_threshold_as_score(0.0)).tolist() == [[1, 1], [1, 1]]
    assert sigmoid_threshold_as_score(0.1) == pytest.approx(math.log(0.1 / 0.9))


def test_topk_keeps_the_highest_fraction_per_matrix():
    scores = torch.tensor([[4.0, 1.0], [3.0, 2.0]])
    assert topk_mask(scores, 0.5).tolist() == [[True, False], [True, False]]
    assert topk_mask(scores, 0.75).tolist() == [[True, False], [True, True]]
    assert topk_mask(scores, 0.0).sum() == 0 and topk_mask(scores, 1.0).all()
    assert topk_ste(scores, 0.25).tolist() == [[1.0, 0.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="keep fraction"):
        topk_mask(scores, 1.5)


def test_straight_through_gradient_is_identity():
    scores = torch.tensor([0.3, -2.0, 1.0], requires_grad=True)
    out = threshold_ste(scores, 0.0)
    (out * torch.tensor([2.0, 3.0, -1.0])).sum().backward()
    assert out.tolist() == [1.0, 0.0, 1.0]
    assert scores.grad.tolist() == [2.0, 3.0, -1.0]


def test_score_gradient_is_weight_times_gradient_of_the_masked_weight():
    """dL/dS = dL/dW' * W (movement pruning), checked against central finite differences on W'."""
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    weight = layer.weight.detach().clone()
    x = torch.randn(5, 3)
    target = torch.randn(5, 2)
    spec = MaskSearchSpec(threshold_start=0.1, threshold_end=0.1)
    score_mask = Masked(decider_of(spec, 10), Weight(), weight)
    assert score_mask.scores.eq(0.0).all()  # spec.score_init
    with torch.no_grad():
        score_mask.scores.copy_(torch.tensor([[0.5, -5.0, 1.0], [2.0, 0.1, -4.0]]))  # two pruned
    masked = weight * score_mask.mask()

    def loss_of(w_prime):
        return ((x @ w_prime.T + layer.bias.detach() - target) ** 2).sum()

    loss_of(weight * score_mask.mask()).backward()
    eps = 1e-3
    numeric = torch.zeros_like(weight)
    for i in range(2):
        for j in range(3):
            plus, minus = masked.detach().clone(), masked.detach().clone()
            plus[i, j] += eps
            minus[i, j] -= eps
            numeric[i, j] = (loss_of(plus) - loss_of(minus)) / (2 * eps)
    assert torch.allclose(score_mask.scores.grad, numeric * weight, rtol=1e-3, atol=1e-4)
    assert score_mask.scores.grad[0, 1] != 0  # a pruned weight still receives a signal (straight through)


def test_blocks_expand_one_score_per_tile():
    decider = decider_of(MaskSearchSpec(method="movement_topk", threshold_start=0.5, threshold_end=0.5), 1)
    assert isinstance(decider, MovementTopK)
    score_mask = Masked(decider, Block(2, 3), torch.zeros(4, 6))
    assert score_mask.scores.shape == (2, 2)
    with torch.no_grad():
        score_mask.scores.copy_(torch.tensor([[1.0, 0.0], [0.0, 2.0]]))
    mask = score_mask.mask()
    assert mask.shape == (4, 6)
    assert mask[:2, :3].eq(1).all() and mask[2:, 3:].eq(1).all() and mask[:2, 3:].eq(0).all()
    with pytest.raises(GranularityError, match=r"^q: weight \(4, 6\) does not split into 3x3 blocks"):
        Masked(decider, Block(3, 3), torch.zeros(4, 6), name="q")


# ------------------------------------------------------------------------------------------- schedules
def test_cubic_schedule_values():
    # paper C's gradual sparsity 0.2 -> 0.9: start, middle (m = 1/2), end
    assert cubic(0, 10, 0.2, 0.9) == pytest.approx(0.2)
    assert cubic(5, 10, 0.2, 0.9) == pytest.approx(0.9 - 0.7 / 8)
    assert cubic(10, 10, 0.2, 0.9) == pytest.approx(0.9)
    # paper A's code: warm-ups -1 and -10 -> m = 1 - (t + 1) / (T + 11), never exactly tau_i or tau_f
    assert cubic(0, 100, 0.0, 0.1, -1, -10) == pytest.approx(0.1 * (1 - (110 / 111) ** 3))
    assert cubic(99, 100, 0.0, 0.1, -1, -10) == pytest.approx(0.1 * (1 - (11 / 111) ** 3))
    # plateaus with positive warm-ups
    assert cubic(3, 100, 0.0, 0.1, 5, 10) == 0.0 and cubic(95, 100, 0.0, 0.1, 5, 10) == 0.1


def test_decider_moves_threshold_and_evaluates_at_the_end_value():
    decider = decider_of(MaskSearchSpec(threshold_warmup_start=0, threshold_warmup_end=0), 4)
    assert isinstance(decider, MovementSigmoid)
    decider.set_step(2, 4)  # m = 1/2: tau = 0.1 - 0.1 / 8
    assert decider.current == pytest.approx(0.1 - 0.1 / 8)
    module = Masked(decider, Weight(), torch.zeros(1))

    def binarize(score, training):
        with torch.no_grad():
            module.scores.fill_(score)
        return decider.tiles(module, training).item()

    assert binarize(-2.1, training=True) == 1.0  # sigmoid 0.109 > 0.0875
    assert binarize(-2.1, training=False) == 1.0  # 0.109 > 0.1
    assert binarize(-2.3, training=True) == 1.0  # 0.091 > 0.0875
    assert binarize(-2.3, training=False) == 0.0  # 0.091 < 0.1
    with torch.no_grad():
        module.scores.fill_(-1.5)
    assert decider.hard_tiles(module).item() is True  # sigmoid 0.18 > 0.1
    with torch.no_grad():
        module.scores.fill_(-2.3)
    assert decider.hard_tiles(module).item() is False  # the end threshold, whatever the step


def test_regularization_is_the_mean_sigmoid_per_group():
    decider = decider_of(MaskSearchSpec(l1_lambda=2.0), 1)
    names = ["bert.encoder.layer.0.attention.self.query", "bert.encoder.layer.0.attention.self.key",
             "bert.encoder.layer.0.intermediate.dense"]
    masks = {name: Masked(decider, Weight(), torch.zeros(2, 2), name, module_kind(name)) for name in names}
    with torch.no_grad():
        masks["bert.encoder.layer.0.intermediate.dense"].scores.fill_(math.log(3))  # sigmoid 0.75
    # attention: mean(0.5, 0.5) = 0.5; dense: 0.75; lambda 2 * (0.5 + 0.75) / 2
    assert MaskedModules(decider, masks).regularization().item() == pytest.approx(1.25)
    ratio = decider_of(MaskSearchSpec(l1_schedule="threshold_ratio"), 10)
    ratio.current = 0.05
    assert ratio.l1_weight() == pytest.approx(0.5)


# -------------------------------------------------------------------------------------------- selectors
def test_selectors_name_the_six_matrices_of_every_layer():
    model = tiny_bert()
    chosen = select_linear(model, ["query", "key", "value", "attention_output", "ffn_in", "ffn_out"])
    assert len(chosen) == 12
    assert "bert.encoder.layer.1.output.dense" in chosen and "bert.pooler.dense" not in chosen
    assert module_kind("bert.encoder.layer.1.attention.output.dense") == "attention_output"
    assert module_kind("bert.encoder.layer.1.output.dense") == "ffn_out"
    assert module_kind("encoder.layer.3.intermediate.dense") == "ffn_in"
    assert module_kind("classifier") == "classifier" and layer_index("bert.encoder.layer.11.attention.self.key") == 11
    assert list(select_linear(model, ["classifier"])) == ["classifier"]
    with pytest.raises(SelectorError, match="'quary' matches no Linear"):
        select_linear(model, ["quary"])


# ------------------------------------------------------------------------------------------------ search
def test_a_search_changes_scores_and_not_a_single_bit_of_the_weights():
    from maskbench.objectives.losses import get_loss
    from maskbench.text.classifier_training import classification_objective
    from maskbench.training.hparams import TrainHParams
    from maskbench.training.loop import fit

    model = tiny_bert()
    before = snapshot(model)

    hp = TrainHParams(epochs=3, batch_size=4, learning_rate=0.1, weight_decay=0.1, lr_schedule="constant",
                      log_every=100)
    scores = attach_scores(model, MaskSearchSpec(), total_steps=12)
    assert all(not p.requires_grad for n, p in model.named_parameters() if not n.endswith("scores"))
    objective = classification_objective(get_loss("ce"), "cpu", regularizer=scores.regularization)
    fit(model, RandomBatches(), objective, hp, seed=0, device="cpu", step_hook=scores.set_step)
    assert any(m.scores.abs().max() > 0 for m in scores.masks.values())
    assert scores.decider.current > 0
    masks = scores.hard_masks()
    assert set(masks) == set(select_linear(model, MaskSearchSpec().modules))
    detach_parametrizations(model)
    assert_bit_identical(model, before)
    assert type(model.bert.encoder.layer[0].attention.self.query) is nn.Linear


def test_empty_rows_lose_their_bias():
    model = tiny_bert()
    scores = attach_scores(model, MaskSearchSpec(modules=["classifier"]), total_steps=1)
    with torch.no_grad():
        scores.masks["classifier"].scores[1].fill_(-10.0)  # row 1 entirely below the threshold
    model.eval()
    bias = model.classifier.bias
    assert bias[1].item() == 0.0 and bias[0].item() == model.classifier.parametrizations.bias.original[0].item()


# -------------------------------------------------------------------------------------- apply and switch
def random_masks(model, density, seed):
    rng = np.random.default_rng(seed)
    chosen = select_linear(model, ["query", "key", "value", "attention_output", "ffn_in", "ffn_out"])
    return {name: rng.random(tuple(m.weight.shape)) < density for name, m in chosen.items()}


def test_save_load_apply_revert_round_trip_is_bit_exact(tmp_path):
    model = tiny_bert()
    before = snapshot(model)
    fingerprint = model_fingerprint(model)
    masks = random_masks(model, 0.8, seed=1)
    masks["bert.encoder.layer.0.intermediate.dense"][3] = False  # a dead row: its bias is zeroed
    stats = MaskSet(masks, {"model_fingerprint": fingerprint, "method": "test"}).save(tmp_path / "a.mask")
    assert stats["file_bytes"] > 0
    loaded = MaskSet.load(tmp_path / "a.mask")
    assert loaded.meta["method"] == "test" and set(loaded.masks) == set(masks)
    assert all(np.array_equal(loaded.masks[n], masks[n]) for n in masks)
    assert loaded.density() == pytest.approx(np.mean(np.concatenate([m.ravel() for m in masks.values()])))

    x = torch.randint(5, 50, (2, 7))
    with torch.no_grad():
        plain = model(input_ids=x).logits
    switch = MaskSwitch(model)
    switch.apply(loaded)
    ffn = model.bert.encoder.layer[0].intermediate.dense
    assert torch.equal(ffn.weight, ffn.parametrizations.weight.original * torch.from_numpy(masks[
        "bert.encoder.layer.0.intermediate.dense"]))
    assert ffn.bias[3].item() == 0.0
    with torch.no_grad():
        masked = model(input_ids=x).logits
    assert not torch.allclose(plain, masked)
    # the same model with the pruned weights zeroed by hand gives the same outputs
    reference = tiny_bert()
    with torch.no_grad():
        for name, mask in masks.items():
            module = reference.get_submodule(name)
            module.weight[~torch.from_numpy(mask)] = 0.0
            module.bias[torch.from_numpy(~mask).all(dim=1)] = 0.0
        assert torch.allclose(reference(input_ids=x).logits, masked, atol=1e-6)
    switch.revert()
    assert_bit_identical(model, before)
    with torch.no_grad():
        assert torch.equal(model(input_ids=x).logits, plain)


def test_switching_masks_needs_no_reload_and_matches_a_fresh_apply(tmp_path):
    model = tiny_bert()
    fingerprint = model_fingerprint(model)
    a = MaskSet(random_masks(model, 0.9, 1), {"model_fingerprint": fingerprint})
    b = MaskSet(random_masks(model, 0.6, 2), {"model_fingerprint": fingerprint})
    x = torch.randint(5, 50, (2, 7))
    pointers = {n: p.data_ptr() for n, p in model.named_parameters()}
    switch = MaskSwitch(model, fingerprint)
    switch.apply(b)
    with torch.no_grad():
        only_b = model(input_ids=x).logits
    switch.apply(a)
    switch.apply(b)
    with torch.no_grad():
        assert torch.equal(model(input_ids=x).logits, only_b)
    switch.revert()
    assert {n: p.data_ptr() for n, p in model.named_parameters()} == pointers


def test_a_mask_of_another_model_is_refused_naming_the_file(tmp_path):
    model, other = tiny_bert(seed=0), tiny_bert(seed=1)
    MaskSet(random_masks(model, 0.9, 1), {"model_fingerprint": model_fingerprint(model),
                                           "model_dir": "ckpt/seed~1"}).save(tmp_path / "a.mask")
    loaded = MaskSet.load(tmp_path / "a.mask")
    with pytest.raises(MaskMismatchError, match=r"a\.mask: field 'meta.model_fingerprint'.*different model"):
        MaskSwitch(other).apply(loaded)
    assert not any(".parametrizations." in n for n, _ in other.named_parameters())  # nothing half-applied
    MaskSwitch(model).apply(loaded)  # its own model accepts it
    bigger = tiny_bert(layers=3)
    loaded.meta["model_fingerprint"] = model_fingerprint(bigger)
    loaded.masks["bert.encoder.layer.0.attention.self.query"] = np.ones((4, 4), bool)
    with pytest.raises(MaskMismatchError, match="shape"):
        MaskSwitch(bigger).check(loaded)


def test_fingerprint_ignores_attached_masks_but_not_weights():
    model = tiny_bert()
    fingerprint = model_fingerprint(model)
    attach_scores(model, MaskSearchSpec(), total_steps=1)
    assert model_fingerprint(model) == fingerprint
    detach_parametrizations(model)
    with torch.no_grad():
        model.classifier.weight[0, 0] += 1e-6
    assert model_fingerprint(model) != fingerprint


@pytest.mark.parametrize("tau", [0.0, 0.1, 0.5])
def test_fused_masked_weight_matches_weight_times_mask(tau):
    torch.manual_seed(3)
    weight = torch.randn(4, 5)
    spec = MaskSearchSpec(threshold_start=tau, threshold_end=tau)
    fused = Masked(decider_of(spec, 1), Weight(), weight)
    plain = Masked(decider_of(spec, 1), Weight(), weight)
    with torch.no_grad():
        fused.scores.copy_(torch.randn(4, 5) * 2)
        plain.scores.copy_(fused.scores)
    upstream = torch.randn(4, 5)
    out_fused = fused(weight)
    out_plain = weight * plain.mask()
    (out_fused * upstream).sum().backward()
    (out_plain * upstream).sum().backward()
    assert torch.equal(out_fused, out_plain)
    assert torch.equal(fused.scores.grad, plain.scores.grad)
    assert torch.equal(fused.alive_units(), plain.mask().amax(dim=1) > 0)


def test_savings_count_parameters_and_time_forward_passes_after_warmup(monkeypatch):
    from maskbench.masking import savings

    layer = torch.nn.Linear(4, 3)  # 4 x 3 weights + 3 biases
    with torch.no_grad():
        layer.weight[0].zero_()
        layer.bias.zero_()
    assert savings.count_parameters(layer) == 15
    assert savings.count_parameters(layer, nonzero=True) == 15 - 4 - 3
    ticks = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0])  # three timed calls: 1 s, 3 s, 2 s
    monkeypatch.setattr(savings.time, "perf_counter", lambda: next(ticks))
    calls = []
    layer.train()
    median = savings.forward_latency(layer, lambda model: calls.append(model.training), repeats=3, warmup=2)
    assert median == 2.0 and calls == [False] * 5
