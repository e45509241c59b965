"""The training loop: parameter groups with their own learning rate and weight decay, a parameter set outside the
model, hooks that stop the run, frozen normalisation statistics, and weight-decay groups by plain names."""

import pytest
import torch
import torch.nn.functional as F
from tiny_models import FeatureBatches, RandomBatches, tiny_bert, tiny_conv_net
from torch import nn

from maskbench.masking.deciders import MovementSigmoid
from maskbench.masking.engine import attach
from maskbench.masking.selectors import ENCODER_KINDS
from maskbench.objectives.logits import logits_objective
from maskbench.objectives.losses import get_loss
from maskbench.text.classifier_training import classification_objective
from maskbench.training.hooks import EvalHook, Hook
from maskbench.training.hparams import TrainHParams
from maskbench.training.loop import fit
from maskbench.training.optim import trainable_groups


def clone(params):
    return [p.detach().clone() for p in params]


def two_parameter_sets():
    """A model (Linear 4 -> 3), a head outside it trained on the model's detached features (paper D's bias head),
    and two parameters that only ever get a zero gradient."""
    torch.manual_seed(0)
    model, head = nn.Linear(4, 3), nn.Linear(3, 2)
    decayed, undecayed = nn.Parameter(torch.full((3,), 2.0)), nn.Parameter(torch.full((3,), 2.0))
    calls = []

    def objective(m, batch):
        calls.append(len(batch["index"]))
        features = m(batch["x"])
        main = F.cross_entropy(features, batch["labels"])
        bias = F.cross_entropy(head(features.detach()), batch["labels"])
        zero = 0.0 * (decayed.sum() + undecayed.sum())  # a zero gradient (not None: AdamW skips those)
        return main + bias + zero, {"main": main.item(), "bias": bias.item()}

    return model, head, decayed, undecayed, objective, calls


HP = TrainHParams(epochs=2, batch_size=4, learning_rate=1.0, lr_schedule="constant", log_every=1)  # 8 steps


def test_fit_with_two_groups_and_an_early_stop():
    model, head, decayed, undecayed, objective, calls = two_parameter_sets()
    groups = [{"name": "model", "params": list(model.parameters()), "lr": 0.0, "weight_decay": 0.1},
              {"name": "head", "params": list(head.parameters()), "lr": 0.05, "weight_decay": 0.0},
              {"name": "decayed", "params": [decayed], "lr": 0.1, "weight_decay": 0.5},
              {"name": "undecayed", "params": [undecayed], "lr": 0.1, "weight_decay": 0.0}]
    model_before, head_before = clone(model.parameters()), clone(head.parameters())
    hook = EvalHook(1, lambda m: 50.0, on_result=lambda step, score: step == 3)
    curve = fit(model, FeatureBatches(16, (4,), classes=2), objective, HP, seed=0, device="cpu",
                evaluate=lambda m: 60.0, groups=groups, hooks=[hook])
    assert len(calls) == 3 and calls == [4, 4, 4]  # stopped after exactly 3 of the 8 steps
    assert [h["step"] for h in hook.history] == [1, 2, 3]
    assert [p["step"] for p in curve if "train_loss" in p] == [1, 2, 3]
    assert curve[-1] == {**curve[-1], "step": 3, "dev_accuracy": 60.0}  # the final evaluation after the stop
    assert all({"main", "bias"} <= set(p) for p in curve if "train_loss" in p)
    # lr 0: bit-exact, weight decay included (W * (1 - 0 * 0.1))
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), model_before, strict=True))
    assert all(not torch.equal(p, q) for p, q in zip(head.parameters(), head_before, strict=True))
    # zero gradient: Adam's update is 0 / (0 + eps) = 0, so only the decoupled decay moves the parameter, by
    # the factor (1 - lr * wd) = 0.95 per step: 2 * 0.95 ** 3 = 1.71475
    expected = torch.full((3,), 2.0)
    for _ in range(3):
        expected.mul_(1 - 0.1 * 0.5)
    assert torch.equal(decayed.detach(), expected)
    assert decayed.detach().tolist() == pytest.approx([2 * 0.95**3] * 3, rel=1e-6)
    assert torch.equal(undecayed.detach(), torch.full((3,), 2.0))


