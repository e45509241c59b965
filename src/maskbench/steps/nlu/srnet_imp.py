"""Entry point: paper C's iterative magnitude pruning (Liu et al., "A Win-win Deal", 2022, Algorithm 1) of
trainable weights, 10 % of every matrix's original weights per round (local), optionally rewinding the weights
(all but the classifier) to the start checkpoint after every prune::

    python -m maskbench.steps nlu.srnet_imp --start-dir FT --train T.parquet --dev D.parquet --seed 1 \
        --hparams JSON --spec '{"rewind": false, "final_sparsity": 0.9}' --sweep-dir results/.../imp/seed~1

``--spec`` holds the run's settings (``tracks.nlu.srnets.spec.ImpSpec``: rewinding, the last level, the rounds and
the fraction pruned per round). Writes per level ``<sweep-dir>/sparsity~0.1/ ... sparsity~0.9/`` (a checkpoint
with the mask baked in as zeros, ``mask.mask``, ``train_curve.csv``, ``train_summary.json`` last) and
``<sweep-dir>/imp_summary.json`` after the last level.

A run cut off (a kill, a cluster's time limit) keeps the levels it finished: each level's files are also staged
beside them (``maskbench.workflow.staging``: snakemake deletes a failed job's declared outputs), and a rerun with the same
arguments and inputs puts the finished levels back and goes on from the last one's weights and masks, to the
uninterrupted run's outputs.

Every argument is checked, and every input file read, before any training starts.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from torch import nn

from maskbench import resume, runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.masking.apply import MaskSet, model_fingerprint
from maskbench.masking.codec import read_mask_file
from maskbench.steps import run_step, step_main
from maskbench.text.models import load_classifier
from maskbench.tracks.nlu.srnets import run as srnets
from maskbench.tracks.nlu.srnets.methods import IMP_SUMMARY, iterative_magnitude_pruning, level_dir
from maskbench.tracks.nlu.srnets.spec import ImpSpec
from maskbench.workflow import staging

PRICED_AS = "training"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
CARRIES_OVER = False  # state saved within a run only: a second submission trains its finished runs again
log = logging.getLogger("maskbench.steps.nlu.srnet_imp")
# a level's record as the run keeps it (imp_summary.json's levels: these but module_sparsity), read back from its
# train_summary.json when the level is put back
# beside each level while the run lasts: the random generators' state at the end of its round (dropout draws from
# them), for a rerun to go on from there
ROUND_STATE = ".imp-round.state"
LEVEL_KEYS = ("round", "sparsity", "prune_step", "end_step", "steps", "dev_accuracy", "exact_sparsity",
              "module_sparsity", "n_rewound", "curve", "seconds")
SUMMARY = "train_summary.json"


@dataclass
class ImpArgs(srnets.SrnetArgs):
    sweep_dir: Path | None = field(default=None, metadata={"help": "the folder of the levels (required)"})


def check(args: ImpArgs) -> ImpSpec:
    srnets.check_common(args)
    if args.sweep_dir is None:
        raise ValueError("IMP needs --sweep-dir")
    return srnets.parse_spec(args, ImpSpec)


def run(args: ImpArgs, spec: ImpSpec, on_prune=None) -> int:
    """One IMP run; ``on_prune`` is passed to ``iterative_magnitude_pruning`` (tests)."""
    common = srnets.check_common(args)
    inputs = srnets.read_inputs(args)
    model, tokenizer, device = srnets.load_start(args, inputs)
    method = spec.method
    modules = srnets.chosen_modules(args, method, spec.modules, model)
    hp = common.hp
    prepared = srnets.prepare(model, tokenizer, inputs, hp, device)
    fingerprint, steps = prepared.fingerprint, prepared.steps
    if steps < spec.rounds:
        raise ValueError(f"--spec rounds {spec.rounds}: the run has only {steps} steps (--hparams epochs "
                         f"{hp.epochs} of {len(prepared.data)} examples at batch size {hp.batch_size})")
    meta = srnets.common_meta(args, method, common, inputs)
    provenance = runtime.provenance(args, args.seed)
    started = time.perf_counter()
    (args.sweep_dir / IMP_SUMMARY).unlink(missing_ok=True)
    stamp = staging.inputs_stamp([args.start_dir, args.train, args.dev])
    keys = {s: staging.part_key(resume.run_key(args), stamp, s) for s in spec.levels}
    restored, rng = restore_levels(args.sweep_dir, spec.levels, keys)
    written = [str(level_dir(args.sweep_dir, s)) for s in spec.levels[:len(restored)]]

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
        resume.write_state(folder / ROUND_STATE, {"key": keys[level["sparsity"]], "rng": resume.rng_state()})
        stage_level(folder, keys[level["sparsity"]])
        written.append(str(folder))

    log.info("%s on %s: %d steps, levels %s, loss %s", method, args.start_dir, steps, spec.levels, args.loss)
    levels = list(restored)
    if len(restored) < len(spec.levels):
        resume_after = None
        if restored:
            last = level_dir(args.sweep_dir, spec.levels[len(restored) - 1])
            masks, _ = read_mask_file(last / "mask.mask")
            resume_after = (len(restored), masks, load_classifier(last)[0].state_dict(), rng)
            log.info("put back %d finished level(s); going on after %s", len(restored), last)
        levels += iterative_magnitude_pruning(
            model, prepared.data, common.loss_fn, hp, args.seed, device, prepared.evaluate, spec=spec,
            modules=modules, example_tensors=inputs.example_tensors, on_prune=on_prune, on_level=save_level,
            resume_after=resume_after)
    seconds = time.perf_counter() - started
    runtime.atomic_write_json(args.sweep_dir / IMP_SUMMARY, {
        "method": method, "tag": args.tag, "start_dir": str(args.start_dir), "levels": [
            {k: v for k, v in level.items() if k not in ("masks", "curve", "module_sparsity")} for level in levels],
        "checkpoints": written, "total_steps": steps, "start_model_fingerprint": fingerprint,
        "seconds": seconds, "device": str(device), "meta": meta, "provenance": provenance})
    for s in spec.levels:
        discard_level(level_dir(args.sweep_dir, s), keys[s])
    log.info("wrote %d IMP levels under %s in %.1fs", len(levels), args.sweep_dir, seconds)
    return 0


def _staged_names(folder: Path, key: str) -> list[str]:
    return sorted(p.name[1:].rsplit(f".staged-{key}", 1)[0] for p in folder.glob(f".*.staged-{key}"))


def stage_level(folder: Path, key: str) -> None:
    """A level is written: stage each of its files, its train_summary.json last (which marks it complete)."""
    names = sorted(p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    staging.keep([folder / n for n in names if n != SUMMARY] + [folder / SUMMARY], key)


def restore_levels(sweep_dir: Path, levels: list[float], keys: dict[float, str]) -> tuple[list[dict], dict | None]:
    """Put back the finished levels of an earlier try, from the first on while each is complete: their records, and
    the random generators' state at the end of the last one's round (None when none is put back)."""
    records, rng = [], None
    for s in levels:
        folder = level_dir(sweep_dir, s)
        names = _staged_names(folder, keys[s]) if folder.is_dir() else []
        state = _round_state_of(folder, keys[s]) if SUMMARY in names else None
        if state is None or not staging.restore([folder / n for n in names], keys[s]):
            break
        summary = json.loads((folder / SUMMARY).read_text(encoding="utf-8"))
        records.append({k: summary[k] for k in LEVEL_KEYS if k in summary})
        rng = state["rng"]
    return records, rng


def _round_state_of(folder: Path, key: str) -> dict | None:
    """The level's round state when it is there, intact and of this run; None otherwise (a damaged one: the level is
    redone)."""
    try:
        state = resume.read_state(folder / ROUND_STATE)
    except (OSError, resume.DamagedState) as err:
        log.warning("%s: %s; the run goes on from the level before", folder / ROUND_STATE, err)
        return None
    return state if state.get("key") == key else None


def discard_level(folder: Path, key: str) -> None:
    """The run is complete: a level's staged copies and round state go."""
    if folder.is_dir():
        staging.discard([folder / n for n in _staged_names(folder, key)], key)
        (folder / ROUND_STATE).unlink(missing_ok=True)


@step_main(ImpArgs)
def main(args: ImpArgs) -> int:
    return run(args, check(args))


parse_args = main.parse_args  # the parser alone (tests run a parsed IMP with their own hooks)


if __name__ == "__main__":
    run_step(main)
