"""Materialise a structured mask: a model whose pruned output channels (conv) or neurons (linear) are zeroed
becomes a smaller dense model with the same outputs (eval mode), so that parameter counts and CPU latency measure
what the pruning saves.

What a pruned unit computes. A mask zeroes the unit's *weights* (paper D gates weights only; biases and BatchNorm
stay), so the unit still outputs its bias: a pruned conv channel outputs the map b everywhere, BatchNorm (eval) turns
it into k = gamma (b - mean) / sqrt(var + eps) + beta, and ReLU into a = max(k, 0) — a constant, not zero. With
``zero_bias=True`` (the engine's ``zero_bias_of_empty_rows``) b is taken as 0: the unit's whole output is 0, as
under FFW's structured gates (paper D eq. (9): the gate multiplies the unit's output, bias included; their masks
say ``zero_bias_of_empty_rows: true``), and only f(0) = max(beta - gamma mean / sqrt(var + eps), 0) remains.

What ``shrink`` does with it, exactly:

* a = 0: the unit contributes nothing downstream and is removed with its BatchNorm entries and the next layer's
  input columns;
* a != 0, next layer Linear (an MLP layer, or the classifier after global average pooling, which averages a
  constant map to the same constant): removed too, its contribution W[:, c] a folded into the next layer's bias;
* a != 0, next layer a padded convolution: a constant map does *not* fold into a bias, since zero padding makes
  its contribution vary near the borders (the next conv sees a inside the image and 0 outside). All such units of
  one layer are instead merged into a single *constant channel*: a channel with zero weights and BatchNorm
  gamma = 0, beta = 1 (it outputs 1 everywhere, zero-padded like any channel), whose input column in the next conv
  is sum_c a_c W[:, c]. Exact at every position for any padding, at the cost of one channel per layer.

Units that cannot be removed stay in place as zero rows: the classifier's outputs, and in ResNet-18 every
channel that feeds a residual sum (the stem, each block's conv2 and shortcut); ResNet-18 shrinks only the inner
channels of its blocks (conv1 -> bn1 -> conv2). The report lists, per layer, how many units were pruned, removed
outright (a = 0), folded into a bias, or merged into a constant channel.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from maskbench.masking.savings import forward_latency
from maskbench.tracks.vision.models import MLP, ResNet18, SimpleConvNet, VisionModel, build_model


@dataclass
class LayerReport:
    name: str
    units: int
    pruned: int
    removed_zero: int = 0
    folded_into_bias: int = 0
    merged_constant: int = 0
    constant_channel: bool = False
    fixed_in_place: bool = False


@dataclass
class _Plan:
    """How a producer layer's outputs survive: the kept units in order, the pruned units with a non-zero
    constant output (index, value), and whether one constant channel (value ``extra_value``) follows the kept."""

    kept: torch.Tensor
    const_idx: torch.Tensor
    const_val: torch.Tensor
    extra: bool
    extra_value: float

    @property
    def width(self) -> int:
        return len(self.kept) + int(self.extra)


def keep_vectors(masks: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per-output-unit keep vectors from weight-shaped masks (``MaskedModules.hard_masks()``); a mask that is
    not constant over each output unit is not structured, and refused."""
    out = {}
    for name, mask in masks.items():
        mask = np.asarray(mask, dtype=bool)
        if mask.ndim == 1:
            out[name] = mask
            continue
        rows = mask.reshape(mask.shape[0], -1)
        if not (rows.all(axis=1) | ~rows.any(axis=1)).all():
            raise ValueError(f"shrink: the mask of {name!r} is not structured per output unit")
        out[name] = rows[:, 0].copy()
    return out


def _keep_of(keep: dict[str, np.ndarray], name: str, units: int) -> torch.Tensor:
    vector = keep.get(name)
    if vector is None:
        return torch.ones(units, dtype=torch.bool)
    vector = np.asarray(vector, dtype=bool)
    if vector.ndim != 1:
        vector = keep_vectors({name: vector})[name]
    if vector.shape != (units,):
        raise ValueError(f"shrink: keep[{name!r}] has {vector.shape[0]} entries for {units} output units")
    return torch.from_numpy(vector.copy())