def test_each_group_steps_at_its_own_learning_rate():
    """Adam's first step moves every weight with a gradient by lr * g / (|g| + eps) = lr (up to eps)."""
    model, head, _, _, objective, _ = two_parameter_sets()
    groups = [{"name": "model", "params": list(model.parameters()), "lr": 0.01, "weight_decay": 0.0},
              {"name": "head", "params": list(head.parameters()), "lr": 0.05, "weight_decay": 0.0}]
    model_before, head_before = clone(model.parameters()), clone(head.parameters())

    class StopAtOne(Hook):
        def after_step(self, step, total, model):
            return step == 1

    hp = TrainHParams(epochs=1, batch_size=4, learning_rate=1.0, lr_schedule="constant", max_grad_norm=0,
                      log_every=1)
    curve = fit(model, FeatureBatches(16, (4,), classes=2), objective, hp, seed=0, device="cpu", groups=groups,
                hooks=[StopAtOne()])
    assert [p["step"] for p in curve] == [1] and curve[0]["lr"] == 0.01  # the first group's rate
    for after, before, lr in [*zip(model.parameters(), model_before, [0.01] * 2, strict=True),
                              *zip(head.parameters(), head_before, [0.05] * 2, strict=True)]:
        torch.testing.assert_close((after.detach() - before).abs(), torch.full_like(before, lr), rtol=1e-4, atol=0)


def test_a_linear_group_schedule_warms_up_beside_a_constant_one():
    model, head, _, _, objective, _ = two_parameter_sets()
    groups = [{"name": "model", "params": list(model.parameters()), "lr": 0.1, "weight_decay": 0.0,
               "schedule": "linear", "warmup": 4},
              {"name": "head", "params": list(head.parameters()), "lr": 0.05, "weight_decay": 0.0,
               "schedule": "constant"}]
    curve = fit(model, FeatureBatches(16, (4,), classes=2), objective, HP, seed=0, device="cpu", groups=groups)
    # the logged lr is the first group's after each step: warm-up (s + 1) / 4 for s < 4, then (8 - s) / 4
    assert [round(p["lr"], 10) for p in curve] == [0.05, 0.075, 0.1, 0.1, 0.075, 0.05, 0.025, 0.0]
    with pytest.raises(ValueError, match="schedule 'sawtooth' of parameter group 'head' is unknown"):
        fit(model, FeatureBatches(16, (4,), classes=2), objective, HP, seed=0, device="cpu",
            groups=[{**groups[1], "schedule": "sawtooth"}])


def test_multistep_and_cosine_schedules_follow_their_formulas():
    """Two epochs of 4 steps: multistep with a milestone at epoch 1 multiplies the rate by gamma from step 4 on;
    cosine is 0.5 (1 + cos(pi s / 8)) after s steps."""
    import dataclasses
    import math

    model, head, _, _, objective, _ = two_parameter_sets()
    groups = [{"name": "model", "params": list(model.parameters()), "lr": 0.1, "weight_decay": 0.0,
               "schedule": "multistep"}]
    hp = dataclasses.replace(HP, milestones=(1,), gamma=0.5)
    curve = fit(model, FeatureBatches(16, (4,), classes=2), objective, hp, seed=0, device="cpu", groups=groups)
    assert [round(p["lr"], 10) for p in curve] == [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.05]
    groups[0]["schedule"] = "cosine"
    curve = fit(model, FeatureBatches(16, (4,), classes=2), objective, HP, seed=0, device="cpu", groups=groups)
    assert [round(p["lr"], 10) for p in curve] == [round(0.1 * 0.5 * (1 + math.cos(math.pi * s / 8)), 10)
                                                   for s in range(1, 9)]


def test_sgd_with_momentum_and_adam_take_their_textbook_steps():
    """One parameter, loss = w (gradient 1): SGD momentum 0.9 moves lr, then lr (1 + 0.9); Adam moves lr per step
    (bias-corrected m / sqrt(v) = 1), with L2 decay inside the gradient (not decoupled)."""
    import dataclasses

    from maskbench.training.optim import make_optimizer

    for optimizer, expected in (("sgd", [0.1, 0.1 + 0.19]), ("adam", [0.1, 0.2])):
        w = nn.Parameter(torch.zeros(()))
        opt = make_optimizer([{"params": [w], "lr": 0.1, "weight_decay": 0.0}],
                             dataclasses.replace(HP, optimizer=optimizer, learning_rate=0.1, momentum=0.9))
        moved = []
        for _ in range(2):
            opt.zero_grad()
            w.backward()
            opt.step()
            moved.append(-float(w.detach()))
        assert moved == pytest.approx(expected, rel=1e-5), optimizer
    with pytest.raises(ValueError, match="optimizer 'lamb' is unknown"):
        make_optimizer([{"params": [w], "lr": 0.1}], dataclasses.replace(HP, optimizer="lamb"))


