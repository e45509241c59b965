"""Entry point: FFW (paper D) on a trained vision model — gates trained against task CE + gamma * MI on the
unbiased split with bias labels, selected on the unbiased validation split; the weights never change.

    python -m maskbench.steps vision.ffw --model-dir M --train UT.safetensors --val UV.safetensors \
        --settings JSON --seed 1 --out results/vision/.../masks/method~ffw/gamma~10/start~final/seed~1.mask

Writes the mask file (``--out``, the project's mask format: which weights survive, the model's fingerprint, the
settings) and ``--summary`` (default: beside it, ``<out stem>.json``): the gate epochs (validation MI, temperature, density), the
temperature-drop snapshots and which one was kept.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Compute, GateCheckpoint, start, step_arguments
from maskbench.masking.apply import MaskSet, model_fingerprint
from maskbench.resume import resume_of
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, load_run_model, read_split
from maskbench.tracks.vision.ffw import FFWSettings, run_ffw

PRICED_AS = "images"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.vision.ffw")


@step_arguments(GateCheckpoint, Compute)
class VisionFFWArgs:
    model_dir: Path = field(metadata={"help": "the trained model's folder (vision_train)"})
    train: Path = field(metadata={"help": "unbiased training split with bias labels (the gates train on it)"})
    val: Path = field(metadata={"help": "unbiased validation split (temperature schedule and selection)"})
    out: Path = field(metadata={"help": "mask file to write"})
    seed: int = field(metadata={"help": "fixes head initialisation and data order"})
    settings: str = field(default="{}", metadata={"help": "JSON of FFWSettings fields (config vision.ffw + gamma)"})
    method: str = field(default="ffw", metadata={"help": "the run's method name, recorded in the mask"})
    summary: Path | None = field(default=None, metadata={"help": "the run's JSON summary (default: --out with .json)"})


def summary_path(args: VisionFFWArgs) -> Path:
    return args.summary or args.out.with_suffix(".json")


@step_main(VisionFFWArgs)
def main(args: VisionFFWArgs) -> int:
    settings = FFWSettings.from_dict(json.loads(args.settings))
    train, val = read_split(args.train), read_split(args.val)
    if train.bias_classes != val.bias_classes:
        raise ValueError(f"{args.val}: field 'bias_classes' is {val.bias_classes}, but {args.train} has "
                         f"{train.bias_classes}")
    model, meta = load_run_model(args.model_dir)
    spec = meta["model_spec"]
    device = start(args, seed=args.seed)
    args.out.unlink(missing_ok=True)
    summary_path(args).unlink(missing_ok=True)
    fingerprint = model_fingerprint(model)
    log.info("FFW (%s, gamma %g) on %s: %d gate-training images, bias %s", args.method, settings.gamma,
             args.model_dir, len(train), train.bias_names)
    resume = resume_of(args)
    keep, summary = run_ffw(model, image_dataset(train, spec), image_dataset(val, spec), train.bias_classes,
                            settings, args.seed, device, resume=resume)
    mask_meta = {"method": args.method, "decider": "temperature_gate", "structured": settings.structured,
                 "gamma": settings.gamma, "model_dir": str(args.model_dir), "model_fingerprint": fingerprint,
                 "zero_bias_of_empty_rows": settings.structured, "seed": args.seed, "settings": asdict(settings)}
    runtime.atomic_write_json(summary_path(args), {**summary, "mask": str(args.out), "seed": args.seed,
                                                       "provenance": runtime.provenance(args, args.seed)})
    MaskSet(keep, mask_meta).save(args.out)  # last: the mask file marks the run complete
    if resume is not None:
        resume.done()
    log.info("wrote %s (density %.4f)", args.out, summary["density"])
    return 0


if __name__ == "__main__":
    run_step(main)
