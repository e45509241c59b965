"""Paper D's vision models, each a frozen encoder plus a task classifier ``fc`` on a flat bottleneck.

Paper D (FFW) attaches its bias-extraction head to the bottleneck and gates every conv and linear weight, so every
model here has the same face: ``features(x) -> (N, bottleneck_dim)``, ``fc`` (also ``head``) the task classifier,
``forward(x) = fc(features(x))``. Module names follow ``VISION_KINDS`` (``masking/module_kinds.py``): every
``Conv2d`` is named ``...conv<k>`` or ``...downsample.0`` and every ``Linear`` ``...fc<k>``, so the kinds ``conv``
and ``linear`` select all of them.

* ``SimpleConvNet``: Bahng et al.'s (ReBias, ICML 2020) net for Biased-MNIST, as in clovaai/rebias
  ``models/mnist_models.py``: 4 x (Conv2d k=7 padding 3 with bias, BatchNorm2d, ReLU) at 16-32-64-128 channels, every
  block ending in ReLU (there is no Tanh), AdaptiveAvgPool2d(1), flatten, ``fc`` Linear(128, classes); convolutions
  initialised Kaiming-normal (fan_out, relu), BatchNorm at weight 1, bias 0. ReBias keeps the blocks in an
  ``nn.Sequential`` called ``extracter`` with numeric names; here its entries are named (``extracter.conv1``,
  ``extracter.bn1``, ...) so that the vision kinds select them — ``from_rebias_state_dict`` renames a ReBias
  checkpoint's keys.
* ``MLP``: the 3 x 100 ReLU MLP of Multi-Color MNIST (Li et al. 2022, used by paper D): ``extracter`` =
  3 x (Linear, ReLU), bottleneck = the last hidden layer (100), ``fc`` Linear(100, classes).
* ``resnet18``: torchvision's ResNet-18 (BasicBlock, [2, 2, 2, 2]) with its parameter names, shapes and
  initialisation, so a torchvision state_dict loads (torchvision itself is not a dependency). ``small_input=True``
  swaps the 7x7 stride-2 stem and max-pool for a 3x3 stride-1 stem without pooling, for 28x28 stand-ins: this
  departs from paper D, which trains ResNet-18 on 224px CelebA (and 32px Corrupted CIFAR-10 with the usual stem).

``save_model`` / ``load_model``: one safetensors file holding every parameter and buffer (BatchNorm running
statistics included) and, in its header metadata, the JSON config (model name, class count, constructor kwargs,
the caller's ``meta``) that rebuilds the architecture — one file, written atomically, so weights and config never
disagree — and its checksum, verified before anything is read from it (maskbench/checkpoint_integrity.py).
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from maskbench.checkpoint_integrity import CheckpointError, seal_safetensors, verify_safetensors
from maskbench.runtime import atomic_path

CONFIG_KEY = "maskbench_model"


def _spec(name: str, num_classes: int, **kwargs: Any) -> dict[str, Any]:
    """The JSON-able config ``build_model`` rebuilds the model from (tuples as lists)."""
    plain = {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    return {"name": name, "num_classes": int(num_classes), "kwargs": plain}


def _init_like_torchvision(model: nn.Module) -> None:
    """Kaiming-normal (fan_out, relu) convolutions, BatchNorm at weight 1 and bias 0 (ReBias and torchvision);
    linear layers keep PyTorch's default initialisation, as in both."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(module, (nn.BatchNorm2d, nn.GroupNorm)):
            nn.init.constant_(module.weight, 1)
            nn.init.constant_(module.bias, 0)


class VisionModel(nn.Module):
    """The common face: ``features`` (bottleneck), ``fc`` (task classifier, also ``head``), ``bottleneck_dim``,
    ``spec`` (the config that rebuilds the model)."""

    fc: nn.Linear
    spec: dict[str, Any]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    @property
    def head(self) -> nn.Linear:
        return self.fc

    @property
    def bottleneck_dim(self) -> int:
        return self.fc.in_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.features(x))


