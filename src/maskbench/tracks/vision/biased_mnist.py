"""Biased datasets built on the real MNIST digits: paper D's Biased-MNIST and Multi-Color MNIST, and offline
stand-ins for its Corrupted CIFAR-10 and CelebA.

Every generator is deterministic for its seed (explicitly seeded numpy generators, never the global state), keeps
each digit's source index as its ``id``, and returns an ``ImageSet`` (uint8 RGB, N x 3 x 28 x 28) whose bias
columns say which colour or corruption each image got, so that FFW's gates can be trained on bias labels and the
evaluation can split test sets into bias-aligned and bias-conflicting samples.

Two assignment procedures are used, each the one of the work that introduced the dataset:

- ReBias (Bahng et al. 2020, Biased-MNIST): per class a *seeded shuffle*, the first ``int(n * rho)`` digits get the
  class's colour, the rest go in chunks of ``ceil((n - n_corr) / 9)`` to the other nine colours in a shuffled
  order;
- LfF / DebiAN (Nam et al. 2020; Li et al. 2022, Multi-Color MNIST and Corrupted CIFAR-10): per class fixed
  *counts* ``round(n * cumsum(ratios))`` of each bias value, given to the class's samples in source order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from maskbench.tracks.vision.corruptions import CHUNK as _CHUNK
from maskbench.tracks.vision.corruptions import CORRUPTIONS, corrupt
from maskbench.tracks.vision.images import ImageSet
from maskbench.tracks.vision.mnist_wheel import NUM_CLASSES

DIGIT_NAMES = [str(d) for d in range(NUM_CLASSES)]

# ReBias's ten background colours (datasets/colour_mnist.py, BiasedMNIST.COLOUR_MAP), RGB, index = digit whose
# colour it is. Yellow and magenta are 225, not 255, in ReBias; kept as published.
COLOUR_MAP = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255], [225, 225, 0], [225, 0, 225],
                       [0, 255, 255], [255, 128, 0], [255, 0, 128], [128, 0, 255], [128, 128, 128]], dtype=np.uint8)

# LfF's ten mean colours (data/resource/colors.th, float32 in [0, 1]) that DebiAN's Multi-Color MNIST uses for the
# left half; the right half uses 1 - colour.
LFF_MEAN_COLOURS = np.array([
    [0.98368233, 0.312519, 0.16857535], [0.99052966, 0.91560525, 0.3515122], [0.672964, 0.46107048, 0.5798082],
    [0.78325194, 0.8315559, 0.6013294], [0.088015795, 0.77796334, 0.98180777], [0.32139337, 0.96105456, 0.44644988],
    [0.024615884, 0.23565048, 0.7586663], [0.55524695, 0.10158014, 0.76176316], [0.2077232, 0.3929485, 0.018702388],
    [0.8336576, 0.20240927, 0.2669431]], dtype=np.float32)
# DebiAN's colour jitter (std of a normal added per image and channel) for severities 1..5; paper D uses 4.
MULTI_COLOUR_JITTER = (0.05, 0.02, 0.01, 0.005, 0.002)

# Two background colours of the CelebA stand-in (ReBias's red and blue).
TWO_ATTRIBUTE_COLOURS = COLOUR_MAP[[0, 2]]
TWO_ATTRIBUTE_TARGETS = {"large_digit": ["small_digit", "large_digit"], "even_digit": ["odd_digit", "even_digit"]}



# ----------------------------------------------------------------------------------------------- assignment


def rebias_colour_assignment(labels: np.ndarray, rho: float, rng: np.random.RandomState,
                             n_confusing: int = 9) -> np.ndarray:
    """The colour index of every sample, as ReBias's ``_update_bias_indices`` assigns it.

    Per class (in class order): shuffle the class's indices; the first ``int(n * rho)`` keep the class's colour; the
    rest are split into consecutive chunks of ``ceil((n - n_corr) / n_confusing)`` that go to the colours of the
    next ``n_confusing`` labels (``(label + 1) % 10, ...``) taken in a shuffled order. Chunks are not padded, so
    when the remainder does not divide evenly the last colours get fewer samples or none."""
    if not 1 <= n_confusing <= NUM_CLASSES - 1:
        raise ValueError(f"n_confusing must be in 1..{NUM_CLASSES - 1}, got {n_confusing}")
    if not 0.0 <= rho <= 1.0:
        raise ValueError(f"rho must be in [0, 1], got {rho}")
    colour = np.full(labels.shape[0], -1, dtype=np.int64)
    for label in range(NUM_CLASSES):
        indices = np.nonzero(labels == label)[0]
        rng.shuffle(indices)
        n = len(indices)
        n_corr = int(n * rho)
        colour[indices[:n_corr]] = label
        others = [(label + step) % NUM_CLASSES for step in range(1, 1 + n_confusing)]
        rng.shuffle(others)
        rest = indices[n_corr:]
        chunk = int(math.ceil((n - n_corr) / n_confusing)) if n > n_corr else 1
        for position, start in enumerate(range(0, len(rest), chunk)):
            colour[rest[start:start + chunk]] = others[position]
    return colour


def milestone_assignment(labels: np.ndarray, ratios_per_class: np.ndarray) -> np.ndarray:
    """The bias value of every sample by LfF's / DebiAN's ``make_attr_labels``.

    ``ratios_per_class[c, k]`` is the wanted share of bias value k in class c. Milestones
    ``round(n_c * cumsum(ratios[c]))`` cut the class's samples, in source order, into runs: the j-th sample of
    class c gets the smallest k with milestone_k > j. Counts are therefore fixed, not sampled."""
    values = np.zeros(labels.shape[0], dtype=np.int64)
    last = ratios_per_class.shape[1] - 1
    for label in range(ratios_per_class.shape[0]):
        indices = np.nonzero(labels == label)[0]
        milestones = np.round(len(indices) * np.cumsum(ratios_per_class[label]))
        values[indices] = np.minimum(np.searchsorted(milestones, np.arange(len(indices)), side="right"), last)
    return values


def aligned_ratios(rho: float, classes: int = NUM_CLASSES) -> np.ndarray:
    """rho on the diagonal, the rest spread evenly over the other classes (LfF's ``ratios_per_class``)."""
    eye = np.eye(classes)
    return rho * eye + (1.0 - rho) / (classes - 1) * (1.0 - eye)


# ----------------------------------------------------------------------------------------------- rendering


def colour_background(digits: np.ndarray, colours: np.ndarray) -> np.ndarray:
    """ReBias's ``_binary_to_colour``: pixels != 0 become white (255 in all channels, i.e. the stroke is binarised),
    pixels == 0 take the sample's RGB colour. Returns uint8 N x 3 x H x W."""
    foreground = (digits != 0)[:, None, :, :]
    background = colours.astype(np.uint8)[:, :, None, None]
    return np.where(foreground, np.uint8(255), background).astype(np.uint8)


def _imageset(images, labels, bias, ids, label_names, bias_names, bias_classes, dataset, split, provenance):
    return ImageSet(images=np.ascontiguousarray(images, dtype=np.uint8), label=np.asarray(labels, dtype=np.int64),
                    bias=np.asarray(bias, dtype=np.int64).reshape(len(labels), -1),
                    ids=np.asarray(ids, dtype=np.int64), label_names=list(label_names), bias_names=list(bias_names),
                    bias_classes=[int(c) for c in bias_classes], dataset=dataset, split=split, provenance=provenance)


def _ids(ids, n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64) if ids is None else np.asarray(ids, dtype=np.int64)


def _check_digits(digits: np.ndarray, labels: np.ndarray) -> None:
    if digits.dtype != np.uint8 or digits.ndim != 3:
        raise ValueError(f"digits must be uint8 N x H x W, got {digits.dtype} {digits.shape}")
    if labels.shape != (digits.shape[0],):
        raise ValueError(f"labels must have shape ({digits.shape[0]},), got {labels.shape}")


def _conflicting(labels: np.ndarray, bias: np.ndarray) -> int:
    return int((labels != bias).sum())


def conflicting_counts(imageset: ImageSet) -> dict[str, int]:
    """Per bias attribute, how many samples are bias-conflicting (bias value != label; in every generator here
    bias value k is the one aligned with class k)."""
    return {name: _conflicting(imageset.label, imageset.bias[:, j]) for j, name in enumerate(imageset.bias_names)}


# ----------------------------------------------------------------------------------------------- Biased-MNIST


def colour_biased_mnist(digits: np.ndarray, labels: np.ndarray, rho: float, seed: int, dataset: str = "biased_mnist",
                        split: str = "train", ids: np.ndarray | None = None, n_confusing: int = 9) -> ImageSet:
    """Biased-MNIST as ReBias builds it (``ColourBiasedMNIST``): colour assignment by ``rebias_colour_assignment``
    with ``np.random.RandomState(seed)``, rendering by ``colour_background`` (binarised white stroke on a coloured
    background). ReBias finally shuffles the whole set; we keep the source order (ids are source indices and every
    loader shuffles anyway). bias = colour index, one attribute "background_colour" with 10 classes."""
    _check_digits(digits, labels)
    colour = rebias_colour_assignment(labels, rho, np.random.RandomState(seed), n_confusing)
    images = colour_background(digits, COLOUR_MAP[colour])
    provenance = {"generator": "colour_biased_mnist (ReBias)", "rho": rho, "seed": seed, "n_confusing": n_confusing,
                  "n": int(len(labels)), "bias_conflicting": _conflicting(labels, colour)}
    return _imageset(images, labels, colour, _ids(ids, len(labels)), DIGIT_NAMES, ["background_colour"],
                     [NUM_CLASSES], dataset, split, provenance)


# ----------------------------------------------------------------------------------------------- Multi-Color MNIST


def multi_color_mnist(digits: np.ndarray, labels: np.ndarray, rho_left: float = 0.99, rho_right: float = 0.95,
                      seed: int = 0, severity: int = 4, dataset: str = "multi_color_mnist", split: str = "train",
                      ids: np.ndarray | None = None) -> ImageSet:
    """DebiAN's Multi-Color MNIST (Li et al. 2022), generated here because paper D ships only the loader.

    Construction, following DebiAN's ``make_multi_color_mnist``: the left and right colour of each digit are two
    bias attributes aligned with the class with probabilities ``rho_left`` and ``rho_right`` independently: the
    joint share of (left k, right m) in class c is ``p_left(k|c) * p_right(m|c)`` with p(c|c) = rho and
    (1 - rho)/9 for each other colour, turned into fixed counts by ``milestone_assignment`` over the 100 joint
    values. Left colours are LfF's ten mean colours, right colours their complements (1 - colour), each jittered
    per image and channel by N(0, std) with std = ``MULTI_COLOUR_JITTER[severity - 1]`` and clipped to [0, 1].
    As in DebiAN, "background" is every pixel that is not 255 (so grey stroke edges are tinted too) and the
    colour * 255 is added to the digit's value, clipped at 255 and truncated to uint8; columns < 14 take the
    left colour, the rest the right one. Paper D's ``ColoredMNIST-SkewedA0.01-SkewedB0.05-Severity4`` is
    rho_left 0.99, rho_right 0.95, severity 4. Two bias attributes "left_colour", "right_colour" (10 classes)."""
    _check_digits(digits, labels)
    if not 1 <= severity <= len(MULTI_COLOUR_JITTER):
        raise ValueError(f"severity must be in 1..{len(MULTI_COLOUR_JITTER)}, got {severity}")
    joint = aligned_ratios(rho_left)[:, :, None] * aligned_ratios(rho_right)[:, None, :]
    cell = milestone_assignment(labels, joint.reshape(NUM_CLASSES, NUM_CLASSES * NUM_CLASSES))
    left, right = cell // NUM_CLASSES, cell % NUM_CLASSES
    rng = np.random.default_rng(seed)
    std = MULTI_COLOUR_JITTER[severity - 1]
    n, height, width = digits.shape
    images = np.empty((n, 3, height, width), dtype=np.uint8)
    left_half = (np.arange(width) < width // 2)[None, None, None, :]
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        m = stop - start
        left_rgb = np.clip(LFF_MEAN_COLOURS[left[start:stop]] + rng.standard_normal((m, 3)) * std, 0, 1)
        right_rgb = np.clip(1.0 - LFF_MEAN_COLOURS[right[start:stop]] + rng.standard_normal((m, 3)) * std, 0, 1)
        raw = digits[start:stop, None, :, :].astype(np.float32)
        background = raw != 255
        colour = np.where(left_half, left_rgb[:, :, None, None], right_rgb[:, :, None, None]).astype(np.float32)
        images[start:stop] = np.clip(raw + background * 255.0 * colour, 0, 255).astype(np.uint8)
    provenance = {"generator": "multi_color_mnist (DebiAN construction)", "rho_left": rho_left,
                  "rho_right": rho_right, "severity": severity, "seed": seed, "n": int(n),
                  "left_conflicting": _conflicting(labels, left), "right_conflicting": _conflicting(labels, right)}
    return _imageset(images, labels, np.stack([left, right], axis=1), _ids(ids, n), DIGIT_NAMES,
                     ["left_colour", "right_colour"], [NUM_CLASSES, NUM_CLASSES], dataset, split, provenance)


def corrupted_mnist(digits: np.ndarray, labels: np.ndarray, rho: float = 0.995, seed: int = 0,
                    dataset: str = "corrupted_mnist_standin", split: str = "train",
                    ids: np.ndarray | None = None) -> ImageSet:
    """An offline STAND-IN for Corrupted CIFAR-10 (LfF / DFA, used by paper D): MNIST digits instead of CIFAR
    objects, and simple numpy corruptions (``corruptions.CORRUPTION_FUNCTIONS``) in the spirit of the ten
    CIFAR-10-C types LfF uses (snow, frost, fog, brightness, contrast, spatter, elastic, JPEG, pixelate, saturate)
    at one fixed, strong severity -- not the CIFAR-10-C code. As in LfF, corruption c is the aligned bias of class
    c: a share rho of each class gets its own corruption and (1 - rho)/9 each of the others, as fixed counts by
    ``milestone_assignment``; paper D's default 0.5 % conflicting is rho 0.995. Bias attribute "corruption"."""
    _check_digits(digits, labels)
    corruption = milestone_assignment(labels, aligned_ratios(rho))
    images = corrupt(digits, corruption, seed)
    provenance = {"generator": "corrupted_mnist (stand-in for Corrupted CIFAR-10)", "rho": rho, "seed": seed,
                  "corruptions": list(CORRUPTIONS), "n": int(len(labels)),
                  "bias_conflicting": _conflicting(labels, corruption)}
    return _imageset(images, labels, corruption, _ids(ids, len(labels)), DIGIT_NAMES, ["corruption"],
                     [len(CORRUPTIONS)], dataset, split, provenance)


# ----------------------------------------------------------------------------------------------- CelebA stand-in


def two_attribute_mnist(digits: np.ndarray, labels: np.ndarray, rho: float = 0.99, seed: int = 0,
                        target: str = "large_digit", dataset: str = "two_attribute_mnist_standin",
                        split: str = "train", ids: np.ndarray | None = None) -> ImageSet:
    """An offline STAND-IN for paper D's CelebA setup (binary target, binary bias "gender"): the target is binary
    -- "large_digit" (digit >= 5) or "even_digit", mirroring CelebA's two targets BlondHair and Eyeglasses -- and
    the bias is a background colour out of two (``TWO_ATTRIBUTE_COLOURS``, rendered as Biased-MNIST). Per target
    class, after a seeded shuffle, the first ``int(n * rho)`` samples get the colour with the class's index and the
    rest the other one; unlike CelebA the correlation is symmetric in the two classes. Bias "background_colour"."""
    _check_digits(digits, labels)
    if target not in TWO_ATTRIBUTE_TARGETS:
        raise ValueError(f"target must be one of {sorted(TWO_ATTRIBUTE_TARGETS)}, got {target!r}")
    binary = (labels >= 5) if target == "large_digit" else (labels % 2 == 0)
    binary = binary.astype(np.int64)
    rng = np.random.RandomState(seed)
    colour = np.empty_like(binary)
    for value in (0, 1):
        indices = np.nonzero(binary == value)[0]
        rng.shuffle(indices)
        n_corr = int(len(indices) * rho)
        colour[indices[:n_corr]] = value
        colour[indices[n_corr:]] = 1 - value
    images = colour_background(digits, TWO_ATTRIBUTE_COLOURS[colour])
    provenance = {"generator": "two_attribute_mnist (stand-in for CelebA)", "rho": rho, "seed": seed,
                  "target": target, "n": int(len(labels)), "bias_conflicting": _conflicting(binary, colour)}
    return _imageset(images, binary, colour, _ids(ids, len(labels)), TWO_ATTRIBUTE_TARGETS[target],
                     ["background_colour"], [2], dataset, split, provenance)


# ----------------------------------------------------------------------------------------------- paper D's splits


@dataclass(frozen=True)
class SplitSizes:
    """How many digits each split gets; the defaults are paper D's full sizes."""

    train: int = 60_000
    unbiased_train: int = 10_000
    unbiased_val: int = 10_000
    test: int = 10_000


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator with its default strengths for the biased training set and for the unbiased sets."""

    build: Callable[..., ImageSet]
    biased: dict[str, float]
    unbiased: dict[str, float]


GENERATORS: dict[str, GeneratorSpec] = {
    "biased_mnist": GeneratorSpec(colour_biased_mnist, {"rho": 0.99}, {"rho": 0.1}),
    "multi_color_mnist": GeneratorSpec(multi_color_mnist, {"rho_left": 0.99, "rho_right": 0.95},
                                       {"rho_left": 0.1, "rho_right": 0.1}),
    "corrupted_mnist_standin": GeneratorSpec(corrupted_mnist, {"rho": 0.995}, {"rho": 0.1}),
    "two_attribute_mnist_standin": GeneratorSpec(two_attribute_mnist, {"rho": 0.99}, {"rho": 0.5}),
}


def derived_seed(seed: int, stream: int) -> int:
    """Independent 32-bit seeds for the parts of one build (colouring, permutation, subset), from one seed."""
    return int(np.random.SeedSequence([seed, stream]).generate_state(1)[0])


def balanced_subset(labels: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` indices with classes as equal as the data allow (a class short of its share leaves the remainder to
    the others), chosen at random within each class and returned in source order; all indices if n >= len."""
    if n >= len(labels):
        return np.arange(len(labels))
    pools = {c: rng.permutation(np.nonzero(labels == c)[0]) for c in np.unique(labels)}
    take = dict.fromkeys(pools, 0)
    remaining = n
    while remaining > 0:
        open_classes = [c for c in pools if take[c] < len(pools[c])]
        share = max(remaining // len(open_classes), 1)
        for c in open_classes:
            extra = min(share, len(pools[c]) - take[c], remaining)
            take[c] += extra
            remaining -= extra
            if remaining == 0:
                break
    return np.sort(np.concatenate([pools[c][: take[c]] for c in pools]))


UNBIASED_FROM = ("train_copy", "test_split")
TEST_SPLIT_SHARES = (0.6, 0.2)  # paper D's code: unbiased train / val shares of the test set, the rest is test


def paper_d_splits(mnist: dict[str, tuple[np.ndarray, np.ndarray]], generator: str = "biased_mnist", seed: int = 0,
                   sizes: SplitSizes | None = None, source: dict[str, Any] | None = None,
                   unbiased_from: str = "train_copy", **options: Any) -> dict[str, ImageSet]:
    """Paper D's four splits from MNIST ({"train": (digits, labels), "test": ...}, as ``read_mnist`` returns):

    - ``train``: the biased training set, ``sizes.train`` training digits at the biased strength;
    - ``unbiased_train`` / ``unbiased_val``: an unbiased copy of the *same* training digits (FFW's code colours
      MNIST-train again at rho 0.1 and takes ``random_split([10000, 10000, 40000])``); here a seeded permutation of
      the copy gives the first ``sizes.unbiased_train`` and the next ``sizes.unbiased_val`` digits; the gates train
      on the first with its bias labels;
    - ``test``: ``sizes.test`` test digits at the unbiased strength.

    ``generator`` names one of ``GENERATORS``; ``options`` override its strengths (``rho``, or ``rho_left`` and
    ``rho_right``) for the biased set, other keys (``target``, ``severity``, ``n_confusing``) go to every split.
    For the other datasets this is the analogous structure, not the papers' (DebiAN's and the CIFAR test sets are
    split 60/20/20 in paper D). Smaller ``sizes`` take class-balanced random subsets (the fast offline config).

    ``unbiased_from="test_split"`` builds the unbiased splits as paper D's code does for Multi-Color MNIST and
    Corrupted CIFAR-10 (``dataloaders.py::get_dataloaders``): the ``sizes.test`` unbiased test digits, permuted
    (seeded) and cut into int(0.6 n) unbiased training, int(0.2 n) unbiased validation and the rest as the test
    split (``sizes.unbiased_train`` / ``unbiased_val`` are then unused); the biased training split is unchanged.
    ids: training digits keep their MNIST-train index, test digits 60,000 + their MNIST-test index."""
    if generator not in GENERATORS:
        raise ValueError(f"generator must be one of {sorted(GENERATORS)}, got {generator!r}")
    if unbiased_from not in UNBIASED_FROM:
        raise ValueError(f"unbiased_from must be one of {', '.join(UNBIASED_FROM)}, got {unbiased_from!r}")
    spec = GENERATORS[generator]
    sizes = sizes or SplitSizes()
    strength_keys = set(spec.biased)
    biased = {**spec.biased, **{k: v for k, v in options.items() if k in strength_keys}}
    shared = {k: v for k, v in options.items() if k not in strength_keys}
    train_digits, train_labels = mnist["train"]
    test_digits, test_labels = mnist["test"]
    if unbiased_from == "train_copy" and sizes.unbiased_train + sizes.unbiased_val > min(sizes.train,
                                                                                         len(train_labels)):
        raise ValueError(f"unbiased_train + unbiased_val ({sizes.unbiased_train} + {sizes.unbiased_val}) must not "
                         f"exceed the training digits used ({min(sizes.train, len(train_labels))})")
    train_rows = balanced_subset(train_labels, sizes.train, np.random.default_rng(derived_seed(seed, 0)))
    test_rows = balanced_subset(test_labels, sizes.test, np.random.default_rng(derived_seed(seed, 1)))
    digits, labels = train_digits[train_rows], train_labels[train_rows]

    def build(split, rows_digits, rows_labels, ids, strength, stream):
        out = spec.build(rows_digits, rows_labels, seed=derived_seed(seed, stream), dataset=generator, split=split,
                         ids=ids, **strength, **shared)
        out.provenance.update({"base_seed": seed, "source": source or {}, "generator_name": generator})
        return out

    splits = {"train": build("train", digits, labels, train_rows, biased, 2)}
    if unbiased_from == "train_copy":
        unbiased = build("unbiased_copy", digits, labels, train_rows, spec.unbiased, 3)
        order = np.random.default_rng(derived_seed(seed, 4)).permutation(len(unbiased))
        cut = sizes.unbiased_train
        first, second = order[:cut], order[cut: cut + sizes.unbiased_val]
        splits["unbiased_train"] = unbiased.subset(np.sort(first), "unbiased_train")
        splits["unbiased_val"] = unbiased.subset(np.sort(second), "unbiased_val")
        splits["test"] = build("test", test_digits[test_rows], test_labels[test_rows], 60_000 + test_rows,
                               spec.unbiased, 5)
    else:
        pool = build("test", test_digits[test_rows], test_labels[test_rows], 60_000 + test_rows, spec.unbiased, 5)
        order = np.random.default_rng(derived_seed(seed, 4)).permutation(len(pool))
        n_train, n_val = (int(share * len(pool)) for share in TEST_SPLIT_SHARES)
        splits["unbiased_train"] = pool.subset(np.sort(order[:n_train]), "unbiased_train")
        splits["unbiased_val"] = pool.subset(np.sort(order[n_train:n_train + n_val]), "unbiased_val")
        splits["test"] = pool.subset(np.sort(order[n_train + n_val:]), "test")
    for name in ("unbiased_train", "unbiased_val"):
        part = splits[name]
        part.provenance = {**part.provenance, "n": len(part), "permutation_seed": derived_seed(seed, 4)}
        for stale in ("bias_conflicting", "left_conflicting", "right_conflicting"):
            part.provenance.pop(stale, None)
    for part in splits.values():
        part.provenance["conflicting"] = conflicting_counts(part)
    return splits


# ----------------------------------------------------------------------------------------------- figure helper


def sample_grid(imagesets: dict[str, ImageSet], per_class: int = 2, gap: int = 2) -> np.ndarray:
    """One row per ImageSet, ``per_class`` first images of each class side by side: uint8 H x W x 3 for a figure
    of biased against unbiased samples. Missing images (a class absent from a set) stay white."""
    first = next(iter(imagesets.values()))
    _, channels, height, width = first.images.shape
    classes = max(s.num_classes for s in imagesets.values())
    columns = classes * per_class
    grid = np.full((len(imagesets) * (height + gap) - gap, columns * (width + gap) - gap, 3), 255, dtype=np.uint8)
    for row, imageset in enumerate(imagesets.values()):
        for label in range(imageset.num_classes):
            for k, index in enumerate(np.nonzero(imageset.label == label)[0][:per_class]):
                image = imageset.images[index].transpose(1, 2, 0)
                if image.shape[2] == 1:
                    image = np.repeat(image, 3, axis=2)
                y = row * (height + gap)
                x = (label * per_class + k) * (width + gap)
                grid[y:y + height, x:x + width] = image
    return grid
