"""Miniature copies of paper D's user-supplied sources, in the layouts ``configs/paper.yaml`` reads them from.

- ``<root>/data/cifar10c``: Corrupted CIFAR-10 as LfF/DFA distribute it (``vision.datasets.corrupted_cifar10``,
  ``source: local:data/cifar10c``): ``<percent>/{align,conflict}/<class>/<n>_<label>_<bias>.png`` for the percents
  the config's levels name, and ``test/<class>/<n>_<label>_<bias>.png``; 32 x 32 RGB PNGs in the real data.
- ``<root>/data/celeba``: CelebA's official files in the Kaggle CSV layout (``vision.datasets.celeba``,
  ``source: local:data/celeba``): ``list_eval_partition.csv`` (``image_id,partition``), ``list_attr_celeba.csv``
  (``image_id`` and the 40 attributes as -1/1) and ``img_align_celeba/<image_id>`` JPEGs (178 x 218 in the real
  data).

The readers are ``maskbench.tracks.vision.sources.read_cifar10c_folder`` and ``read_celeba_folder``; the pixels
here are random, so only the layouts, labels and bias attributes mean anything.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

CIFAR10C_PERCENTS = ("0.5pct", "1pct", "2pct", "5pct")
CIFAR10C_CLASSES = 10
CIFAR10C_CORRUPTIONS = 10
# the 40 attributes of list_attr_celeba.csv, in the official column order
CELEBA_ATTRIBUTES = (
    "5_o_Clock_Shadow", "Arched_Eyebrows", "Attractive", "Bags_Under_Eyes", "Bald", "Bangs", "Big_Lips", "Big_Nose",
    "Black_Hair", "Blond_Hair", "Blurry", "Brown_Hair", "Bushy_Eyebrows", "Chubby", "Double_Chin", "Eyeglasses",
    "Goatee", "Gray_Hair", "Heavy_Makeup", "High_Cheekbones", "Male", "Mouth_Slightly_Open", "Mustache",
    "Narrow_Eyes", "No_Beard", "Oval_Face", "Pale_Skin", "Pointy_Nose", "Receding_Hairline", "Rosy_Cheeks",
    "Sideburns", "Smiling", "Straight_Hair", "Wavy_Hair", "Wearing_Earrings", "Wearing_Hat", "Wearing_Lipstick",
    "Wearing_Necklace", "Wearing_Necktie", "Young",
)
# the targets of configs/paper.yaml's CelebA levels and the bias attribute paper D's code uses (inverted: female)
CELEBA_TARGETS = ("Blond_Hair", "Eyeglasses")
CELEBA_BIAS = "Male"


def _image_module():
    from PIL import Image

    return Image


def png_bytes(pixels: np.ndarray) -> bytes:
    """uint8 H x W x 3 as a PNG (lossless: the reader gets these pixels back exactly)."""
    buffer = io.BytesIO()
    _image_module().fromarray(np.ascontiguousarray(pixels, dtype=np.uint8), mode="RGB").save(buffer, format="PNG")
    return buffer.getvalue()


def celeba_image_bytes(index: int, height: int = 7, width: int = 6) -> bytes:
    """A JPEG whose colour is a function of ``index`` (red 15 * index, green 200 - 10 * index, blue 90)."""
    pixels = np.zeros((height, width, 3), dtype=np.uint8)
    pixels[..., 0] = (15 * index) % 256
    pixels[..., 1] = (200 - 10 * index) % 256
    pixels[..., 2] = 90
    buffer = io.BytesIO()
    _image_module().fromarray(pixels, mode="RGB").save(buffer, format="JPEG", quality=95)
    return buffer.getvalue()


def write_celeba_files(root: str | Path, rows: Sequence[tuple[int, Mapping[str, int]]],
                       image_bytes: Callable[[int], bytes] = celeba_image_bytes,
                       drop_column: str | None = None) -> list[str]:
    """CelebA's official files under ``root`` for ``rows`` of (partition 0/1/2, {attribute: -1 or 1}); attributes
    not given are -1, ``drop_column`` leaves one out of the attribute file. Image ``i`` is ``{i + 1:06d}.jpg``
    with the bytes ``image_bytes(i)``. Returns the image ids in order."""
    root = Path(root)
    folder = root / "img_align_celeba"
    folder.mkdir(parents=True, exist_ok=True)
    columns = [c for c in CELEBA_ATTRIBUTES if c != drop_column]
    partition_lines, attr_lines, names = ["image_id,partition"], [",".join(["image_id", *columns])], []
    for i, (partition, attributes) in enumerate(rows):
        unknown = sorted(set(attributes) - set(CELEBA_ATTRIBUTES))
        if unknown or partition not in (0, 1, 2) or any(v not in (-1, 1) for v in attributes.values()):
            raise ValueError(f"CelebA row {i}: partition {partition!r} must be 0/1/2 and attributes -1/1 among the "
                             f"40 official ones (unknown: {unknown}, values: {dict(attributes)})")
        name = f"{i + 1:06d}.jpg"
        names.append(name)
        partition_lines.append(f"{name},{partition}")
        attr_lines.append(",".join([name, *(str(int(attributes.get(c, -1))) for c in columns)]))
        (folder / name).write_bytes(image_bytes(i))
    (root / "list_eval_partition.csv").write_text("\n".join(partition_lines) + "\n")
    (root / "list_attr_celeba.csv").write_text("\n".join(attr_lines) + "\n")
    return names


def write_cifar10c_file(path: str | Path, pixels: np.ndarray) -> Path:
    """One Corrupted CIFAR-10 PNG at ``path`` (``<class>/<n>_<label>_<bias>.png``), folders created."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(png_bytes(pixels))
    return path


