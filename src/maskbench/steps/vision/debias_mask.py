"""Entry point: one matrix cell run on the vision track (``tracks.vision.debias_masks``) — paper A's movement
masks or paper C's mask training / IMP on the vanilla model, with a debiasing loss against the colour-only bias
model — and its evaluation (the track's readouts and the biased dev accuracy).

    python -m maskbench.steps vision.debias_mask --model-dir M --train T.safetensors --bias-probs P.npy \
        --test U.safetensors --biased-test BT.safetensors --biased-dev BD.safetensors --head-train UT.safetensors \
        --method movement_poe --sparsity 0.5 --settings JSON --seed 1 --out <stem>.mask --record <stem>.json

Writes the mask (``--out``: the keep masks with the model's fingerprint; for ``imp`` the weights were retrained
too, which its meta says) and, last, ``--record``: the training record and the evaluation.
"""

from __future__ import annotations

import json
import logging
from dataclasses import field
from pathlib import Path

import numpy as np

from maskbench import runtime
from maskbench.compute import Compute, start, step_arguments
from maskbench.ffw.heads import HeadSettings
from maskbench.masking.apply import MaskSet, MaskSwitch, model_fingerprint
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, load_run_model, loader, read_split
from maskbench.tracks.vision.debias_masks import METHODS, MaskSettings, ProbImages, run_mask
from maskbench.tracks.vision.evaluation import matrix_readout, sparsity_report
from maskbench.tracks.vision.ffw import gate_targets

PRICED_AS = "images"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.vision.debias_mask")


@step_arguments(Compute)
class DebiasMaskArgs:
    model_dir: Path = field(metadata={"help": "the vanilla model's folder (vision_train)"})
    train: Path = field(metadata={"help": "the biased training split (the masks train on it)"})
    bias_probs: Path = field(metadata={"help": "the colour-only bias model's probabilities of --train (.npy)"})
    test: Path = field(metadata={"help": "unbiased test split"})
    biased_test: Path = field(metadata={"help": "biased test split"})
    biased_dev: Path = field(metadata={"help": "biased dev split (id_dev)"})
    head_train: Path = field(metadata={"help": "unbiased training split: the fresh bias heads train on it"})
    method: str = field(metadata={"help": f"one of {', '.join(METHODS)}"})
    sparsity: float = field(metadata={"help": "the pruned fraction of every masked matrix"})
    seed: int = field(metadata={"help": "fixes data order and the fresh heads"})
    out: Path = field(metadata={"help": "the mask file"})
    record: Path = field(metadata={"help": "the run's JSON record (written last)"})
    settings: str = field(default="{}", metadata={"help": "JSON of MaskSettings (config vision.masks)"})
    head_settings: str = field(default="{}", metadata={"help": "JSON of HeadSettings (config vision.ffw.head)"})


@step_main(DebiasMaskArgs)
def main(args: DebiasMaskArgs) -> int:
    settings = MaskSettings(**json.loads(args.settings))
    settings.loss_of(args.method)  # an unknown method fails here
    head_settings = HeadSettings(**json.loads(args.head_settings))
    splits = {name: read_split(getattr(args, name)) for name in ("train", "test", "biased_test", "biased_dev",
                                                                  "head_train")}
    probs = np.load(args.bias_probs)
    if probs.shape != (len(splits["train"]), splits["train"].num_classes):
        raise ValueError(f"{args.bias_probs}: shape {probs.shape}, but {args.train} has {len(splits['train'])} "
                         f"images of {splits['train'].num_classes} classes")
    for path in (args.out, args.record):
        path.unlink(missing_ok=True)
    model, meta = load_run_model(args.model_dir)
    spec = meta["model_spec"]
    device = start(args, seed=args.seed)
    fingerprint = model_fingerprint(model)
    data = ProbImages(image_dataset(splits["train"], spec), probs)
    log.info("%s at sparsity %g on %s: %d biased training images", args.method, args.sparsity, args.model_dir,
             len(data))
    keep, record = run_mask(args.method, model, data, args.sparsity, settings, args.seed, device)
    mask = MaskSet(keep, {"method": args.method, "loss": record["loss"], "sparsity_target": args.sparsity,
                          "model_dir": str(args.model_dir), "model_fingerprint": fingerprint,
                          "weights_retrained": record["weights_retrained"], "zero_bias_of_empty_rows": False,
                          "seed": args.seed})
    model.eval()
    switch = None
    if not record["weights_retrained"]:  # the vanilla weights under the mask; IMP's model carries its own zeros
        switch = MaskSwitch(model)
        switch.apply(mask)
    loaders = {name: loader(image_dataset(splits[name], spec), 500)
               for name in ("test", "biased_test", "biased_dev", "head_train")}
    scores = matrix_readout(model, loaders, splits["test"].bias_names, splits["test"].bias_classes, head_settings,
                            args.seed)
    scores.update(sparsity_report(keep, model, [n.replace("\\.", ".") for n in gate_targets(model, False)]))
    if switch is not None:
        switch.revert()
    log.info("%s: biased test %.2f, unbiased %.2f, biased dev %.2f, bias %.2f, sparsity %.2f %%", args.method,
             scores["biased_test_accuracy"], scores["task_accuracy"], scores["biased_dev_accuracy"],
             scores["bias_accuracy"], scores["sparsity"])
    mask.save(args.out)
    runtime.atomic_write_json(args.record, {**record, **scores, "seed": args.seed, "dataset": splits["test"].dataset,
                                            "mask": str(args.out),
                                            "bias_classes": splits["test"].bias_classes,
                                            "n_train": len(splits["train"]),
                                            "provenance": runtime.provenance(args, args.seed)})
    return 0


if __name__ == "__main__":
    run_step(main)
