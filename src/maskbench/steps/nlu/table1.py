"""Build paper A's Table 1 from evaluation JSONs.

    python -m maskbench.steps nlu.table1 --evals A.json B.json ... --columns COLUMNS --rows ROWS \\
        --out-csv T.csv --out-md T.md --out-tex T.tex [--paper none]

COLUMNS is inline JSON or a JSON file: {"mnli_val": {"task": "mnli", "eval_set": "mnli_dev",
"metric": "accuracy"}, ...}. ROWS is a JSON list of row ids in display order, or a mapping
row id -> display label; --row-labels overrides labels. All three outputs are written atomically.
Paper A's figure stands beside each cell of its rows and columns (``--paper A``, the default, for a config that
declares `report.table1.paper: A`); ``--paper none`` prints none: the table of a config's own model and data.
With --selected (the trade-off report's tradeoff_selection.csv), every swept row gets a "<row>_selected" row right
after it: per task, the scores of the point the selection rule picked (its evaluation JSONs must be among --evals),
empty for a task where no point kept the ID dev accuracy within delta of the baseline's.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report import json_arg
from maskbench.report.captions import labelled
from maskbench.report.engagement import ENGAGED, NOT_ENGAGED
from maskbench.runtime import atomic_path
from maskbench.steps import run_step
from maskbench.tracks.nlu.report.table1_builder import (
    PAPER_A,
    ROW_LABELS,
    TASK_LABELS,
    build_table1,
    load_evals,
    row_label,
    to_latex,
    to_markdown,
)


@dataclass
class Args:
    evals: list[Path]
    columns: dict[str, dict]
    rows: list[str]
    out_csv: Path
    out_md: Path
    out_tex: Path
    row_labels: dict[str, str] = field(default_factory=dict)
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})
    selected: Path | None = None
    paper: str | None = PAPER_A
    engagement: Path | None = None


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(prog="python -m maskbench.steps nlu.table1", description=__doc__.splitlines()[0])
    parser.add_argument("--evals", nargs="+", type=Path, required=True, help="evaluation JSON files")
    parser.add_argument("--columns", required=True, help="columns config (inline JSON or JSON file)")
    parser.add_argument("--rows", required=True, help="row ids (JSON list, or mapping id -> label)")
    parser.add_argument("--row-labels", default=None, help="optional mapping row id -> display label")
    parser.add_argument("--out-csv", type=Path, required=True)
    parser.add_argument("--out-md", type=Path, required=True)
    parser.add_argument("--out-tex", type=Path, required=True)
    parser.add_argument("--selected", type=Path, default=None,
                        help="tradeoff_selection.csv: a '<row>_selected' row after each swept row")
    parser.add_argument("--label", default=None, help="the config's label: the first line of the markdown table")
    parser.add_argument("--engagement", type=Path, default=None,
                        help="engagement.csv (step nlu.engagement): a row with a run that did not engage is "
                             "labelled '<label> (not engaged)'")
    parser.add_argument("--paper", choices=[PAPER_A, "none"], default=PAPER_A,
                        help="A: paper A's figure beside each cell of its rows and columns; none: a table of the "
                             "config's own, no published figure")
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
        label=ns.label,
        selected=ns.selected,
        paper=None if ns.paper == "none" else ns.paper,
        engagement=ns.engagement,
    )


def add_selected_rows(evals: list[dict], rows: list[str], labels: dict[str, str], selection: pd.DataFrame
                      ) -> tuple[list[dict], list[str], dict[str, str]]:
    """Copies of the selected points' evaluation JSONs under "<row>_selected", that row placed right after its
    row, labelled "<label> (selected)"."""
    needed = {"task", "method", "point", "within_delta"}
    if not needed <= set(selection.columns):
        raise ValueError(f"--selected: the selection table lacks {sorted(needed - set(selection.columns))}")
    added = []
    for rec in selection.itertuples(index=False):
        name = f"{rec.method}_selected"
        if bool(rec.within_delta):
            copies = [{**ev, "row": name} for ev in evals if str(ev["task"]) == str(rec.task)
                      and str(ev["row"]) == str(rec.point)]
            if not copies:
                raise ValueError(f"--selected: no evaluation JSON among --evals for point {rec.point!r} of task "
                                 f"{rec.task!r}")
            added += copies
        if name not in rows:
            at = rows.index(rec.method) + 1 if rec.method in rows else len(rows)
            rows = rows[:at] + [name] + rows[at:]
            labels = {**labels, name: f"{row_label(rec.method, {**ROW_LABELS, **labels})} (selected)"}
    return evals + added, rows, labels


def engagement_labels(runs: pd.DataFrame, rows: list[str], labels: dict[str, str]) -> dict[str, str]:
    """``labels`` with " (not engaged)" after each row one of whose runs did not engage — " (not engaged on MNLI)"
    when that holds on some of its tasks only (a "<row>_selected" row reads its point's runs, which the engagement
    table does not list: it keeps its label)."""
    needed = {"row", "word"}
    if not needed <= set(runs.columns):
        raise ValueError(f"--engagement: the table lacks {sorted(needed - set(runs.columns))}")
    runs = runs.assign(row=runs.row.astype(str), task=runs.get("task", pd.Series([""] * len(runs))).astype(str))
    failed = runs[runs.word != ENGAGED]
    out = dict(labels)
    for row in rows:
        tasks = sorted(set(failed.task[failed.row == row]))
        if not tasks:
            continue
        everywhere = set(tasks) == set(runs.task[runs.row == row])
        where = "" if everywhere else " on " + ", ".join(TASK_LABELS.get(t, t) for t in tasks)
        out[row] = f"{row_label(row, labels)} ({NOT_ENGAGED}{where})"
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    evals, rows, labels = load_evals(args.evals), args.rows, args.row_labels
    if args.selected is not None:
        evals, rows, labels = add_selected_rows(evals, rows, labels, pd.read_csv(args.selected))
    long = build_table1(evals, args.columns, rows, args.paper)
    if long.empty:
        # an empty table almost always means the rows/columns config does not match the eval JSONs
        raise ValueError(
            f"none of the {len(args.evals)} evaluation JSONs matches a configured row "
            f"({', '.join(args.rows)}) and column ({', '.join(args.columns)})"
        )
    row_labels = {**ROW_LABELS, **labels}
    if args.engagement is not None:
        row_labels = engagement_labels(pd.read_csv(args.engagement), rows, row_labels)
    with atomic_path(args.out_csv) as tmp:
        long.to_csv(tmp, index=False)
    with atomic_path(args.out_md) as tmp:
        tmp.write_text(labelled(to_markdown(long, args.columns, row_labels, args.paper), args.label), encoding="utf-8")
    with atomic_path(args.out_tex) as tmp:
        tmp.write_text(to_latex(long, args.columns, row_labels, args.paper), encoding="utf-8")
    return 0


if __name__ == "__main__":
    run_step(main)
