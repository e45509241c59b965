"""The masking engine: one parametrization ``W -> W * expand(m(S))`` on any module with a weight.

``attach(model, decider, targets, granularity)`` gives every selected module (Linear, Conv1d/2d/3d, Embedding; by
kind or regular expression, ``selectors.py``) a ``Masked`` parametrization (``torch.nn.utils.parametrize``): the
stored weight lives on untouched as ``parametrizations.weight.original``, ``m`` is the decider's tile mask of the
scores ``S`` (``deciders.py``), ``expand`` the granularity's spread of tiles over the weight (``granularity.py``,
chosen per module kind). ``MaskedModules.detach()`` removes every parametrization and leaves the modules
bit-identical to before; ``bypass()`` makes every mask return the raw weight (the original model, e.g. for a
regulariser towards it, without a copy).

Frozen weights are the default (only the scores train); ``train_weights=True`` keeps the weights trainable, and
``training.optim.trainable_groups`` (the one parameter-group builder) gives scores and weights their own learning rate and
weight decay.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.binarizers import masked_weight, scaled_weight
from maskbench.masking.deciders import Decider
from maskbench.masking.density import density
from maskbench.masking.granularity import Granularity, GranularityError, Head, Units, Weight, granularity_for
from maskbench.masking.selectors import module_kind, select_modules


def outside_autocast(device_type: str):
    """A context that switches autocast off where it is on (CUDA under bf16/fp16), else does nothing.

    Mask scores, thresholds and the sigmoid / top-k decisions run inside it (``Masked.forward``, the regulariser):
    scores are fp32 parameters and the decisions compare them with thresholds near 0 (logit(0.1) = -2.2, a top-k's
    k-th score); an fp16 copy keeps 11 bits of mantissa, so scores within ~1e-3 of a threshold would flip, ties in a top-k would
    change, and a small L1 penalty on mean sigmoid(S) would lose precision. Under autocast the masked weight
    W * m(S) is formed in fp32 and only the matmul that reads it is cast down, as for an unmasked weight. On the CPU
    (maskbench never autocasts there) it is a no-op. Autocast itself is set by ``maskbench.precision``."""
    if torch.is_autocast_enabled(device_type):
        return torch.autocast(device_type=device_type, enabled=False)
    return contextlib.nullcontext()


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype autocast computes in on ``device_type`` where it is on (bf16 or fp16 on CUDA), else None."""
    if not torch.is_autocast_enabled(device_type):
        return None
    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype(device_type)
    return torch.get_autocast_gpu_dtype()  # torch < 2.4


