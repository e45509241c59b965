"""Plot the long Table 1 as an ID-vs-OOD grouped bar chart, plus a CSV of the plotted numbers.

    python -m maskbench.steps nlu.figure_id_ood --table results/tables/table1.csv --columns COLUMNS \\
        --out F.png --out-csv F.csv [--row-labels LABELS]

COLUMNS is the same columns config as for ``maskbench.steps.nlu.table1`` (inline JSON or a JSON file).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report import json_arg
from maskbench.runtime import atomic_path
from maskbench.steps import run_step
from maskbench.tracks.nlu.report.figure_id_ood import figure_data, plot_id_ood
from maskbench.tracks.nlu.report.table1_builder import ROW_LABELS


@dataclass
class Args:
    table: Path
    columns: dict[str, dict]
    out: Path
    out_csv: Path
    row_labels: dict[str, str] = field(default_factory=dict)


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(
        prog="python -m maskbench.steps nlu.figure_id_ood", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--table", type=Path, required=True, help="long Table 1 CSV from maskbench.steps.nlu.table1")
    parser.add_argument("--columns", required=True, help="columns config (inline JSON or JSON file)")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    parser.add_argument("--out-csv", type=Path, required=True, help="CSV of the plotted numbers")
    parser.add_argument("--row-labels", default=None, help="optional mapping row id -> display label")
    ns = parser.parse_args(argv)
    columns = json_arg(ns.columns)
    if not isinstance(columns, dict) or not columns:
        parser.error("--columns must be a non-empty JSON object")
    labels = json_arg(ns.row_labels) if ns.row_labels is not None else {}
    return Args(table=ns.table, columns=columns, out=ns.out, out_csv=ns.out_csv, row_labels=labels)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    long = pd.read_csv(
        args.table, dtype={"row": str, "task": str, "eval_set": str, "metric": str, "column": str}
    )
    data = figure_data(long, args.columns, {**ROW_LABELS, **args.row_labels})
    plot_id_ood(data, args.out)  # atomic, with its SVG beside
    with atomic_path(args.out_csv) as tmp:
        data.to_csv(tmp, index=False)
    return 0


if __name__ == "__main__":
    run_step(main)
