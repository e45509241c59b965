"""Paper C's curves and its Table 5: metric vs. sparsity (Figures 2-6, 8), metric vs. the fine-tuning step a
mask search started from (Figure 7) and hard vs. soft mask init, fixed vs. gradual sparsity (Table 5).

A *curve record* is ``{"paradigm", "method", "loss", "task", "eval_set", "metric", <x>, "seed", "value"}``:
one score of one seed, where ``<x>`` is ``"sparsity"`` (the pruned fraction, 0-1 as everywhere else in the
project, or a percentage) or, for timing curves, ``"start_step"``.

* ``curve_table``: records averaged over seeds, one line per (paradigm, method, loss, task, eval_set,
  metric, x); the data of the curves.
* ``plot_sparsity_curves`` / ``plot_timing_curves``: one panel per (task, eval_set[, metric]), one line per
  (paradigm, method, loss) with a ±std band, optionally the full model as a dashed reference line.
* ``table5`` / ``table5_markdown``: Table 5 records (``schedule`` and ``init`` instead of
  paradigm/method/loss) averaged over seeds next to paper C's published figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from numbers import Real
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from maskbench.report.captions import table_cell
from maskbench.report.figure_files import save_figure
from maskbench.tracks.nlu.report.table1_builder import MISSING, format_cell, task_label

CURVE_KEYS = ["paradigm", "method", "loss"]
CURVE_COLUMNS = ["paradigm", "method", "loss", "task", "eval_set", "sparsity", "mean", "std", "n_seeds"]
TABLE5_COLUMNS = ["schedule", "init", "task", "eval_set", "mean", "std", "n_seeds", "paper"]
# the score columns of paper_c_table5.csv (paper C, Table 5), in the paper's order
PAPER_C_COLUMNS = ["mnli", "hans", "qqp", "paws_qqp", "paws_wiki", "fever", "symm1", "symm2"]

X_LABELS = {
    "sparsity": "sparsity (%)",
    "start_step": "fine-tuning step at search start",
}
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


# ---------------------------------------------------------------------------------------------------
# aggregation over seeds


def _describe(i: int, rec: Mapping) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in rec.items())
    return f"record {i} ({shown})"


def _finite(value) -> bool:
    if isinstance(value, bool) or not isinstance(value, Real | np.number):
        return False
    return math.isfinite(float(value))


def _aggregate(records: Iterable[Mapping], keys: Sequence[str], x: str | None) -> pd.DataFrame:
    """Group ``records`` by ``keys`` (+ metric, + x) and average ``value`` over seeds.

    Returns columns ``[*keys, "metric", x, "mean", "std", "n_seeds"]`` sorted by the group keys;
    std is the sample std (ddof=1), 0.0 with a single seed.
    """
    group = [*keys, "metric"] + ([x] if x is not None else [])
    required = [*group, "seed", "value"]
    seen: dict[tuple, int] = {}
    rows = []
    records = list(records)
    for i, rec in enumerate(records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"record {i} is a {type(rec).__name__}, not a mapping")
        missing = [k for k in required if k not in rec or rec[k] is None]
        if missing:
            raise ValueError(f"{_describe(i, rec)} lacks {', '.join(missing)}")
        if not _finite(rec["value"]):
            raise ValueError(f"{_describe(i, rec)}: value must be a finite number, got {rec['value']!r}")
        if x is not None and not _finite(rec[x]):
            raise ValueError(f"{_describe(i, rec)}: {x} must be a finite number, got {rec[x]!r}")
        key = tuple(str(rec[k]) for k in group[: len(keys) + 1])
        if x is not None:
            key += (float(rec[x]),)
        if (key, rec["seed"]) in seen:
            first = seen[(key, rec["seed"])]
            raise ValueError(
                f"duplicate seed {rec['seed']!r}: {_describe(i, rec)} repeats "
                f"{_describe(first, records[first])}"
            )
        seen[(key, rec["seed"])] = i
        rows.append((*key, float(rec["value"])))
    out_columns = [*group, "mean", "std", "n_seeds"]
    if not rows:
        empty = pd.DataFrame(columns=out_columns)
        return empty.astype({"mean": float, "std": float, "n_seeds": int})
    long = pd.DataFrame(rows, columns=[*group, "value"])
    agg = (
        long.groupby(group, sort=True)["value"]
        .agg(mean="mean", std=lambda s: s.std(ddof=1), n_seeds="count")
        .reset_index()
    )
    agg["std"] = agg["std"].fillna(0.0)
    agg["n_seeds"] = agg["n_seeds"].astype(int)
    return agg[out_columns]


def curve_table(records: Iterable[Mapping], x: str = "sparsity") -> pd.DataFrame:
    """Scores averaged over seeds, one line per (paradigm, method, loss, task, eval_set, metric, x).

    The first nine columns are ``CURVE_COLUMNS`` (with ``x`` in place of ``"sparsity"`` for another x
    column, e.g. ``"start_step"``), then ``metric``. ``mean`` / ``std`` are the mean and sample std (ddof=1,
    0.0 with a single seed) over seeds, ``n_seeds`` the number of seeds. Lines are sorted by paradigm,
    method, loss, task, eval_set, metric, then x. Two records for the same line and seed, a missing
    field or a non-finite value / x raise ValueError naming the record.
    """
    agg = _aggregate(records, CURVE_KEYS + ["task", "eval_set"], x)
    columns = [x if c == "sparsity" else c for c in CURVE_COLUMNS] + ["metric"]
    return agg[columns].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------------
# curves


def _x_scale(table: pd.DataFrame, x: str) -> float:
    # the project stores sparsity as a fraction (0.9); the paper's axes read 20 % ... 90 %. Decided for the whole
    # table: a line of a table in percent that stays at or below 1 % is not a line of fractions
    return 100.0 if x == "sparsity" and np.nanmax(table[x].to_numpy(float)) <= 1.0 else 1.0


def _line_label(key: tuple) -> str:
    return " · ".join(str(part) for part in key if str(part) != "")


def _check_table(table: pd.DataFrame, x: str) -> None:
    needed = [*CURVE_KEYS, "task", "eval_set", x, "mean", "std"]
    missing = [c for c in needed if c not in table.columns]
    if missing:
        raise ValueError(
            f"curve table lacks column(s) {', '.join(missing)} (make it with curve_table(..., x={x!r}))"
        )
    if table.empty:
        raise ValueError("nothing to plot: the curve table is empty")


def _panels(table: pd.DataFrame) -> list[tuple[str, str, str | None]]:
    """(task, eval_set, metric) per panel in order of first appearance; metric None without a metric column."""
    if "metric" not in table.columns:
        return [(t, e, None) for t, e in dict.fromkeys(zip(table["task"], table["eval_set"], strict=True))]
    return list(dict.fromkeys(zip(table["task"], table["eval_set"], table["metric"], strict=True)))


def _reference_rows(
    reference: pd.DataFrame | None, task: str, eval_set: str, metric: str | None
) -> pd.DataFrame:
    if reference is None:
        return pd.DataFrame()
    hit = (reference["task"] == task) & (reference["eval_set"] == eval_set)
    if metric is not None and "metric" in reference.columns:
        hit &= reference["metric"] == metric
    return reference[hit]


def build_curves_figure(
    table: pd.DataFrame,
    x: str = "sparsity",
    reference: pd.DataFrame | None = None,
    title: str | None = None,
    panels: Sequence[tuple[str, str]] | None = None,
    task_kinds: Mapping[str, set[str]] | None = None,
) -> Figure:
    """A ``curve_table`` drawn as a grid of panels.

    One panel per (task, eval_set[, metric]) in order of first appearance, titled e.g. "MNLI · hans"
    (with the metric appended where a (task, eval_set) has several); x is the ``x`` column (sparsity in
    fractions, a table whose sparsities are all <= 1, is drawn in %), y the mean with a shaded ±std band,
    one line per (paradigm, method, loss) with the same colour and marker in every panel and one shared
    legend below the grid. ``reference`` (columns task, eval_set, mean, std and optionally metric: e.g. the
    full fine-tuned model) is drawn as a dashed horizontal line with its band in the panels it matches.
    ``panels``, a list of (task, eval_set), selects and orders the panels (e.g. the in-distribution set
    first, as in the paper; the table itself is sorted alphabetically). ``task_kinds`` ({task: the kinds of its
    data}) heads a synthetic task's panels "synthetic MNLI · hans".
    """
    _check_table(table, x)
    if reference is not None:
        missing = [c for c in ("task", "eval_set", "mean", "std") if c not in reference.columns]
        if missing:
            raise ValueError(f"reference lacks column(s) {', '.join(missing)}")
    scale = _x_scale(table, x)
    found = _panels(table)
    if panels is not None:
        wanted = [(str(t), str(e)) for t, e in panels]
        unknown = [p for p in wanted if p not in {(t, e) for t, e, _ in found}]
        if unknown:
            raise ValueError(f"panels not in the curve table: {', '.join(f'({t}, {e})' for t, e in unknown)}")
        found = [f for p in wanted for f in found if (f[0], f[1]) == p]
    panels = found
    shown = {(t, e) for t, e, _ in panels}
    # a line that is in no selected panel gets no colour and no legend entry
    table = table[[pair in shown for pair in zip(table["task"], table["eval_set"], strict=True)]]
    lines = list(dict.fromkeys(zip(*(table[k] for k in CURVE_KEYS), strict=True)))
    colours = [f"C{i % 10}" for i in range(len(lines))]
    style = {key: (colours[i], _MARKERS[i % len(_MARKERS)]) for i, key in enumerate(lines)}
    pairs = [(t, e) for t, e, _ in panels]
    multi_metric = {p for p in pairs if pairs.count(p) > 1}

    # at most four panels a row, rows as evenly filled as possible (8 eval sets: 2 x 4, 5: 2 x 3)
    n_rows = math.ceil(len(panels) / 4)
    n_cols = math.ceil(len(panels) / n_rows)
    # a Figure without pyplot needs no GUI backend and leaves global matplotlib state alone (Agg canvas)
    fig = Figure(figsize=(max(3.8 * n_cols, 6.0), 3.2 * n_rows + 1.2), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    handles: dict[str, object] = {}
    for ax, (task, eval_set, metric) in zip(axes.flat, panels, strict=False):
        part = table[(table["task"] == task) & (table["eval_set"] == eval_set)]
        if metric is not None:
            part = part[part["metric"] == metric]
        for key in lines:
            sel = np.ones(len(part), dtype=bool)
            for col, value in zip(CURVE_KEYS, key, strict=True):
                sel &= (part[col] == value).to_numpy()
            line = part[sel].sort_values(x)
            if line.empty:
                continue
            xs = line[x].to_numpy(float) * scale
            mean = line["mean"].to_numpy(float)
            std = np.nan_to_num(line["std"].to_numpy(float))
            colour, marker = style[key]
            label = _line_label(key)
            (handle,) = ax.plot(
                xs, mean, color=colour, marker=marker, markersize=4, linewidth=1.4, label=label
            )
            ax.fill_between(xs, mean - std, mean + std, color=colour, alpha=0.2, linewidth=0)
            handles.setdefault(label, handle)
        for ref in _reference_rows(reference, task, eval_set, metric).itertuples(index=False):
            mean, std = float(ref.mean), float(ref.std) if not pd.isna(ref.std) else 0.0
            handle = ax.axhline(mean, color="0.25", linestyle="--", linewidth=1.2, label="full model")
            if std > 0:
                ax.axhspan(mean - std, mean + std, color="0.5", alpha=0.15, linewidth=0)
            handles.setdefault("full model", handle)
        name = f"{task_label(task, (task_kinds or {}).get(task, ''))} · {eval_set}"
        if metric is not None and (task, eval_set) in multi_metric:
            name += f" [{metric}]"
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel(X_LABELS.get(x, x.replace("_", " ")))
        ax.set_ylabel(metric.replace("_", " ") if metric is not None else "score")
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(panels) :]:
        ax.remove()  # an empty grid cell
    # below the grid: it never covers a curve nor the title, and stays readable with one panel
    fig.legend(
        list(handles.values()),
        list(handles.keys()),
        loc="outside lower center",
        ncols=min(len(handles), 4),
        fontsize="small",
    )
    if title is not None:
        fig.suptitle(title)
    return fig


def plot_curves(
    table: pd.DataFrame,
    path: str | Path,
    x: str = "sparsity",
    reference: pd.DataFrame | None = None,
    title: str | None = None,
    panels: Sequence[tuple[str, str]] | None = None,
    task_kinds: Mapping[str, set[str]] | None = None,
) -> None:
    """Draw ``build_curves_figure(table, x, reference, title, panels, task_kinds)`` and write it atomically as a
    PNG at ``path``; missing parent folders are created."""
    fig = build_curves_figure(table, x=x, reference=reference, title=title, panels=panels, task_kinds=task_kinds)
    save_figure(fig, path, dpi=150)


def plot_sparsity_curves(
    table: pd.DataFrame,
    path: str | Path,
    reference: pd.DataFrame | None = None,
    panels: Sequence[tuple[str, str]] | None = None,
    task_kinds: Mapping[str, set[str]] | None = None,
) -> None:
    """Paper C Figures 2-6 and 8: score vs. sparsity (%) per (task, eval_set); see ``plot_curves``."""
    plot_curves(
        table,
        path,
        x="sparsity",
        reference=reference,
        title="Score vs. sparsity (mean ± std over seeds)",
        panels=panels,
        task_kinds=task_kinds,
    )


def plot_timing_curves(
    table: pd.DataFrame,
    path: str | Path,
    reference: pd.DataFrame | None = None,
    panels: Sequence[tuple[str, str]] | None = None,
    task_kinds: Mapping[str, set[str]] | None = None,
) -> None:
    """Paper C Figure 7: score vs. the fine-tuning step the mask search started from (``start_step``
    column of ``curve_table(records, x="start_step")``); see ``plot_curves``."""
    plot_curves(
        table,
        path,
        x="start_step",
        reference=reference,
        title="Score vs. start of the mask search (mean ± std over seeds)",
        panels=panels,
        task_kinds=task_kinds,
    )


# ---------------------------------------------------------------------------------------------------
# Table 5


def load_paper_table5() -> pd.DataFrame:
    """Paper C's Table 5 as published: schedule, init, then one float column per ``PAPER_C_COLUMNS``."""
    with resources.files("maskbench.tracks.nlu.report").joinpath("paper_c_table5.csv").open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype={"schedule": str, "init": str})


