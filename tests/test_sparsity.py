"""Paper C's pruning methods: local thresholds, magnitude initialisation, mask training with sparsity control,
IMP masks, fixed masks and weight rewinding."""

import math

import numpy as np
import pytest
import torch
from tiny_models import RandomBatches
from tiny_models import tiny_bert as shared_tiny_bert
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.deciders import Magnitude, ThresholdMaskTraining
from maskbench.masking.engine import Masked, detach_parametrizations, plain_parameter_name
from maskbench.masking.granularity import Weight
from maskbench.masking.ranking import local_threshold, magnitude_init, prune_count
from maskbench.masking.selectors import ENCODER_KINDS, select_linear
from maskbench.objectives.losses import get_loss
from maskbench.text.classifier_training import classification_objective
from maskbench.tracks.nlu.srnets.pruning import (
    MaskTraining,
    SparsityController,
    apply_fixed_masks,
    attach_mask_training,
    fixed_masks,
    magnitude_masks,
    rewind_weights,
)
from maskbench.tracks.nlu.srnets.spec import ImpSpec, MaskTrainingSpec
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit

W_HAND = torch.tensor([[0.5, -0.1, 0.3], [-0.05, 0.9, 0.2]])


def tiny_bert(seed=0, layers=1):
    return shared_tiny_bert(seed, layers)


def plain_params(model):
    """Every model weight by its unmasked name (parametrization internals such as scores left out)."""
    return {plain_parameter_name(n): p.detach().clone() for n, p in model.named_parameters()
            if ".parametrizations." not in n or n.endswith(".original")}


# --------------------------------------------------------------------------------------- counting, thresholds
def test_prune_count_rounds_to_nearest():
    assert prune_count(10, 0.3) == 3
    assert prune_count(100, 0.29) == 29  # 0.29 * 100 = 28.999999999999996: truncation would give 28
    assert prune_count(91, 0.2) == 18  # 18.2
    assert prune_count(91, 0.9) == 82  # 81.9
    assert prune_count(5, 0.5) == 2 and prune_count(7, 0.5) == 4  # exact halves: Python's round, to even
    assert prune_count(0, 0.7) == 0
    with pytest.raises(ValueError, match="sparsity"):
        prune_count(10, 1.5)
    with pytest.raises(ValueError, match="sparsity"):
        prune_count(10, float("nan"))


@pytest.mark.parametrize("shape", [(7, 13), (64, 64)])
def test_local_threshold_meets_every_matrix_sparsity_exactly(shape):
    g = torch.Generator().manual_seed(3)
    scores = torch.randn(shape, generator=g)
    n = scores.numel()
    for s in [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]:
        t = local_threshold(scores, s)
        pruned = int((scores <= t).sum())
        assert int((scores > t).sum()) == n - round(s * n)
        assert abs(pruned - s * n) <= 0.5  # within one element of the requested fraction
        assert t in scores.flatten().tolist()  # an existing score: the largest pruned one
    # the edges: k = 0 keeps all, k = numel prunes all
    assert local_threshold(scores, 0.0) == -math.inf and bool((scores > -math.inf).all())
    assert local_threshold(scores, 1.0) == math.inf and int((scores > math.inf).sum()) == 0
    assert local_threshold(scores, 0.4 / n) == -math.inf  # k = round(0.4) = 0
    assert local_threshold(scores, 1 - 0.4 / n) == math.inf  # k = numel


def test_local_threshold_ties_prune_all_tied_entries():
    scores = torch.tensor([0.5, 0.2, 0.1, 0.2, 0.2])
    assert local_threshold(scores, 0.2) == pytest.approx(0.1)  # k = 1: exact
    assert int((scores <= local_threshold(scores, 0.2)).sum()) == 1
    # k = 2 falls inside the tie {0.2, 0.2, 0.2}: no threshold separates them, all three go (2 extra pruned)
    t = local_threshold(scores, 0.4)
    assert t == pytest.approx(0.2)
    assert (scores > t).tolist() == [True, False, False, False, False]
    # k = 4 ends exactly after the tie: exact again
    assert int((scores <= local_threshold(scores, 0.8)).sum()) == 4
    # hard-init-like scores: two distinct values, the boundary between them is exact
    hard = torch.tensor([0.0, 0.02, 0.0, 0.02, 0.0, 0.02])
    assert local_threshold(hard, 0.5) == 0.0 and int((hard > 0.0).sum()) == 3


