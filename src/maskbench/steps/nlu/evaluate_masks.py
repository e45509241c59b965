"""Entry point: score one fine-tuned model under several masks, switching masks without reloading weights.

    python -m maskbench.steps nlu.evaluate_masks --model-dir results/.../method~finetune/loss~ce/seed~1 \
        --masks a.mask b.mask --rows md_undertrained mask_no_debias --out-dirs eval/md_undertrained/seed~1 \
        eval/mask_no_debias/seed~1 --data mnli_dev.parquet hans.parquet --eval-sets JSON --task mnli --seed 1

Every mask's header is checked against the model (fingerprint, module names, shapes) and every evaluation set
is read before the first forward pass. For each mask the outputs are those of ``maskbench.steps.nlu.evaluate``, plus the
mask's density in the JSON; each finished (mask, set) is kept across a kill or a time limit
(maskbench/workflow/staged_evaluation.py).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import stop
from maskbench.cli import require_same_lengths
from maskbench.compute import start
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.steps import run_step, step_main
from maskbench.text.models import load_classifier, model_labels
from maskbench.tracks.nlu.evaluation import EvalSetArgs, load_eval_sets, parse_eval_sets
from maskbench.workflow.staged_evaluation import StagedSets

PRICED_AS = "evaluation"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.nlu.evaluate_masks")


@dataclass
class EvaluateMasksArgs(EvalSetArgs):
    model_dir: Path = field(metadata={"help": "the checkpoint the masks were searched on"})
    masks: list[Path] = field(metadata={"help": "mask files"})
    rows: list[str] = field(metadata={"help": "Table 1 row of each mask, in the order of --masks"})
    out_dirs: list[Path] = field(metadata={"help": "output folder of each mask, in the order of --masks"})


@step_main(EvaluateMasksArgs)
def main(args: EvaluateMasksArgs) -> int:
    require_same_lengths(masks=args.masks, rows=args.rows, out_dirs=args.out_dirs)
    eval_sets = parse_eval_sets(args.eval_sets, args.data)
    mask_sets = [MaskSet.load(path) for path in args.masks]  # a damaged mask file stops the job before the model
    device = start(args)
    model, tokenizer = load_classifier(args.model_dir)
    model.to(device)
    loaded = load_eval_sets(eval_sets, model_labels(model))
    switch = MaskSwitch(model)
    for mask_set in mask_sets:  # refuse a foreign mask before any work
        switch.check(mask_set)
    staged = StagedSets("evaluate_masks", args, len(mask_sets) * len(eval_sets))
    with stop.stop_signals():
        for mask_set, row, out_dir in zip(mask_sets, args.rows, args.out_dirs, strict=True):
            started = time.perf_counter()
            switch.apply(mask_set)
            log.info("%s: mask %s applied in %.1f ms (%.2f%% pruned)", row, mask_set.path,
                     1000 * (time.perf_counter() - started), 100 * (1 - mask_set.density()))
            staged.score(model, tokenizer, loaded, args, device, out_dir,
                         {"task": args.task, "row": row, "seed": args.seed, "mask": str(mask_set.path),
                          "mask_density": mask_set.density()}, args.model_dir,
                         [args.model_dir, mask_set.path, *args.data])
    switch.revert()
    staged.finish()
    return 0


if __name__ == "__main__":
    run_step(main)
