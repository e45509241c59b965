"""What paper C's three steps (``maskbench.steps.nlu.srnet_mask_train``, ``srnet_imp``, ``srnet_retrain``) share:
their common arguments, the checks of them, the inputs read before any training, the start model and the data,
and the metadata every output records.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench import resume
from maskbench.compute import Compute, Deterministic, start, step_arguments
from maskbench.data.mixing import mix_training_sets, parse_mix
from maskbench.data.schema import DataError
from maskbench.masking.apply import model_fingerprint
from maskbench.masking.codec import read_mask_file
from maskbench.masking.selectors import select_linear
from maskbench.objectives.losses import NEEDS, get_loss
from maskbench.resume import Resume
from maskbench.text.batches import EncodedPairs
from maskbench.text.classifier_training import accuracy_on
from maskbench.text.models import input_view, load_classifier, model_labels
from maskbench.tracks.nlu.srnets.methods import DEFAULT_MODULES, select_linear_or_none, start_step_of
from maskbench.tracks.nlu.training import read_training_inputs
from maskbench.training.hparams import LR_SCHEDULES, TrainHParams, parse_hparams, total_steps

log = logging.getLogger("maskbench.steps.nlu.srnet")


@step_arguments(Deterministic, Compute)
class SrnetArgs:
    """The arguments of every paper C step (each step adds its own outputs)."""

    start_dir: Path = field(metadata={"help": "checkpoint folder to start from (as maskbench.steps.finetune writes)"})
    train: Path = field(metadata={"help": "prepared training parquet"})
    seed: int = field(metadata={"help": "fixes data order, dropout and any freshly initialised head"})
    dev: Path | None = field(default=None, metadata={"help": "prepared ID dev parquet"})
    spec: str = field(default="{}", metadata={"help": "JSON of the method's spec fields (tracks.nlu.srnets.spec)"})
    hparams: str = field(default="{}", metadata={"help": "JSON of TrainHParams fields"})
    loss: str = field(default="ce", metadata={"help": "objective name in maskbench.objectives.losses (ce, poe, reweight, "
                                                      "reweight_beta, conf_reg, ...)"})
    loss_hparams: str = field(default="{}", metadata={"help": "JSON of the objective's hyper-parameters"})
    bias_probs: Path | None = field(default=None, metadata={"help": "bias model probabilities of the training set"})
    teacher_probs: Path | None = field(default=None, metadata={"help": "teacher probabilities of the training set"})
    tag: str = field(default="", metadata={"help": "free text recorded in the outputs (the run's name)"})
    # the OOD-informed upper bound (paper C section 4.5)
    mix_train: str = field(default="", metadata={
        "help": "JSON list of {path, repeat, label_map}: prepared sets mixed into --train (see "
                "maskbench.data.mixing); only with a loss that reads no per-example inputs (ce)"})
    mix_exclude: list[Path] = field(default_factory=list, metadata={
        "help": "prepared sets (the OOD test sets) whose pairs are dropped from the mixed-in examples"})
    checkpoint_every: int = field(default=0, metadata={
        "help": "save the run's state every N steps beside its output and resume from it when rerun (0: never; IMP "
                "keeps its finished levels instead, and restarts a round)"})


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def parse_spec(args: SrnetArgs, spec_class, **overrides):
    """``--spec`` as the method's typed spec (its one validation), with ``overrides`` set."""
    try:
        values = json.loads(args.spec)
    except json.JSONDecodeError as err:
        raise ValueError(f"--spec: not JSON ({err}): {args.spec[:80]!r}") from err
    if not isinstance(values, dict):
        raise ValueError(f"--spec must be a JSON object of {spec_class.__name__} fields, got {args.spec[:80]!r}")
    return spec_class.from_dict({**values, **overrides})


def spec_json(spec) -> str:
    """A resolved spec as ``--spec`` JSON (recorded in a run's arguments, so its resume key names the spec)."""
    return json.dumps({k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(spec).items()})


@dataclass
class Common:
    """The checked, parsed arguments every method reads."""

    hp: TrainHParams
    loss_fn: Callable
    loss_hparams: dict


def check_common(args: SrnetArgs) -> Common:
    """Every argument-only check the methods share, with a message naming the argument."""
    hp = parse_hparams(args.hparams)
    if hp.lr_schedule not in LR_SCHEDULES:
        raise ValueError(f"--hparams: lr_schedule {hp.lr_schedule!r} is unknown; choose one of {LR_SCHEDULES}")
    loss_hparams = json.loads(args.loss_hparams)
    loss_fn = get_loss(args.loss, **loss_hparams)
    if "gate" in NEEDS[args.loss]:
        raise ValueError(f"--loss {args.loss!r} needs a learned gate, which paper C's methods do not train (use it "
                         "with maskbench.steps.finetune or mask_search)")
    if args.mix_train:
        parse_mix(args.mix_train)
        if NEEDS[args.loss]:
            raise ValueError(f"--mix-train: loss {args.loss!r} reads per-example {sorted(NEEDS[args.loss])}, which "
                             "the mixed-in examples lack; the OOD-informed runs train with ce")
    elif args.mix_exclude:
        raise ValueError("--mix-exclude is only used with --mix-train")
    if args.deterministic not in (0, 1):
        raise ValueError(f"--deterministic must be 0 or 1, got {args.deterministic}")
    return Common(hp, loss_fn, loss_hparams)


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