# ---------------------------------------------------------------------------------------------- initialisation
def test_magnitude_init_hard_on_a_hand_made_matrix():
    scores, threshold = magnitude_init(W_HAND, 0.5, "hard", 2.0, 0.01)
    # |W| = .5 .1 .3 / .05 .9 .2: the three smallest (.05, .1, .2) get 0, the others alpha * phi = 0.02
    assert torch.equal(scores, torch.tensor([[0.02, 0.0, 0.02], [0.0, 0.02, 0.0]]))
    assert threshold == 0.01
    assert (scores > threshold).tolist() == [[True, False, True], [False, True, False]]
    scores3, threshold3 = magnitude_init(W_HAND, 1 / 3, "hard", alpha=3.0, phi=0.1)
    assert threshold3 == 0.1
    assert torch.equal(scores3, torch.tensor([[0.3, 0.0, 0.3], [0.0, 0.3, 0.3]]))  # k = 2: .05 and .1
    with pytest.raises(ValueError, match="alpha"):
        magnitude_init(W_HAND, 0.5, "hard", alpha=1.0, phi=0.01)


def test_magnitude_init_soft_on_a_hand_made_matrix():
    scores, threshold = magnitude_init(W_HAND, 0.5, "soft", 2.0, 0.01)
    assert torch.equal(scores, W_HAND.abs())
    assert threshold == pytest.approx(0.2)
    assert (scores > threshold).tolist() == [[True, False, True], [False, True, False]]
    scores[0, 0] = 7.0
    assert W_HAND[0, 0] == 0.5  # the scores are a copy
    assert magnitude_init(W_HAND, 0.0, "soft", 2.0, 0.01)[1] == -math.inf


def test_magnitude_init_ties_hard_is_exact_soft_overprunes():
    weight = torch.tensor([[0.1, -0.1, 0.1, 0.3]])
    hard, _ = magnitude_init(weight, 0.5, "hard", 2.0, 0.01)
    assert torch.equal(hard, torch.tensor([[0.0, 0.0, 0.02, 0.02]]))  # exactly 2, ties by position
    soft, t = magnitude_init(weight, 0.5, "soft", 2.0, 0.01)
    assert int((soft <= t).sum()) == 3  # the documented threshold rule: all three tied 0.1 go


# ------------------------------------------------------------------------------------------------ mask training
def test_straight_through_gradient_is_grad_of_masked_weight_times_weight():
    layer = nn.Linear(2, 2, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.5, -0.1], [0.3, 0.9]]))
    layer.weight.requires_grad_(False)
    mask = Masked(ThresholdMaskTraining(0.5, "hard", 2.0, 0.01), Weight(), layer.weight.detach())
    with torch.no_grad():
        mask.scores.copy_(torch.tensor([[1.0, 0.0], [1.0, 1.0]]))
        mask.threshold.fill_(0.5)
    parametrize.register_parametrization(layer, "weight", mask)
    x = torch.tensor([[1.0, 2.0]])
    y = layer(x)
    # W' = [[.5, 0], [.3, .9]]: y = [.5, .3 + 1.8]
    torch.testing.assert_close(y, torch.tensor([[0.5, 2.1]]))
    (y * torch.tensor([[1.0, -1.0]])).sum().backward()
    # dL/dW' = c^T x = [[1, 2], [-1, -2]]; dL/dS = dL/dW' * W, also for the pruned entry (0, 1)
    torch.testing.assert_close(mask.scores.grad, torch.tensor([[0.5, -0.2], [-0.3, -1.8]]))
    assert layer.parametrizations.weight.original.grad is None
    assert mask.hard_mask().tolist() == [[True, False], [True, True]]


