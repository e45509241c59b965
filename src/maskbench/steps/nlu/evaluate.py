"""Predictions and metrics of models on every evaluation set of their task.

    python -m maskbench.steps nlu.evaluate --model-dirs M1 M2 --rows baseline sd_x --out-dirs O1 O2 \
        --data mnli_dev.parquet hans.parquet \
        --eval-sets '[{"name": "mnli_dev", "metric": "accuracy"},
                      {"name": "hans", "metric": "hans", "merge": {"neutral": "non-entailment",
                                                                   "contradiction": "non-entailment"}}]' \
        --task mnli --seed 1

writes, for each model, ``<out-dir>/<name>.json`` (metrics) and ``<out-dir>/<name>.predictions.parquet`` for
each set. A model predicts in its own label space; ``merge`` maps its label names onto the evaluation set's (HANS
has only entailment / non-entailment, FEVER-Symmetric no NOT ENOUGH INFO). The sets are read once and checked
against a model before its first forward pass. One process scores several models (e.g. every row of a seed),
paying the start-up (~6 s of imports) once. Each finished (model, set) is kept across a kill or a time limit, and a
rerun scores only the rest (maskbench/workflow/staged_evaluation.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from maskbench import stop
from maskbench.cli import require_same_lengths
from maskbench.compute import start
from maskbench.steps import run_step, step_main
from maskbench.text.models import load_classifier, model_labels
from maskbench.tracks.nlu.evaluation import EvalSetArgs, load_eval_sets, parse_eval_sets
from maskbench.workflow.staged_evaluation import StagedSets

PRICED_AS = "evaluation"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)


@dataclass
class EvaluateArgs(EvalSetArgs):
    model_dirs: list[Path] = field(metadata={"help": "checkpoint folders written by maskbench.steps.nlu.finetune"})
    rows: list[str] = field(metadata={"help": "Table 1 row of each model, in the order of --model-dirs (recorded)"})
    out_dirs: list[Path] = field(metadata={"help": "output folder of each model, in the order of --model-dirs"})


def evaluate(args: EvaluateArgs) -> list[str]:
    """Score every model on every set (each set staged across a cut-off: maskbench/workflow/staged_evaluation.py);
    return the JSON paths written."""
    require_same_lengths(model_dirs=args.model_dirs, rows=args.rows, out_dirs=args.out_dirs)
    eval_sets = parse_eval_sets(args.eval_sets, args.data)
    device = start(args)
    staged = StagedSets("evaluate", args, len(args.model_dirs) * len(eval_sets))
    written, loaded_for = [], {}
    with stop.stop_signals():
        for model_dir, row, out_dir in zip(args.model_dirs, args.rows, args.out_dirs, strict=True):
            model, tokenizer = load_classifier(model_dir)
            labels = tuple(model_labels(model))
            if labels not in loaded_for:  # read and checked once per label set, before that model's first forward
                loaded_for[labels] = load_eval_sets(eval_sets, list(labels))
            written += staged.score(model, tokenizer, loaded_for[labels], args, device, out_dir,
                                    {"task": args.task, "row": row, "seed": args.seed}, model_dir,
                                    [model_dir, *args.data])
    staged.finish()
    return written


@step_main(EvaluateArgs)
def main(args: EvaluateArgs) -> int:
    evaluate(args)
    return 0


if __name__ == "__main__":
    run_step(main)
