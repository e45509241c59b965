"""In-distribution vs. out-of-distribution bar chart of the Table 1 numbers.

One panel per task; within it one bar group per model row and one bar per configured column (the ID
validation set first, then the OOD sets, in columns-config order). Error bars are the std over
seeds; paper A's figure for the same cell is drawn as a black diamond.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from maskbench.report.figure_files import save_figure
from maskbench.tracks.nlu.report.table1_builder import (
    ROW_LABELS,
    column_groups,
    column_label,
    row_label,
    task_label,
    with_column_keys,
)

FIGURE_COLUMNS = [
    "task",
    "column",
    "column_label",
    "eval_set",
    "metric",
    "row",
    "row_label",
    "mean",
    "std",
    "n_seeds",
    "paper",
    "data",  # the kind of the column's data (real / synthetic; "" unknown): the panel's title says it
]


def figure_data(
    long: pd.DataFrame, columns: Mapping[str, Mapping], row_labels: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """The numbers the figure plots: one line per (task, row, column) present in the long Table 1."""
    row_labels = ROW_LABELS if row_labels is None else row_labels
    long = with_column_keys(long, columns)
    rows = list(dict.fromkeys(str(r) for r in long["row"]))
    by_cell = {(str(rec.row), rec.column): rec for rec in long.itertuples(index=False)}
    records = []
    for task, names in column_groups(columns):
        for row in rows:
            for name in names:
                rec = by_cell.get((row, name))
                if rec is None:
                    continue
                records.append(
                    {
                        "task": task,
                        "column": name,
                        "column_label": column_label(name, columns[name]),
                        "eval_set": rec.eval_set,
                        "metric": rec.metric,
                        "row": row,
                        "row_label": row_label(row, row_labels),
                        "mean": float(rec.mean),
                        "std": float(rec.std),
                        "n_seeds": int(rec.n_seeds),
                        "paper": float(rec.paper),
                        "data": "" if pd.isna(getattr(rec, "data", "")) else str(getattr(rec, "data", "")),
                    }
                )
    return pd.DataFrame.from_records(records, columns=FIGURE_COLUMNS)


def build_id_ood_figure(data: pd.DataFrame) -> Figure:
    """The figure of ``figure_data`` output: one panel per task, in order of first appearance."""
    if data.empty:
        raise ValueError("nothing to plot: the table has no line for any configured column")
    tasks = list(dict.fromkeys(data["task"]))
    n_rows_max = max(data.loc[data["task"] == t, "row"].nunique() for t in tasks)
    # a Figure without pyplot needs no GUI backend and leaves global matplotlib state alone (Agg canvas)
    fig = Figure(figsize=(max(6.0, 1.3 * n_rows_max + 2.0), 4.2 * len(tasks)), layout="constrained")
    axes = fig.subplots(len(tasks), 1, squeeze=False)[:, 0]
    for ax, task in zip(axes, tasks, strict=True):
        _plot_task(ax, data[data["task"] == task], task)
    # two short lines: one line was wider than a 6-inch canvas and lost its first and last letters
    fig.suptitle("Paper A Table 1 rebuilt on this run's data:\nin-distribution vs. out-of-distribution "
                 "(mean ± std over seeds)", fontsize=10)
    return fig


def plot_id_ood(data: pd.DataFrame, out: str | Path) -> None:
    """Draw ``figure_data`` output as a PNG at ``out`` and an SVG beside it (``save_figure``)."""
    save_figure(build_id_ood_figure(data), out, dpi=120)


def _plot_task(ax, part: pd.DataFrame, task: str) -> None:
    rows = list(dict.fromkeys(part["row"]))
    labels = [part.loc[part["row"] == r, "row_label"].iloc[0] for r in rows]
    names = list(dict.fromkeys(part["column"]))
    width = 0.8 / len(names)
    x = np.arange(len(rows))
    paper_drawn = False
    for j, name in enumerate(names):
        col = part[part["column"] == name].set_index("row").reindex(rows)
        pos = x - 0.4 + width * (j + 0.5)
        means = col["mean"].to_numpy(float)
        stds = col["std"].to_numpy(float)
        ax.bar(pos, means, width, label=_legend_label(col))
        # a single seed has no std: draw no error bar rather than a zero-length one that suggests certainty
        has_err = ~np.isnan(means) & ~np.isnan(stds)
        if has_err.any():
            ax.errorbar(
                pos[has_err],
                means[has_err],
                yerr=stds[has_err],
                fmt="none",
                capsize=3,
                elinewidth=1,
                ecolor="0.2",
            )
        paper = col["paper"].to_numpy(float)
        if not np.all(np.isnan(paper)):
            ax.scatter(
                pos,
                paper,
                marker="D",
                s=22,
                color="black",
                zorder=3,
                label=None if paper_drawn else "paper A",
            )
            paper_drawn = True
    metrics = sorted(set(part["metric"]))
    kinds = {str(k) for k in part["data"].dropna()} if "data" in part.columns else set()
    ax.set_title(task_label(task, kinds))
    ax.set_ylabel("score (%)" if len(metrics) > 1 else f"{metrics[0].replace('_', ' ')} (%)")
    ax.set_xticks(x, labels, rotation=20, ha="right")
    ax.set_ylim(0, 100)
    ax.grid(axis="y", alpha=0.3)
    # outside the axes: inside it would cover the low OOD bars that matter most
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))


def _legend_label(col: pd.DataFrame) -> str:
    label = str(col["column_label"].dropna().iloc[0])
    metric = str(col["metric"].dropna().iloc[0])
    # accuracy is the default reading of a bar; any other metric (e.g. weighted F1) is named
    return label if metric.endswith("accuracy") else f"{label} [{metric.replace('_', ' ')}]"