def test_attach_mask_training_freezes_everything_and_meets_sparsity():
    model = tiny_bert()
    kinds = [*ENCODER_KINDS, "pooler", "classifier"]
    training = attach_mask_training(model, kinds, MaskTrainingSpec(0.5, "hard"))
    assert isinstance(training, MaskTraining) and isinstance(training.decider, ThresholdMaskTraining)
    assert set(training.masks) == set(select_linear(model, kinds))
    assert all(not p.requires_grad for n, p in model.named_parameters() if not n.endswith(".scores"))
    assert all(p.requires_grad for p in training.parameters())
    assert len(training.parameters()) == len(kinds) + 0  # 1 layer: one matrix per kind
    for name, mask in training.hard_masks().items():
        assert mask.dtype == bool
        assert int((~mask).sum()) == prune_count(mask.size, 0.5), name
    assert training.thresholds()["classifier"] == pytest.approx(0.01)  # phi, held as a float32 buffer
    # the hard mask survives the step-0 reset: threshold 0 between the 0 and 0.02 scores
    before = training.hard_masks()
    training.reset_thresholds(0.5)
    assert training.thresholds()["classifier"] == 0.0
    assert all(np.array_equal(before[n], m) for n, m in training.hard_masks().items())
    # classifier 3 x 16 = 48 -> 24 pruned; overall = pruned / all masked
    sizes = {n: m.scores.numel() for n, m in training.masks.items()}
    assert training.sparsity() == sum(prune_count(v, 0.5) for v in sizes.values()) / sum(sizes.values())
    assert training.module_sparsity()["classifier"] == 0.5


def test_gradual_schedule_through_the_controller():
    model = nn.Sequential(nn.Linear(64, 64, bias=False))
    training = attach_mask_training(model, ["0"], MaskTrainingSpec(0.2, "soft"))
    controller = SparsityController(training, MaskTrainingSpec(0.9, "soft", reset_every=10, schedule="gradual",
                                                                initial_sparsity=0.2))
    n = 64 * 64
    controller.step_hook(0, 100)
    assert controller.current == 0.2
    assert training.pruned_counts()["0"] == prune_count(n, 0.2) == 819
    # between resets the thresholds stay: moving scores changes the sparsity (the intended drift)
    with torch.no_grad():
        training.masks["0"].scores.mul_(-1.0)
    t0 = training.thresholds()["0"]
    controller.step_hook(5, 100)
    assert training.thresholds()["0"] == t0 and training.pruned_counts()["0"] != 819
    controller.step_hook(50, 100)
    assert controller.current == pytest.approx(0.9 - 0.7 / 8)  # m = 1/2: 0.9 + (0.2 - 0.9) / 8 = 0.8125
    assert training.pruned_counts()["0"] == 3328  # 0.8125 * 4096
    assert controller.sparsity_at(100, 100) == 0.9
    assert [h["step"] for h in controller.history] == [0, 50]
    # reaching s_f at 80 % of training
    early = SparsityController(training, MaskTrainingSpec(0.9, reset_every=10, schedule="gradual",
                                                          initial_sparsity=0.2, gradual_end=0.8))
    assert early.sparsity_at(40, 100) == pytest.approx(0.9 - 0.7 / 8)
    early.step_hook(80, 100)
    assert early.current == 0.9 and training.pruned_counts()["0"] == prune_count(n, 0.9) == 3686
    early.step_hook(90, 100)
    assert early.current == 0.9
    fixed = SparsityController(training, MaskTrainingSpec(0.7, reset_every=10))
    assert fixed.sparsity_at(0, 100) == fixed.sparsity_at(55, 100) == 0.7
    with pytest.raises(ValueError, match="initial_sparsity"):
        MaskTrainingSpec(0.9, schedule="gradual")


def test_fit_with_mask_training_changes_scores_never_a_weight():
    model = tiny_bert(seed=1)
    before = plain_params(model)
    training = attach_mask_training(model, [*ENCODER_KINDS, "pooler", "classifier"], MaskTrainingSpec(0.5, "soft"))
    init_scores = {n: m.scores.detach().clone() for n, m in training.masks.items()}
    controller = SparsityController(training, MaskTrainingSpec(0.5, reset_every=4))
    hp = TrainHParams(epochs=3, batch_size=4, learning_rate=0.05, weight_decay=0.0, lr_schedule="constant",
                      log_every=100)
    fit(model, RandomBatches(), classification_objective(get_loss("ce"), "cpu"), hp, seed=0, device="cpu",
        step_hook=controller.step_hook)
    assert any(not torch.equal(m.scores, init_scores[n]) for n, m in training.masks.items())
    # 12 steps, resets before steps 0, 4 and 8, each leaving every matrix exactly at 50 %
    assert [h["step"] for h in controller.history] == [0, 4, 8]
    for entry in controller.history:
        for name, pruned in entry["pruned"].items():
            assert pruned == prune_count(training.masks[name].scores.numel(), 0.5), (entry["step"], name)
    after = plain_params(model)
    assert set(after) == set(before)
    assert all(torch.equal(after[n], before[n]) for n in before)
    training.reset_thresholds(0.5)
    assert training.sparsity() == 0.5  # every masked size is even
    detach_parametrizations(model)
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())


