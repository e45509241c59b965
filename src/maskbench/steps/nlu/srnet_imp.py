"""Entry point: paper C's iterative magnitude pruning (Liu et al., "A Win-win Deal", 2022, Algorithm 1) of
trainable weights, 10 % of every matrix's original weights per round (local), optionally rewinding the weights
(all but the classifier) to the start checkpoint after every prune::

    python -m maskbench.steps nlu.srnet_imp --start-dir FT --train T.parquet --dev D.parquet --seed 1 \
        --hparams JSON --spec '{"rewind": false, "final_sparsity": 0.9}' --sweep-dir results/.../imp/seed~1

``--spec`` holds the run's settings (``tracks.nlu.srnet_spec.ImpSpec``: rewinding, the last level, the rounds and
the fraction pruned per round). Writes per level ``<sweep-dir>/sparsity~0.1/ ... sparsity~0.9/`` (a checkpoint
with the mask baked in as zeros, ``mask.mask``, ``train_curve.csv``, ``train_summary.json`` last) and
``<sweep-dir>/imp_summary.json`` after the last level.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from maskbench import runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.masking.apply import MaskSet, model_fingerprint
from maskbench.steps import run_step
from maskbench.tracks.nlu.srnet_run import (
    SrnetArgs,
    check_common,
    chosen_modules,
    common_meta,
    load_start,
    parse_spec,
    prepare,
    read_inputs,
)
from maskbench.tracks.nlu.srnet_spec import ImpSpec
from maskbench.tracks.nlu.srnets import IMP_SUMMARY, iterative_magnitude_pruning, level_dir

log = logging.getLogger("maskbench.steps.nlu.srnet_imp")


@dataclass
class ImpArgs(SrnetArgs):
    sweep_dir: Path | None = field(default=None, metadata={"help": "the folder of the levels (required)"})


def parse_args(argv=None) -> ImpArgs:
    return parse_dataclass(ImpArgs, argv, "python -m maskbench.steps nlu.srnet_imp", __doc__.splitlines()[0])


def check(args: ImpArgs) -> ImpSpec:
    check_common(args)
    if args.sweep_dir is None:
        raise ValueError("IMP needs --sweep-dir")
    return parse_spec(args, ImpSpec)


def run(args: ImpArgs, spec: ImpSpec, on_prune=None) -> int:
    """One IMP run; ``on_prune`` is passed to ``iterative_magnitude_pruning`` (tests)."""
    common = check_common(args)
    inputs = read_inputs(args)
    model, tokenizer, device = load_start(args, inputs)
    method = spec.method
    modules = chosen_modules(args, method, spec.modules, model)
    hp = common.hp
    prepared = prepare(model, tokenizer, inputs, hp, device)
    fingerprint, steps = prepared.fingerprint, prepared.steps
    if steps < spec.rounds:
        raise ValueError(f"--spec rounds {spec.rounds}: the run has only {steps} steps (--hparams epochs "
                         f"{hp.epochs} of {len(prepared.data)} examples at batch size {hp.batch_size})")
    meta = common_meta(args, method, common, inputs)
    provenance = runtime.provenance(args, args.seed)
    started = time.perf_counter()
    (args.sweep_dir / IMP_SUMMARY).unlink(missing_ok=True)
    written = []

    def save_level(level: dict, plain_model: nn.Module) -> None:
        folder = level_dir(args.sweep_dir, level["sparsity"])
        baked_fingerprint = model_fingerprint(plain_model)
        mask_set = MaskSet(level["masks"], {
            **meta, "sparsity": level["sparsity"], "exact_sparsity": level["exact_sparsity"],
            "round": level["round"], "modules": list(modules), "rewind": spec.rewind,
            "model_fingerprint": baked_fingerprint, "start_model_fingerprint": fingerprint,
            "model_dir": str(folder), "start_dir": str(args.start_dir), "dev_accuracy": level["dev_accuracy"],
            "provenance": provenance})
        summary = {k: v for k, v in level.items() if k not in ("masks",)}
        summary.update(method=method, tag=args.tag, start_dir=str(args.start_dir), rewind=spec.rewind,
                       final_dev_accuracy=level["dev_accuracy"], model_fingerprint=baked_fingerprint,
                       start_model_fingerprint=fingerprint, total_steps=steps, labels=inputs.labels,
                       hparams=dataclasses.asdict(hp), loss=args.loss, seed=args.seed, provenance=provenance)
        write_checkpoint(folder, plain_model, tokenizer, summary, mask_set, level["curve"])
        written.append(str(folder))

    log.info("%s on %s: %d steps, levels %s, loss %s", method, args.start_dir, steps, spec.levels, args.loss)
    levels = iterative_magnitude_pruning(
        model, prepared.data, common.loss_fn, hp, args.seed, device, prepared.evaluate, spec=spec, modules=modules,
        example_tensors=inputs.example_tensors, on_prune=on_prune, on_level=save_level)
    seconds = time.perf_counter() - started
    runtime.atomic_write_json(args.sweep_dir / IMP_SUMMARY, {
        "method": method, "tag": args.tag, "start_dir": str(args.start_dir), "levels": [
            {k: v for k, v in level.items() if k not in ("masks", "curve", "module_sparsity")} for level in levels],
        "checkpoints": written, "total_steps": steps, "start_model_fingerprint": fingerprint,
        "seconds": seconds, "device": str(device), "meta": meta, "provenance": provenance})
    log.info("wrote %d IMP levels under %s in %.1fs", len(levels), args.sweep_dir, seconds)
    return 0


def main(argv=None) -> int:
    setup_logging()
    args = parse_args(argv)
    return run(args, check(args))


if __name__ == "__main__":
    run_step(main)