# --------------------------------------------------------------------------- BatchNorm in a frozen search
def frozen_search(freeze_norm_stats: bool, hooks=()):
    net = tiny_conv_net()
    with torch.no_grad():  # statistics as a trained network has them
        net.bn.running_mean.copy_(torch.tensor([0.1, -0.2, 0.3, 0.0]))
        net.bn.running_var.fill_(2.0)
        net.bn.num_batches_tracked.fill_(100)
    before = {k: v.clone() for k, v in net.bn.state_dict().items()}
    masked = attach(net, MovementSigmoid(4, 0.0, 0.1), ["conv", "linear"], family="vision")
    assert set(masked.masks) == {"conv", "fc"}
    scores = {n: m.scores.detach().clone() for n, m in masked.masks.items()}
    objective = logits_objective(F.cross_entropy, lambda batch, device: {"input": batch["x"].to(device)}, "cpu",
                                 regularizer=masked.regularization)
    hp = TrainHParams(epochs=1, batch_size=4, learning_rate=0.1, weight_decay=0.0, lr_schedule="constant",
                      log_every=1)  # 4 steps
    fit(net, FeatureBatches(16, (3, 6, 6)), objective, hp, seed=0, device="cpu", evaluate=lambda m: 0.0,
        step_hook=masked.set_step, freeze_norm_stats=freeze_norm_stats, hooks=hooks)
    assert all(not torch.equal(m.scores, scores[n]) for n, m in masked.masks.items())  # the search searched
    return net, before


def test_batchnorm_statistics_stay_bit_identical_under_a_frozen_search():
    net, before = frozen_search(True, hooks=[EvalHook(1, lambda m: 0.0)])
    after = net.bn.state_dict()
    assert set(after) == set(before)
    assert all(torch.equal(after[k], v) for k, v in before.items())
    assert net.conv.training and not net.bn.training  # left in training mode, the norm layer in eval mode


def test_batchnorm_statistics_move_without_the_switch():
    net, before = frozen_search(False)
    after = net.bn.state_dict()
    assert int(after["num_batches_tracked"]) == 104
    assert not torch.equal(after["running_mean"], before["running_mean"])
    assert not torch.equal(after["running_var"], before["running_var"])
    assert torch.equal(after["weight"], before["weight"]) and torch.equal(after["bias"], before["bias"])  # frozen


def test_an_eval_hook_keeps_the_statistics_fit_froze():
    net, before = frozen_search(True, hooks=[EvalHook(1, lambda m: 0.0)])
    assert int(net.bn.num_batches_tracked) == 100


