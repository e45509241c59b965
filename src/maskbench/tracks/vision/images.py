"""The prepared image format of the vision track (its analogue of the text track's prepared parquet).

One safetensors file per (dataset, split) with the tensors

- ``images`` uint8 N x C x H x W (kept as bytes: a 60,000-digit RGB set is 141 MB, not 4x that as floats),
- ``label``  int64 N, the target class,
- ``bias``   int64 N x B, one column per bias attribute (B >= 1; Multi-Color MNIST has two),
- ``id``     int64 N, unique, the sample's index in its source (kept through every subset and split),

and string metadata ``format``, ``label_names``, ``bias_names``, ``bias_classes`` (JSON), ``dataset``,
``split``, ``provenance`` (JSON) and ``sha256``. The checksum covers the other metadata and every tensor's name,
dtype, shape and bytes, so a flipped bit anywhere is found on reading, not as a strange accuracy later.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

from maskbench.runtime import atomic_path
from maskbench.tracks.vision.mnist_wheel import VisionDataError

FORMAT = "maskbench-images/1"
TENSOR_DTYPES = {"images": np.uint8, "label": np.int64, "bias": np.int64, "id": np.int64}
METADATA_KEYS = ("format", "label_names", "bias_names", "bias_classes", "dataset", "split", "provenance")


@dataclass
class ImageSet:
    """Images with their target, bias attributes and ids, as held in memory (uint8, normalised on the fly)."""

    images: np.ndarray
    label: np.ndarray
    bias: np.ndarray
    ids: np.ndarray
    label_names: list[str]
    bias_names: list[str]
    bias_classes: list[int]
    dataset: str
    split: str
    provenance: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.label.shape[0])

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def subset(self, rows: np.ndarray, split: str | None = None) -> ImageSet:
        """The given rows (ids travel with them), optionally under a new split name."""
        rows = np.asarray(rows, dtype=np.int64)
        return ImageSet(self.images[rows], self.label[rows], self.bias[rows], self.ids[rows], list(self.label_names),
                        list(self.bias_names), list(self.bias_classes), self.dataset, split or self.split,
                        dict(self.provenance))


def _fail(where: str, name: str, message: str) -> VisionDataError:
    return VisionDataError(f"{where}: field '{name}': {message}")


def validate(imageset: ImageSet, where: str) -> None:
    """Refuse an ImageSet whose arrays disagree with the format; every message names ``where`` and the field."""
    tensors = {"images": imageset.images, "label": imageset.label, "bias": imageset.bias, "id": imageset.ids}
    for name, dtype in TENSOR_DTYPES.items():
        value = tensors[name]
        if not isinstance(value, np.ndarray):
            raise _fail(where, name, f"value of type {type(value).__name__} is not a numpy array")
        if value.dtype != dtype:
            raise _fail(where, name, f"value has dtype {value.dtype}, expected {np.dtype(dtype)}")
    n = imageset.label.shape[0] if imageset.label.ndim == 1 else -1
    if imageset.label.ndim != 1:
        raise _fail(where, "label", f"value has shape {imageset.label.shape}, expected (N,)")
    if imageset.images.ndim != 4 or imageset.images.shape[0] != n:
        raise _fail(where, "images", f"value has shape {imageset.images.shape}, expected ({n}, C, H, W)")
    b = len(imageset.bias_names)
    if b < 1 or len(imageset.bias_classes) != b:
        raise _fail(where, "bias_names", f"value {imageset.bias_names} needs >= 1 name and one class count each "
                                         f"(bias_classes {imageset.bias_classes})")
    if imageset.bias.shape != (n, b):
        raise _fail(where, "bias", f"value has shape {imageset.bias.shape}, expected ({n}, {b})")
    if imageset.ids.shape != (n,):
        raise _fail(where, "id", f"value has shape {imageset.ids.shape}, expected ({n},)")
    k = len(imageset.label_names)
    if n and (imageset.label.min() < 0 or imageset.label.max() >= k):
        bad = int(imageset.label[(imageset.label < 0) | (imageset.label >= k)][0])
        raise _fail(where, "label", f"value {bad} is outside 0..{k - 1}")
    for column, (name, classes) in enumerate(zip(imageset.bias_names, imageset.bias_classes, strict=True)):
        if int(classes) < 1:
            raise _fail(where, "bias_classes", f"value {classes} for '{name}' is not a positive count")
        values = imageset.bias[:, column]
        if n and (values.min() < 0 or values.max() >= classes):
            bad = int(values[(values < 0) | (values >= classes)][0])
            raise _fail(where, f"bias[{name}]", f"value {bad} is outside 0..{classes - 1}")
    unique, counts = np.unique(imageset.ids, return_counts=True)
    if (counts > 1).any():
        raise _fail(where, "id", f"value {int(unique[counts > 1][0])} occurs {int(counts.max())} times")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _checksum(metadata: dict[str, str], tensors: dict[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    digest.update(_canonical({k: v for k, v in metadata.items() if k != "sha256"}).encode())
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        digest.update(_canonical([name, array.dtype.str, list(array.shape)]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _to_file(imageset: ImageSet) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    tensors = {"images": np.ascontiguousarray(imageset.images), "label": np.ascontiguousarray(imageset.label),
               "bias": np.ascontiguousarray(imageset.bias), "id": np.ascontiguousarray(imageset.ids)}
    metadata = {
        "format": FORMAT,
        "label_names": _canonical(list(imageset.label_names)),
        "bias_names": _canonical(list(imageset.bias_names)),
        "bias_classes": _canonical([int(c) for c in imageset.bias_classes]),
        "dataset": imageset.dataset,
        "split": imageset.split,
        "provenance": _canonical(imageset.provenance),
    }
    metadata["sha256"] = _checksum(metadata, tensors)
    return tensors, metadata


def write_images(path: str | Path, imageset: ImageSet) -> str:
    """Validate and write atomically; returns the content checksum recorded in the file."""
    from safetensors.numpy import save_file

    validate(imageset, str(path))
    tensors, metadata = _to_file(imageset)
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
    return metadata["sha256"]


def _json_field(where: str, metadata: dict[str, str], key: str, kind: type):
    try:
        value = json.loads(metadata[key])
    except (KeyError, json.JSONDecodeError) as err:
        raise _fail(where, key, f"value {metadata.get(key)!r} is missing or not JSON") from err
    if not isinstance(value, kind):
        raise _fail(where, key, f"value {value!r} is not a JSON {kind.__name__}")
    return value


def read_images(path: str | Path) -> ImageSet:
    """Read and check a prepared image file: format, checksum, dtypes, shapes, label and bias ranges, unique ids."""
    from safetensors import safe_open

    where = str(path)
    if not Path(path).is_file():
        raise VisionDataError(f"{where}: the prepared image file does not exist")
    try:
        with safe_open(where, framework="np") as handle:
            metadata = dict(handle.metadata() or {})
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types for damaged headers and data
        raise VisionDataError(f"{where}: not a readable safetensors file ({type(err).__name__}: {err})") from err
    if metadata.get("format") != FORMAT:
        raise _fail(where, "format", f"value {metadata.get('format')!r}, expected {FORMAT!r}")
    missing = sorted(set(TENSOR_DTYPES) - set(tensors))
    if missing:
        raise _fail(where, missing[0], "is missing")
    missing_meta = [key for key in (*METADATA_KEYS, "sha256") if key not in metadata]
    if missing_meta:
        raise _fail(where, missing_meta[0], "is missing")
    found = _checksum(metadata, tensors)
    if found != metadata["sha256"]:
        raise _fail(where, "sha256", f"value {metadata['sha256']} recorded, but the content hashes to {found} "
                                     f"(the file was changed or damaged after writing)")
    imageset = ImageSet(
        images=tensors["images"], label=tensors["label"], bias=tensors["bias"], ids=tensors["id"],
        label_names=_json_field(where, metadata, "label_names", list),
        bias_names=_json_field(where, metadata, "bias_names", list),
        bias_classes=_json_field(where, metadata, "bias_classes", list),
        dataset=metadata["dataset"], split=metadata["split"],
        provenance=_json_field(where, metadata, "provenance", dict),
    )
    validate(imageset, where)
    return imageset


class ImageDataset(Dataset):
    """Items {"image": float32 C x H x W, "label", "bias" (B-vector), "index"} over an ImageSet.

    Normalisation ((x/255 - mean) / std per channel) happens per item so that memory holds uint8 only; paper D
    normalises MNIST variants with mean = std = 0.5 (``transforms.Normalize((0.5,)*3, (0.5,)*3)``)."""

    def __init__(self, imageset: ImageSet, mean: float | tuple[float, ...] = 0.5, std: float | tuple[float, ...] = 0.5):
        self.imageset = imageset
        channels = imageset.images.shape[1]
        self.mean = torch.as_tensor(np.broadcast_to(np.asarray(mean, np.float32), (channels,)).copy()).view(-1, 1, 1)
        self.std = torch.as_tensor(np.broadcast_to(np.asarray(std, np.float32), (channels,)).copy()).view(-1, 1, 1)
        if (self.std <= 0).any():
            raise ValueError(f"std must be positive, got {std}")

    def __len__(self) -> int:
        return len(self.imageset)

    def __getitem__(self, i: int) -> dict[str, Any]:
        pixels = torch.from_numpy(self.imageset.images[i].astype(np.float32) / np.float32(255.0))
        return {
            "image": (pixels - self.mean) / self.std,
            "label": torch.tensor(int(self.imageset.label[i]), dtype=torch.long),
            "bias": torch.from_numpy(self.imageset.bias[i].copy()),
            "index": int(i),
        }

    def __getitems__(self, indices: list[int]) -> dict[str, torch.Tensor]:
        """A whole batch at once (torch's DataLoader calls this when it exists): the same tensors ``collate`` would
        stack from ``__getitem__``, element for element, without a Python step per image."""
        index = np.asarray(indices, dtype=np.int64)
        pixels = torch.from_numpy(self.imageset.images[index].astype(np.float32) / np.float32(255.0))
        return {
            "image": (pixels - self.mean) / self.std,
            "label": torch.from_numpy(np.asarray(self.imageset.label[index], dtype=np.int64)),
            "bias": torch.from_numpy(self.imageset.bias[index].copy()),
            "index": torch.from_numpy(index.copy()),
        }

    def collate(self, items: list[dict[str, Any]] | dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if isinstance(items, dict):  # already a batch (``__getitems__``)
            return items
        return {
            "image": torch.stack([item["image"] for item in items]),
            "label": torch.stack([item["label"] for item in items]),
            "bias": torch.stack([item["bias"] for item in items]),
            "index": torch.tensor([item["index"] for item in items], dtype=torch.long),
        }
