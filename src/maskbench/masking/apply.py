"""Applying, switching and reverting binary masks on a loaded model without touching its weights.

A mask is applied as a parametrization (``weight -> weight.masked_fill(pruned, 0)``): the stored weights are
never written, so reverting (removing the parametrization) gives back the very same tensors, bit for bit, and
switching to another mask only swaps the bool tensors — paper A's "masks can be set or unset at inference".
Every mask carries the fingerprint of the model it was searched on; applying it to another model is refused.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.nn.utils import parametrize

from maskbench.masking.codec import read_mask_file, write_mask_file
from maskbench.masking.scores import detach_parametrizations

_ORIGINAL = ".parametrizations."


class MaskMismatchError(ValueError):
    """A mask does not belong to the model it is applied to."""


def _plain_name(name: str) -> str:
    """`x.parametrizations.weight.original` -> `x.weight`: fingerprints ignore attached masks."""
    if _ORIGINAL in name and name.endswith(".original"):
        module, rest = name.split(_ORIGINAL, 1)
        return f"{module}.{rest.removesuffix('.original')}"
    return name


def model_fingerprint(model: nn.Module) -> str:
    """sha256 over every parameter's name, dtype, shape and bytes (masks attached or not)."""
    digest = hashlib.sha256()
    params = sorted((_plain_name(n), p) for n, p in model.named_parameters() if ".parametrizations." not in n
                    or n.endswith(".original"))
    for name, param in params:
        tensor = param.detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}\n".encode())
        if tensor.numel():
            digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


@dataclass
class MaskSet:
    """Binary masks by module name (True = kept) and what produced them."""

    masks: dict[str, np.ndarray]
    meta: dict = field(default_factory=dict)
    path: Path | None = None
    _tensors: dict = field(default_factory=dict, repr=False, compare=False)

    def pruned_tensors(self, device) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """Per module the bool tensors a parametrization needs — pruned weights and fully pruned output rows —
        built once per device, so that switching back to this mask later costs only the registration."""
        key = str(device)
        if key not in self._tensors:
            self._tensors[key] = {
                name: (torch.from_numpy(~mask).to(device), torch.from_numpy(~mask.any(axis=1)).to(device))
                for name, mask in self.masks.items()}
        return self._tensors[key]

    @property
    def fingerprint(self) -> str | None:
        return self.meta.get("model_fingerprint")

    def density(self) -> float:
        kept = sum(int(m.sum()) for m in self.masks.values())
        return kept / max(1, sum(m.size for m in self.masks.values()))

    def module_density(self) -> dict[str, float]:
        return {name: float(m.mean()) for name, m in self.masks.items()}

    def save(self, path: str | Path) -> dict:
        meta = {**self.meta, "density": self.density(), "module_density": self.module_density()}
        stats = write_mask_file(path, self.masks, meta)
        self.path = Path(path)
        return stats

    @classmethod
    def load(cls, path: str | Path) -> MaskSet:
        masks, meta = read_mask_file(path)
        return cls(masks, meta, Path(path))

    def describe(self) -> str:
        return str(self.path) if self.path else f"mask ({self.meta.get('method', '?')})"


class ZeroWhere(nn.Module):
    """Parametrization: zero the entries where ``zeroed`` is True — the pruned weights of a matrix, or the bias of
    output rows whose weights are all pruned. The stored tensor stays untouched."""

    def __init__(self, zeroed: torch.Tensor):
        super().__init__()
        self.zeroed = zeroed

    def forward(self, tensor: torch.Tensor) -> torch.Tensor:
        return tensor.masked_fill(self.zeroed, 0.0)


class MaskSwitch:
    """Apply, switch and revert masks on one loaded model.

    >>> switch = MaskSwitch(model)
    >>> switch.apply(MaskSet.load("a.mask")); ...; switch.apply(MaskSet.load("b.mask")); switch.revert()
    """

    def __init__(self, model: nn.Module, fingerprint: str | None = None):
        self.model = model
        self._fingerprint = fingerprint
        self.active: MaskSet | None = None
        self._modules: dict[str, nn.Module] = {}

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.model)
        return self._fingerprint

    def check(self, mask_set: MaskSet) -> None:
        """Refuse a mask of another model, or one naming modules this model lacks or shapes it differs in."""
        where = mask_set.describe()
        if mask_set.fingerprint is None:
            raise MaskMismatchError(f"{where}: field 'meta.model_fingerprint' is missing; cannot tell which model "
                                    "the mask belongs to")
        if mask_set.fingerprint != self.fingerprint:
            raise MaskMismatchError(
                f"{where}: field 'meta.model_fingerprint' is {mask_set.fingerprint[:16]}…, but the loaded model's "
                f"is {self.fingerprint[:16]}… — the mask was searched on a different model "
                f"({mask_set.meta.get('model_dir', 'unknown')})")
        modules = dict(self.model.named_modules())
        for name, mask in mask_set.masks.items():
            module = modules.get(name)
            if module is None:
                raise MaskMismatchError(f"{where}: module {name!r} does not exist in the model")
            weight = module.parametrizations.weight.original if parametrize.is_parametrized(module, "weight") \
                else module.weight
            if tuple(weight.shape) != tuple(mask.shape):
                raise MaskMismatchError(f"{where}: module {name!r} has shape {tuple(mask.shape)} in the mask but "
                                        f"{tuple(weight.shape)} in the model")

    def apply(self, mask_set: MaskSet) -> None:
        """Make the model compute with ``mask_set`` (replacing any mask applied before)."""
        self.check(mask_set)
        zero_bias = bool(mask_set.meta.get("zero_bias_of_empty_rows", True))
        for name in set(self._modules) - set(mask_set.masks):
            self._remove(name)
        modules = dict(self.model.named_modules())
        device = next(self.model.parameters()).device
        for name, (pruned, dead_rows) in mask_set.pruned_tensors(device).items():
            module = modules[name]
            dead = dead_rows if zero_bias and module.bias is not None else None
            if name in self._modules:
                module.parametrizations.weight[0].zeroed = pruned
                has_bias_mask = parametrize.is_parametrized(module, "bias")
                if dead is not None and has_bias_mask:
                    module.parametrizations.bias[0].zeroed = dead
                elif dead is not None:
                    parametrize.register_parametrization(module, "bias", ZeroWhere(dead), unsafe=True)
                elif has_bias_mask:
                    parametrize.remove_parametrizations(module, "bias", leave_parametrized=False)
            else:
                parametrize.register_parametrization(module, "weight", ZeroWhere(pruned), unsafe=True)
                if dead is not None:
                    parametrize.register_parametrization(module, "bias", ZeroWhere(dead), unsafe=True)
                self._modules[name] = module
        self.active = mask_set

    def _remove(self, name: str) -> None:
        module = self._modules.pop(name)
        for tensor_name in list(module.parametrizations.keys()):
            parametrize.remove_parametrizations(module, tensor_name, leave_parametrized=False)

    def revert(self) -> None:
        """Back to the unmasked model: the original weight tensors, bit-identical."""
        for name in list(self._modules):
            self._remove(name)
        self.active = None


def revert_all(model: nn.Module) -> None:
    """Remove any mask or score parametrization from the model."""
    detach_parametrizations(model)
