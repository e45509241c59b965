"""The prepared image format of the vision track (its analogue of the text track's prepared parquet).

One safetensors file per (dataset, split) with the tensors

- ``images`` uint8 N x C x H x W (kept as bytes: a 60,000-digit RGB set is 141 MB, not 4x that as floats),
- ``label``  int64 N, the target class,
- ``bias``   int64 N x B, one column per bias attribute (B >= 1; Multi-Color MNIST has two),
- ``id``     int64 N, unique, the sample's index in its source (kept through every subset and split),

and string metadata ``format``, ``label_names``, ``bias_names``, ``bias_classes`` (JSON), ``dataset``,
``split``, ``provenance`` (JSON) and ``sha256``. The checksum covers the other metadata and every tensor's name,
dtype, shape and bytes, so a flipped bit anywhere is found on reading, not as a strange accuracy later.

Paper D's CelebA train split at 224 px is 24.5 GB of uint8, so the images never have to be in memory at once:
``write_images`` writes the file itself (the header and data buffer ``safetensors.numpy.save_file`` writes, but
for the order of the metadata keys, which save_file leaves to a hash map) a chunk of rows at a time, from an array or from any ``ImageRows`` (rows decoded on demand), and ``read_images`` returns the
images as ``FileImages``, rows read from the file when indexed (a batch at a time). Both hash in chunks: the
digest is the one the whole-array hash gave, so files written before stay valid.
"""

from __future__ import annotations

import hashlib
import json
import struct
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
# safetensors' order of the tensors in the data buffer (dtype, the larger enum first, then name) and its dtype names,
# so that the streamed writer's data buffer is the one save_file writes
FILE_ORDER = ("bias", "id", "label", "images")
SAFETENSORS_DTYPES = {np.dtype(np.uint8): "U8", np.dtype(np.int64): "I64"}
# bytes of images read, decoded, hashed or written at a time: bounds the memory of every pass over a split
CHUNK_BYTES = 16 << 20


