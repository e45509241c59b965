"""Entry point: the colour-only bias model of a dataset level (``tracks.vision.colour_bias``) — trained on the
biased training split; writes its class probabilities of every training image (the debiasing losses' bias_probs)
and a summary with its accuracy on the biased training, biased test and unbiased test splits (near chance on the
last: it cannot read the digit).

    python -m maskbench.steps vision.colour_bias --train T.safetensors --test U.safetensors \
        --biased-test BT.safetensors --settings JSON --probs P.npy --summary S.json
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from maskbench import runtime
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.colour_bias import (
    ColourModelSettings,
    accuracy,
    colour_features,
    colour_probs,
    fit_colour_model,
)
from maskbench.tracks.vision.data import read_split

log = logging.getLogger("maskbench.steps.vision.colour_bias")


@dataclass
class ColourBiasArgs:
    train: Path = field(metadata={"help": "the biased training split (the model trains on it)"})
    test: Path = field(metadata={"help": "the unbiased test split"})
    biased_test: Path = field(metadata={"help": "the biased test split"})
    probs: Path = field(metadata={"help": "the .npy of the training split's class probabilities (N x C float32)"})
    summary: Path = field(metadata={"help": "the JSON summary (written last)"})
    settings: str = field(default="{}", metadata={"help": "JSON of ColourModelSettings (config vision.masks.colour_model)"})


@step_main(ColourBiasArgs)
def main(args: ColourBiasArgs) -> int:
    settings = ColourModelSettings(**json.loads(args.settings))
    train, test, biased_test = read_split(args.train), read_split(args.test), read_split(args.biased_test)
    for path in (args.probs, args.summary):
        path.unlink(missing_ok=True)
    runtime.set_threads(1)
    model = fit_colour_model(colour_features(train.images), train.label, train.num_classes, settings)
    probs = colour_probs(model, colour_features(train.images))
    scores = {name: accuracy(colour_probs(model, colour_features(split.images)), split.label)
              for name, split in (("train", train), ("biased_test", biased_test), ("unbiased_test", test))}
    log.info("colour-only bias model: accuracy %s (chance %.1f %%)", scores, 100.0 / train.num_classes)
    args.probs.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.probs.with_name(args.probs.name + ".tmp.npy")
    np.save(tmp, probs)
    tmp.replace(args.probs)
    runtime.atomic_write_json(args.summary, {
        "accuracy": scores, "chance": 100.0 / train.num_classes, "n_train": len(train),
        "mean_prob_at_label": float(probs[np.arange(len(probs)), train.label].mean()),
        "settings": asdict(settings), "provenance": runtime.provenance(args, settings.seed)})
    return 0


if __name__ == "__main__":
    run_step(main)
