"""Entry point: score every subnetwork of one (task, seed) of paper C in one process.

    python -m maskbench.steps nlu.evaluate_srnets --model-dirs FT FT IMP/sparsity~0.1 ... --masks a.mask b.mask none ... \
        --rows srnets/a_mask_ce/0.2 ... --out-dirs O1 O2 ... --data D1.parquet ... --eval-sets JSON \
        --task mnli --seed 1

Item i is the model in ``--model-dirs[i]`` under the mask ``--masks[i]`` (switched in without touching a
weight), or the checkpoint itself for ``none`` (IMP and retrained subnetworks carry their mask as zeros). Each
model is loaded once for all its masks. Everything is checked first — the lists' lengths, the evaluation sets,
every mask against its model (fingerprint, module names, shapes) — then the items are scored in order; the
outputs per item are those of ``maskbench.steps.nlu.evaluate`` (plus the mask's density for a mask).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.cli import require_same_lengths
from maskbench.compute import start
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.steps import run_step, step_main
from maskbench.text.models import load_classifier, model_labels
from maskbench.tracks.nlu.evaluation import EvalSetArgs, load_eval_sets, parse_eval_sets, score_all
from maskbench.workflow import staging
from maskbench.workflow.staged_evaluation import job_fields

PRICED_AS = "evaluation"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.nlu.evaluate_srnets")

NO_MASK = "none"


@dataclass
class EvaluateSrnetsArgs(EvalSetArgs):
    model_dirs: list[Path] = field(metadata={"help": "checkpoint folder of each item"})
    masks: list[str] = field(metadata={"help": f"mask file of each item, or {NO_MASK!r} for the checkpoint itself"})
    rows: list[str] = field(metadata={"help": "row of each item (srnets/<run>/<sparsity>), recorded"})
    out_dirs: list[Path] = field(metadata={"help": "output folder of each item"})


def group_items(args: EvaluateSrnetsArgs) -> dict[Path, list[tuple[MaskSet | None, str, Path]]]:
    """model folder -> [(mask or None, row, out_dir), ...] in the order given; every mask file is read here."""
    require_same_lengths(model_dirs=args.model_dirs, masks=args.masks, rows=args.rows, out_dirs=args.out_dirs)
    if len(set(args.out_dirs)) != len(args.out_dirs):
        raise ValueError("--out-dirs: two items write to the same folder")
    groups: dict[Path, list] = {}
    for model_dir, mask, row, out_dir in zip(args.model_dirs, args.masks, args.rows, args.out_dirs, strict=True):
        mask_set = None if mask == NO_MASK else MaskSet.load(mask)
        groups.setdefault(Path(model_dir), []).append((mask_set, row, out_dir))
    return groups


@step_main(EvaluateSrnetsArgs)
def main(args: EvaluateSrnetsArgs) -> int:
    eval_sets = parse_eval_sets(args.eval_sets, args.data)
    groups = group_items(args)
    device = start(args)
    loaded_for: dict[tuple, list] = {}
    # first pass: every model's labels and masks checked before the first forward pass
    for model_dir, items in groups.items():
        model, _ = load_classifier(model_dir)
        labels = tuple(model_labels(model))
        if labels not in loaded_for:
            loaded_for[labels] = load_eval_sets(eval_sets, list(labels))
        switch = MaskSwitch(model)
        for mask_set, _, _ in items:
            if mask_set is not None:
                switch.check(mask_set)
    # a job cut off by the cluster's time limit: the items it scored are staged outside the declared outputs
    # (which snakemake deletes) and put back when it runs again, so that only the rest are scored
    names = [e.name for e in eval_sets]
    common = job_fields("evaluate_srnets", args)

    def part(model_dir, mask_set, row, out_dir):
        files = [out_dir / f"{name}{suffix}" for name in names for suffix in (".json", ".predictions.parquet")]
        inputs = [model_dir, mask_set.path if mask_set is not None else None, *args.data]
        return files, staging.part_key(common, row, str(out_dir), staging.inputs_stamp(inputs))

    parts = {out_dir: part(model_dir, mask_set, row, out_dir)
             for model_dir, items in groups.items() for mask_set, row, out_dir in items}
    n_scored = n_restored = 0
    for model_dir, items in groups.items():
        items = [item for item in items if not staging.restore(*parts[item[2]])]
        n_restored += len(groups[model_dir]) - len(items)
        if not items:
            continue
        model, tokenizer = load_classifier(model_dir)
        model.to(device)
        loaded = loaded_for[tuple(model_labels(model))]
        switch = MaskSwitch(model)
        for mask_set, row, out_dir in items:
            record = {"task": args.task, "row": row, "seed": args.seed}
            if mask_set is None:
                switch.revert()
            else:
                switch.apply(mask_set)
                record.update(mask=str(mask_set.path), mask_density=mask_set.density())
            score_all(model, tokenizer, loaded, args, device, out_dir, record, model_dir)
            staging.keep(*parts[out_dir])
            n_scored += 1
        switch.revert()
    for files, key in parts.values():
        staging.discard(files, key)
    log.info("scored %d items of %d models (%d more scored before a cut-off)", n_scored, len(groups), n_restored)
    return 0


if __name__ == "__main__":
    run_step(main)