def _f64(tensor: torch.Tensor | None) -> torch.Tensor | None:
    return None if tensor is None else tensor.detach().to(torch.float64).clone()


def _constants(bias: torch.Tensor | None, bn: nn.BatchNorm2d | None, idx: torch.Tensor,
               zero_bias: bool) -> torch.Tensor:
    """The post-ReLU constant a pruned unit outputs (see the module docstring), float64."""
    b = torch.zeros(len(idx), dtype=torch.float64)
    if bias is not None and not zero_bias:
        b = _f64(bias)[idx]
    if bn is not None:
        scale = _f64(bn.weight)[idx] / torch.sqrt(_f64(bn.running_var)[idx] + bn.eps)
        b = (b - _f64(bn.running_mean)[idx]) * scale + _f64(bn.bias)[idx]
    return torch.clamp(b, min=0.0)


def _plan(keep: torch.Tensor, bias: torch.Tensor | None, bn: nn.BatchNorm2d | None, feeds_conv: bool,
          zero_bias: bool, report: LayerReport) -> _Plan:
    kept = torch.nonzero(keep).flatten()
    pruned = torch.nonzero(~keep).flatten()
    values = _constants(bias, bn, pruned, zero_bias)
    nonzero = values != 0
    const_idx, const_val = pruned[nonzero], values[nonzero]
    merged = feeds_conv and len(const_idx) > 0
    extra = merged or len(kept) == 0  # a layer keeps at least one (possibly constant-zero) unit
    report.pruned = len(pruned)
    report.removed_zero = int((~nonzero).sum())
    report.merged_constant = len(const_idx) if feeds_conv else 0
    report.folded_into_bias = 0 if feeds_conv else len(const_idx)
    report.constant_channel = extra
    return _Plan(kept, const_idx, const_val, extra, 1.0 if merged else 0.0)


def _columns(weight: torch.Tensor, plan: _Plan | None) -> tuple[torch.Tensor, torch.Tensor]:
    """A consumer's weight (float64, rows already chosen) restricted to the producer's surviving units, and the
    folded contribution sum_c a_c W[:, c] of its constant units (per output, over the kernel for a conv)."""
    if plan is None:
        return weight, torch.zeros(weight.shape[0], dtype=torch.float64)
    folded = torch.tensordot(weight[:, plan.const_idx], plan.const_val, dims=([1], [0]))
    cols = weight[:, plan.kept]
    if plan.extra:
        extra = folded if plan.extra_value == 1.0 else torch.zeros_like(folded)
        cols = torch.cat([cols, extra.unsqueeze(1)], dim=1)
    return cols, folded


def _produce(weight: torch.Tensor, bias: torch.Tensor | None, plan: _Plan) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A producer's rows: the kept ones, then a zero row for the constant channel (value from its BatchNorm, or
    its bias for a Linear)."""
    rows = weight[plan.kept]
    new_bias = None if bias is None else bias[plan.kept]
    if plan.extra:
        rows = torch.cat([rows, torch.zeros_like(weight[:1])], dim=0)
        if new_bias is not None:
            new_bias = torch.cat([new_bias, torch.tensor([plan.extra_value], dtype=new_bias.dtype)])
    return rows, new_bias


def _bn_state(bn: nn.BatchNorm2d, plan: _Plan, prefix: str) -> dict[str, torch.Tensor]:
    state = {}
    fill = {"weight": 0.0, "bias": plan.extra_value, "running_mean": 0.0, "running_var": 1.0}
    for key, value in bn.state_dict().items():
        if key == "num_batches_tracked":
            state[f"{prefix}.{key}"] = value.clone()
            continue
        chosen = value[plan.kept]
        if plan.extra:
            chosen = torch.cat([chosen, torch.tensor([fill[key]], dtype=value.dtype)])
        state[f"{prefix}.{key}"] = chosen
    return state


def _fixed(weight: torch.Tensor, bias: torch.Tensor | None, keep: torch.Tensor, plan: _Plan | None,
           zero_bias: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A layer whose outputs cannot be removed: its input columns follow ``plan``; its pruned rows stay as zero
    rows whose bias is untouched (the masked model's pruned row ignores its inputs), the kept rows' bias absorbs
    the folded constants."""
    cols, folded = _columns(_f64(weight), plan)
    cols[~keep] = 0.0
    if bias is None:
        if plan is not None and plan.extra_value == 0.0 and bool(folded.ne(0).any()):
            raise ValueError("shrink: constants to fold into a layer without a bias")
        return cols, None
    new_bias = _f64(bias)
    if plan is not None and plan.extra_value == 0.0:  # a Linear consumer: the constants become bias
        new_bias = new_bias + torch.where(keep, folded, torch.zeros_like(folded))
    if zero_bias:
        new_bias[~keep] = 0.0
    return cols, new_bias