def write_vision_sources(root: Path, n_per_class: int = 4, size: int = 32, seed: int = 0) -> dict:
    """Miniature Corrupted CIFAR-10 and CelebA under ``root/data/cifar10c`` and ``root/data/celeba``.

    Corrupted CIFAR-10, for every percent of ``CIFAR10C_PERCENTS``: per class ``n_per_class`` bias-aligned images
    (bias = label, as in LfF's data) and ``max(1, n_per_class // 4)`` conflicting ones (bias = label + 1 + k mod
    10); the test folder has ``n_per_class`` per class with biases cycling through all ten. CelebA: for every
    partition and every combination of (Blond_Hair, Eyeglasses, Male), ``n_per_class`` images, so that every
    (target, bias) group of both configured levels is present in every partition (the balanced valid and test
    sets need all four). Images are random ``size`` x ``size`` RGB. Returns the counts written, per folder."""
    if n_per_class < 1 or size < 1:
        raise ValueError(f"n_per_class ({n_per_class}) and size ({size}) must be positive")
    root = Path(root)
    rng = np.random.default_rng(seed)
    cifar_root = root / "data" / "cifar10c"
    conflicting = max(1, n_per_class // 4)

    def pixels() -> np.ndarray:
        return rng.integers(0, 256, (size, size, 3), dtype=np.uint8)

    counter = 0
    percents = {}
    for percent in CIFAR10C_PERCENTS:
        counts = {"align": 0, "conflict": 0}
        for label in range(CIFAR10C_CLASSES):
            for k in range(n_per_class + conflicting):
                kind = "align" if k < n_per_class else "conflict"
                bias = label if kind == "align" else (label + 1 + (k - n_per_class)) % CIFAR10C_CORRUPTIONS
                write_cifar10c_file(cifar_root / percent / kind / str(label) / f"{counter}_{label}_{bias}.png",
                                    pixels())
                counter += 1
                counts[kind] += 1
        percents[percent] = counts
    for label in range(CIFAR10C_CLASSES):
        for k in range(n_per_class):
            bias = (label + k) % CIFAR10C_CORRUPTIONS
            write_cifar10c_file(cifar_root / "test" / str(label) / f"{counter}_{label}_{bias}.png", pixels())
            counter += 1

    rows = []
    for partition in (0, 1, 2):
        for blond in (-1, 1):
            for glasses in (-1, 1):
                for male in (-1, 1):
                    rows += [(partition, {"Blond_Hair": blond, "Eyeglasses": glasses, "Male": male,
                                          "Young": int(rng.choice((-1, 1)))})] * n_per_class
    images = [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in rows]

    def jpeg(i: int) -> bytes:
        buffer = io.BytesIO()
        _image_module().fromarray(images[i], mode="RGB").save(buffer, format="JPEG", quality=95)
        return buffer.getvalue()

    celeba_root = root / "data" / "celeba"
    write_celeba_files(celeba_root, rows, jpeg)
    per_partition = 8 * n_per_class
    return {
        "cifar10c": {"root": str(cifar_root), "percents": percents, "test": CIFAR10C_CLASSES * n_per_class,
                     "size": size},
        "celeba": {"root": str(celeba_root), "partitions": {"train": per_partition, "valid": per_partition,
                                                            "test": per_partition},
                   "targets": list(CELEBA_TARGETS), "bias": CELEBA_BIAS, "size": size},
    }

