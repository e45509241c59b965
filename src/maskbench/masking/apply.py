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
from maskbench.masking.density import density, module_density
from maskbench.masking.engine import FixedMask, plain_parameter_name, remove_parametrizations


class MaskMismatchError(ValueError):
    """A mask does not belong to the model it is applied to."""


def _fingerprint_tensors(items) -> str:
    digest = hashlib.sha256()
    for name, tensor in items:
        tensor = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}\n".encode())
        if tensor.numel():
            digest.update(tensor.reshape(-1).view(torch.uint8).numpy())
    return digest.hexdigest()


def _stored_tensors(module: nn.Module, prefix: str = ""):
    """(plain name, tensor) of every parameter and buffer, masks attached or not (their own scores and
    buffers are not part of the model)."""
    for name, tensor in [*module.named_parameters(), *module.named_buffers()]:
        if ".parametrizations." in f".{name}" and not name.endswith(".original"):
            continue
        yield plain_parameter_name(prefix + name), tensor


def model_fingerprint(model: nn.Module) -> str:
    """sha256 over every parameter's and buffer's name, dtype, shape and bytes (masks attached or not)."""
    return _fingerprint_tensors(sorted(_stored_tensors(model), key=lambda item: item[0]))


def map_prefix(name: str, prefix_map: dict[str, str] | None) -> str:
    """A module name as the model names it: the longest mask-side prefix in ``prefix_map`` replaced by its
    model-side prefix (``{"encoder.": "bert.encoder."}`` moves a bare encoder's mask under a classifier)."""
    for source in sorted(prefix_map or {}, key=len, reverse=True):
        if name.startswith(source):
            return prefix_map[source] + name[len(source):]
    return name


def masked_modules_fingerprint(model: nn.Module, names, prefix_map: dict[str, str] | None = None) -> str:
    """sha256 over the weights and buffers of the masked modules only, under the mask's own module names
    (``names``; each looked up in the model through ``prefix_map``): equal for one encoder under any head."""
    modules = dict(model.named_modules())
    items = []
    for name in sorted(names):
        module = modules.get(map_prefix(name, prefix_map))
        if module is None:
            raise MaskMismatchError(f"module {map_prefix(name, prefix_map)!r} does not exist in the model")
        items += [(f"{name}.{tensor_name}", tensor) for tensor_name, tensor in _stored_tensors(module)]
    return _fingerprint_tensors(items)


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
                name: (torch.from_numpy(~mask).to(device),
                       torch.from_numpy(~mask.reshape(mask.shape[0], -1).any(axis=1)).to(device))
                for name, mask in self.masks.items()}
        return self._tensors[key]

    @property
    def fingerprint(self) -> str | None:
        return self.meta.get("model_fingerprint")

    def density(self) -> float:
        return density(self.masks)

    def module_density(self) -> dict[str, float]:
        return module_density(self.masks)

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


class MaskSwitch:
    """Apply, switch and revert masks on one loaded model.

    >>> switch = MaskSwitch(model)
    >>> switch.apply(MaskSet.load("a.mask")); ...; switch.apply(MaskSet.load("b.mask")); switch.revert()
    """

    def __init__(self, model: nn.Module, fingerprint: str | None = None, prefix_map: dict[str, str] | None = None):
        self.model = model
        self._fingerprint = fingerprint
        self.prefix_map = prefix_map or {}
        self.active: MaskSet | None = None
        self._modules: dict[str, nn.Module] = {}

    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = model_fingerprint(self.model)
        return self._fingerprint

    def check(self, mask_set: MaskSet) -> None:
        """Refuse a mask of another model, or one naming modules this model lacks or shapes it differs in.

        A mask belongs to this model when the whole-model fingerprints agree, or — for a mask moved between
        heads of one encoder — when the fingerprint over its masked modules only (``meta.masked_fingerprint``)
        agrees with the same modules of this model, found through ``prefix_map``."""
        where = mask_set.describe()
        if mask_set.fingerprint is None:
            raise MaskMismatchError(f"{where}: field 'meta.model_fingerprint' is missing; cannot tell which model "
                                    "the mask belongs to")
        modules = dict(self.model.named_modules())
        for name, mask in mask_set.masks.items():
            module = modules.get(map_prefix(name, self.prefix_map))
            if module is None:
                raise MaskMismatchError(f"{where}: module {map_prefix(name, self.prefix_map)!r} does not exist in "
                                        "the model")
            weight = module.parametrizations.weight.original if parametrize.is_parametrized(module, "weight") \
                else module.weight
            if tuple(weight.shape) != tuple(mask.shape):
                raise MaskMismatchError(f"{where}: module {name!r} has shape {tuple(mask.shape)} in the mask but "
                                        f"{tuple(weight.shape)} in the model")
        if mask_set.fingerprint == self.fingerprint:
            return
        masked = mask_set.meta.get("masked_fingerprint")
        if masked is not None:
            ours = masked_modules_fingerprint(self.model, mask_set.masks, self.prefix_map)
            if ours == masked:
                return
            raise MaskMismatchError(
                f"{where}: field 'meta.masked_fingerprint' (the masked modules only) is {masked[:16]}…, but the "
                f"same modules of the loaded model give {ours[:16]}… — the mask was searched on a different "
                f"encoder ({mask_set.meta.get('model_dir', 'unknown')})")
        raise MaskMismatchError(
            f"{where}: field 'meta.model_fingerprint' is {mask_set.fingerprint[:16]}…, but the loaded model's "
            f"is {self.fingerprint[:16]}… — the mask was searched on a different model "
            f"({mask_set.meta.get('model_dir', 'unknown')})")

    def apply(self, mask_set: MaskSet) -> None:
        """Make the model compute with ``mask_set`` (replacing any mask applied before)."""
        self.check(mask_set)
        zero_bias = bool(mask_set.meta.get("zero_bias_of_empty_rows", True))
        for name in set(self._modules) - set(mask_set.masks):
            self._remove(name)
        modules = dict(self.model.named_modules())
        device = next(self.model.parameters()).device
        for name, (pruned, dead_rows) in mask_set.pruned_tensors(device).items():
            module = modules[map_prefix(name, self.prefix_map)]
            dead = dead_rows if zero_bias and getattr(module, "bias", None) is not None else None
            if name in self._modules:
                module.parametrizations.weight[0].zeroed = pruned
                has_bias_mask = parametrize.is_parametrized(module, "bias")
                if dead is not None and has_bias_mask:
                    module.parametrizations.bias[0].zeroed = dead
                elif dead is not None:
                    parametrize.register_parametrization(module, "bias", FixedMask(dead), unsafe=True)
                elif has_bias_mask:
                    parametrize.remove_parametrizations(module, "bias", leave_parametrized=False)
            else:
                parametrize.register_parametrization(module, "weight", FixedMask(pruned), unsafe=True)
                if dead is not None:
                    parametrize.register_parametrization(module, "bias", FixedMask(dead), unsafe=True)
                self._modules[name] = module
        self.active = mask_set

    def _remove(self, name: str) -> None:
        remove_parametrizations(self._modules.pop(name))

    def revert(self) -> None:
        """Back to the unmasked model: the original weight tensors, bit-identical."""
        for name in list(self._modules):
            self._remove(name)
        self.active = None