class SimpleConvNet(VisionModel):
    """ReBias' SimpleConvNet for Biased-MNIST (see the module docstring); ``channels`` may differ from
    16-32-64-128 for a model shrunk by ``shrink.py``."""

    def __init__(self, num_classes: int = 10, kernel_size: int = 7, channels: Sequence[int] = (16, 32, 64, 128),
                 in_channels: int = 3):
        super().__init__()
        channels = [int(c) for c in channels]
        if not channels or min(channels) < 1:
            raise ValueError(f"SimpleConvNet: channels must be positive, got {channels}")
        layers: list[tuple[str, nn.Module]] = []
        previous = in_channels
        for i, width in enumerate(channels, start=1):
            layers += [(f"conv{i}", nn.Conv2d(previous, width, kernel_size, padding=kernel_size // 2)),
                       (f"bn{i}", nn.BatchNorm2d(width)),
                       (f"relu{i}", nn.ReLU())]
            previous = width
        self.extracter = nn.Sequential(OrderedDict(layers))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(previous, num_classes)
        _init_like_torchvision(self)
        self.spec = _spec("simple_conv", num_classes, kernel_size=kernel_size, channels=tuple(channels),
                          in_channels=in_channels)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.avgpool(self.extracter(x)), 1)


def from_rebias_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A ReBias ``SimpleConvNet`` state_dict (``extracter.<3i>`` conv, ``extracter.<3i+1>`` BatchNorm) with the
    keys of ``SimpleConvNet`` here (``extracter.conv<i+1>``, ``extracter.bn<i+1>``)."""
    out = {}
    for key, value in state.items():
        parts = key.split(".")
        if parts[0] == "extracter" and parts[1].isdigit():
            block, offset = divmod(int(parts[1]), 3)
            parts[1] = f"{('conv', 'bn')[offset]}{block + 1}"
        out[".".join(parts)] = value
    return out


class MLP(VisionModel):
    """Multi-Color MNIST's MLP: ``layers`` x (Linear, ReLU) of ``hidden`` units, then ``fc``. ``hidden`` may be a
    list of per-layer widths (a model shrunk by ``shrink.py``)."""

    def __init__(self, num_classes: int = 10, in_features: int = 3 * 28 * 28, hidden: int | Sequence[int] = 100,
                 layers: int = 3):
        super().__init__()
        widths = [int(hidden)] * int(layers) if isinstance(hidden, int) else [int(h) for h in hidden]
        if not widths or min(widths) < 1:
            raise ValueError(f"MLP: needs at least one hidden layer of positive width, got {widths}")
        blocks: list[tuple[str, nn.Module]] = []
        previous = in_features
        for i, width in enumerate(widths, start=1):
            blocks += [(f"fc{i}", nn.Linear(previous, width)), (f"relu{i}", nn.ReLU())]
            previous = width
        self.extracter = nn.Sequential(OrderedDict(blocks))
        self.fc = nn.Linear(previous, num_classes)
        hidden_spec: int | tuple[int, ...] = hidden if isinstance(hidden, int) else tuple(widths)
        self.spec = _spec("mlp", num_classes, in_features=in_features, hidden=hidden_spec, layers=len(widths))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.extracter(torch.flatten(x, 1))


def _conv3x3(inplanes: int, planes: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    """torchvision's BasicBlock (conv3x3-BN-ReLU-conv3x3-BN, plus the shortcut, ReLU). ``width`` is the inner
    channel count (``planes`` in torchvision; smaller in a block shrunk by ``shrink.py``)."""

    def __init__(self, inplanes: int, planes: int, stride: int = 1, width: int | None = None):
        super().__init__()
        width = planes if width is None else int(width)
        self.conv1 = _conv3x3(inplanes, width, stride)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU()
        self.conv2 = _conv3x3(width, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample: nn.Sequential | None = None
        if stride != 1 or inplanes != planes:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(planes))
        self.stride = stride

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(VisionModel):
    """torchvision's ``resnet18`` (see the module docstring). ``widths``: the inner width of each of the 8 blocks
    (default: the block's planes; smaller after ``shrink.py``)."""

    PLANES = (64, 128, 256, 512)

    def __init__(self, num_classes: int = 1000, in_channels: int = 3, small_input: bool = False,
                 widths: Sequence[int] | None = None):
        super().__init__()
        block_planes = [p for p in self.PLANES for _ in range(2)]
        widths = block_planes if widths is None else [int(w) for w in widths]
        if len(widths) != 8 or min(widths) < 1:
            raise ValueError(f"resnet18: widths must be 8 positive inner widths, got {widths}")
        if small_input:
            self.conv1 = nn.Conv2d(in_channels, 64, 3, stride=1, padding=1, bias=False)
            self.maxpool: nn.Module = nn.Identity()
        else:
            self.conv1 = nn.Conv2d(in_channels, 64, 7, stride=2, padding=3, bias=False)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        inplanes = 64
        for stage, planes in enumerate(self.PLANES):
            stride = 1 if stage == 0 else 2
            first = BasicBlock(inplanes, planes, stride, widths[2 * stage])
            second = BasicBlock(planes, planes, 1, widths[2 * stage + 1])
            setattr(self, f"layer{stage + 1}", nn.Sequential(first, second))
            inplanes = planes
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        _init_like_torchvision(self)
        kwargs: dict[str, Any] = {"in_channels": in_channels, "small_input": small_input}
        if widths != block_planes:
            kwargs["widths"] = tuple(widths)
        self.spec = _spec("resnet18", num_classes, **kwargs)

    def blocks(self) -> list[tuple[str, BasicBlock]]:
        """The 8 blocks with their module names (``layer1.0`` ... ``layer4.1``)."""
        return [(f"layer{s}.{b}", getattr(self, f"layer{s}")[b]) for s in range(1, 5) for b in range(2)]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return torch.flatten(self.avgpool(x), 1)


def resnet18(num_classes: int = 1000, in_channels: int = 3, small_input: bool = False,
             widths: Sequence[int] | None = None) -> ResNet18:
    return ResNet18(num_classes, in_channels, small_input, widths)


MODELS: dict[str, Callable[..., VisionModel]] = {"simple_conv": SimpleConvNet, "mlp": MLP, "resnet18": resnet18}


def build_model(name: str, num_classes: int, **kwargs: Any) -> VisionModel:
    """A fresh model by name (``MODELS``); kwargs go to its constructor."""
    if name not in MODELS:
        raise ValueError(f"vision model {name!r} is unknown; choose one of {', '.join(sorted(MODELS))}")
    try:
        return MODELS[name](num_classes=num_classes, **kwargs)
    except TypeError as err:
        raise ValueError(f"vision model {name!r}: bad arguments {sorted(kwargs)} ({err})") from err


def save_model(model: VisionModel, path: str | Path, meta: dict[str, Any] | None = None) -> None:
    """Every parameter and buffer in a safetensors file at ``path``, the config that rebuilds the model (and
    ``meta``, e.g. provenance) as JSON in its header; atomic. A model carrying masks is refused: its state_dict
    names differ (detach the masks, keeping the masked values if they are meant to be saved)."""
    from safetensors.torch import save_file

    state = model.state_dict()
    masked = [k for k in state if ".parametrizations." in k]
    if masked:
        raise ValueError(f"save_model: the model carries masks ({masked[0]}, ...); detach them first")
    config = dict(model.spec, meta=meta or {})
    tensors = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata={CONFIG_KEY: json.dumps(config, sort_keys=True)})
        seal_safetensors(tmp)


def read_model_config(path: str | Path, metadata: dict[str, str] | None = None) -> dict[str, Any]:
    """The config ``save_model`` wrote (name, num_classes, kwargs, meta), without reading the tensors (from
    ``metadata``, the file's header metadata, when the caller has read it)."""
    from safetensors import safe_open

    if metadata is None:
        with safe_open(str(path), framework="pt") as handle:
            metadata = handle.metadata() or {}
    if CONFIG_KEY not in metadata:
        raise CheckpointError(f"{path}: not a maskbench vision model (no {CONFIG_KEY!r} in the safetensors header)")
    return json.loads(metadata[CONFIG_KEY])


def load_model(path: str | Path) -> VisionModel:
    """The model ``save_model`` wrote, checked against its checksum, rebuilt from its config, every tensor loaded
    (strict), in eval mode."""
    from safetensors.torch import load_file

    config = read_model_config(path, verify_safetensors(path))
    model = build_model(config["name"], config["num_classes"], **config["kwargs"])
    model.load_state_dict(load_file(str(path)), strict=True)
    return model.eval()
