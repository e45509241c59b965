"""The GPU step's pieces, on the CPU: losses read in one transfer, the non-finite check deferred on CUDA, Adam(W)
fused only where every parameter is on CUDA, and a frozen masked weight built in autocast's precision (CPU autocast
to bf16 stands in for CUDA's: maskbench itself never autocasts on the CPU)."""

import pytest
import torch
from torch import nn

from maskbench.masking.binarizers import masked_weight, scaled_weight
from maskbench.masking.deciders import MovementSigmoid
from maskbench.masking.engine import attach
from maskbench.progress import host_floats
from maskbench.training.hooks import FiniteLosses
from maskbench.training.hparams import TrainHParams
from maskbench.training.optim import fused_on, make_optimizer


def test_host_floats_reads_tensors_as_float_does_and_keeps_the_order():
    values = [torch.tensor(0.1), 0.25, torch.tensor(1 / 3), 2, torch.tensor(1.5, dtype=torch.bfloat16)]
    assert host_floats(values) == [float(v) for v in values]
    assert host_floats(values) == [0.10000000149011612, 0.25, 0.3333333432674408, 2.0, 1.5]
    assert host_floats([]) == []


def test_a_non_finite_loss_on_the_cpu_stops_at_its_own_step():
    finite = FiniteLosses("cpu")
    finite.add(torch.tensor(1.0), 1)
    with pytest.raises(FloatingPointError, match="became nan at step 2"):
        finite.add(torch.tensor(float("nan")), 2)


def test_on_cuda_the_check_waits_for_the_next_read_and_names_the_steps_between():
    finite = FiniteLosses("cuda")  # deferred: the flag is a tensor where the losses are
    assert finite.deferred
    finite.add(torch.tensor(1.0), 4)
    finite.check(5)  # finite so far: nothing raised, the flag cleared
    assert finite.flag is None
    finite.add(torch.tensor(2.0), 6)
    finite.add(torch.tensor(float("inf")), 7)  # not raised here: no host read
    finite.add(torch.tensor(3.0), 8)
    with pytest.raises(FloatingPointError, match="between steps 6 and 9"):
        finite.check(9)


def test_adamw_is_fused_only_where_every_parameter_is_on_cuda():
    model = nn.Linear(3, 2)
    groups = [{"params": list(model.parameters())}]
    assert not fused_on(groups)
    optimizer = make_optimizer(groups, TrainHParams())
    assert not optimizer.defaults.get("fused")
    assert not fused_on([{"params": []}])


def masked_linear(decider, granularity="weight", seed=0):
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(8, 6))
    masks = attach(model, decider, ["0"], granularity, where="test")
    with torch.no_grad():
        masks.masks["0"].scores.normal_()
    return model, masks


@pytest.mark.parametrize("granularity", ["weight", "row"], ids=["fused threshold", "float tile mask"])
def test_under_autocast_a_frozen_masked_weight_is_built_in_bf16_from_one_cached_copy(granularity):
    model, masks = masked_linear(MovementSigmoid(10, 0.5, 0.5), granularity)
    masked = masks.masks["0"]
    layer = model[0]
    x = torch.randn(5, 8)
    original = layer.parametrizations.weight.original
    with torch.autocast("cpu", dtype=torch.bfloat16):
        weight = layer.weight
        assert weight.dtype == torch.bfloat16
        layer(x).float().sum().backward()
        copy = masked.low_precision_copy(original, torch.bfloat16)
        assert layer.weight.dtype == torch.bfloat16 and masked.low_precision_copy(original, torch.bfloat16) is copy
    # the same values as the fp32 masked weight rounded once, and the kept entries are the fp32 decision's
    reference = masks.masks["0"](original.detach())  # outside autocast: the fp32 path
    assert torch.equal(weight.float(), reference.to(torch.bfloat16).float())
    assert masked.scores.grad.dtype == torch.float32
    # the scores' gradient: the fp32 product of the bf16 matmul's gradient and the bf16 weight
    assert "_low_precision" not in str(list(model.state_dict()))
    with torch.no_grad():
        original.mul_(2.0)  # written in place: the copy is made again
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert masked.low_precision_copy(original, torch.bfloat16) is not copy


def test_without_autocast_the_mask_is_the_fp32_path_and_no_copy_is_made():
    model, masks = masked_linear(MovementSigmoid(10, 0.5, 0.5))
    model[0](torch.randn(2, 8))
    assert "_low_precision" not in masks.masks["0"].__dict__
    assert model[0].weight.dtype == torch.float32


def test_the_scores_gradient_is_widened_before_the_product():
    weight = torch.tensor([[0.3, -1.7], [2.5, 0.01]], dtype=torch.bfloat16)
    scores = torch.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    grad = torch.tensor([[1.1, 3.3], [-0.7, 0.9]], dtype=torch.bfloat16)
    masked_weight(weight, scores, 0.0).backward(grad)
    assert scores.grad.dtype == torch.float32
    assert torch.equal(scores.grad, grad.float() * weight.float())  # both exact in fp32: no bf16 rounding
    kept = torch.tensor([[True, False], [True, True]])  # scores > 0
    assert torch.equal(masked_weight(weight, scores, 0.0), torch.where(kept, weight, torch.zeros_like(weight)))
    mask = torch.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    out = scaled_weight(weight, mask)
    assert out.dtype == torch.bfloat16 and torch.equal(out.float(), weight.float() * mask.detach())
    out.backward(grad)
    assert mask.grad.dtype == torch.float32 and torch.equal(mask.grad, grad.float() * weight.float())
