"""Prepared image files are written, hashed and read a chunk of rows at a time (paper D's CelebA train split at
224 px is 24.5 GB): the digest and the file bytes are those of the whole-array code, and the memory of a prepare +
read + hash + one pass over batches stays far below the file's size."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL.Image")

from maskbench.tracks.vision import images as images_mod  # noqa: E402
from maskbench.tracks.vision.images import FileImages, ImageSet, read_images, write_images  # noqa: E402

SRC = Path(images_mod.__file__).resolve().parents[3]


def small_set(n: int = 6) -> ImageSet:
    pixels = (np.arange(n * 3 * 2 * 2) % 251).astype(np.uint8).reshape(n, 3, 2, 2)
    return ImageSet(images=pixels, label=np.arange(n) % 2, bias=(np.arange(n) % 3).reshape(-1, 1),
                    ids=np.arange(10, 10 + n), label_names=["a", "b"], bias_names=["c"], bias_classes=[3],
                    dataset="toy", split="train", provenance={"seed": 1})


def old_digest(metadata: dict, tensors: dict) -> str:
    """The checksum as the whole-array code computed it: every tensor's tobytes() in one piece."""
    def canonical(value):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)

    digest = hashlib.sha256()
    digest.update(canonical({k: v for k, v in metadata.items() if k != "sha256"}).encode())
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        digest.update(canonical([name, array.dtype.str, list(array.shape)]).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def test_chunked_digest_equals_the_whole_array_digest(tmp_path, monkeypatch):
    monkeypatch.setattr(images_mod, "CHUNK_BYTES", 7)  # 12-byte rows, 8-byte ints: every tensor split unevenly
    imageset = small_set()
    tensors, metadata = images_mod._to_file(imageset)
    assert metadata["sha256"] == old_digest(metadata, tensors)
    written = write_images(tmp_path / "x.safetensors", imageset)
    assert written == metadata["sha256"]
    back = read_images(tmp_path / "x.safetensors")  # re-hashed from the file in 7-byte chunks
    assert isinstance(back.images, FileImages)
    assert images_mod._checksum(metadata, {"images": back.images, "label": back.label, "bias": back.bias,
                                           "id": back.ids}) == written


def test_streamed_file_is_the_file_save_file_writes(tmp_path, monkeypatch):
    from safetensors.numpy import save_file

    monkeypatch.setattr(images_mod, "CHUNK_BYTES", 25)  # two rows a chunk
    imageset = small_set(5)
    tensors, metadata = images_mod._to_file(imageset)
    save_file(tensors, str(tmp_path / "old.safetensors"), metadata=metadata)
    write_images(tmp_path / "new.safetensors", imageset)
    old, new = (tmp_path / "old.safetensors").read_bytes(), (tmp_path / "new.safetensors").read_bytes()

    def split(data: bytes) -> tuple[dict, bytes]:  # (header JSON, data buffer); save_file's metadata key order varies
        length = int.from_bytes(data[:8], "little")
        return json.loads(data[8:8 + length]), data[8 + length:]

    assert len(old) == len(new) and split(new) == split(old)
    assert split(new)[1][-60:] == imageset.images.tobytes()  # the images come last, as save_file puts them


def test_file_images_index_like_the_array_they_hold(tmp_path):
    rng = np.random.default_rng(0)
    imageset = small_set(9)
    imageset.images = rng.integers(0, 256, (9, 3, 4, 5), dtype=np.uint8)
    write_images(tmp_path / "x.safetensors", imageset)
    back = read_images(tmp_path / "x.safetensors")
    images, original = back.images, imageset.images
    assert images.shape == (9, 3, 4, 5) and images.dtype == np.uint8 and len(images) == 9
    assert np.array_equal(images[4], original[4]) and np.array_equal(images[-1], original[8])
    assert np.array_equal(images[2:7:2], original[2:7:2])
    rows = np.array([8, 0, 3, 4, 5, 1])  # a run (3, 4, 5) read at once, others alone, order kept
    assert np.array_equal(images[rows], original[rows])
    mask = np.arange(9) % 4 == 1
    assert np.array_equal(images[mask], original[mask])
    assert np.array_equal(images[3, 1], original[3, 1]) and np.array_equal(images[:, 2], original[:, 2])
    part = back.subset(np.array([7, 2, 5]))
    assert np.array_equal(np.asarray(part.images), original[[7, 2, 5]])
    assert np.array_equal(part.images[[2, 0]], original[[5, 7]])
    with pytest.raises(IndexError, match="row 9 is out of range for 9 rows"):
        images[np.array([1, 9])]


def test_celeba_train_split_is_decoded_when_written(tmp_path):
    from maskbench.miniature.vision_sources import write_celeba_files
    from maskbench.tracks.vision.sources import DecodedImages, read_celeba_folder

    rows = [(p, {"Blond_Hair": b, "Male": m}) for p in (0, 1, 2) for b in (-1, 1) for m in (-1, 1)]
    write_celeba_files(tmp_path, rows)
    out = read_celeba_folder(tmp_path, image_size=5)
    assert isinstance(out["train"].images, DecodedImages) and out["train"].images.shape == (4, 3, 5, 5)
    write_images(tmp_path / "train.safetensors", out["train"])
    back = read_images(tmp_path / "train.safetensors")
    # the fixture's image i is red 15 i, green 200 - 10 i, blue 90 (JPEG: within a few levels)
    means = np.asarray(back.images).reshape(4, 3, -1).mean(axis=2)
    expected = np.array([[15 * i, 200 - 10 * i, 90] for i in range(4)])
    assert np.abs(means - expected).max() < 6


MEASURE = textwrap.dedent('''
    import resource, sys
    from pathlib import Path
    import numpy as np, pandas, torch, PIL.Image  # noqa: F401 - the baseline includes what the steps import
    from maskbench.tracks.vision.data import image_dataset, loader
    from maskbench.tracks.vision.images import read_images, write_images
    from maskbench.tracks.vision.sources import read_celeba_folder
    root, out = Path(sys.argv[1]), Path(sys.argv[2])
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    splits = read_celeba_folder(root, image_size=int(sys.argv[3]))
    write_images(out, splits["train"])
    back = read_images(out)
    seen = 0
    for batch in loader(image_dataset(back, {}), 32):
        seen += int(batch["image"].shape[0])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(baseline * 1024, peak * 1024, seen, out.stat().st_size)
''')


def test_prepare_read_hash_and_an_epoch_of_celeba_stay_far_below_the_file_size(tmp_path):
    from maskbench.miniature.vision_sources import celeba_image_bytes, write_celeba_files

    n_train, side = 1300, 224  # 1,300 images of CelebA's layout at 224 px: a 196 MB train split
    tiny = [celeba_image_bytes(i) for i in range(16)]
    rows = [(0, {"Blond_Hair": 1 if i % 2 else -1, "Male": 1 if i % 3 else -1}) for i in range(n_train)]
    rows += [(p, {"Blond_Hair": b, "Male": m}) for p in (1, 2) for b in (-1, 1) for m in (-1, 1)]
    write_celeba_files(tmp_path / "celeba", rows, image_bytes=lambda i: tiny[i % 16])
    # glibc keeps freed blocks below its (self-raising) mmap threshold in the heap: a plateau of ~150 MB over an
    # epoch of 19 MB float batches, whatever the file's size; a fixed 1 MB threshold measures what is live
    env = {**os.environ, "PYTHONPATH": str(SRC), "MALLOC_MMAP_THRESHOLD_": str(1 << 20)}
    done = subprocess.run([sys.executable, "-c", MEASURE, str(tmp_path / "celeba"), str(tmp_path / "train.st"),
                           str(side)], capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    baseline, peak, seen, size = (int(v) for v in done.stdout.split())
    assert seen == n_train and size > n_train * 3 * side * side
    # the whole-array code held the split twice (decoded array + tobytes() copy; tensor + tobytes() on reading)
    assert peak - baseline < 0.5 * size, (baseline, peak, size)


def test_an_empty_split_is_written_and_read_back_as_save_file_would(tmp_path):
    """A split with no images (Corrupted CIFAR-10 has no unbiased training split) writes the same header and an
    empty data buffer as ``save_file``, and reads back empty (the paper miniature found the write refused)."""
    from safetensors.numpy import save_file

    imageset = small_set(0)
    tensors, metadata = images_mod._to_file(imageset)
    save_file(tensors, str(tmp_path / "old.safetensors"), metadata=metadata)
    write_images(tmp_path / "new.safetensors", imageset)
    old, new = (tmp_path / "old.safetensors").read_bytes(), (tmp_path / "new.safetensors").read_bytes()
    header = int.from_bytes(new[:8], "little")
    assert len(old) == len(new) == 8 + header
    back = read_images(tmp_path / "new.safetensors")
    assert back.images.shape == (0, *imageset.images.shape[1:]) and len(back.label) == 0


def test_preparation_refuses_a_split_left_without_images_naming_it():
    """A source too small for paper D's splits (the miniature's first Corrupted CIFAR-10 had no bias-aligned image
    in its test part) stops preparation, naming the split, instead of the evaluation after training."""
    from maskbench.steps.vision.prepare import SPLITS, refuse_empty_splits
    from maskbench.tracks.vision.mnist_wheel import VisionDataError

    splits = {name: small_set(4) for name in SPLITS}
    refuse_empty_splits(splits, "local:data/cifar10c (corrupted_cifar10, level 0.95)")
    splits["biased_test"] = small_set(0)
    with pytest.raises(VisionDataError, match=r"^local:data/cifar10c \(corrupted_cifar10, level 0.95\): field "
                                              r"'biased_test' has 0 images \(the test images whose bias"):
        refuse_empty_splits(splits, "local:data/cifar10c (corrupted_cifar10, level 0.95)")