class Masked(nn.Module):
    """Parametrization of one weight: ``W * expand(m(S))``, with S of the granularity's score shape."""

    def __init__(self, decider: Decider, granularity: Granularity, weight: torch.Tensor, name: str = "",
                 kind: str = "other"):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.granularity = granularity
        scores, buffers = decider.init_state(weight, granularity, name or "module")
        if decider.trains_scores:
            self.scores = nn.Parameter(scores.detach().clone())
        else:
            self.register_buffer("scores", scores.detach().clone())
        for key, value in buffers.items():
            self.register_buffer(key, value)
        self._decider = (decider,)  # a tuple: not a submodule, not in state_dict
        self.name, self.kind = name, kind
        self.bypassed = False

    @property
    def decider(self) -> Decider:
        return self._decider[0]

    def _fused(self) -> bool:
        return isinstance(self.granularity, Weight)

    def mask(self) -> torch.Tensor:
        """The float {0, 1} weight-shaped mask as the forward pass uses it (straight-through gradient)."""
        return self.granularity.expand(self.decider.tiles(self, self.training), self.shape)

    def hard_mask(self) -> torch.Tensor:
        """The final bool weight-shaped mask (True = kept)."""
        return self.granularity.expand(self.decider.hard_tiles(self), self.shape)

    def pruned_weights(self) -> torch.Tensor:
        """Bool, weight-shaped: True where the current mask zeroes the weight."""
        return ~self.granularity.expand(self.decider.hard_tiles(self), self.shape)

    def forward(self, weight: torch.Tensor) -> torch.Tensor:
        if self.bypassed:
            return weight
        own = getattr(self.decider, "forward", None)
        low = autocast_dtype(weight.device.type)
        # the mask is decided in fp32 even under CUDA autocast (bf16/fp16): see outside_autocast
        with outside_autocast(weight.device.type):
            if own is not None:
                return own(self, weight)
            if low is not None and not weight.requires_grad and weight.dtype != low:
                return self._masked(self.low_precision_copy(weight, low), low_precision=True)
            return self._masked(weight)

    def _masked(self, weight: torch.Tensor, low_precision: bool = False) -> torch.Tensor:
        """``weight`` masked by the fp32 scores' decision. ``low_precision``: ``weight`` is a frozen weight's
        low-precision copy under autocast, and the masked weight is built in that precision, so the matmul reads it
        as it is (no fp32 copy of every masked matrix cast down again each forward pass); the scores' gradient is
        still formed in fp32 (``masked_weight`` / ``scaled_weight`` widen the incoming gradient before multiplying)."""
        if self._fused():
            threshold = self.decider.threshold(self, self.training)
            if threshold is not None:
                return masked_weight(weight, self.scores, threshold)
        if low_precision:
            return scaled_weight(weight, self.mask())
        return weight * self.mask().to(weight.dtype)

    def low_precision_copy(self, weight: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """The frozen ``weight`` cast to ``dtype``, cast once and kept until the weight changes (another tensor, or
        written in place: a loaded state bumps its version). Not a buffer: it is never saved."""
        key = (weight.data_ptr(), weight.device, weight._version, dtype)
        cached = self.__dict__.get("_low_precision")
        if cached is None or cached[0] != key:
            cached = (key, weight.detach().to(dtype))
            self.__dict__["_low_precision"] = cached
        return cached[1]

    def alive_units(self) -> torch.Tensor:
        """Bool per output unit (dim 0): True if it keeps at least one weight (no gradient)."""
        with torch.no_grad():
            threshold = self.decider.threshold(self, self.training)
            if threshold is not None and self.scores.dim() == 2:
                # a unit survives iff its highest score passes the threshold: no full mask needed
                rows = self.shape[0] // self.scores.shape[0]
                alive = self.scores.amax(dim=1) > threshold
                return alive.repeat_interleave(rows) if rows > 1 else alive
            mask = self.mask() if self.decider.trains_scores else self.hard_mask()
            return mask.reshape(self.shape[0], -1).amax(dim=1) > 0


class EmptyRowBias(nn.Module):
    """Parametrization of a bias: zero the bias of every output unit whose weights are all masked, as
    nn_pruning's MaskedLinear does (``bias_mask``)."""

    def __init__(self, owner: Masked):
        super().__init__()
        self._owner = (owner,)

    def forward(self, bias: torch.Tensor) -> torch.Tensor:
        if self._owner[0].bypassed:
            return bias
        return bias * self._owner[0].alive_units().to(bias.dtype)


class GatedBias(nn.Module):
    """Parametrization of a bias: multiply each output unit's bias by its unit's gate, the very tile the weight
    row gets (``Units(0)`` granularity; with a head's rows, ``Head(size)``, every row of the head gets the head's
    gate, so a value matrix gated so gives the head's whole output times its gate). With ``W_c * g_c`` and
    ``b_c * g_c`` the unit computes ``g_c (W_c x + b_c)``: its whole output is gated (paper D eq. (9),
    ``StructuredGate``), and the gradient of a gate sees the bias as well as the weights."""

    def __init__(self, owner: Masked):
        super().__init__()
        self._owner = (owner,)

    def forward(self, bias: torch.Tensor) -> torch.Tensor:
        owner = self._owner[0]
        if owner.bypassed:
            return bias
        tiles = owner.decider.tiles(owner, owner.training)
        if isinstance(owner.granularity, Head):  # one gate per head: each of its rows' biases gets it
            tiles = tiles.reshape(-1).repeat_interleave(owner.granularity.size)
        return bias * tiles.reshape(bias.shape).to(bias.dtype)


class FixedMask(nn.Module):
    """Parametrization with a fixed bool mask: zero the entries where ``zeroed`` is True (pruned weights of a
    saved mask, or the bias of output units whose weights are all pruned). The stored tensor stays untouched."""

    def __init__(self, zeroed: torch.Tensor):
        super().__init__()
        self.zeroed = zeroed

    def forward(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.masked_fill(self.zeroed, 0.0)


def freeze(model: nn.Module) -> None:
    for param in model.parameters():
        param.requires_grad_(False)


def remove_parametrizations(module: nn.Module, keep_values: bool = False) -> None:
    """Remove every parametrization of ``module``: the original tensors back (``keep_values`` False), or the
    masked values written into them (True: a pruned model that saves like any other)."""
    if parametrize.is_parametrized(module):
        for tensor_name in list(module.parametrizations.keys()):
            parametrize.remove_parametrizations(module, tensor_name, leave_parametrized=keep_values)


def detach_parametrizations(model: nn.Module) -> None:
    """Remove every parametrization of the model, restoring the original tensors (bit-identical: they were never
    written)."""
    for module in list(model.modules()):
        remove_parametrizations(module)


@dataclass
class MaskedModules:
    """What ``attach`` returns: the decider and each module's ``Masked`` parametrization, by module name."""

    decider: Decider
    masks: dict[str, Masked]
    modules: dict[str, nn.Module] = field(default_factory=dict, repr=False)

    def parameters(self) -> list[nn.Parameter]:
        """The trainable scores, one tensor per masked module (empty for a decider without trained scores)."""
        return [m.scores for m in self.masks.values() if isinstance(m.scores, nn.Parameter)]

    def weights(self) -> list[nn.Parameter]:
        """The masked modules' stored weights and biases (``train_weights``: trained beside the scores)."""
        out = []
        for module in self.modules.values():
            for name, param in module.named_parameters():
                if ".parametrizations." in f".{name}" and not name.endswith(".original"):
                    continue
                out.append(param)
        return out

    def prune_to(self, sparsity: float) -> None:
        """A decider without trained scores (``Magnitude``): re-decide every module's mask from its weights."""
        for name, mask in self.masks.items():
            module = self.modules[name]
            self.decider.prune_to(mask, module.parametrizations.weight.original, sparsity)

    def set_step(self, step: int, total: int | None = None) -> None:
        self.decider.set_step(step, total)

    def regularization(self) -> torch.Tensor | None:
        if not self.masks:
            return self.decider.regularizer(self.masks)
        # an L1 penalty on sigmoid(S) in fp32 even under CUDA autocast (outside_autocast)
        device_type = next(iter(self.masks.values())).scores.device.type
        with outside_autocast(device_type):
            return self.decider.regularizer(self.masks)

    def hard_masks(self) -> dict[str, np.ndarray]:
        """The final binary masks (True = kept), as numpy bool arrays of the weights' shapes."""
        return {name: m.hard_mask().cpu().numpy().astype(bool) for name, m in self.masks.items()}

    def density(self) -> float:
        return density(self.hard_masks())

    @contextlib.contextmanager
    def bypass(self) -> Iterator[None]:
        """Inside, every mask returns the raw weights: the model computes as if no mask were attached."""
        previous = {name: m.bypassed for name, m in self.masks.items()}
        for m in self.masks.values():
            m.bypassed = True
        try:
            yield
        finally:
            for name, m in self.masks.items():
                m.bypassed = previous[name]

    def detach(self, keep_values: bool = False) -> None:
        """Remove the masks (and bias masks): the weights are the very tensors they were before, or, with
        ``keep_values``, carry the masked values (pruned entries 0)."""
        for module in self.modules.values():
            remove_parametrizations(module, keep_values)


_PARAMETRIZED = ".parametrizations."


def plain_parameter_name(name: str) -> str:
    """``x.parametrizations.weight.original`` -> ``x.weight``: the name a parameter has without masks."""
    if _PARAMETRIZED in name and name.endswith(".original"):
        module, rest = name.split(_PARAMETRIZED, 1)
        return f"{module}.{rest.removesuffix('.original')}"
    return name


def is_no_decay(plain_name: str) -> bool:
    """Biases and LayerNorm weights get no weight decay (as BERT); decided on the plain name, so a masked bias
    (``...parametrizations.bias.original``) is still a bias."""
    return plain_name.endswith("bias") or "LayerNorm" in plain_name


def _head_columns(grain: Granularity) -> bool:
    return isinstance(grain, Head) and grain.axis == "column"


def attach(model: nn.Module, decider: Decider, targets: Iterable[str], granularity=None, *,
           family: str = "bert", train_weights: bool = False, zero_bias_of_empty_rows: bool = False,
           gate_unit_output: bool = False, where: str = "modules") -> MaskedModules:
    """Give every selected module a ``Masked`` weight; freeze the whole model unless ``train_weights``.

    ``granularity``: one granularity (or its config spelling) for every module, or a per-kind plan
    ``{kind: spelling, "default": spelling}`` (paper B: square blocks on Q/K/V/O, rows on the FFN).

    ``gate_unit_output``: the whole output of a unit is gated, its bias with the same tile as its weight row
    (``GatedBias``; paper D's structured FFW); only with the output-unit granularity (``row`` / ``channel``), a
    head's rows (``{head: size}``: one gate per attention head of a value matrix, its rows' biases gated with it;
    the gender track's structured FFW), or the head columns of an attention output (``{head: size, axis:
    column}``): there the tile is the head's whole contribution and the bias, shared by every head, stays as it is.
    """
    per_kind = isinstance(granularity, dict) and "head" not in granularity
    plan = granularity if per_kind else {"default": granularity or "weight"}
    chosen = select_modules(model, list(targets), where, family)
    grains: dict[str, Granularity] = {}
    for name, module in chosen.items():  # every check before the model is touched
        if parametrize.is_parametrized(module, "weight"):
            raise ValueError(f"{where}: {name!r} already carries a mask; detach it first")
        grains[name] = granularity_for(module_kind(name, family), plan, f"{where} granularity")
        grains[name].score_shape(tuple(module.weight.shape), name)
        if gate_unit_output and grains[name] != Units(0) and not isinstance(grains[name], Head):
            raise GranularityError(f"{where}: gate_unit_output gates whole output units, but {name!r} has "
                                   f"granularity {grains[name].describe()!r}; use 'row', 'channel', a head's rows "
                                   "({head: size}) or, on an attention output, its head columns ({head: size, "
                                   "axis: column})")
        if gate_unit_output and zero_bias_of_empty_rows:
            raise ValueError(f"{where}: gate_unit_output already gates the bias; zero_bias_of_empty_rows is "
                             "redundant")
    if not train_weights:
        freeze(model)
    masks: dict[str, Masked] = {}
    for name, module in chosen.items():
        mask = Masked(decider, grains[name], module.weight.detach(), name, module_kind(name, family))
        mask = mask.to(module.weight.device)
        parametrize.register_parametrization(module, "weight", mask, unsafe=not decider.trains_scores)
        if zero_bias_of_empty_rows and getattr(module, "bias", None) is not None:
            parametrize.register_parametrization(module, "bias", EmptyRowBias(mask))
        if gate_unit_output and not _head_columns(grains[name]) and getattr(module, "bias", None) is not None:
            parametrize.register_parametrization(module, "bias", GatedBias(mask))
        masks[name] = mask
    return MaskedModules(decider, masks, dict(chosen))
