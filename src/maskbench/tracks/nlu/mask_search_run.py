"""Paper A's mask search as one call: the frozen fine-tuned model, its training data and the objective (with a bias
model's probabilities where the loss reweights or ensembles), movement scores trained by the one training loop, the
binary mask written with the model's fingerprint, then a JSON summary. The rule's step (steps/nlu/mask_search.py), the
``maskbench search`` command and ``maskbench.search_mask`` all run this function."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Compute, Deterministic, start, step_arguments
from maskbench.data.schema import DataError
from maskbench.masking.apply import MaskSet, masked_modules_fingerprint, model_fingerprint
from maskbench.objectives.losses import get_loss
from maskbench.resume import Resume, run_key, state_path_for
from maskbench.text.batches import EncodedPairs
from maskbench.text.classifier_training import accuracy_on, objective_and_groups
from maskbench.text.models import input_view, load_classifier, model_labels
from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec, attach_scores
from maskbench.tracks.nlu.search_section import split_search_section
from maskbench.tracks.nlu.training import read_training_inputs
from maskbench.training.hparams import parse_hparams, total_steps
from maskbench.training.loop import fit

log = logging.getLogger("maskbench.steps.nlu.mask_search")

# the scores' optimiser when no config file says otherwise: tests/configs/synthetic.yaml's `mask_search.hparams` at its
# `score_learning_rate` (tests/test_export.py checks that the two agree)
SEARCH_HPARAMS = {"epochs": 1, "batch_size": 32, "learning_rate": 0.1, "lr_schedule": "constant", "weight_decay": 0.0,
                  "max_grad_norm": 0, "warmup": 0, "max_length": 64, "eval_batch_size": 256, "log_every": 50,
                  "adam_eps": 1.0e-6}


def search_settings(section: dict | None) -> tuple[dict, dict]:
    """(spec, hparams) of a workflow config's ``mask_search`` section, as the workflow hands them to this step: the
    spec is the section without ``hparams`` and ``score_learning_rate``; the scores' optimiser is ``hparams`` at the
    rate ``score_learning_rate``. No section: the spec's defaults and ``SEARCH_HPARAMS``."""
    if not section:
        return {}, dict(SEARCH_HPARAMS)
    spec, optimiser = split_search_section(section)
    return spec, {**SEARCH_HPARAMS, **optimiser}


@step_arguments(Deterministic, Compute)
class MaskSearchArgs:
    model_dir: Path = field(metadata={"help": "fine-tuned checkpoint to search a mask in (weights stay frozen)"})
    train: Path = field(metadata={"help": "prepared training parquet"})
    out: Path = field(metadata={"help": "mask file to write (.mask)"})
    summary: Path = field(metadata={"help": "JSON summary to write last"})
    seed: int = field(metadata={"help": "fixes data order and dropout"})
    dev: Path | None = field(default=None, metadata={"help": "prepared ID dev parquet, scored after each epoch"})
    spec: str = field(default="{}", metadata={"help": "JSON of MaskSearchSpec fields (config mask_search)"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields for the scores' optimiser"})
    loss: str = field(default="ce", metadata={"help": "objective name in maskbench.objectives.losses"})
    loss_hparams: str = field(default="{}", metadata={"help": "JSON of the objective's hyper-parameters"})
    bias_probs: Path | None = field(default=None, metadata={"help": "bias model probabilities of the training set"})
    teacher_probs: Path | None = field(default=None, metadata={"help": "teacher probabilities of the training set"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "save the search's state every N steps beside --out and resume from it when rerun (0: never)"})


def run_mask_search(args: MaskSearchArgs) -> tuple[MaskSet, dict]:
    """Search the mask ``args`` describe and write ``args.out`` and then ``args.summary``; return the mask and the
    summary. Every input (spec, hyper-parameters, loss, data, bias probabilities) is read and checked before the
    model is loaded."""
    spec = MaskSearchSpec.from_dict(json.loads(args.spec))
    if args.deterministic not in (0, 1):
        raise ValueError(f"--deterministic must be 0 or 1, got {args.deterministic}")
    hp = parse_hparams(args.hparams)
    loss_fn = get_loss(args.loss, **json.loads(args.loss_hparams))
    train_df, labels, train_meta, example_tensors, dev = read_training_inputs(args)
    device = start(args)
    model, tokenizer = load_classifier(args.model_dir)
    if model_labels(model) != labels:
        raise DataError(f"{args.train}: field 'labels' is {labels}, but the model in {args.model_dir} predicts "
                        f"{model_labels(model)}")
    fingerprint = model_fingerprint(model)
    runtime.seed_everything(args.seed)
    view = input_view(model)
    data = EncodedPairs(tokenizer, train_df.text_a, train_df.text_b, train_df.label, hp.max_length, view)
    steps = total_steps(len(data), hp)
    scores = attach_scores(model, spec, steps)
    masked_fingerprint = masked_modules_fingerprint(model, scores.masks)
    n_scores = sum(p.numel() for p in scores.parameters())
    log.info("mask search (%s) on %s: %d matrices, %d scores, %d steps, loss %s", spec.method, args.model_dir,
             len(scores.masks), n_scores, steps, args.loss)
    evaluate = accuracy_on(dev, tokenizer, hp, device, view) if dev is not None else None
    started = time.perf_counter()
    objective, groups = objective_and_groups(model, args.loss, loss_fn, device, hp, example_tensors,
                                             scores.regularization if spec.l1_lambda > 0 else None)
    resume = (Resume(state_path_for(args.out), args.checkpoint_every, run_key(args)) if args.checkpoint_every > 0
              else None)
    curve = fit(model, data, objective, hp, args.seed, device, evaluate, groups=groups, step_hook=scores.set_step,
                resume=resume)
    seconds = time.perf_counter() - started
    mask_set = MaskSet(scores.hard_masks(), {
        "method": spec.method, "spec": dataclasses.asdict(spec), "hparams": dataclasses.asdict(hp),
        "loss": args.loss, "loss_hparams": json.loads(args.loss_hparams),
        "bias_probs": str(args.bias_probs) if args.bias_probs else None, "train": str(args.train),
        "task": train_meta.get("task"), "seed": args.seed, "model_dir": str(args.model_dir),
        "model_fingerprint": fingerprint, "masked_fingerprint": masked_fingerprint,
        "zero_bias_of_empty_rows": spec.zero_bias_of_empty_rows,
        "provenance": runtime.provenance(args, args.seed),
    })
    stats = mask_set.save(args.out)
    density = mask_set.density()
    final_dev = next((p["dev_accuracy"] for p in reversed(curve) if "dev_accuracy" in p), None)
    summary = {
        "mask": str(args.out), "density": density, "pruned_percent": 100 * (1 - density),
        "module_density": mask_set.module_density(), "file": stats, "n_scores": n_scores, "steps": steps,
        "search_seconds": seconds, "final_dev_accuracy": final_dev, "curve": curve, "device": str(device),
        "meta": {k: v for k, v in mask_set.meta.items() if k != "module_density"},
    }
    runtime.atomic_write_json(args.summary, summary)
    if resume is not None:
        resume.done()
    log.info("wrote %s: %.2f%% pruned, %d bytes, dev accuracy %s, %.1fs", args.out, 100 * (1 - density),
             stats["file_bytes"], final_dev, seconds)
    return mask_set, summary


