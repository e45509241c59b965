"""Build paper A's Table 1 from evaluation JSONs.

    python -m maskbench.steps.table1 --evals A.json B.json ... --columns COLUMNS --rows ROWS \\
        --out-csv T.csv --out-md T.md --out-tex T.tex

COLUMNS is inline JSON or a JSON file: {"mnli_val": {"task": "mnli", "eval_set": "mnli_dev",
"metric": "accuracy"}, ...}. ROWS is a JSON list of row ids in display order, or a mapping
row id -> display label; --row-labels overrides labels. All three outputs are written atomically.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.report import json_arg
from maskbench.report.table1 import ROW_LABELS, build_table1, load_evals, to_latex, to_markdown
from maskbench.runtime import atomic_path
from maskbench.steps import run_step


@dataclass
class Args:
    evals: list[Path]
    columns: dict[str, dict]
    rows: list[str]
    out_csv: Path
    out_md: Path
    out_tex: Path
    row_labels: dict[str, str] = field(default_factory=dict)


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(prog="python -m maskbench.steps.table1", description=__doc__.splitlines()[0])
    parser.add_argument("--evals", nargs="+", type=Path, required=True, help="evaluation JSON files")
    parser.add_argument("--columns", required=True, help="columns config (inline JSON or JSON file)")
    parser.add_argument("--rows", required=True, help="row ids (JSON list, or mapping id -> label)")
    parser.add_argument("--row-labels", default=None, help="optional mapping row id -> display label")
    parser.add_argument("--out-csv", type=Path, required=True)
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--out-tex", type=Path, required=True)
    ns = parser.parse_args(argv)

    columns = json_arg(ns.columns)
    if not isinstance(columns, dict) or not columns:
        parser.error("--columns must be a non-empty JSON object")
    rows_value = json_arg(ns.rows)
    if isinstance(rows_value, dict):
        rows, labels = [str(r) for r in rows_value], {str(k): str(v) for k, v in rows_value.items()}
    elif isinstance(rows_value, list):
        rows, labels = [str(r) for r in rows_value], {}
    else:
        parser.error("--rows must be a JSON list of row ids or an object row id -> label")
    if ns.row_labels is not None:
        labels.update({str(k): str(v) for k, v in json_arg(ns.row_labels).items()})
    return Args(
        evals=ns.evals,
        columns=columns,
        rows=rows,
        out_csv=ns.out_csv,
        out_md=ns.out_md,
        out_tex=ns.out_tex,
        row_labels=labels,
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    long = build_table1(load_evals(args.evals), args.columns, args.rows)
    if long.empty:
        # an empty table almost always means the rows/columns config does not match the eval JSONs
        raise ValueError(
            f"none of the {len(args.evals)} evaluation JSONs matches a configured row "
            f"({', '.join(args.rows)}) and column ({', '.join(args.columns)})"
        )
    row_labels = {**ROW_LABELS, **args.row_labels}
    with atomic_path(args.out_csv) as tmp:
        long.to_csv(tmp, index=False)
    with atomic_path(args.out_md) as tmp:
        tmp.write_text(to_markdown(long, args.columns, row_labels), encoding="utf-8")
    with atomic_path(args.out_tex) as tmp:
        tmp.write_text(to_latex(long, args.columns, row_labels), encoding="utf-8")
    return 0


if __name__ == "__main__":
    run_step(main)
