"""Entry point: the budget study's table, selection and figure (maskbench.tracks.nlu.report.budget_study).

    python -m maskbench.steps nlu.budget_study --runs RUNS --dev-set mnli_dev --out-csv S.csv --out-md S.md \
        --figure S.png [--id-cost-max 5] [--plateau 1] [--ood-set hans] [--label TEXT]

RUNS (inline JSON or a file): the study's runs as rules/nlu/study.smk lists them — {"kind": "baseline", "train_set",
"seed", "summary"}, {"kind": "start", "seed", "summary", "evals"} (the config's baseline the masks start from) and
{"kind": "mask", "row", "learning_rate", "epochs", "seed", "summary", "evals"}. The selection rule reads dev
accuracy and engagement only; the scores on the other evaluation sets are reported beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from maskbench.data.schema import DataError
from maskbench.report import json_arg
from maskbench.report.captions import labelled
from maskbench.report.figure_files import save_figure
from maskbench.runtime import atomic_path, atomic_write_text
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.report.budget_study import figure, markdown, study_table


@dataclass
class BudgetStudyArgs:
    runs: str = field(metadata={"help": "JSON list of the study's runs (inline or a file)"})
    out_csv: Path = field(metadata={"help": "the long table: a line per baseline epoch and seed, per mask point and seed"})
    out_md: Path = field(metadata={"help": "the tables, the selection rule's picks and the reported OOD trend"})
    figure: Path = field(metadata={"help": "the figure (PNG, an SVG beside it)"})
    dev_set: str = field(default="mnli_dev", metadata={"help": "the dev set's name (what the rule reads)"})
    id_cost_max: float = field(default=5.0, metadata={"help": "rule 2's bound on a row's mean dev drop (points)"})
    plateau: float = field(default=1.0, metadata={"help": "rule 1's distance to the best mean dev accuracy (points)"})
    ood_set: str | None = field(default="hans", metadata={"help": "evaluation set whose gain is reported (not selected on)"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line"})


@step_main(BudgetStudyArgs)
def main(args: BudgetStudyArgs) -> int:
    runs = json_arg(args.runs)
    if not isinstance(runs, list) or not runs:
        raise DataError(f"--runs: expected a non-empty JSON list of runs, got {str(args.runs)[:80]!r}")
    table = study_table(runs, args.dev_set)
    with atomic_path(args.out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    head = (f"**The budget study** (dev set {args.dev_set}; the selection rule reads dev accuracy and engagement "
            "only: docs/budget-study.md)\n\n")
    atomic_write_text(args.out_md, labelled(head + markdown(table, args.id_cost_max, args.plateau, args.ood_set),
                                            args.label))
    save_figure(figure(table, args.label or "The budget study"), args.figure, dpi=110)
    return 0


if __name__ == "__main__":
    run_step(main)