# ---------------------------------------------------------------------------------------------------------- IMP
def test_imp_schedule():
    assert ImpSpec().schedule(1000) == [(0, 0.1), (100, 0.2), (200, 0.3), (300, 0.4), (400, 0.5), (500, 0.6),
                                        (600, 0.7), (700, 0.8), (800, 0.9)]
    assert ImpSpec(final_sparsity=0.3).schedule(1005) == [(0, 0.1), (100, 0.2), (200, 0.3)]
    assert ImpSpec(rounds=5, step=0.2, final_sparsity=0.8).schedule(50)[-1] == (30, 0.8)
    with pytest.raises(ValueError, match="intervals"):
        ImpSpec().schedule(5)
    with pytest.raises(ValueError, match="multiple"):
        ImpSpec(final_sparsity=0.35)
    with pytest.raises(ValueError, match="prunes"):
        ImpSpec(rounds=5)


def test_imp_prunes_ten_percent_of_the_original_each_round_and_never_regrows():
    model = tiny_bert()
    modules = select_linear(model, [*ENCODER_KINDS, "pooler"])
    torch.manual_seed(5)
    modules["extra"] = nn.Linear(10, 20)  # 200 weights: every 10 % is a whole number
    current = None
    for round_, (_, sparsity) in enumerate(ImpSpec().schedule(1000), start=1):
        masks = magnitude_masks(modules, sparsity, current)
        for name, keep in masks.items():
            n = keep.numel()
            assert int((~keep).sum()) == prune_count(n, round_ / 10), (round_, name)
            if current is not None:
                assert not bool((keep & ~current[name]).any()), f"{name} regrew a pruned weight"
        if round_ in (1, 3, 9):
            assert int((~masks["extra"]).sum()) == 20 * round_
        if round_ == 1:
            magnitude = modules["extra"].weight.detach().abs()
            keep = masks["extra"]
            assert magnitude[~keep].max() <= magnitude[keep].min()
        apply_fixed_masks(modules, masks)
        for name, module in modules.items():
            assert bool((module.weight[~masks[name]] == 0).all())
            # "training" makes the pruned weights the largest: a magnitude ranking over all weights would
            # revive them, IMP must not
            with torch.no_grad():
                original = module.parametrizations.weight.original
                original[~masks[name]] = 100.0
        current = masks
    # with current=None the attached masks are the starting point
    assert all(torch.equal(a, b) for a, b in zip(magnitude_masks(modules, 0.9).values(), current.values(),
                                                 strict=True))
    with pytest.raises(ValueError, match="only adds"):
        magnitude_masks(modules, 0.5)
    assert {n: m.mean() for n, m in fixed_masks(modules).items()}["extra"] == pytest.approx(0.1)


def test_imp_ranks_only_alive_weights_on_a_hand_made_row():
    layer = nn.Linear(10, 1, bias=False)
    with torch.no_grad():
        layer.weight.copy_(torch.tensor([[0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, 0.9, 1.0]]))
    first = magnitude_masks({"row": layer}, 0.1)["row"]
    assert (~first).nonzero()[:, 1].tolist() == [0]
    with torch.no_grad():
        layer.weight[0, 0] = 5.0  # the pruned weight grew (no mask attached here): it must stay pruned
    second = magnitude_masks({"row": layer}, 0.2, {"row": first})["row"]
    assert (~second).nonzero()[:, 1].tolist() == [0, 1]
    third = magnitude_masks({"row": layer}, 0.4, {"row": second})["row"]
    assert (~third).nonzero()[:, 1].tolist() == [0, 1, 2, 3]


