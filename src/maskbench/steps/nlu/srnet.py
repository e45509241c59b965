"""Entry point: paper C's sparse and robust BERT subnetworks (Liu et al., "A Win-win Deal", 2022).

One command, three methods (``--method``):

``mask_train`` (paper C, Algorithm 2) — learn a binary mask on frozen weights. On a fine-tuned start checkpoint
this is paradigm (a), on a pre-trained/initial one paradigm (c)::

    python -m maskbench.steps nlu.srnet --method mask_train --start-dir results/.../method~finetune/loss~ce/seed~1 \
        --train T.parquet --dev D.parquet --seed 1 --sparsity 0.5 --select-after 0.7 --loss poe \
        --bias-probs B.parquet --hparams JSON --tag ft --out-mask M.mask --summary M.json

    Writes the best mask (ID dev accuracy every ``--eval-every`` steps, candidates from step
    ``--select-after`` x total on; thresholds reset to ``--sparsity`` before saving, so the mask meets it per
    matrix), then ``--summary`` last. The weights never change; the mask records the start model's fingerprint.

``imp`` / ``imp_rewind`` (paper C, Algorithm 1) — iterative magnitude pruning of trainable weights, 10 % of
every matrix's original weights per round (local), optionally rewinding the weights (all but the classifier)
to the start checkpoint after every prune::

    python -m maskbench.steps nlu.srnet --method imp --start-dir FT --train T.parquet --dev D.parquet --seed 1 \
        --out-dir results/.../imp/seed~1 [--final-sparsity 0.9]

    Writes per level ``<out-dir>/sparsity~0.1/ ... sparsity~0.9/`` (a checkpoint with the mask baked in as
    zeros, ``mask.mask``, ``train_curve.csv``, ``train_summary.json`` last) and ``<out-dir>/imp_summary.json``
    after the last level.

``retrain`` (paradigm (b)) — fine-tune the pre-trained/initial weights under a fixed mask found elsewhere::

    python -m maskbench.steps nlu.srnet --method retrain --start-dir INIT --mask M.mask --train T.parquet \
        --dev D.parquet --seed 1 --out-dir results/.../retrain/seed~1

    The mask is read WITHOUT the fingerprint check (transferring it to other weights is the point); its module
    names and shapes must fit the start model. Writes a finetune-style checkpoint folder with the mask baked in,
    ``train_summary.json`` last.

Sweeps run several of these in one process (start-up paid once), each into its own folder below ``--sweep-dir``:
``--sparsities 0.2 0.5 ...`` (mask training, ``sparsity~0.2/``), ``--masks A.mask B.mask`` (retraining, named by
each mask's sparsity) and ``--runs JSON`` (mask training, ``<name>/``, each entry overriding the schedule,
initialisation or start checkpoint: Table 5's variants, the timing study's snapshots).

The OOD-informed upper bound (paper C section 4.5) trains on ``--train`` with other prepared sets mixed in,
``--mix-train '[{"path": "hans_train.parquet", "label_map": {"non-entailment": "contradiction"}}]'``, minus every
pair that occurs in ``--mix-exclude`` (the OOD test sets); see ``maskbench.data.mixing``.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from torch import nn

from maskbench import runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.data.mixing import mix_training_sets, parse_mix
from maskbench.data.schema import DataError
from maskbench.losses import NEEDS, get_loss
from maskbench.masking.apply import MaskMismatchError, MaskSet, masked_modules_fingerprint, model_fingerprint
from maskbench.masking.codec import read_mask_file, read_mask_header
from maskbench.masking.selectors import module_kind, select_linear
from maskbench.masking.sparsity import (
    INIT_KINDS,
    SCHEDULE_KINDS,
)
from maskbench.resume import Resume, run_key, state_path_for
from maskbench.steps import run_step
from maskbench.text.batches import EncodedPairs
from maskbench.text.classifier_training import accuracy_on
from maskbench.text.models import input_view, load_classifier, model_labels
from maskbench.tracks.nlu.srnets import (
    DEFAULT_MODULES,
    IMP,
    IMP_REWIND,
    IMP_SUMMARY,
    MASK_TRAIN,
    METHODS,
    RETRAIN,
    check_transferable_mask,
    iterative_magnitude_pruning,
    level_dir,
    mask_sparsity,
    retrain_with_mask,
    select_linear_or_none,
    start_step_of,
    train_mask,
)
from maskbench.tracks.nlu.training import read_training_inputs
from maskbench.train import LR_SCHEDULES, TrainHParams, parse_hparams, total_steps

log = logging.getLogger("maskbench.steps.nlu.srnet")

# what one entry of a --runs sweep may set
RUN_OVERRIDES = ("start_dir", "sparsity", "init", "schedule", "initial_sparsity", "gradual_end", "select_after")


@dataclass
class SrnetArgs:
    method: str = field(metadata={"help": f"one of {', '.join(METHODS)}"})
    start_dir: Path = field(metadata={"help": "checkpoint folder to start from (as maskbench.steps.nlu.finetune writes): "
                                              "fine-tuned for mask_train (a) / imp, pre-trained or initial for "
                                              "mask_train (c), imp_rewind and retrain"})
    train: Path = field(metadata={"help": "prepared training parquet"})
    seed: int = field(metadata={"help": "fixes data order, dropout and any freshly initialised head"})
    dev: Path | None = field(default=None, metadata={"help": "prepared ID dev parquet (required by mask_train: "
                                                             "checkpoint selection)"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    loss: str = field(default="ce", metadata={"help": "objective name in maskbench.losses (ce, poe, reweight, "
                                                      "reweight_beta, conf_reg, ...)"})
    loss_hparams: str = field(default="{}", metadata={"help": "JSON of the objective's hyper-parameters"})
    bias_probs: Path | None = field(default=None, metadata={"help": "bias model probabilities of the training set"})
    teacher_probs: Path | None = field(default=None, metadata={"help": "teacher probabilities of the training set"})
    modules: str = field(default="", metadata={
        "help": "JSON list of module kinds or regexes to mask/prune (default: paper C's — mask_train: the six "
                "encoder kinds + pooler + classifier; imp: the six encoder kinds + pooler)"})
    tag: str = field(default="", metadata={"help": "free text recorded in the outputs (e.g. the paradigm)"})
    # mask training
    sparsity: float | None = field(default=None, metadata={"help": "mask_train: target pruned fraction per matrix"})
    init: str = field(default="hard", metadata={"help": "mask_train: magnitude initialisation, hard or soft"})
    alpha: float = field(default=2.0, metadata={"help": "mask_train: hard init's kept score is alpha * phi"})
    phi: float = field(default=0.01, metadata={"help": "mask_train: hard init's threshold"})
    schedule: str = field(default="fixed", metadata={"help": "mask_train: sparsity schedule, fixed or gradual"})
    initial_sparsity: float | None = field(default=None, metadata={"help": "mask_train, gradual: starting sparsity"})
    gradual_end: float = field(default=1.0, metadata={
        "help": "mask_train, gradual: fraction of training at which --sparsity is reached"})
    reset_every: int = field(default=1000, metadata={"help": "mask_train: threshold reset interval (steps)"})
    eval_every: int = field(default=1000, metadata={"help": "mask_train: dev evaluation interval (steps)"})
    select_after: float | None = field(default=None, metadata={
        "help": "mask_train: only steps >= this fraction of training are candidates (paper C: 0.7 on a "
                "fine-tuned start, 0 on a pre-trained one)"})
    saved_mask_sparsity: str = field(default="final", metadata={
        "help": "mask_train: the sparsity the saved mask's thresholds are re-set to, final (--sparsity) or "
                "initial (paper C's code: --initial-sparsity of a gradual run)"})
    score_first_and_last: int = field(default=1, metadata={
        "help": "mask_train: 1 scores the initial mask and the last step besides every --eval-every steps; 0 "
                "only every --eval-every updates (paper C's code)"})
    keep_threshold_when_saturated: int = field(default=0, metadata={
        "help": "mask_train: 1 leaves a threshold when its reset would make it the largest score (paper C's code)"})
    out_mask: Path | None = field(default=None, metadata={"help": "mask_train: mask file to write (.mask)"})
    summary: Path | None = field(default=None, metadata={"help": "mask_train: JSON summary, written last"})
    # IMP
    final_sparsity: float = field(default=0.9, metadata={"help": "imp: the last sparsity level"})
    imp_rounds: int = field(default=10, metadata={"help": "imp: pruning intervals; each lasts total/rounds steps"})
    imp_step: float = field(default=0.1, metadata={"help": "imp: fraction of the original weights pruned per round"})
    out_dir: Path | None = field(default=None, metadata={"help": "imp: folder of the levels; retrain: checkpoint"})
    # retrain
    mask: Path | None = field(default=None, metadata={"help": "retrain: mask file of another run"})
    mask_classifier: int = field(default=0, metadata={
        "help": "retrain: 1 applies the mask's classifier entry too (paper C: 0, the head trains dense)"})
    # sweeps: several runs in one process (start-up paid once); see `expand_sweep`
    sparsities: list[float] = field(default_factory=list, metadata={
        "help": "mask_train sweep: one run per sparsity, written to <--sweep-dir>/sparsity~<s>/{mask.mask,"
                "search.json} (instead of --sparsity, --out-mask, --summary)"})
    masks: list[Path] = field(default_factory=list, metadata={
        "help": "retrain sweep: one run per mask file, written to <--sweep-dir>/sparsity~<s>/ with s the mask's "
                "sparsity (instead of --mask, --out-dir)"})
    runs: str = field(default="", metadata={
        "help": "mask_train sweep: JSON list of runs, each {\"name\": N, ...overrides of "
                f"{', '.join(RUN_OVERRIDES)}}}, written to <--sweep-dir>/<N>/{{mask.mask,search.json}} (Table 5's "
                "schedules, the timing study's start checkpoints)"})
    sweep_dir: Path | None = field(default=None, metadata={"help": "the folder of a sweep's runs"})
    # the OOD-informed upper bound (paper C section 4.5)
    mix_train: str = field(default="", metadata={
        "help": "JSON list of {path, repeat, label_map}: prepared sets mixed into --train (see "
                "maskbench.data.mixing); only with a loss that reads no per-example inputs (ce)"})
    mix_exclude: list[Path] = field(default_factory=list, metadata={
        "help": "prepared sets (the OOD test sets) whose pairs are dropped from the mixed-in examples"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "mask_train and retrain: save the run's state every N steps beside its output and resume from it "
                "when rerun (0: never; IMP restarts its rounds)"})
    deterministic: int = field(default=0, metadata={
        "help": "1: deterministic kernels only (repeatable bits on GPUs, some speed lost; CPU runs are already)"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda[:N]"})


# arguments only some methods read; giving one to another method is an error rather than silently ignored
_ONLY_FOR = {
    "sparsity": (MASK_TRAIN,), "init": (MASK_TRAIN,), "alpha": (MASK_TRAIN,), "phi": (MASK_TRAIN,),
    "schedule": (MASK_TRAIN,), "initial_sparsity": (MASK_TRAIN,), "gradual_end": (MASK_TRAIN,),
    "reset_every": (MASK_TRAIN,), "eval_every": (MASK_TRAIN,), "select_after": (MASK_TRAIN,),
    "saved_mask_sparsity": (MASK_TRAIN,), "score_first_and_last": (MASK_TRAIN,),
    "keep_threshold_when_saturated": (MASK_TRAIN,),
    "out_mask": (MASK_TRAIN,), "summary": (MASK_TRAIN,), "modules": (MASK_TRAIN, IMP, IMP_REWIND),
    "final_sparsity": (IMP, IMP_REWIND), "imp_rounds": (IMP, IMP_REWIND), "imp_step": (IMP, IMP_REWIND),
    "out_dir": (IMP, IMP_REWIND, RETRAIN), "mask": (RETRAIN,), "mask_classifier": (RETRAIN,),
}
_REQUIRED_FOR = {
    MASK_TRAIN: ("dev", "sparsity", "select_after", "out_mask", "summary"),
    IMP: ("out_dir",), IMP_REWIND: ("out_dir",), RETRAIN: ("mask", "out_dir"),
}


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_args(argv=None) -> SrnetArgs:
    return parse_dataclass(SrnetArgs, argv, "python -m maskbench.steps nlu.srnet", __doc__.splitlines()[0])


@dataclass
class Plan:
    """The checked, parsed arguments of one run."""

    hp: TrainHParams
    loss_fn: Callable
    loss_hparams: dict
    modules: tuple[str, ...]
    levels: list[float] = field(default_factory=list)  # imp: the sparsity of every round


def check_args(args: SrnetArgs) -> Plan:
    """Every argument-only check, with a message naming the argument; nothing is read or trained yet."""
    if args.method not in METHODS:
        raise ValueError(f"--method {args.method!r} is unknown; choose one of {METHODS}")
    defaults = {f.name: f.default for f in dataclasses.fields(SrnetArgs)}
    for name, users in _ONLY_FOR.items():
        if args.method not in users and getattr(args, name) != defaults[name]:
            raise ValueError(f"{_flag(name)} is only used by --method {' / '.join(users)}, not {args.method}")
    for name in _REQUIRED_FOR[args.method]:
        if getattr(args, name) is None:
            raise ValueError(f"--method {args.method} needs {_flag(name)}")
    hp = parse_hparams(args.hparams)
    if hp.lr_schedule not in LR_SCHEDULES:
        raise ValueError(f"--hparams: lr_schedule {hp.lr_schedule!r} is unknown; choose one of {LR_SCHEDULES}")
    loss_hparams = json.loads(args.loss_hparams)
    loss_fn = get_loss(args.loss, **loss_hparams)
    if "gate" in NEEDS[args.loss]:
        raise ValueError(f"--loss {args.loss!r} needs a learned gate, which paper C's methods do not train (use it "
                         "with maskbench.steps.nlu.finetune or mask_search)")
    modules: tuple[str, ...] = ()
    if args.method in DEFAULT_MODULES:
        modules = DEFAULT_MODULES[args.method]
        if args.modules:
            chosen = json.loads(args.modules)
            if not (isinstance(chosen, list) and chosen and all(isinstance(m, str) for m in chosen)):
                raise ValueError(f"--modules must be a non-empty JSON list of module kinds or regexes, got "
                                 f"{args.modules!r}")
            modules = tuple(chosen)
    plan = Plan(hp, loss_fn, loss_hparams, modules)
    if args.method == MASK_TRAIN:
        if not 0.0 < args.sparsity < 1.0:  # also refuses NaN
            raise ValueError(f"--sparsity must lie in (0, 1) (the pruned fraction), got {args.sparsity}")
        if args.init not in INIT_KINDS:
            raise ValueError(f"--init {args.init!r} is unknown; choose one of {INIT_KINDS}")
        if args.schedule not in SCHEDULE_KINDS:
            raise ValueError(f"--schedule {args.schedule!r} is unknown; choose one of {SCHEDULE_KINDS}")
        if args.schedule == "gradual":
            if args.initial_sparsity is None:
                raise ValueError("--schedule gradual needs --initial-sparsity (paper C: 0.7 -> 0.9)")
            if not 0.0 <= args.initial_sparsity <= args.sparsity:
                raise ValueError(f"--initial-sparsity must lie in [0, --sparsity = {args.sparsity}], got "
                                 f"{args.initial_sparsity}")
        elif args.initial_sparsity is not None:
            raise ValueError("--initial-sparsity is only used by --schedule gradual")
        if not 0.0 < args.gradual_end <= 1.0:
            raise ValueError(f"--gradual-end must lie in (0, 1], got {args.gradual_end}")
        if args.init == "hard" and not args.alpha * args.phi > args.phi:
            raise ValueError(f"--alpha {args.alpha} x --phi {args.phi} must exceed --phi (paper C: 2 and 0.01)")
        for name in ("reset_every", "eval_every"):
            if getattr(args, name) < 1:
                raise ValueError(f"{_flag(name)} must be a positive number of steps, got {getattr(args, name)}")
        if not 0.0 <= args.select_after <= 1.0:
            raise ValueError(f"--select-after must lie in [0, 1] (a fraction of training), got {args.select_after}")
        if args.saved_mask_sparsity not in ("final", "initial"):
            raise ValueError(f"--saved-mask-sparsity must be final or initial, got {args.saved_mask_sparsity!r}")
        for name in ("score_first_and_last", "keep_threshold_when_saturated"):
            if getattr(args, name) not in (0, 1):
                raise ValueError(f"{_flag(name)} must be 0 or 1, got {getattr(args, name)}")
    if args.method in (IMP, IMP_REWIND):
        if args.imp_rounds < 1:
            raise ValueError(f"--imp-rounds must be >= 1, got {args.imp_rounds}")
        if not 0.0 < args.imp_step < 1.0:
            raise ValueError(f"--imp-step must lie in (0, 1), got {args.imp_step}")
        if not 0.0 < args.final_sparsity < 1.0:
            raise ValueError(f"--final-sparsity must lie in (0, 1), got {args.final_sparsity}")
        n_levels = round(args.final_sparsity / args.imp_step)
        if abs(n_levels * args.imp_step - args.final_sparsity) > 1e-9:
            raise ValueError(f"--final-sparsity {args.final_sparsity} is not a multiple of --imp-step "
                             f"{args.imp_step}")
        if n_levels > args.imp_rounds:
            raise ValueError(f"--final-sparsity {args.final_sparsity} needs {n_levels} prunes, more than "
                             f"--imp-rounds {args.imp_rounds}")
        plan.levels = [round(n * args.imp_step, 10) for n in range(1, n_levels + 1)]
    if args.mix_train:
        parse_mix(args.mix_train)
        if NEEDS[args.loss]:
            raise ValueError(f"--mix-train: loss {args.loss!r} reads per-example {sorted(NEEDS[args.loss])}, which "
                             "the mixed-in examples lack; the OOD-informed runs train with ce")
    elif args.mix_exclude:
        raise ValueError("--mix-exclude is only used with --mix-train")
    if args.deterministic not in (0, 1):
        raise ValueError(f"--deterministic must be 0 or 1, got {args.deterministic}")
    if args.mask_classifier not in (0, 1):
        raise ValueError(f"--mask-classifier must be 0 or 1, got {args.mask_classifier}")
    return plan


# ----------------------------------------------------------------------------------------------- mask training


# ---------------------------------------------------------------------------------------------------- IMP


# ------------------------------------------------------------------------------------------------- retrain


# ------------------------------------------------------------------------------------------------- writing


# ---------------------------------------------------------------------------------------------------- main
@dataclass
class Inputs:
    train_df: pd.DataFrame
    labels: list[str]
    train_meta: dict
    example_tensors: dict
    dev: pd.DataFrame | None
    transfer_mask: dict[str, np.ndarray] | None = None
    transfer_meta: dict | None = None
    mixed: list[dict] = field(default_factory=list)  # --mix-train: what was mixed in


def read_inputs(args: SrnetArgs) -> Inputs:
    train_df, labels, train_meta, example_tensors, dev = read_training_inputs(args)
    inputs = Inputs(train_df, labels, train_meta, example_tensors, dev)
    if args.mix_train:
        n_id = len(train_df)
        inputs.train_df, inputs.mixed = mix_training_sets(train_df, labels, parse_mix(args.mix_train),
                                                          args.mix_exclude)
        log.info("training on %d examples: %d of %s and %s", len(inputs.train_df), n_id, args.train,
                 ", ".join(f"{r['n_added']} of {r['path']} ({r['repeat']}x, {r['n_dropped_as_test']} dropped as "
                           f"test pairs)" for r in inputs.mixed))
    if args.mask is not None:
        inputs.transfer_mask, inputs.transfer_meta = read_mask_file(args.mask)  # no fingerprint check, on purpose
    return inputs


def _common_meta(args: SrnetArgs, plan: Plan, inputs: Inputs) -> dict:
    return {"method": args.method, "tag": args.tag, "loss": args.loss, "loss_hparams": plan.loss_hparams,
            "bias_probs": str(args.bias_probs) if args.bias_probs else None,
            "teacher_probs": str(args.teacher_probs) if args.teacher_probs else None,
            "hparams": dataclasses.asdict(plan.hp), "seed": args.seed, "train": str(args.train),
            "task": inputs.train_meta.get("task"), "model_dir": str(args.start_dir),
            "start_step": start_step_of(args.start_dir),
            "n_train": len(inputs.train_df), "mixed_in": inputs.mixed,
            # paper C masks weights only; a mask file's readers must not zero biases of empty rows
            "zero_bias_of_empty_rows": False}


def resume_of(args: SrnetArgs, output: Path) -> Resume | None:
    """The resumable state of one run writing ``output`` (``--checkpoint-every``), or None."""
    if args.checkpoint_every <= 0:
        return None
    return Resume(state_path_for(output), args.checkpoint_every, run_key(args))


def run(args: SrnetArgs, on_prune=None) -> int:
    """Run one method; ``on_prune`` is passed to ``iterative_magnitude_pruning`` (tests)."""
    plan = check_args(args)
    inputs = read_inputs(args)
    runtime.set_threads(args.threads)
    runtime.set_deterministic(bool(args.deterministic))
    device = runtime.pick_device(args.device)
    runtime.seed_everything(args.seed)  # before loading: a checkpoint without a head gets a seeded one
    model, tokenizer = load_classifier(args.start_dir)
    if model_labels(model) != inputs.labels:
        raise DataError(f"{args.train}: field 'labels' is {inputs.labels}, but the model in {args.start_dir} "
                        f"predicts {model_labels(model)}")
    transfer = None
    if args.method == RETRAIN:
        transfer = dict(inputs.transfer_mask)
        check_transferable_mask(transfer, model, args.mask)
        if not args.mask_classifier:
            transfer = {n: m for n, m in transfer.items() if module_kind(n) != "classifier"}
            if not transfer:
                raise MaskMismatchError(f"{args.mask}: only classifier modules, which --mask-classifier 0 skips")
    elif plan.modules:
        if not args.modules and not select_linear_or_none(model, "pooler"):
            # the default names the pooler, which some classifiers lack (e.g. RoBERTa's); an explicit list is strict
            plan.modules = tuple(m for m in plan.modules if m != "pooler")
            log.warning("%s has no pooler; masking the default modules without it", args.start_dir)
        select_linear(model, list(plan.modules), "--modules")  # a typo fails here, before any training
    fingerprint = model_fingerprint(model)
    view = input_view(model)
    hp = plan.hp
    data = EncodedPairs(tokenizer, inputs.train_df.text_a, inputs.train_df.text_b, inputs.train_df.label,
                        hp.max_length, view)
    steps = total_steps(len(data), hp)
    if args.method in (IMP, IMP_REWIND) and steps < args.imp_rounds:
        raise ValueError(f"--imp-rounds {args.imp_rounds}: the run has only {steps} steps (--hparams epochs "
                         f"{hp.epochs} of {len(data)} examples at batch size {hp.batch_size})")
    evaluate = accuracy_on(inputs.dev, tokenizer, hp, device, view) if inputs.dev is not None else None
    meta = _common_meta(args, plan, inputs)
    provenance = runtime.provenance(args, args.seed)
    started = time.perf_counter()

    if args.method == MASK_TRAIN:
        args.summary.unlink(missing_ok=True)  # a crash below must not leave an old summary beside a new mask
        log.info("mask training on %s: %d steps, sparsity %.3f (%s, %s init), loss %s, select from %.2f x total",
                 args.start_dir, steps, args.sparsity, args.schedule, args.init, args.loss, args.select_after)
        result = train_mask(model, data, plan.loss_fn, hp, args.seed, device, evaluate, modules=plan.modules,
                            sparsity=args.sparsity, init=args.init, alpha=args.alpha, phi=args.phi,
                            schedule=args.schedule, initial_sparsity=args.initial_sparsity,
                            gradual_end=args.gradual_end, reset_every=args.reset_every, eval_every=args.eval_every,
                            select_after=args.select_after, saved_mask_sparsity=args.saved_mask_sparsity,
                            score_first_and_last=bool(args.score_first_and_last),
                            keep_threshold_when_saturated=bool(args.keep_threshold_when_saturated),
                            example_tensors=inputs.example_tensors,
                            resume=resume_of(args, args.out_mask))
        seconds = time.perf_counter() - started
        after = model_fingerprint(model)
        if after != fingerprint:
            raise RuntimeError(f"mask training changed the weights of {args.start_dir} (fingerprint {after[:16]}… "
                               f"!= {fingerprint[:16]}…); no mask written")
        per_module, overall = mask_sparsity(result.masks)
        mask_set = MaskSet(result.masks, {
            **meta, "sparsity": args.sparsity, "exact_sparsity": overall, "init": args.init, "alpha": args.alpha,
            "phi": args.phi, "schedule": args.schedule, "initial_sparsity": args.initial_sparsity,
            "gradual_end": args.gradual_end, "reset_every": args.reset_every, "eval_every": args.eval_every,
            "select_after": args.select_after, "modules": list(plan.modules), "total_steps": result.total_steps,
            "selected_step": result.selected_step, "dev_accuracy": result.selected_dev_accuracy,
            "saved_mask_dev_accuracy": result.saved_dev_accuracy, "model_fingerprint": fingerprint,
            "masked_fingerprint": masked_modules_fingerprint(model, result.masks), "provenance": provenance})
        stats = mask_set.save(args.out_mask)
        runtime.atomic_write_json(args.summary, {
            "mask": str(args.out_mask), "method": args.method, "tag": args.tag, "sparsity": args.sparsity,
            "exact_sparsity": overall, "module_sparsity": per_module, "total_steps": result.total_steps,
            "first_candidate_step": result.first_candidate_step, "selected_step": result.selected_step,
            "selected_dev_accuracy": result.selected_dev_accuracy,
            "saved_mask_dev_accuracy": result.saved_dev_accuracy,
            "dev_accuracies": result.evals, "sparsity_history": result.history, "curve": result.curve,
            "weights_unchanged": True, "model_fingerprint": fingerprint, "file": stats, "seconds": seconds,
            "device": str(device), "meta": {k: v for k, v in mask_set.meta.items() if k != "provenance"},
            "provenance": provenance})
        if args.checkpoint_every > 0:
            resume_of(args, args.out_mask).done()
        log.info("wrote %s: step %d selected (dev %.2f, saved mask %.2f), sparsity %.6f, %.1fs", args.out_mask,
                 result.selected_step, result.selected_dev_accuracy, result.saved_dev_accuracy, overall, seconds)
        return 0

    if args.method in (IMP, IMP_REWIND):
        (args.out_dir / IMP_SUMMARY).unlink(missing_ok=True)
        rewind = args.method == IMP_REWIND
        written = []

        def save_level(level: dict, plain_model: nn.Module) -> None:
            folder = level_dir(args.out_dir, level["sparsity"])
            baked_fingerprint = model_fingerprint(plain_model)
            mask_set = MaskSet(level["masks"], {
                **meta, "sparsity": level["sparsity"], "exact_sparsity": level["exact_sparsity"],
                "round": level["round"], "modules": list(plan.modules), "rewind": rewind,
                "model_fingerprint": baked_fingerprint, "start_model_fingerprint": fingerprint,
                "model_dir": str(folder), "start_dir": str(args.start_dir), "dev_accuracy": level["dev_accuracy"],
                "provenance": provenance})
            summary = {k: v for k, v in level.items() if k not in ("masks",)}
            summary.update(method=args.method, tag=args.tag, start_dir=str(args.start_dir), rewind=rewind,
                           final_dev_accuracy=level["dev_accuracy"], model_fingerprint=baked_fingerprint,
                           start_model_fingerprint=fingerprint, total_steps=steps, labels=inputs.labels,
                           hparams=dataclasses.asdict(hp), loss=args.loss, seed=args.seed, provenance=provenance)
            write_checkpoint(folder, plain_model, tokenizer, summary, mask_set, level["curve"])
            written.append(str(folder))

        log.info("%s on %s: %d steps, levels %s, loss %s", args.method, args.start_dir, steps, plan.levels,
                 args.loss)
        levels = iterative_magnitude_pruning(
            model, data, plan.loss_fn, hp, args.seed, device, evaluate, modules=plan.modules,
            final_sparsity=args.final_sparsity, rounds=args.imp_rounds, step=args.imp_step, rewind=rewind,
            example_tensors=inputs.example_tensors, on_prune=on_prune, on_level=save_level)
        seconds = time.perf_counter() - started
        runtime.atomic_write_json(args.out_dir / IMP_SUMMARY, {
            "method": args.method, "tag": args.tag, "start_dir": str(args.start_dir), "levels": [
                {k: v for k, v in level.items() if k not in ("masks", "curve", "module_sparsity")} for level in levels],
            "checkpoints": written, "total_steps": steps, "start_model_fingerprint": fingerprint,
            "seconds": seconds, "device": str(device), "meta": meta, "provenance": provenance})
        log.info("wrote %d IMP levels under %s in %.1fs", len(levels), args.out_dir, seconds)
        return 0

    # retrain (paradigm (b))
    log.info("retraining %s under %s (%d modules%s), %d steps, loss %s", args.start_dir, args.mask, len(transfer),
             "" if args.mask_classifier else ", classifier dense", steps, args.loss)
    resume = resume_of(args, args.out_dir)
    curve, applied = retrain_with_mask(model, data, plan.loss_fn, hp, args.seed, device, transfer, evaluate,
                                       inputs.example_tensors, args.mask, resume)
    seconds = time.perf_counter() - started
    per_module, overall = mask_sparsity(applied)
    baked_fingerprint = model_fingerprint(model)
    source = inputs.transfer_meta or {}
    source_info = {"source_mask": str(args.mask), "source_method": source.get("method"),
                   "source_tag": source.get("tag"), "source_sparsity": source.get("sparsity"),
                   "source_model_dir": source.get("model_dir"),
                   "source_model_fingerprint": source.get("model_fingerprint")}
    final_dev = next((p["dev_accuracy"] for p in reversed(curve) if "dev_accuracy" in p), None)
    mask_set = MaskSet(applied, {**meta, **source_info, "exact_sparsity": overall,
                                 "sparsity": source.get("sparsity"), "mask_classifier": bool(args.mask_classifier),
                                 "model_fingerprint": baked_fingerprint, "start_model_fingerprint": fingerprint,
                                 "model_dir": str(args.out_dir), "start_dir": str(args.start_dir),
                                 "provenance": provenance})
    summary = {**meta, **source_info, "n_train": len(inputs.train_df), "labels": inputs.labels,
               "exact_sparsity": overall, "module_sparsity": per_module, "mask_classifier": bool(args.mask_classifier),
               "start_dir": str(args.start_dir), "model_fingerprint": baked_fingerprint,
               "start_model_fingerprint": fingerprint, "total_steps": steps, "train_seconds": seconds,
               "device": str(device), "final_dev_accuracy": final_dev, "provenance": provenance}
    write_checkpoint(args.out_dir, model, tokenizer, summary, mask_set, curve)
    if resume is not None:
        resume.done()
    log.info("wrote %s: sparsity %.6f over %d masked matrices, dev accuracy %s, %.1fs", args.out_dir, overall,
             len(applied), final_dev, seconds)
    return 0


def parse_runs(args: SrnetArgs) -> dict[str, dict]:
    """``--runs``: name -> overrides (only RUN_OVERRIDES; a name is one folder level of plain characters)."""
    if args.method != MASK_TRAIN:
        raise ValueError("--runs sweeps --method mask_train only")
    if args.out_mask is not None or args.summary is not None:
        raise ValueError("--runs replaces --out-mask and --summary")
    try:
        items = json.loads(args.runs)
    except json.JSONDecodeError as err:
        raise ValueError(f"--runs: not JSON ({err}): {args.runs[:80]!r}") from err
    if not isinstance(items, list) or not items:
        raise ValueError(f"--runs must be a non-empty JSON list of objects, got {args.runs[:80]!r}")
    runs: dict[str, dict] = {}
    for i, item in enumerate(items):
        name = item.get("name") if isinstance(item, dict) else None
        if (not isinstance(name, str) or name.strip(".") == "" or
                not all(c.isalnum() or c in "._~-" for c in name)):
            raise ValueError(f"--runs[{i}]: field 'name' must be a folder name of letters, digits and ._~-, got "
                             f"{name!r}")
        if name in runs:
            raise ValueError(f"--runs[{i}]: field 'name' {name!r} is given twice")
        unknown = sorted(set(item) - {"name", *RUN_OVERRIDES})
        if unknown:
            raise ValueError(f"--runs[{i}] ({name}): {unknown} cannot be set per run; choose from {RUN_OVERRIDES}")
        overrides = {k: v for k, v in item.items() if k != "name"}
        if "start_dir" in overrides:
            overrides["start_dir"] = Path(overrides["start_dir"])
        runs[name] = overrides
    return runs


def expand_sweep(args: SrnetArgs) -> list[SrnetArgs]:
    """The runs of a sweep (``--sparsities`` for mask_train, ``--masks`` for retrain), each a plain srnet run;
    a plain run is returned as it is. Every run is checked before the first one starts."""
    kinds = [name for name in ("sparsities", "masks", "runs") if getattr(args, name)]
    if not kinds:
        if args.sweep_dir is not None:
            raise ValueError("--sweep-dir is only used with --sparsities, --masks or --runs")
        return [args]
    if len(kinds) > 1:
        raise ValueError(f"one sweep per process: {' and '.join(_flag(k) for k in kinds)} given together")
    if args.sweep_dir is None:
        raise ValueError(f"a sweep ({_flag(kinds[0])}) needs --sweep-dir")
    plain = {"sparsities": [], "masks": [], "runs": "", "sweep_dir": None}
    if args.runs:
        runs = [dataclasses.replace(args, **plain, **overrides, out_mask=args.sweep_dir / name / "mask.mask",
                                    summary=args.sweep_dir / name / "search.json")
                for name, overrides in parse_runs(args).items()]
    elif args.sparsities:
        if args.method != MASK_TRAIN or args.masks:
            raise ValueError("--sparsities sweeps --method mask_train only (retrain sweeps take --masks)")
        if args.sparsity is not None or args.out_mask is not None or args.summary is not None:
            raise ValueError("--sparsities replaces --sparsity, --out-mask and --summary")
        runs = [dataclasses.replace(args, **plain, sparsity=float(sp), out_mask=level_dir(args.sweep_dir, sp) / "mask.mask",
                                    summary=level_dir(args.sweep_dir, sp) / "search.json") for sp in args.sparsities]
    else:
        if args.method != RETRAIN:
            raise ValueError("--masks sweeps --method retrain only")
        if args.mask is not None or args.out_dir is not None:
            raise ValueError("--masks replaces --mask and --out-dir")
        runs = []
        for path in args.masks:
            sparsity = read_mask_header(path)["meta"].get("sparsity")
            if sparsity is None:
                raise MaskMismatchError(f"{path}: field 'meta.sparsity' is missing; a retrain sweep names its runs "
                                        "by the mask's sparsity")
            runs.append(dataclasses.replace(args, **plain, mask=Path(path), out_dir=level_dir(args.sweep_dir, sparsity)))
    folders = [r.out_dir or r.out_mask.parent for r in runs]
    if len(set(folders)) != len(folders):
        raise ValueError(f"the sweep writes two runs to the same folder: {[str(f) for f in folders]}")
    for run_args in runs:
        check_args(run_args)
    return runs


def main(argv=None) -> int:
    setup_logging()
    for run_args in expand_sweep(parse_args(argv)):
        run(run_args)
    return 0


if __name__ == "__main__":
    run_step(main)