def _cast(state: dict[str, torch.Tensor], like: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.to(like[k].dtype) if k in like else v for k, v in state.items()}


def _put(state: dict[str, torch.Tensor], prefix: str, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    state[f"{prefix}.weight"] = weight
    if bias is not None:
        state[f"{prefix}.bias"] = bias


def _shrink_chain(model: VisionModel, layers: list[tuple[str, nn.Module, nn.BatchNorm2d | None]],
                  keep: dict[str, np.ndarray], zero_bias: bool) -> tuple[list[int], dict, list[LayerReport]]:
    """A chain of producers (conv+BN or linear, each followed by ReLU) ending in the classifier ``fc``."""
    state: dict[str, torch.Tensor] = {}
    reports = []
    previous: _Plan | None = None
    widths = []
    for i, (name, module, bn) in enumerate(layers):
        units = module.weight.shape[0]
        report = LayerReport(name, units, 0)
        feeds_conv = i + 1 < len(layers) and isinstance(layers[i + 1][1], nn.Conv2d)
        plan = _plan(_keep_of(keep, name, units), module.bias, bn, feeds_conv, zero_bias, report)
        rows, bias = _produce(_f64(module.weight), _f64(module.bias), plan)
        cols, folded = _columns(rows, previous)
        if bias is not None and previous is not None and not isinstance(module, nn.Conv2d):
            bias = bias + folded  # Linear after Linear: the constant units become bias
        elif previous is not None and previous.extra_value == 0.0 and bool(folded.ne(0).any()):
            raise ValueError(f"shrink: {name!r} cannot absorb constants")
        _put(state, name, cols, bias)
        if bn is not None:
            state.update(_bn_state(bn, plan, name.replace("conv", "bn")))
        reports.append(report)
        widths.append(plan.width)
        previous = plan
    fc_keep = _keep_of(keep, "fc", model.fc.out_features)
    weight, bias = _fixed(model.fc.weight, model.fc.bias, fc_keep, previous, zero_bias)
    _put(state, "fc", weight, bias)
    reports.append(LayerReport("fc", len(fc_keep), int((~fc_keep).sum()), fixed_in_place=True))
    return widths, state, reports


def _shrink_resnet(model: ResNet18, keep: dict[str, np.ndarray], zero_bias: bool):
    state = {k: _f64(v) if v.is_floating_point() else v.clone() for k, v in model.state_dict().items()}
    reports = []
    fixed = ["conv1"] + [f"{n}.conv2" for n, _ in model.blocks()]
    fixed += [f"{n}.downsample.0" for n, b in model.blocks() if b.downsample is not None]
    modules = dict(model.named_modules())
    for name in fixed:
        mask = _keep_of(keep, name, modules[name].weight.shape[0])
        state[f"{name}.weight"][~mask] = 0.0
        reports.append(LayerReport(name, len(mask), int((~mask).sum()), fixed_in_place=True))
    widths = []
    for name, block in model.blocks():
        report = LayerReport(f"{name}.conv1", block.conv1.out_channels, 0)
        plan = _plan(_keep_of(keep, f"{name}.conv1", block.conv1.out_channels), None, block.bn1, True, zero_bias,
                     report)
        rows, _ = _produce(_f64(block.conv1.weight), None, plan)
        state[f"{name}.conv1.weight"] = rows
        state.update(_bn_state(block.bn1, plan, f"{name}.bn1"))
        conv2_keep = _keep_of(keep, f"{name}.conv2", block.conv2.out_channels)
        cols, _ = _columns(_f64(block.conv2.weight), plan)
        cols[~conv2_keep] = 0.0
        state[f"{name}.conv2.weight"] = cols
        reports.append(report)
        widths.append(plan.width)
    fc_keep = _keep_of(keep, "fc", model.fc.out_features)
    weight, bias = _fixed(model.fc.weight, model.fc.bias, fc_keep, None, zero_bias)
    _put(state, "fc", weight, bias)
    reports.append(LayerReport("fc", len(fc_keep), int((~fc_keep).sum()), fixed_in_place=True))
    return widths, state, reports


def shrink(model: VisionModel, keep: dict[str, np.ndarray], zero_bias: bool = False
           ) -> tuple[VisionModel, list[dict[str, Any]]]:
    """The smaller dense model equal (eval mode) to ``model`` with the output units where ``keep[name]`` is False
    masked (weights zeroed), and a per-layer report. ``keep``: module name -> bool vector over its output units (or
    the weight-shaped masks of ``MaskedModules.hard_masks()``); a layer not named keeps everything. ``model``
    must carry no masks. The new model is built from the old one's config, so ``save_model`` stores it."""
    if any(".parametrizations." in k for k in model.state_dict()):
        raise ValueError("shrink: the model carries masks; pass the plain model and the keep vectors")
    unknown = set(keep) - {name for name, _ in model.named_modules()}
    if unknown:
        raise ValueError(f"shrink: keep names modules the model does not have: {sorted(unknown)}")
    spec = copy.deepcopy(model.spec)
    if isinstance(model, SimpleConvNet):
        ext = model.extracter
        n = sum(isinstance(m, nn.Conv2d) for m in ext)
        layers = [(f"extracter.conv{i}", getattr(ext, f"conv{i}"), getattr(ext, f"bn{i}")) for i in range(1, n + 1)]
        widths, state, reports = _shrink_chain(model, layers, keep, zero_bias)
        spec["kwargs"]["channels"] = widths
    elif isinstance(model, MLP):
        ext = model.extracter
        n = sum(isinstance(m, nn.Linear) for m in ext)
        layers = [(f"extracter.fc{i}", getattr(ext, f"fc{i}"), None) for i in range(1, n + 1)]
        widths, state, reports = _shrink_chain(model, layers, keep, zero_bias)
        spec["kwargs"]["hidden"] = widths
    elif isinstance(model, ResNet18):
        widths, state, reports = _shrink_resnet(model, keep, zero_bias)
        spec["kwargs"]["widths"] = widths
    else:
        raise TypeError(f"shrink: no recipe for {type(model).__name__}")
    small = build_model(spec["name"], spec["num_classes"], **spec["kwargs"])
    full = dict(model.state_dict())
    full.update(state)
    full = {k: v for k, v in full.items() if k in small.state_dict()}
    small.load_state_dict(_cast(full, model.state_dict()), strict=True)
    return small.eval(), [asdict(r) for r in reports]


def cpu_latency(model: nn.Module, input_shape: tuple[int, ...], batch: int = 1, repeats: int = 20,
                warmup: int = 3) -> float:
    """Median wall-clock seconds of one eval-mode forward pass of a random batch of ``batch`` x ``input_shape`` on
    the CPU."""
    x = torch.randn(batch, *input_shape, device=next(model.parameters()).device)
    return forward_latency(model, lambda net: net(x), repeats, warmup)
