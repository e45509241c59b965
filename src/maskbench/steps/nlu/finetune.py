"""Entry point: fine-tune a classifier on a prepared training set (the baseline of every table).

    python -m maskbench.steps nlu.finetune --train T.parquet --dev D.parquet --model-spec JSON --hparams JSON \
        --seed 1 --loss ce --out-dir results/nlu/mnli/models/method~finetune/loss~ce/seed~1

Writes into ``--out-dir``: ``model.safetensors``, ``config.json``, the tokenizer files, ``train_curve.csv``
and, last, ``train_summary.json`` — a folder without the summary is an unfinished run.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
import time
from dataclasses import field
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.checkpoints import sweep_staging, write_checkpoint
from maskbench.compute import Compute, Deterministic, start, step_arguments
from maskbench.objectives.losses import get_loss
from maskbench.resume import Resume, run_key, state_path_for
from maskbench.steps import run_step, step_main
from maskbench.text.batches import INPUT_VIEWS, EncodedPairs, predict_proba
from maskbench.text.classifier_training import accuracy_on, objective_and_groups
from maskbench.text.models import build_model_and_tokenizer
from maskbench.tracks.nlu.bias.probs import write_probs
from maskbench.tracks.nlu.training import read_training_inputs, training_subset
from maskbench.training.hooks import EarlyStop
from maskbench.training.hparams import TrainHParams, parse_hparams, total_steps
from maskbench.training.loop import fit

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.nlu.finetune")


@step_arguments(Deterministic, Compute)
class FinetuneArgs:
    train: Path = field(metadata={"help": "prepared training parquet"})
    out_dir: Path = field(metadata={"help": "checkpoint folder to write"})
    model_spec: str = field(metadata={"help": "JSON model spec (config `model:`)"})
    seed: int = field(metadata={"help": "fixes initialisation, data order and dropout"})
    dev: Path | None = field(default=None, metadata={"help": "prepared ID dev parquet, scored after each epoch"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    loss: str = field(default="ce", metadata={"help": "objective name in maskbench.objectives.losses"})
    loss_hparams: str = field(default="{}", metadata={"help": "JSON of the objective's hyper-parameters"})
    bias_probs: Path | None = field(default=None, metadata={"help": "bias model probabilities of the training set"})
    teacher_probs: Path | None = field(default=None, metadata={"help": "teacher probabilities of the training set"})
    train_subset: int = field(default=0, metadata={"help": "train on a random subset of this size (0: all)"})
    input_view: str = field(default="pair", metadata={"help": "pair, text_a_only or text_b_only"})
    train_classifier: int = field(default=1, metadata={
        "help": "0: the classification head keeps its (seeded) initialisation and only the encoder trains, as in "
                "paper A's code (its optimiser never receives the head's parameters)"})
    train_probs_out: Path | None = field(default=None, metadata={
        "help": "also write the trained model's probabilities on the whole training set (a bias source)"})
    init_out: Path | None = field(default=None, metadata={
        "help": "also write the model as built, before any training, to this checkpoint folder (paper C's "
                "pre-trained weights theta_pt: the seeded initialisation of a from-scratch model, or the "
                "pre-trained encoder with its seeded head)"})
    snapshot_steps: list[int] = field(default_factory=list, metadata={
        "help": "also write the model after these many optimiser steps (paper C's timing study starts mask "
                "training from such checkpoints), each to <--snapshot-dir>/step~<N>/"})
    snapshot_dir: Path | None = field(default=None, metadata={"help": "the folder of the --snapshot-steps"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "save the run's state every N steps beside --out-dir and resume from it when rerun (0: never)"})


def snapshot_hook(args: FinetuneArgs, model, tokenizer, n_examples: int, hp: TrainHParams, record: dict):
    """The ``fit`` step hook writing ``--snapshot-steps`` checkpoints (None without snapshots); a step beyond the
    run's last is an error before training. ``fit`` calls the hook before step ``s``'s update, after ``s``
    updates, so ``step~s`` holds the weights after ``s`` optimiser steps (the final model is the run's own)."""
    if not args.snapshot_steps:
        return None
    total = total_steps(n_examples, hp)
    wanted = sorted(set(args.snapshot_steps))
    if wanted[0] < 1 or wanted[-1] >= total:
        raise ValueError(f"--snapshot-steps {args.snapshot_steps}: every step must lie in 1..{total - 1} (the run "
                         f"has {total} steps: --hparams epochs {hp.epochs} of {n_examples} examples at batch size "
                         f"{hp.batch_size})")

    def hook(step: int, total_: int) -> None:
        if step in wanted:
            folder = args.snapshot_dir / f"step~{step}"
            write_checkpoint(folder, model, tokenizer, {
                **record, "snapshot_step": step, "total_steps": total_, "seed": args.seed,
                "provenance": runtime.provenance(args, args.seed)})
            log.info("step %d/%d: wrote the snapshot %s", step, total_, folder)

    return hook


def freeze_classifier(model) -> None:
    """Leave the classification head (``model.classifier``) out of training: its weights keep their initialisation."""
    head = getattr(model, "classifier", None)
    if head is None:
        raise ValueError(f"--train-classifier 0: {type(model).__name__} has no `classifier` module to freeze")
    for param in head.parameters():
        param.requires_grad_(False)


def resume_of(args: FinetuneArgs) -> Resume | None:
    """The run's resumable state (``--checkpoint-every``), or None. A state from after a snapshot step whose
    folder is missing (a rerun removed it as an incomplete output) is dropped: that snapshot must be retrained."""
    if args.checkpoint_every <= 0:
        return None
    resume = Resume(state_path_for(args.out_dir), args.checkpoint_every, run_key(args))
    if args.snapshot_steps and resume.path.is_file():
        saved = resume.saved_step()
        missing = [s for s in args.snapshot_steps if saved is not None and s <= saved
                   and not (args.snapshot_dir / f"step~{s}" / "train_summary.json").is_file()]
        if missing:
            log.warning("snapshots %s are missing: restarting from step 0 instead of resuming at %s", missing, saved)
            resume.done()
    return resume


@step_main(FinetuneArgs)
def main(args: FinetuneArgs) -> int:
    hp = parse_hparams(args.hparams)
    spec = json.loads(args.model_spec)
    loss_fn = get_loss(args.loss, **json.loads(args.loss_hparams))
    if args.input_view not in INPUT_VIEWS:
        raise ValueError(f"--input-view {args.input_view!r} is unknown; choose one of {INPUT_VIEWS}")
    if args.deterministic not in (0, 1):
        raise ValueError(f"--deterministic must be 0 or 1, got {args.deterministic}")
    if args.train_classifier not in (0, 1):
        raise ValueError(f"--train-classifier must be 0 or 1, got {args.train_classifier}")
    if bool(args.snapshot_steps) != (args.snapshot_dir is not None):
        raise ValueError("--snapshot-steps and --snapshot-dir go together")
    train_df, labels, train_meta, example_tensors, dev = read_training_inputs(args)
    full_train = train_df
    if args.train_subset:
        rows = training_subset(len(train_df), args.train_subset, args.seed, str(args.train))
        train_df = train_df.iloc[rows].reset_index(drop=True)
        example_tensors = {k: v[rows] for k, v in example_tensors.items()}
    device = start(args, seed=args.seed)
    log.info("fine-tuning on %s (%d examples, labels %s) on %s, seed %d", args.train, len(train_df), labels,
             device, args.seed)

    (args.out_dir / "train_summary.json").unlink(missing_ok=True)  # a crash below leaves no finished-looking run
    sweep_staging(args.out_dir)  # what a killed run of this same output left behind
    with tempfile.TemporaryDirectory(prefix=".vocab.") as vocab_dir:  # a from-scratch model's vocabulary file
        texts = pd.concat([train_df.text_a, train_df.text_b])
        model, tokenizer = build_model_and_tokenizer(spec, labels, texts, Path(vocab_dir))
        n_params = sum(p.numel() for p in model.parameters())
        log.info("model: %s, %.2fM parameters", type(model).__name__, n_params / 1e6)
        model.config.maskbench_input_view = args.input_view  # evaluation feeds the model the same view
        if not args.train_classifier:
            freeze_classifier(model)
        if args.init_out is not None:
            write_checkpoint(args.init_out, model, tokenizer, {
                "initial_weights": True, "labels": labels, "input_view": args.input_view, "model_spec": spec,
                "n_parameters": n_params, "provenance": runtime.provenance(args, args.seed)})
        data = EncodedPairs(tokenizer, train_df.text_a, train_df.text_b, train_df.label, hp.max_length,
                            args.input_view)
        evaluate = accuracy_on(dev, tokenizer, hp, device, args.input_view) if dev is not None else None
        snapshot = snapshot_hook(args, model, tokenizer, len(data), hp, {
            "labels": labels, "input_view": args.input_view, "model_spec": spec, "n_parameters": n_params,
            "loss": args.loss, "train": str(args.train), "hparams": dataclasses.asdict(hp)})
        started = time.perf_counter()
        objective, groups = objective_and_groups(model, args.loss, loss_fn, device, hp, example_tensors)
        early = None
        if hp.early_stop_patience:
            if evaluate is None:
                raise ValueError(f"--hparams early_stop_patience {hp.early_stop_patience} needs --dev (the scores it "
                                 "stops on)")
            early = EarlyStop(hp.early_stop_patience, hp.early_stop_min_delta)
        resume = resume_of(args)
        curve = fit(model, data, objective, hp, args.seed, device, evaluate, groups=groups, step_hook=snapshot,
                    resume=resume, early_stop=early)
        if early is not None:  # the model of the best epoch is the run's
            early.restore_best(model)
        seconds = time.perf_counter() - started
        if args.train_probs_out is not None:
            # every training example, also those a weak learner never saw (its subset is a sample)
            everything = EncodedPairs(tokenizer, full_train.text_a, full_train.text_b, None, hp.max_length,
                                      args.input_view)
            write_probs(args.train_probs_out, full_train.id, predict_proba(model, everything, hp.eval_batch_size, device,
                                                                   hp.length_sorted_eval),
                        labels, {"task": train_meta.get("task"), "dataset": train_meta.get("dataset"),
                                 "source": str(args.out_dir), "provenance": runtime.provenance(args, args.seed)})
        summary = {
            "train": str(args.train), "n_train": len(train_df), "labels": labels, "loss": args.loss,
            "loss_hparams": json.loads(args.loss_hparams), "input_view": args.input_view,
            "bias_probs": str(args.bias_probs) if args.bias_probs else None,
            "hparams": dataclasses.asdict(hp), "model_spec": spec, "n_parameters": n_params,
            **({} if args.train_classifier else {"classifier_trained": False}),
            "train_seconds": seconds, "device": str(device), "total_steps": total_steps(len(data), hp),
            "final_dev_accuracy": (early.best if early is not None else
                                   next((p["dev_accuracy"] for p in reversed(curve) if "dev_accuracy" in p), None)),
            **({"early_stop": early.summary()} if early is not None else {}),
            "provenance": runtime.provenance(args, args.seed),
        }
        # weights, tokenizer and curve through a staging folder; the summary last marks a finished run
        write_checkpoint(args.out_dir, model, tokenizer, summary, curve=curve, files_from=Path(vocab_dir))
    if resume is not None:
        resume.done()
    log.info("wrote %s in %.1fs", args.out_dir, seconds)
    return 0


if __name__ == "__main__":
    run_step(main)
