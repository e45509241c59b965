"""Plot the long Table 1 as an ID-vs-OOD grouped bar chart, plus a CSV of the plotted numbers.

    python -m maskbench.steps nlu.figure_id_ood --table results/tables/table1.csv --columns COLUMNS \\
        --out F.png --out-csv F.csv [--row-labels LABELS]

COLUMNS is the same columns config as for ``maskbench.steps.nlu.table1`` (inline JSON or a JSON file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report import json_arg, json_object_arg
from maskbench.runtime import atomic_path
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.report.figure_id_ood import figure_data, plot_id_ood
from maskbench.tracks.nlu.report.table1_builder import ROW_LABELS


@dataclass
class Args:
    table: Path = field(metadata={"help": "long Table 1 CSV from maskbench.steps.nlu.table1"})
    columns: dict[str, dict] = field(metadata={"help": "columns config (inline JSON or JSON file)", "parse": json_object_arg})
    out: Path = field(metadata={"help": "PNG to write"})
    out_csv: Path = field(metadata={"help": "CSV of the plotted numbers"})
    row_labels: dict[str, str] = field(default_factory=dict, metadata={
        "help": "optional mapping row id -> display label", "parse": json_arg})


@step_main(Args)
def main(args: Args) -> int:
    long = pd.read_csv(args.table, dtype={"row": str, "task": str, "eval_set": str, "metric": str, "column": str})
    data = figure_data(long, args.columns, {**ROW_LABELS, **args.row_labels})
    plot_id_ood(data, args.out)  # atomic, with its SVG beside
    with atomic_path(args.out_csv) as tmp:
        data.to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    run_step(main)