def paper_c_value(paper: pd.DataFrame, schedule: str, init: str, column: str | None) -> float:
    """The paper's figure for (schedule, init, column), NaN where the paper has none."""
    if column is None or pd.isna(column) or column not in paper.columns:
        return math.nan
    hit = paper.loc[(paper["schedule"] == schedule) & (paper["init"] == init), column]
    return float(hit.iloc[0]) if len(hit) else math.nan


def _column_spec(name: str, spec) -> tuple[str, str, str | None]:
    if isinstance(spec, Mapping):
        if "task" not in spec or "eval_set" not in spec:
            raise ValueError(f"column_map[{name!r}] lacks task or eval_set")
        metric = spec.get("metric")
        return str(spec["task"]), str(spec["eval_set"]), None if metric is None else str(metric)
    if isinstance(spec, str) or len(spec) not in (2, 3):
        raise ValueError(f"column_map[{name!r}] must be (task, eval_set[, metric]), got {spec!r}")
    return str(spec[0]), str(spec[1]), str(spec[2]) if len(spec) == 3 else None


def table5(records: Iterable[Mapping], column_map: Mapping[str, object]) -> pd.DataFrame:
    """Table 5 in long form: one line per (schedule, init, task, eval_set, metric) with records.

    Records are ``{"schedule", "init", "task", "eval_set", "metric", "seed", "value"}`` (schedule as in
    ``paper_c_table5.csv``: "fixed_0.9", "gradual_0.7-0.9", ...; init "hard" or "soft"). ``column_map`` maps
    paper column names (``PAPER_C_COLUMNS``) to ``(task, eval_set)`` of this run, optionally
    ``(task, eval_set, metric)`` or a mapping with those keys. Columns: ``TABLE5_COLUMNS``, then ``metric``
    and ``column`` (the paper column, missing (NA) if unmapped). ``mean`` / ``std`` / ``n_seeds`` as in
    ``curve_table``; ``paper`` is the paper's figure where (schedule, init, column) is in the paper, NaN
    otherwise. Lines are sorted by schedule and init, then follow ``column_map`` order, unmapped
    (task, eval_set) last.
    """
    specs: dict[tuple[str, str], list[tuple[str | None, str]]] = {}
    for name, spec in column_map.items():
        if name not in PAPER_C_COLUMNS:
            raise ValueError(
                f"column_map: unknown paper column {name!r}; paper C's are {', '.join(PAPER_C_COLUMNS)}"
            )
        task, eval_set, metric = _column_spec(name, spec)
        entries = specs.setdefault((task, eval_set), [])
        if any(m is None or metric is None or m == metric for m, _ in entries):
            raise ValueError(
                f"column_map: {name!r} and another paper column both map to ({task}, {eval_set})"
            )
        entries.append((metric, name))
    agg = _aggregate(records, ["schedule", "init", "task", "eval_set"], None)
    paper = load_paper_table5()

    def column_of(task: str, eval_set: str, metric: str) -> str | None:
        for m, name in specs.get((task, eval_set), []):
            if m is None or m == metric:
                return name
        return None

    agg["column"] = [
        column_of(t, e, m) for t, e, m in zip(agg["task"], agg["eval_set"], agg["metric"], strict=True)
    ]
    agg["paper"] = [
        paper_c_value(paper, s, i, c)
        for s, i, c in zip(agg["schedule"], agg["init"], agg["column"], strict=True)
    ]
    order = {name: i for i, name in enumerate(column_map)}
    agg["_col"] = [len(order) if pd.isna(c) else order.get(c, len(order)) for c in agg["column"]]
    agg = agg.sort_values(["schedule", "init", "_col", "task", "eval_set", "metric"], kind="stable")
    out = agg[TABLE5_COLUMNS + ["metric", "column"]].reset_index(drop=True)
    return out.astype({"mean": float, "std": float, "n_seeds": int, "paper": float})


