"""A small biased development split for the matrix's OOD-label-free selection: real MNIST training digits that the
level's biased training split does not use, coloured at the training split's strength (its rho) by the same
generator, with a stream seed of its own. Accuracy on it is an in-distribution score that needs no unbiased label
(the matrix's ``id_dev``); the vanilla model has not seen its digits."""

from __future__ import annotations

import numpy as np

from maskbench.tracks.vision.biased_mnist import GENERATORS, balanced_subset, conflicting_counts, derived_seed
from maskbench.tracks.vision.images import ImageSet

DEV_STREAM = 7  # the stream of derived_seed the dev split draws from (paper_d_splits and biased_test use 0-6)


def biased_dev_split(mnist: dict, train: ImageSet, generator: str, size: int, options: dict, seed: int) -> ImageSet:
    """``size`` class-balanced MNIST-train digits outside ``train`` (its ids are MNIST-train indices), coloured as
    the biased training split is (``options``: the level's strengths and shared keys)."""
    if generator not in GENERATORS:
        raise ValueError(f"biased dev split: generator {generator!r} is not an MNIST generator {sorted(GENERATORS)}")
    spec = GENERATORS[generator]
    digits, labels = mnist["train"]
    used = np.zeros(len(labels), dtype=bool)
    used[np.asarray(train.ids, dtype=np.int64)] = True
    free = np.nonzero(~used)[0]
    if size > len(free):
        raise ValueError(f"biased dev split: {size} digits asked, but only {len(free)} MNIST training digits are "
                         f"left outside the training split ({int(used.sum())} used)")
    rows = free[balanced_subset(labels[free], size, np.random.default_rng(derived_seed(seed, DEV_STREAM)))]
    rows = np.sort(rows)
    strength = {**spec.biased, **{k: v for k, v in options.items() if k in spec.biased}}
    shared = {k: v for k, v in options.items() if k not in spec.biased}
    out = spec.build(digits[rows], labels[rows], seed=derived_seed(seed, DEV_STREAM + 1), dataset=generator,
                     split="biased_dev", ids=rows, **strength, **shared)
    out.provenance.update({"base_seed": seed, "outside_training_split": True})
    out.provenance["conflicting"] = conflicting_counts(out)
    return out
