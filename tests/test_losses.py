"""Debiasing losses against values worked out by hand (plain ``math``, never the function under test)."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from maskbench.objectives.losses import (
    LOSSES,
    NEEDS,
    confidence_regularization,
    cross_entropy,
    focal_loss,
    get_loss,
    learned_mixin,
    product_of_experts,
    reweight_beta,
    reweight_by_teacher,
)

# The shared 2-example, 3-class case:
#   z = [[2, 0, 0], [0, 1, 0]], y = [0, 1]
#   softmax(z_1) = [e^2, 1, 1] / (e^2 + 2)   ->  CE_1 = log(e^2 + 2) - 2
#   softmax(z_2) = [1, e, 1] / (e + 2)       ->  CE_2 = log(e + 2) - 1
#   p_b = [[0.8, 0.1, 0.1], [0.2, 0.5, 0.3]]  ->  p_b(y) = [0.8, 0.5]
E = math.e
CE1 = math.log(E**2 + 2) - 2
CE2 = math.log(E + 2) - 1


def _case():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    labels = torch.tensor([0, 1])
    bias = torch.tensor([[0.8, 0.1, 0.1], [0.2, 0.5, 0.3]], dtype=torch.float64)
    teacher = torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.6, 0.3]], dtype=torch.float64)
    return logits, labels, bias, teacher


def _random(n=6, c=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n, c, generator=g, dtype=torch.float64)
    labels = torch.randint(0, c, (n,), generator=g)
    bias = torch.softmax(torch.randn(n, c, generator=g, dtype=torch.float64), dim=1)
    return logits, labels, bias


def test_hand_case_cross_entropy():
    logits, labels, _, _ = _case()
    assert cross_entropy(logits, labels).item() == pytest.approx((CE1 + CE2) / 2, abs=1e-12)


# ------------------------------------------------------------------------------------ reductions to CE
def test_poe_with_uniform_bias_is_ce():
    # log(1/C) is added to every logit; CE is shift invariant.
    logits, labels, _ = _random(n=8, c=3)
    uniform = torch.full_like(logits, 1 / 3)
    assert torch.allclose(product_of_experts(logits, labels, uniform), F.cross_entropy(logits, labels),
                          atol=1e-6, rtol=0)


def test_reweight_beta_zero_is_ce():
    logits, labels, bias = _random(n=8)
    assert torch.allclose(reweight_beta(logits, labels, bias, beta=0.0), F.cross_entropy(logits, labels),
                          atol=1e-6, rtol=0)


def test_reweight_by_teacher_with_constant_bias_is_ce():
    # a constant bias (the same p_b(y) = 1/3 for every example) gives every weight 1 - 1/3 = 2/3;
    # sum(2/3 CE) / sum(2/3) = mean CE
    logits, labels, _ = _random(n=8)
    constant = torch.full_like(logits, 1 / 3)
    assert torch.allclose(reweight_by_teacher(logits, labels, constant), F.cross_entropy(logits, labels),
                          atol=1e-6, rtol=0)


def test_focal_gamma_zero_is_ce_and_gamma_one_is_reweight_by_teacher():
    logits, labels, bias = _random(n=8)
    ce = F.cross_entropy(logits, labels)
    assert torch.allclose(focal_loss(logits, labels, bias, gamma=0.0), ce, atol=1e-6, rtol=0)
    assert torch.allclose(focal_loss(logits, labels, bias, gamma=1.0), reweight_by_teacher(logits, labels, bias),
                          atol=1e-12, rtol=0)


def test_reweight_by_teacher_scaled_is_the_same_loss():
    # A's ``reweight-by-teacher-scaled``: w' = w / mean(w), then sum(w' CE) / sum(w'); the scale cancels.
    logits, labels, bias = _random(n=8)
    w = 1 - bias[torch.arange(8), labels]
    w = w / w.mean()
    scaled = (w * F.cross_entropy(logits, labels, reduction="none")).sum() / w.sum()
    assert torch.allclose(reweight_by_teacher(logits, labels, bias), scaled, atol=1e-12, rtol=0)


def test_learned_mixin_with_zero_gate_is_ce():
    # softplus(-60) ~ 9e-27, so g * log p_b ~ 0
    logits, labels, bias = _random(n=8)
    gate = torch.full((8,), -60.0, dtype=torch.float64)
    assert torch.allclose(learned_mixin(logits, labels, bias, gate), F.cross_entropy(logits, labels),
                          atol=1e-6, rtol=0)


# ------------------------------------------------------------------------------------ hand cases
def test_poe_hand_case():
    # product p_m * p_b, renormalised:
    #   row 1: [0.8 e^2, 0.1, 0.1]  -> -log(0.8 e^2 / (0.8 e^2 + 0.2)) = log(0.8 e^2 + 0.2) - log 0.8 - 2
    #   row 2: [0.2, 0.5 e, 0.3]    -> -log(0.5 e / (0.5 + 0.5 e))   = log(1 + e) - 1
    logits, labels, bias, _ = _case()
    row1 = math.log(0.8 * E**2 + 0.2) - math.log(0.8) - 2
    row2 = math.log(1 + E) - 1
    assert product_of_experts(logits, labels, bias).item() == pytest.approx((row1 + row2) / 2, abs=1e-9)


def test_reweight_hand_cases():
    logits, labels, bias, _ = _case()
    # normalised: w = [1 - 0.8, 1 - 0.5] = [0.2, 0.5]
    expected = (0.2 * CE1 + 0.5 * CE2) / 0.7
    assert reweight_by_teacher(logits, labels, bias).item() == pytest.approx(expected, abs=1e-9)
    # paper C eq. (7) with beta = 0.5: w = [1 - 0.4, 1 - 0.25] = [0.6, 0.75], plain mean over N = 2
    expected = (0.6 * CE1 + 0.75 * CE2) / 2
    assert reweight_beta(logits, labels, bias, beta=0.5).item() == pytest.approx(expected, abs=1e-9)


def test_focal_hand_case_with_bias():
    # gamma = 2: w = [(1 - 0.8)^2, (1 - 0.5)^2] = [0.04, 0.25]; L = (0.04 CE_1 + 0.25 CE_2) / 0.29
    logits, labels, bias, _ = _case()
    expected = (0.04 * CE1 + 0.25 * CE2) / 0.29
    assert focal_loss(logits, labels, bias, gamma=2.0).item() == pytest.approx(expected, abs=1e-9)


def test_focal_hand_case_self_weighted():
    # no bias -> the model's own (detached) p(y):
    #   1 - p_1(y) = 2 / (e^2 + 2),  1 - p_2(y) = 2 / (e + 2); gamma = 2 squares them
    logits, labels, _, _ = _case()
    w1, w2 = (2 / (E**2 + 2)) ** 2, (2 / (E + 2)) ** 2
    expected = (w1 * CE1 + w2 * CE2) / (w1 + w2)
    assert focal_loss(logits, labels, gamma=2.0).item() == pytest.approx(expected, abs=1e-9)


def test_confidence_regularization_hand_case():
    # exponents 1 - p_b(y) = [0.2, 0.5]
    #   s_1 = [0.7^0.2, 0.2^0.2, 0.1^0.2] / sum,   s_2 = [0.1^0.5, 0.6^0.5, 0.3^0.5] / sum
    # with sum_j s_j = 1:  -sum_j s_j log softmax(z)_j = log Z - sum_j s_j z_j
    #   row 1: log(e^2 + 2) - 2 s_1[0],   row 2: log(e + 2) - s_2[1]
    logits, labels, bias, teacher = _case()
    a = [0.7**0.2, 0.2**0.2, 0.1**0.2]
    b = [0.1**0.5, 0.6**0.5, 0.3**0.5]
    row1 = math.log(E**2 + 2) - 2 * a[0] / sum(a)
    row2 = math.log(E + 2) - b[1] / sum(b)
    got = confidence_regularization(logits, labels, bias, teacher)
    assert got.item() == pytest.approx((row1 + row2) / 2, abs=1e-9)


def test_confidence_regularization_extremes():
    # p_b(y) = 0 -> target is the teacher itself (distillation); p_b(y) = 1 -> exponent 0 -> uniform target
    logits, labels, _, teacher = _case()
    unbiased = torch.tensor([[0.0, 0.5, 0.5], [0.5, 0.0, 0.5]], dtype=torch.float64)
    distill = -(teacher * F.log_softmax(logits, 1)).sum(1).mean()
    assert torch.allclose(confidence_regularization(logits, labels, unbiased, teacher), distill, atol=1e-12)
    biased = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=torch.float64)
    uniform = -(F.log_softmax(logits, 1) / 3).sum(1).mean()
    assert torch.allclose(confidence_regularization(logits, labels, biased, teacher), uniform, atol=1e-12)


def test_learned_mixin_plus_h_hand_case():
    # gate = [0, log(e - 1)] -> g = softplus(gate) = [log 2, 1]
    #   row 1: combined ∝ [e^2 0.8^g, 0.1^g, 0.1^g] -> CE = log(e^2 0.8^g + 2 * 0.1^g) - 2 - g log 0.8
    #          q_1 = [0.8^g, 0.1^g, 0.1^g] / sum
    #   row 2: g = 1, so it is the PoE row: CE = log(1 + e) - 1, q_2 = p_b = [0.2, 0.5, 0.3]
    # loss = mean CE + w * mean H(q),  w = 0.3
    logits, labels, bias, _ = _case()
    gate = torch.tensor([0.0, math.log(E - 1)], dtype=torch.float64)
    g = math.log(2)
    ce1 = math.log(E**2 * 0.8**g + 2 * 0.1**g) - 2 - g * math.log(0.8)
    ce2 = math.log(1 + E) - 1
    q1 = [0.8**g, 0.1**g, 0.1**g]
    q1 = [v / sum(q1) for v in q1]
    h1 = -sum(v * math.log(v) for v in q1)
    h2 = -(0.2 * math.log(0.2) + 0.5 * math.log(0.5) + 0.3 * math.log(0.3))
    plain = (ce1 + ce2) / 2
    assert learned_mixin(logits, labels, bias, gate).item() == pytest.approx(plain, abs=1e-9)
    got = learned_mixin(logits, labels, bias, gate.unsqueeze(1), entropy_weight=0.3)
    assert got.item() == pytest.approx(plain + 0.3 * (h1 + h2) / 2, abs=1e-9)


# ------------------------------------------------------------------------------------ gradients
@pytest.mark.parametrize("name", sorted(LOSSES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_finite_with_degenerate_bias(name, dtype):
    g = torch.Generator().manual_seed(1)
    n, c = 6, 3
    logits = (3 * torch.randn(n, c, generator=g, dtype=dtype)).requires_grad_()
    labels = torch.tensor([0, 1, 2, 0, 1, 2])
    # exact 0 and 1 bias probabilities, at and away from the gold label
    bias = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0],
                         [0.0, 0.5, 0.5], [0.2, 0.3, 0.5], [0.0, 1.0, 0.0]], dtype=dtype)
    teacher = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, 0.3, 0.4],
                            [0.0, 0.5, 0.5], [0.1, 0.8, 0.1], [0.0, 0.0, 1.0]], dtype=dtype)
    gate = torch.randn(n, generator=g, dtype=dtype).mul(5).requires_grad_()
    hparams = {"focal": {"gamma": 0.5}, "reweight_beta": {"beta": 1.0}, "learned_mixin": {"entropy_weight": 0.1}}
    loss = get_loss(name, **hparams.get(name, {}))(logits, labels, bias_probs=bias, teacher_probs=teacher, gate=gate)
    loss.backward()
    assert torch.isfinite(loss)
    assert torch.isfinite(logits.grad).all()
    assert logits.grad.abs().sum() > 0
    if name == "learned_mixin":
        assert torch.isfinite(gate.grad).all()


def test_all_bias_correct_gives_zero_reweighted_loss():
    # every p_b(y) = 1 -> all weights 0 -> loss 0 (not 0/0), gradient 0
    logits = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([0, 2])
    bias = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
    for fn in (reweight_by_teacher, focal_loss):
        loss = fn(logits, labels, bias)
        loss.backward()
        assert loss.item() == 0.0 and torch.isfinite(logits.grad).all()


def test_no_gradient_to_teacher_or_bias():
    logits, labels, bias, teacher = _case()
    logits.requires_grad_()
    bias.requires_grad_()
    teacher.requires_grad_()
    confidence_regularization(logits, labels, bias, teacher).backward()
    assert teacher.grad is None and bias.grad is None
    assert logits.grad is not None


# ------------------------------------------------------------------------------------ checks and registry
def test_shape_mismatch_raises():
    logits, labels, bias, teacher = _case()
    with pytest.raises(ValueError, match=r"bias_probs.*\(2, 2\).*\(2, 3\)"):
        product_of_experts(logits, labels, bias[:, :2])
    with pytest.raises(ValueError, match="teacher_probs"):
        confidence_regularization(logits, labels, bias, teacher[:1])
    with pytest.raises(ValueError, match="gate"):
        learned_mixin(logits, labels, bias, torch.zeros(3))
    with pytest.raises(ValueError, match="labels"):
        reweight_by_teacher(logits, labels[:1], bias)
    with pytest.raises(ValueError, match="needs bias_probs"):
        product_of_experts(logits, labels)


def test_registry_and_get_loss():
    assert set(LOSSES) == {"ce", "poe", "reweight", "reweight_beta", "focal", "conf_reg", "learned_mixin"}
    assert set(NEEDS) == set(LOSSES)
    assert all(need <= {"bias", "teacher", "gate"} for need in NEEDS.values())
    assert NEEDS["ce"] == set() and NEEDS["conf_reg"] == {"bias", "teacher"} and "gate" in NEEDS["learned_mixin"]
    assert get_loss("ce") is cross_entropy
    logits, labels, bias, _ = _case()
    bound = get_loss("focal", gamma=2.0)
    assert bound(logits, labels, bias_probs=bias).item() == pytest.approx((0.04 * CE1 + 0.25 * CE2) / 0.29)
    with pytest.raises(ValueError, match=r"'focal'.*'gama'"):
        get_loss("focal", gama=2.0)
    with pytest.raises(ValueError, match=r"'poe'.*'beta'"):
        get_loss("poe", beta=0.5)
    with pytest.raises(ValueError, match="unknown"):
        get_loss("nope")


def test_invalid_hyperparameter_values_raise():
    logits, labels, bias, _ = _case()
    with pytest.raises(ValueError, match="beta"):
        reweight_beta(logits, labels, bias, beta=1.5)
    with pytest.raises(ValueError, match="gamma"):
        focal_loss(logits, labels, bias, gamma=-1.0)
