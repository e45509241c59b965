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

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report import json_arg, json_object_arg
from maskbench.report.captions import labelled
from maskbench.report.engagement import ENGAGED, NOT_ENGAGED
from maskbench.runtime import atomic_path
from maskbench.steps import run_step, step_main
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


def _rows(text: str) -> list | dict:
    rows = json_arg(text)
    if not isinstance(rows, list | dict):
        raise ValueError("--rows must be a JSON list of row ids or an object row id -> label")
    return rows


@dataclass
class Args:
    evals: list[Path] = field(metadata={"help": "evaluation JSON files"})
    columns: dict[str, dict] = field(metadata={"help": "columns config (inline JSON or JSON file)", "parse": json_object_arg})
    rows: list | dict = field(metadata={"help": "row ids (JSON list, or mapping id -> label)", "parse": _rows})
    out_csv: Path = field(metadata={"help": "the long table (CSV)"})
    out_md: Path = field(metadata={"help": "the table in markdown"})
    out_tex: Path = field(metadata={"help": "the table in LaTeX"})
    row_labels: dict[str, str] = field(default_factory=dict, metadata={
        "help": "optional mapping row id -> display label", "parse": json_arg})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})
    selected: Path | None = field(default=None, metadata={
        "help": "tradeoff_selection.csv: a '<row>_selected' row after each swept row"})
    paper: str = field(default=PAPER_A, metadata={"choices": [PAPER_A, "none"], "help": (
        "A: paper A's figure beside each cell of its rows and columns; none: a table of the config's own, no "
        "published figure")})
    engagement: Path | None = field(default=None, metadata={
        "help": "engagement.csv (step nlu.engagement): a row with a run that did not engage is labelled "
                "'<label> (not engaged)'"})


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


def selected_points(selection: pd.DataFrame) -> dict[str, dict[str, str]]:
    """"<row>_selected" -> {task: the point the selection rule picked}, for the tasks where one kept the ID dev
    accuracy within delta (the engagement table lists a point's runs under its name)."""
    out: dict[str, dict[str, str]] = {}
    for rec in selection.itertuples(index=False):
        if bool(rec.within_delta):
            out.setdefault(f"{rec.method}_selected", {})[str(rec.task)] = str(rec.point)
    return out


def engagement_labels(runs: pd.DataFrame, rows: list[str], labels: dict[str, str],
                      selected: dict[str, dict[str, str]] | None = None) -> dict[str, str]:
    """``labels`` with " (not engaged)" after each row one of whose runs did not engage — " (not engaged on MNLI)"
    when that holds on some of its tasks only. A "<row>_selected" row (``selected``: its point per task,
    ``selected_points``) is its points' runs."""
    needed = {"row", "word"}
    if not needed <= set(runs.columns):
        raise ValueError(f"--engagement: the table lacks {sorted(needed - set(runs.columns))}")
    runs = runs.assign(row=runs.row.astype(str), task=runs.get("task", pd.Series([""] * len(runs))).astype(str))
    out = dict(labels)
    for row in rows:
        points = (selected or {}).get(row)
        mine = (runs[runs.row == row] if points is None else
                runs[[(t, r) in points.items() for t, r in zip(runs.task, runs.row, strict=True)]])
        tasks = sorted(set(mine.task[mine.word != ENGAGED]))
        if not tasks:
            continue
        where = "" if set(tasks) == set(mine.task) else " on " + ", ".join(TASK_LABELS.get(t, t) for t in tasks)
        out[row] = f"{row_label(row, labels)} ({NOT_ENGAGED}{where})"
    return out


@step_main(Args)
def main(args: Args) -> int:
    row_ids = [str(r) for r in args.rows]
    labels = {str(k): str(v) for k, v in args.rows.items()} if isinstance(args.rows, dict) else {}
    labels.update({str(k): str(v) for k, v in args.row_labels.items()})
    paper = None if args.paper == "none" else args.paper
    evals, rows = load_evals(args.evals), row_ids
    selected = None
    if args.selected is not None:
        selection = pd.read_csv(args.selected)
        evals, rows, labels = add_selected_rows(evals, rows, labels, selection)
        selected = selected_points(selection)
    long = build_table1(evals, args.columns, rows, paper)
    if long.empty:
        # an empty table almost always means the rows/columns config does not match the eval JSONs
        raise ValueError(
            f"none of the {len(args.evals)} evaluation JSONs matches a configured row "
            f"({', '.join(row_ids)}) and column ({', '.join(args.columns)})"
        )
    row_labels = {**ROW_LABELS, **labels}
    if args.engagement is not None:
        row_labels = engagement_labels(pd.read_csv(args.engagement), rows, row_labels, selected)
    with atomic_path(args.out_csv) as tmp:
        long.to_csv(tmp, index=False)
    with atomic_path(args.out_md) as tmp:
        tmp.write_text(labelled(to_markdown(long, args.columns, row_labels, paper), args.label), encoding="utf-8")
    with atomic_path(args.out_tex) as tmp:
        tmp.write_text(to_latex(long, args.columns, row_labels, paper), encoding="utf-8")
    return 0


if __name__ == "__main__":
    run_step(main)
