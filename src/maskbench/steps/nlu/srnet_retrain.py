"""Entry point: paper C's paradigm (b) (Liu et al., "A Win-win Deal", 2022) — fine-tune the pre-trained/initial
weights under a fixed mask found elsewhere::

    python -m maskbench.steps nlu.srnet_retrain --start-dir INIT --mask M.mask --train T.parquet \
        --dev D.parquet --seed 1 --hparams JSON --out-dir results/.../retrain/seed~1

``--spec`` holds the run's settings (``tracks.nlu.srnets.spec.RetrainSpec``: whether the mask's classifier entry
applies). The mask is read WITHOUT the fingerprint check (transferring it to other weights is the point); its
module names and shapes must fit the start model. Writes a finetune-style checkpoint folder with the mask baked in,
``train_summary.json`` last.

A sweep, ``--masks A.mask B.mask ... --sweep-dir F``, retrains under each mask in one process (start-up paid
once), each into ``F/sparsity~<s>/`` with s the mask's sparsity.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.masking.apply import MaskMismatchError, MaskSet, model_fingerprint
from maskbench.masking.codec import read_mask_header
from maskbench.masking.selectors import module_kind
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.srnets import run as srnets
from maskbench.tracks.nlu.srnets.methods import (
    RETRAIN,
    check_transferable_mask,
    level_dir,
    mask_sparsity,
    retrain_with_mask,
)
from maskbench.tracks.nlu.srnets.spec import RetrainSpec

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
CARRIES_OVER = False  # state saved within a run only: a second submission trains its finished runs again
log = logging.getLogger("maskbench.steps.nlu.srnet_retrain")


@dataclass
class RetrainArgs(srnets.SrnetArgs):
    mask: Path | None = field(default=None, metadata={"help": "mask file of another run"})
    out_dir: Path | None = field(default=None, metadata={"help": "the checkpoint folder to write"})
    masks: list[Path] = field(default_factory=list, metadata={
        "help": "sweep: one run per mask file, written to <--sweep-dir>/sparsity~<s>/ with s the mask's sparsity "
                "(instead of --mask, --out-dir)"})
    sweep_dir: Path | None = field(default=None, metadata={"help": "the folder of a sweep's runs"})


def expand(args: RetrainArgs) -> tuple[list[RetrainArgs], RetrainSpec]:
    """The runs of the command (one, or one per mask of a sweep) and their spec, all checked before the first."""
    srnets.check_common(args)
    spec = srnets.parse_spec(args, RetrainSpec)
    if not args.masks:
        if args.sweep_dir is not None:
            raise ValueError("--sweep-dir is only used with --masks")
        for name in ("mask", "out_dir"):
            if getattr(args, name) is None:
                raise ValueError(f"retraining needs --{name.replace('_', '-')}")
        return [args], spec
    if args.sweep_dir is None:
        raise ValueError("a sweep (--masks) needs --sweep-dir")
    if args.mask is not None or args.out_dir is not None:
        raise ValueError("--masks replaces --mask and --out-dir")
    runs = []
    for path in args.masks:
        sparsity = read_mask_header(path)["meta"].get("sparsity")
        if sparsity is None:
            raise MaskMismatchError(f"{path}: field 'meta.sparsity' is missing; a retrain sweep names its runs "
                                    "by the mask's sparsity")
        runs.append(dataclasses.replace(args, masks=[], sweep_dir=None, mask=Path(path),
                                        out_dir=level_dir(args.sweep_dir, sparsity)))
    srnets.unique_folders([r.out_dir for r in runs])
    return runs, spec


def run(args: RetrainArgs, spec: RetrainSpec) -> int:
    """One retraining run under the fixed mask ``args.mask``."""
    common = srnets.check_common(args)
    inputs = srnets.read_inputs(args, args.mask)
    model, tokenizer, device = srnets.load_start(args, inputs)
    transfer = dict(inputs.transfer_mask)
    check_transferable_mask(transfer, model, args.mask)
    if not spec.mask_classifier:
        transfer = {n: m for n, m in transfer.items() if module_kind(n) != "classifier"}
        if not transfer:
            raise MaskMismatchError(f"{args.mask}: only classifier modules, which mask_classifier false skips")
    hp = common.hp
    prepared = srnets.prepare(model, tokenizer, inputs, hp, device)
    fingerprint, steps = prepared.fingerprint, prepared.steps
    meta = srnets.common_meta(args, RETRAIN, common, inputs)
    provenance = runtime.provenance(args, args.seed)
    started = time.perf_counter()
    log.info("retraining %s under %s (%d modules%s), %d steps, loss %s", args.start_dir, args.mask, len(transfer),
             "" if spec.mask_classifier else ", classifier dense", steps, args.loss)
    resume = srnets.resume_of(args, args.out_dir)
    curve, applied = retrain_with_mask(model, prepared.data, common.loss_fn, hp, args.seed, device, transfer,
                                       prepared.evaluate, inputs.example_tensors, args.mask, resume)
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
                                 "sparsity": source.get("sparsity"), "mask_classifier": spec.mask_classifier,
                                 "model_fingerprint": baked_fingerprint, "start_model_fingerprint": fingerprint,
                                 "model_dir": str(args.out_dir), "start_dir": str(args.start_dir),
                                 "provenance": provenance})
    summary = {**meta, **source_info, "n_train": len(inputs.train_df), "labels": inputs.labels,
               "exact_sparsity": overall, "module_sparsity": per_module, "mask_classifier": spec.mask_classifier,
               "start_dir": str(args.start_dir), "model_fingerprint": baked_fingerprint,
               "start_model_fingerprint": fingerprint, "total_steps": steps, "train_seconds": seconds,
               "device": str(device), "final_dev_accuracy": final_dev, "provenance": provenance}
    write_checkpoint(args.out_dir, model, tokenizer, summary, mask_set, curve)
    if resume is not None:
        resume.done()
    log.info("wrote %s: sparsity %.6f over %d masked matrices, dev accuracy %s, %.1fs", args.out_dir, overall,
             len(applied), final_dev, seconds)
    return 0


@step_main(RetrainArgs)
def main(args: RetrainArgs) -> int:
    runs, spec = expand(args)
    for run_args in runs:
        run(run_args, spec)
    return 0


if __name__ == "__main__":
    run_step(main)