class ImageRows:
    """uint8 N x C x H x W images that are not held in memory: rows are produced when indexed.

    Indexing follows numpy for the first axis (an int gives one C x H x W image, a slice, an int or bool array a
    k x C x H x W array, always a new ndarray); ``take`` gives a lazy subset, ``chunks`` consecutive rows a bounded
    number of bytes at a time, ``np.asarray`` every row (only for sets known to be small)."""

    dtype = np.dtype(np.uint8)
    shape: tuple[int, ...]

    def rows(self, index: np.ndarray) -> np.ndarray:
        """The given rows (int64, in range, any order) as a new uint8 array."""
        raise NotImplementedError

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return int(self.shape[0])

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64))

    def _index(self, key) -> np.ndarray:
        n = len(self)
        if isinstance(key, slice):
            return np.arange(*key.indices(n), dtype=np.int64)
        index = np.asarray(key)
        if index.dtype == bool:
            if index.shape != (n,):
                raise IndexError(f"boolean index of shape {index.shape} for {n} rows")
            return np.flatnonzero(index).astype(np.int64)
        if not np.issubdtype(index.dtype, np.integer) and index.size:
            raise IndexError(f"rows must be integers, a slice or a boolean mask, got {index.dtype}")
        index = index.astype(np.int64).reshape(-1)
        index = np.where(index < 0, index + n, index)
        if index.size and (index.min() < 0 or index.max() >= n):
            bad = int(index[(index < 0) | (index >= n)][0])
            raise IndexError(f"row {bad} is out of range for {n} rows")
        return index

    def __getitem__(self, key):
        if isinstance(key, tuple):
            head, rest = (key[0] if key else slice(None)), key[1:]
            picked = self[head]
            return picked[rest] if isinstance(head, (int, np.integer)) else picked[(slice(None), *rest)]
        if isinstance(key, (int, np.integer)):
            return self.rows(self._index(np.asarray([key])))[0]
        out = self.rows(self._index(key))
        if not isinstance(key, slice) and np.ndim(key) > 1 and np.asarray(key).dtype != bool:
            out = out.reshape(*np.shape(key), *self.shape[1:])
        return out

    def take(self, rows) -> RowView:
        return RowView(self, self._index(rows))

    def chunks(self, chunk_bytes: int = CHUNK_BYTES):
        """Consecutive rows, at most ``chunk_bytes`` (and at least one row) at a time, in order."""
        step = max(1, chunk_bytes // max(1, self.row_bytes))
        for start in range(0, len(self), step):
            yield self.rows(np.arange(start, min(start + step, len(self)), dtype=np.int64))

    def __array__(self, dtype=None, copy=None):
        out = self.rows(np.arange(len(self), dtype=np.int64))
        return out if dtype is None else out.astype(dtype)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(shape={self.shape})"


class RowView(ImageRows):
    """Some rows of another ``ImageRows`` (a subset keeps its images where they are)."""

    def __init__(self, base: ImageRows, index: np.ndarray):
        self.base, self.index = base, np.asarray(index, dtype=np.int64)
        self.shape = (len(self.index), *base.shape[1:])

    def rows(self, index: np.ndarray) -> np.ndarray:
        return self.base.rows(self.index[index])

    def take(self, rows) -> RowView:
        return RowView(self.base, self.index[self._index(rows)])


class FileImages(ImageRows):
    """The images tensor of a prepared file, read from disk when indexed (runs of consecutive rows in one read).

    Reads go through the page cache, not a memory map, so the process's own memory holds only the rows asked for;
    only the path travels when a DataLoader worker is forked or spawned."""

    def __init__(self, path: str | Path, offset: int, shape: tuple[int, ...]):
        self.path, self.offset, self.shape = str(path), int(offset), tuple(int(d) for d in shape)

    def rows(self, index: np.ndarray) -> np.ndarray:
        index = np.asarray(index, dtype=np.int64)
        out = np.empty((len(index), *self.shape[1:]), dtype=np.uint8)
        if not len(index):
            return out
        size = self.row_bytes
        flat = out.reshape(len(index), size)
        breaks = np.flatnonzero(np.diff(index) != 1) + 1
        with open(self.path, "rb", buffering=0) as handle:
            for a, b in zip(np.r_[0, breaks], np.r_[breaks, len(index)], strict=True):
                handle.seek(self.offset + int(index[a]) * size)
                view = _byte_view(flat[a:b])
                got = handle.readinto(view)
                while got and got < len(view):  # readinto may return fewer bytes than asked before the end
                    more = handle.readinto(view[got:])
                    if not more:
                        break
                    got += more
                if got != len(view):
                    raise VisionDataError(f"{self.path}: field 'images': rows {int(index[a])}..{int(index[b - 1])} "
                                          f"end past the end of the file (truncated after it was opened?)")
        return out


@dataclass
class ImageSet:
    """Images with their target, bias attributes and ids, as held in memory (uint8, normalised on the fly)."""

    images: np.ndarray | ImageRows
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
        images = self.images.take(rows) if isinstance(self.images, ImageRows) else self.images[rows]
        return ImageSet(images, self.label[rows], self.bias[rows], self.ids[rows], list(self.label_names),
                        list(self.bias_names), list(self.bias_classes), self.dataset, split or self.split,
                        dict(self.provenance))


def _fail(where: str, name: str, message: str) -> VisionDataError:
    return VisionDataError(f"{where}: field '{name}': {message}")


def validate(imageset: ImageSet, where: str) -> None:
    """Refuse an ImageSet whose arrays disagree with the format; every message names ``where`` and the field."""
    tensors = {"images": imageset.images, "label": imageset.label, "bias": imageset.bias, "id": imageset.ids}
    for name, dtype in TENSOR_DTYPES.items():
        value = tensors[name]
        if not isinstance(value, np.ndarray) and not (name == "images" and isinstance(value, ImageRows)):
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


def _byte_view(array: np.ndarray) -> memoryview:
    """An array's C-order bytes as a flat memoryview, without a copy; an empty array (a split with no images, or
    no bias columns) gives an empty view — ``memoryview(...).cast("B")`` refuses a shape with a zero in it."""
    return memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def _update(digest, array) -> None:
    """Feed an array's C-order bytes to ``digest`` at most CHUNK_BYTES at a time (what ``tobytes()`` would give in
    one piece, without the copy); an ``ImageRows`` is fed a chunk of rows at a time."""
    if isinstance(array, ImageRows):
        for chunk in array.chunks():
            digest.update(_byte_view(chunk))
        return
    flat = _byte_view(array)
    for start in range(0, len(flat), CHUNK_BYTES):
        digest.update(flat[start:start + CHUNK_BYTES])


def _row_chunks(images):
    """Consecutive rows of an array or ``ImageRows``, about CHUNK_BYTES at a time."""
    if isinstance(images, ImageRows):
        yield from images.chunks()
        return
    step = max(1, CHUNK_BYTES // max(1, int(np.prod(images.shape[1:], dtype=np.int64)) * images.dtype.itemsize))
    for start in range(0, len(images), step):
        yield images[start:start + step]


def _describe(name: str, array) -> bytes:
    return _canonical([name, array.dtype.str, [int(d) for d in array.shape]]).encode()


def _checksum(metadata: dict[str, str], tensors: dict[str, np.ndarray | ImageRows]) -> str:
    digest = hashlib.sha256()
    digest.update(_canonical({k: v for k, v in metadata.items() if k != "sha256"}).encode())
    for name in sorted(tensors):
        digest.update(_describe(name, tensors[name]))
        _update(digest, tensors[name])
    return digest.hexdigest()


def _metadata(imageset: ImageSet) -> dict[str, str]:
    return {
        "format": FORMAT,
        "label_names": _canonical(list(imageset.label_names)),
        "bias_names": _canonical(list(imageset.bias_names)),
        "bias_classes": _canonical([int(c) for c in imageset.bias_classes]),
        "dataset": imageset.dataset,
        "split": imageset.split,
        "provenance": _canonical(imageset.provenance),
    }


def _to_file(imageset: ImageSet) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """The tensors and metadata ``save_file`` would be given (all in memory: for small sets and tests)."""
    tensors = {"images": np.ascontiguousarray(np.asarray(imageset.images)),
               "label": np.ascontiguousarray(imageset.label),
               "bias": np.ascontiguousarray(imageset.bias), "id": np.ascontiguousarray(imageset.ids)}
    metadata = _metadata(imageset)
    metadata["sha256"] = _checksum(metadata, tensors)
    return tensors, metadata


def _header(metadata: dict[str, str], tensors: dict) -> tuple[bytes, dict[str, int]]:
    """safetensors' header (little-endian u64 length, compact JSON padded with spaces to 8 bytes) and each
    tensor's offset in the data buffer."""
    entries, offsets, at = {"__metadata__": metadata}, {}, 0
    for name in FILE_ORDER:
        array = tensors[name]
        size = int(np.prod(array.shape, dtype=np.int64)) * array.dtype.itemsize
        entries[name] = {"dtype": SAFETENSORS_DTYPES[np.dtype(array.dtype)], "shape": [int(d) for d in array.shape],
                         "data_offsets": [at, at + size]}
        offsets[name] = at
        at += size
    text = json.dumps(entries, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, offsets


def write_images(path: str | Path, imageset: ImageSet) -> str:
    """Validate and write atomically, a chunk of image rows at a time; returns the content checksum in the file.

    The header is written first with a placeholder checksum of the same length, the data follow (hashed as they
    are written, in the checksum's tensor order), and the header is rewritten with the checksum at the end."""
    validate(imageset, str(path))
    small = {"label": np.ascontiguousarray(imageset.label, dtype="<i8"),
             "bias": np.ascontiguousarray(imageset.bias, dtype="<i8"),
             "id": np.ascontiguousarray(imageset.ids, dtype="<i8")}
    images = imageset.images if isinstance(imageset.images, ImageRows) else np.ascontiguousarray(imageset.images)
    tensors = {**small, "images": images}
    metadata = {**_metadata(imageset), "sha256": "0" * 64}
    header, _ = _header(metadata, tensors)
    digest = hashlib.sha256()
    digest.update(_canonical({k: v for k, v in metadata.items() if k != "sha256"}).encode())
    pixels = int(np.prod(images.shape, dtype=np.int64)) * images.dtype.itemsize
    size = len(header) + sum(v.nbytes for v in small.values()) + pixels
    with atomic_path(path, size=size) as tmp, open(tmp, "wb") as handle:
        handle.write(header)
        for name in ("bias", "id", "label"):
            handle.write(_byte_view(small[name]))
        for name in ("bias", "id"):  # sorted names: bias, id, images, label
            digest.update(_describe(name, small[name]))
            _update(digest, small[name])
        digest.update(_describe("images", images))
        for chunk in _row_chunks(images):
            if chunk.shape[1:] != tuple(images.shape[1:]) or chunk.dtype != np.uint8:
                raise _fail(str(path), "images", f"a chunk of rows came as {chunk.dtype} {chunk.shape[1:]}, "
                                                 f"expected uint8 {tuple(images.shape[1:])}")
            view = _byte_view(chunk)
            handle.write(view)
            digest.update(view)
        digest.update(_describe("label", small["label"]))
        _update(digest, small["label"])
        metadata["sha256"] = digest.hexdigest()
        final, _ = _header(metadata, tensors)
        if len(final) != len(header):
            raise AssertionError("the header changed length when the checksum was filled in")
        handle.seek(0)
        handle.write(final)
    return metadata["sha256"]


def _json_field(where: str, metadata: dict[str, str], key: str, kind: type):
    try:
        value = json.loads(metadata[key])
    except (KeyError, json.JSONDecodeError) as err:
        raise _fail(where, key, f"value {metadata.get(key)!r} is missing or not JSON") from err
    if not isinstance(value, kind):
        raise _fail(where, key, f"value {value!r} is not a JSON {kind.__name__}")
    return value


def _images_entry(where: str) -> tuple[int, tuple[int, ...], str]:
    """Where the images tensor's bytes start in the file, its shape and its safetensors dtype (the header was
    checked by safe_open)."""
    with open(where, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    entry = header["images"]
    return 8 + length + int(entry["data_offsets"][0]), tuple(int(d) for d in entry["shape"]), str(entry["dtype"])


def read_images(path: str | Path, check_sha256: bool = True) -> ImageSet:
    """Read and check a prepared image file: format, checksum, dtypes, shapes, label and bias ranges, unique ids.

    The images stay on disk (``FileImages``: read a batch at a time); the checksum reads them once, a chunk at a
    time. ``check_sha256=False`` skips that pass, for a reader that shows a few rows of a file that the jobs
    which trained on it have checked (the report's sample figure)."""
    from safetensors import safe_open

    where = str(path)
    if not Path(path).is_file():
        raise VisionDataError(f"{where}: the prepared image file does not exist")
    try:
        with safe_open(where, framework="np") as handle:
            metadata = dict(handle.metadata() or {})
            names = set(handle.keys())
            tensors = {name: handle.get_tensor(name) for name in names if name != "images"}
        images_dtype = None
        if "images" in names:
            offset, shape, images_dtype = _images_entry(where)
            tensors["images"] = FileImages(where, offset, shape)
    except Exception as err:  # noqa: BLE001 - safetensors raises its own error types for damaged headers and data
        raise VisionDataError(f"{where}: not a readable safetensors file ({type(err).__name__}: {err})") from err
    if metadata.get("format") != FORMAT:
        raise _fail(where, "format", f"value {metadata.get('format')!r}, expected {FORMAT!r}")
    missing = sorted(set(TENSOR_DTYPES) - set(tensors))
    if missing:
        raise _fail(where, missing[0], "is missing")
    if images_dtype != "U8":
        raise _fail(where, "images", f"value has dtype {images_dtype} (safetensors), expected U8 (uint8)")
    missing_meta = [key for key in (*METADATA_KEYS, "sha256") if key not in metadata]
    if missing_meta:
        raise _fail(where, missing_meta[0], "is missing")
    if check_sha256:
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
        # one float32 batch, normalised in place (the same float32 operations as ``__getitem__``, so the same
        # bits): temporaries of a 224-px batch are 19 MB each, and the allocator keeps what they fragment
        pixels = torch.from_numpy(np.asarray(self.imageset.images[index])).to(torch.float32)
        pixels.div_(255.0).sub_(self.mean).div_(self.std)
        return {
            "image": pixels,
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
