"""A small biased development split for the matrix's OOD-label-free selection, coloured at the training split's
strength (its rho) by the same generator, with a stream seed of its own. Accuracy on it is an in-distribution score
that needs no unbiased label (the matrix's ``id_dev``). Its digits (``DEV_FROM``):

- ``unused_train``: real MNIST training digits that the level's biased training split does not use; the vanilla
  model has not seen them;
- ``train_copy``: a freshly coloured copy of digits of the training split itself, for a training split that uses
  all 60,000 (paper scale), as paper D's own validation splits re-colour training digits; the vanilla model has seen
  their shapes, so the score is optimistic — it only ranks a method's knob values."""

from __future__ import annotations

import numpy as np

from maskbench.tracks.vision.biased_mnist import GENERATORS, balanced_subset, conflicting_counts, derived_seed
from maskbench.tracks.vision.images import ImageSet

DEV_STREAM = 7  # the stream of derived_seed the dev split draws from (paper_d_splits and biased_test use 0-6)
DEV_FROM = ("unused_train", "train_copy")


def biased_dev_split(mnist: dict, train: ImageSet, generator: str, size: int, options: dict, seed: int,
                     dev_from: str = DEV_FROM[0]) -> ImageSet:
    """``size`` class-balanced MNIST-train digits, outside ``train`` (``unused_train``; its ids are MNIST-train
    indices) or among them (``train_copy``), coloured as the biased training split is (``options``: the level's
    strengths and shared keys)."""
    if generator not in GENERATORS:
        raise ValueError(f"biased dev split: generator {generator!r} is not an MNIST generator {sorted(GENERATORS)}")
    if dev_from not in DEV_FROM:
        raise ValueError(f"biased dev split: dev_from must be one of {', '.join(DEV_FROM)}, got {dev_from!r}")
    spec = GENERATORS[generator]
    digits, labels = mnist["train"]
    used = np.zeros(len(labels), dtype=bool)
    used[np.asarray(train.ids, dtype=np.int64)] = True
    pool = np.nonzero(used if dev_from == "train_copy" else ~used)[0]
    if size > len(pool):
        where = "in" if dev_from == "train_copy" else "left outside"
        raise ValueError(f"biased dev split: {size} digits asked, but only {len(pool)} MNIST training digits are "
                         f"{where} the training split ({int(used.sum())} used; dev_from {dev_from})")
    rows = pool[balanced_subset(labels[pool], size, np.random.default_rng(derived_seed(seed, DEV_STREAM)))]
    rows = np.sort(rows)
    strength = {**spec.biased, **{k: v for k, v in options.items() if k in spec.biased}}
    shared = {k: v for k, v in options.items() if k not in spec.biased}
    out = spec.build(digits[rows], labels[rows], seed=derived_seed(seed, DEV_STREAM + 1), dataset=generator,
                     split="biased_dev", ids=rows, **strength, **shared)
    out.provenance.update({"base_seed": seed, "outside_training_split": dev_from == "unused_train",
                           "dev_from": dev_from})
    out.provenance["conflicting"] = conflicting_counts(out)
    return out
