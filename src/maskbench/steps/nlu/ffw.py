"""Entry point: paper D's FFW gates on a fine-tuned nlu classifier (the frozen baseline), trained against task CE +
gamma * MI(bias attribute, bias head) on a slice of the training part; the weights never change.

    python -m maskbench.steps nlu.ffw --model-dir results/.../method~finetune/loss~ce/seed~1 \
        --train mnli_train.parquet --attribute overlap --bias-probs bias/overlap/seed~0/train_probs.parquet \
        --settings JSON --examples JSON --seed 1 --out results/.../ffw/method~ffw/attribute~overlap/gamma~10/seed~1.mask

Writes ``--summary`` (default: ``--out`` with .json: the gate epochs, snapshots, the chosen one, the training
seconds, and the bias readout — a fresh bias head trained on the masked model's features of the gate-training
slice, its accuracy on the held-out readout slice, with the readout slice's majority share), then
the mask file last (the project's mask format; ``nlu.evaluate_masks`` scores it like paper A's masks).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, field
from pathlib import Path

import numpy as np

from maskbench import runtime
from maskbench.compute import Compute, GateCheckpoint, start, step_arguments
from maskbench.data.schema import read_prepared
from maskbench.ffw.core import FFWSettings, run_ffw
from maskbench.ffw.heads import bias_accuracy
from maskbench.masking.apply import MaskSet, MaskSwitch, model_fingerprint
from maskbench.resume import resume_of
from maskbench.steps import run_step, step_main
from maskbench.text.models import input_view, load_classifier
from maskbench.tracks.nlu.bias.probs import read_probs
from maskbench.tracks.nlu.ffw import (
    GatePairs,
    NluFFW,
    bias_attribute,
    layers_without_heads,
    no_dropout,
    split_indices,
)

PRICED_AS = "gates"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.nlu.ffw")
SLICES = ("gate_train", "gate_val", "readout")


@step_arguments(GateCheckpoint, Compute)
class NluFFWArgs:
    model_dir: Path = field(metadata={"help": "the fine-tuned baseline's folder (finetune, loss ce)"})
    train: Path = field(metadata={"help": "the task's prepared training parquet (the slices are cut from it)"})
    attribute: str = field(metadata={"help": "bias attribute: overlap or negation"})
    out: Path = field(metadata={"help": "mask file to write"})
    seed: int = field(metadata={"help": "fixes the slices, head initialisation and data order"})
    bias_probs: Path | None = field(default=None, metadata={"help": "overlap bias model's train_probs.parquet"})
    task: str = field(default="mnli", metadata={"help": "the task (checked against the probabilities file)"})
    settings: str = field(default="{}", metadata={"help": "JSON of FFWSettings fields (config ffw + gamma)"})
    examples: str = field(default='{"gate_train": 2000, "gate_val": 500, "readout": 500}',
                          metadata={"help": "JSON: pairs in each slice of the training part"})
    max_length: int = field(default=128, metadata={"help": "tokens per pair"})
    length_grouped: int = field(default=0, metadata={"help": "gate batches of similar length: runs of this many "
                                                              "batches sorted by length (0: random batches)"})
    method: str = field(default="ffw", metadata={"help": "the run's method name, recorded in the mask"})
    summary: Path | None = field(default=None, metadata={"help": "the run's JSON summary (default: --out with .json)"})


def readout(adapter, model, data: dict, classes: int, settings: FFWSettings, seed: int) -> float:
    """A fresh bias head trained on the gate-training slice's features, its accuracy (%) on the readout slice."""
    train = adapter.loader(data["gate_train"], settings.batch_size)
    test = adapter.loader(data["readout"], settings.batch_size)
    return bias_accuracy(adapter, model, train, test, [classes], settings.head, seed)["0"]


@step_main(NluFFWArgs)
def main(args: NluFFWArgs) -> int:
    settings = FFWSettings.from_dict(json.loads(args.settings))
    sizes = {name: int(json.loads(args.examples)[name]) for name in SLICES}
    frame, labels, _ = read_prepared(args.train)
    probs = None if args.bias_probs is None else read_probs(args.bias_probs, frame.id, labels, args.task)
    attribute, class_names = bias_attribute(args.attribute, frame, labels, probs)
    slices = split_indices(len(frame), sizes, args.seed)
    for name, index in slices.items():
        if len(np.unique(attribute[index])) < 2:
            raise ValueError(f"ffw.examples.{name}: the {len(index)} pairs of the slice hold one class of attribute "
                             f"{args.attribute!r} only; take a larger slice")
    device = start(args, seed=args.seed)
    args.out.unlink(missing_ok=True)
    summary_path = args.summary or args.out.with_suffix(".json")
    summary_path.unlink(missing_ok=True)
    model, tokenizer = load_classifier(args.model_dir)
    fingerprint = model_fingerprint(model)
    no_dropout(model)
    adapter = NluFFW(model)
    data = {name: GatePairs(tokenizer, frame.iloc[index].reset_index(drop=True), attribute[index], args.max_length,
                            input_view(model)) for name, index in slices.items()}
    shares = {name: np.bincount(attribute[index], minlength=len(class_names)).tolist() for name, index in slices.items()}
    log.info("FFW (%s, gamma %g, attribute %s %s) on %s: slices %s, class counts %s", args.method, settings.gamma,
             args.attribute, class_names, args.model_dir, sizes, shares)
    started = time.perf_counter()
    resume = resume_of(args)
    keep, summary = run_ffw(adapter, model, data["gate_train"], data["gate_val"], [len(class_names)], settings,
                            args.seed, device, args.length_grouped, resume=resume)
    seconds = time.perf_counter() - started
    mask_meta = {"method": args.method, "decider": "temperature_gate", "structured": settings.structured,
                 "gamma": settings.gamma, "attribute": args.attribute, "model_dir": str(args.model_dir),
                 "model_fingerprint": fingerprint, "zero_bias_of_empty_rows": settings.structured, "seed": args.seed,
                 "settings": asdict(settings)}
    mask = MaskSet(keep, mask_meta)
    switch = MaskSwitch(model, fingerprint)
    switch.apply(mask)
    masked = readout(adapter, model, data, len(class_names), settings, args.seed + 997)
    switch.revert()
    majority = 100.0 * float(np.bincount(attribute[slices["readout"]]).max()) / len(slices["readout"])
    log.info("bias readout (fresh head, readout slice): %.2f masked, majority %.2f", masked, majority)
    runtime.atomic_write_json(summary_path, {
        **summary, "train_seconds": seconds, "attribute": args.attribute, "attribute_classes": class_names,
        "slices": sizes, "slice_class_counts": shares,
        "bias_readout": {"masked": masked, "majority": majority,
                         "what": "fresh linear head on the classifier's input features, trained on the gate-training "
                                 "slice, accuracy (%) on the held-out readout slice"},
        "layers_without_heads": layers_without_heads(keep) if settings.structured else 0,
        "mask": str(args.out), "seed": args.seed, "provenance": runtime.provenance(args, args.seed)})
    mask.save(args.out)  # last: the mask file marks the run complete
    if resume is not None:
        resume.done()
    log.info("wrote %s (density %.4f, %.0f s)", args.out, summary["density"], seconds)
    return 0


if __name__ == "__main__":
    run_step(main)