def test_fixed_mask_weights_train_but_pruned_ones_stay_zero():
    torch.manual_seed(0)
    layer = nn.Linear(3, 2)
    keep = torch.tensor([[True, False, True], [False, True, True]])
    attached = apply_fixed_masks({"layer": layer}, {"layer": keep})
    assert isinstance(attached["layer"], Masked) and isinstance(attached["layer"].decider, Magnitude)
    original = layer.parametrizations.weight.original
    assert original.requires_grad
    stored = original.detach().clone()
    layer(torch.randn(4, 3)).pow(2).sum().backward()
    assert bool((original.grad[~keep] == 0).all()) and bool((original.grad[keep] != 0).all())
    torch.optim.SGD(layer.parameters(), lr=0.1).step()
    assert bool((layer.weight[~keep] == 0).all())
    assert torch.equal(original.detach()[~keep], stored[~keep])
    assert not torch.equal(original.detach()[keep], stored[keep])
    # a second call updates the attached mask instead of stacking parametrizations
    apply_fixed_masks({"layer": layer}, {"layer": torch.ones(2, 3, dtype=torch.bool)})
    assert len(layer.parametrizations.weight) == 1 and bool((layer.weight != 0).all())


def test_rewinding_restores_pretrained_weights_bit_exactly():
    model = tiny_bert(seed=2)
    pretrained = {k: v.clone() for k, v in model.state_dict().items()}
    modules = select_linear(model, [*ENCODER_KINDS, "pooler"])
    masks = magnitude_masks(modules, 0.3)
    apply_fixed_masks(modules, masks)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    batch = RandomBatches().collate(list(range(8)))
    for _ in range(3):
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], labels=batch["labels"])
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
    trained = plain_params(model)
    assert not torch.equal(trained["bert.encoder.layer.0.attention.self.query.weight"],
                           pretrained["bert.encoder.layer.0.attention.self.query.weight"])
    rewound = rewind_weights(model, pretrained)
    assert "bert.embeddings.word_embeddings.weight" in rewound and "classifier.weight" not in rewound
    now = plain_params(model)
    for name, value in now.items():
        if name.startswith("classifier."):
            assert torch.equal(value, trained[name])
            assert not torch.equal(value, pretrained[name])
        else:
            assert torch.equal(value, pretrained[name]), name
    for name, module in modules.items():
        assert parametrize.is_parametrized(module, "weight"), name
        assert bool((module.weight[~masks[name]] == 0).all())
        assert torch.equal(module.weight[masks[name]], pretrained[f"{name}.weight"][masks[name]])
    partial = {k: v for k, v in pretrained.items() if not k.startswith("bert.pooler")}
    with pytest.raises(KeyError, match="pooler"):
        rewind_weights(model, partial)


def test_a_saturated_reset_moves_the_threshold_unless_paper_cs_code_keeps_it():
    """Paper C's reset_threshold keeps a module's threshold when the k-th smallest score is its largest (all
    scores tied) or nothing is to be pruned; the project's default re-sets it (a tie at the top prunes them all)."""
    model = nn.Sequential(nn.Linear(4, 2, bias=False))
    training = attach_mask_training(model, ["0"], MaskTrainingSpec(0.5, "hard"))
    mask = training.masks["0"]
    with torch.no_grad():
        mask.scores.fill_(0.02)  # all 8 scores equal
    assert training.reset_thresholds(0.5, keep_when_saturated=True) == {"0": pytest.approx(0.01)}  # phi stays
    assert training.pruned_counts()["0"] == 0
    assert training.reset_thresholds(0.5) == {"0": pytest.approx(0.02)}  # v_(4) = 0.02 = the largest score
    assert training.pruned_counts()["0"] == 8
    # nothing to prune (k = round(0.05 * 8) = 0): the project keeps all (t = -inf), paper C's code leaves t
    with torch.no_grad():
        mask.scores.copy_(torch.arange(8.0).view(2, 4))
    assert training.reset_thresholds(0.05, keep_when_saturated=True)["0"] == pytest.approx(0.02)
    assert training.pruned_counts()["0"] == 1  # the score 0 is below the kept 0.02
    assert training.reset_thresholds(0.05)["0"] == -math.inf and training.pruned_counts()["0"] == 0
    # an unsaturated reset is the same either way: v_(4) = 3 < 7
    assert training.reset_thresholds(0.5, keep_when_saturated=True)["0"] == 3.0 == training.reset_thresholds(0.5)["0"]