# ---------------------------------------------------------------------------- weight decay by plain name
def test_masked_biases_get_no_weight_decay_when_weights_train():
    model = tiny_bert()
    masked = attach(model, MovementSigmoid(10, 0.0, 0.1), ENCODER_KINDS, train_weights=True,
                    zero_bias_of_empty_rows=True)
    names = {id(p): n for n, p in model.named_parameters()}
    groups = {g["name"]: g for g in trainable_groups(model, 1e-3, 0.1)}
    assert (groups["decay"]["weight_decay"], groups["no_decay"]["weight_decay"]) == (0.1, 0.0)
    decay = {names[id(p)] for p in groups["decay"]["params"]}
    no_decay = {names[id(p)] for p in groups["no_decay"]["params"]}
    bias = "bert.encoder.layer.0.attention.self.query.parametrizations.bias.original"
    assert not bias.endswith("bias")  # what the old name rule missed
    assert {f"{n}.parametrizations.bias.original" for n in masked.masks} <= no_decay
    assert {f"{n}.parametrizations.weight.original" for n in masked.masks} <= decay
    assert "bert.encoder.layer.0.attention.output.LayerNorm.weight" in no_decay and "classifier.bias" in no_decay
    assert all(n.endswith((".bias", ".bias.original")) or "LayerNorm" in n for n in no_decay)
    assert not any(n.endswith(".bias.original") or n.endswith(".bias") for n in decay)
    assert len(decay) + len(no_decay) == sum(1 for p in model.parameters() if p.requires_grad)
    # with the scores in a group of their own (the gender track's way): scores, then the weights by name
    groups = {g["name"]: g for g in trainable_groups(model, 1e-3, 0.01, scores=masked, score_lr=0.1)}
    by_name = {k: {names[id(p)] for p in g["params"]} for k, g in groups.items()}
    assert by_name["scores"] == {f"{n}.parametrizations.weight.0.scores" for n in masked.masks}
    assert by_name["decay"] == decay - by_name["scores"] and by_name["no_decay"] == no_decay
    assert [(g["lr"], g["weight_decay"]) for g in groups.values()] == [(0.1, 0.0), (1e-3, 0.01), (1e-3, 0.0)]
    # paper B's and D's optimisers decay every weight alike; frozen weights leave the scores alone
    alike = trainable_groups(model, 1e-3, 0.01, scores=masked, score_lr=0.1, decay_by_name=False)
    assert [g["name"] for g in alike] == ["scores", "weights"]
    assert {names[id(p)] for p in alike[1]["params"]} == (decay | no_decay) - by_name["scores"]
    only = trainable_groups(model, 1e-3, 0.01, scores=masked, score_lr=0.1, weights=False)
    assert [g["name"] for g in only] == ["scores"]


def test_a_classification_objective_adds_the_regulariser():
    model = tiny_bert()
    masked = attach(model, MovementSigmoid(10, 0.0, 0.1, l1_lambda=2.0), ["query"])
    batch = RandomBatches().collate([0, 1, 2, 3])
    plain = classification_objective(get_loss("ce"), "cpu")
    penalised = classification_objective(get_loss("ce"), "cpu", regularizer=masked.regularization)
    loss, logs = plain(model, batch)
    with_penalty, _ = penalised(model, batch)
    assert logs == {}
    # scores start at 0: lambda * mean sigmoid(0) = 2 * 0.5
    assert with_penalty.item() == pytest.approx(loss.item() + 1.0, abs=1e-6)


def test_early_stop_keeps_the_best_epoch_and_stops_after_patience_epochs_without_a_rise():
    """Scripted dev scores 50, 60, 59, 58, 70 at patience 2: the run stops after epoch 4 (two epochs without a
    rise), its weights are put back to epoch 2's, and a rise within min_delta does not count."""
    from maskbench.training.hooks import EarlyStop

    model = nn.Linear(2, 1, bias=False)
    scores, seen = iter([50.0, 60.0, 59.0, 58.0, 70.0]), []

    def evaluate(m):
        seen.append(m.weight.detach().clone())
        return next(scores)

    early = EarlyStop(patience=2)
    hp = TrainHParams(epochs=5, batch_size=4, learning_rate=0.1, lr_schedule="constant", log_every=1,
                      weight_decay=0.0)

    def objective(m, batch):
        return m(batch["x"]).pow(2).mean(), {}

    curve = fit(model, FeatureBatches(8, (2,), classes=2), objective, hp, seed=0, device="cpu", evaluate=evaluate,
                early_stop=early)
    assert [p["dev_accuracy"] for p in curve if "dev_accuracy" in p] == [50.0, 60.0, 59.0, 58.0]
    assert early.summary() == {"patience": 2, "min_delta": 0.0, "best_epoch": 2, "best_score": 60.0,
                               "stopped_epoch": 4}
    assert not torch.equal(model.weight, seen[1])
    early.restore_best(model)
    assert torch.equal(model.weight, seen[1])
    within = EarlyStop(patience=1, min_delta=0.5)
    assert within.update(1, 50.0, model) is False and within.update(2, 50.4, model) is True
    assert within.best_epoch == 1
    with pytest.raises(ValueError, match="needs a dev set"):
        fit(model, FeatureBatches(8, (2,), classes=2), objective, hp, seed=0, device="cpu", early_stop=EarlyStop(1))
    with pytest.raises(ValueError, match="patience must be at least 1"):
        EarlyStop(0)