def read_inputs(args: SrnetArgs, mask: Path | None = None) -> Inputs:
    """The training data (with any mixed-in sets), the dev set and, for retraining, the transferred ``mask``."""
    train_df, labels, train_meta, example_tensors, dev = read_training_inputs(args)
    inputs = Inputs(train_df, labels, train_meta, example_tensors, dev)
    if args.mix_train:
        n_id = len(train_df)
        inputs.train_df, inputs.mixed = mix_training_sets(train_df, labels, parse_mix(args.mix_train),
                                                          args.mix_exclude)
        log.info("training on %d examples: %d of %s and %s", len(inputs.train_df), n_id, args.train,
                 ", ".join(f"{r['n_added']} of {r['path']} ({r['repeat']}x, {r['n_dropped_as_test']} dropped as "
                           f"test pairs)" for r in inputs.mixed))
    if mask is not None:
        inputs.transfer_mask, inputs.transfer_meta = read_mask_file(mask)  # no fingerprint check, on purpose
    return inputs


def load_start(args: SrnetArgs, inputs: Inputs):
    """Threads, determinism, device and seed set, then the start model: (model, tokenizer, device)."""
    device = start(args, seed=args.seed)  # seeded before loading: a checkpoint without a head gets a seeded one
    model, tokenizer = load_classifier(args.start_dir)
    if model_labels(model) != inputs.labels:
        raise DataError(f"{args.train}: field 'labels' is {inputs.labels}, but the model in {args.start_dir} "
                        f"predicts {model_labels(model)}")
    return model, tokenizer, device


def chosen_modules(args: SrnetArgs, method: str, modules: tuple[str, ...] | None, model) -> tuple[str, ...]:
    """The spec's modules, or paper C's for the method (without the pooler when the model has none); a module
    name or kind that matches nothing fails here, before any training."""
    if modules is None:
        modules = DEFAULT_MODULES[method]
        if not select_linear_or_none(model, "pooler"):
            # the default names the pooler, which some classifiers lack (e.g. RoBERTa's); an explicit list is strict
            modules = tuple(m for m in modules if m != "pooler")
            log.warning("%s has no pooler; masking the default modules without it", args.start_dir)
    select_linear(model, list(modules), "--spec modules")
    return tuple(modules)


@dataclass
class Prepared:
    """The start model's fingerprint, the encoded training data and its step count, the dev scorer."""

    fingerprint: str
    data: EncodedPairs
    steps: int
    evaluate: Callable | None


def prepare(model, tokenizer, inputs: Inputs, hp: TrainHParams, device) -> Prepared:
    fingerprint = model_fingerprint(model)
    view = input_view(model)
    data = EncodedPairs(tokenizer, inputs.train_df.text_a, inputs.train_df.text_b, inputs.train_df.label,
                        hp.max_length, view)
    steps = total_steps(len(data), hp)
    evaluate = accuracy_on(inputs.dev, tokenizer, hp, device, view) if inputs.dev is not None else None
    return Prepared(fingerprint, data, steps, evaluate)


def common_meta(args: SrnetArgs, method: str, common: Common, inputs: Inputs) -> dict:
    return {"method": method, "tag": args.tag, "loss": args.loss, "loss_hparams": common.loss_hparams,
            "bias_probs": str(args.bias_probs) if args.bias_probs else None,
            "teacher_probs": str(args.teacher_probs) if args.teacher_probs else None,
            "hparams": dataclasses.asdict(common.hp), "seed": args.seed, "train": str(args.train),
            "task": inputs.train_meta.get("task"), "model_dir": str(args.start_dir),
            "start_step": start_step_of(args.start_dir),
            "n_train": len(inputs.train_df), "mixed_in": inputs.mixed,
            # paper C masks weights only; a mask file's readers must not zero biases of empty rows
            "zero_bias_of_empty_rows": False}


def resume_of(args: SrnetArgs, output: Path) -> Resume | None:
    """The resumable state of one run writing ``output`` (``--checkpoint-every``), or None."""
    return resume.resume_of(args, output)


def unique_folders(folders: list[Path]) -> None:
    if len(set(folders)) != len(folders):
        raise ValueError(f"the sweep writes two runs to the same folder: {[str(f) for f in folders]}")