def table5_markdown(df: pd.DataFrame, task_kinds: Mapping[str, set[str]] | None = None) -> str:
    """A wide Markdown Table 5: one row per (schedule, init), one column per (task, eval_set[, metric]) in
    ``df`` order, headed e.g. "MNLI · hans"; cells read "mean ± std (paper)" (``format_cell``; the std is
    "–" with a single seed, a missing part or cell is "–"); ``task_kinds`` heads a synthetic task's columns
    "synthetic MNLI · hans"."""
    metric_col = "metric" in df.columns
    cols = list(
        dict.fromkeys(
            zip(df["task"], df["eval_set"], df["metric"] if metric_col else [None] * len(df), strict=True)
        )
    )
    pairs = [(t, e) for t, e, _ in cols]
    rows = list(dict.fromkeys(zip(df["schedule"], df["init"], strict=True)))
    cells: dict[tuple, str] = {}
    for rec in df.itertuples(index=False):
        std = float(rec.std) if int(rec.n_seeds) > 1 else math.nan
        key = (rec.schedule, rec.init, rec.task, rec.eval_set, rec.metric if metric_col else None)
        cells[key] = format_cell(float(rec.mean), std, float(rec.paper))

    def head(task: str, eval_set: str, metric: str | None) -> str:
        name = f"{task_label(task, (task_kinds or {}).get(task, ''))} · {eval_set}"
        return f"{name} [{metric}]" if metric is not None and pairs.count((task, eval_set)) > 1 else name

    header = ["Schedule", "Init"] + [head(*c) for c in cols]
    lines = [
        "| " + " | ".join(table_cell(h) for h in header) + " |",
        "|" + "|".join([":---", ":---"] + ["---:"] * len(cols)) + "|",
    ]
    for schedule, init in rows:
        values = [cells.get((schedule, init, *c), MISSING) for c in cols]
        lines.append("| " + " | ".join([table_cell(schedule), table_cell(init)] + [table_cell(v) for v in values]) + " |")
    return "\n".join(lines) + "\n"
