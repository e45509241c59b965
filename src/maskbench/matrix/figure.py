"""The matrix figure: a panel per benchmark, each method's picked cell as a point (mean ± sd over seeds).

x is the ID score; y the OOD score where the benchmark has one, else the bias readout (a dotted line marks its
unbiased value). The marker's shape is the method's paper (baseline: a cross), its colour the method; filled where
the method's own paper evaluates it on that benchmark, hollow elsewhere. The figure's legend names every
(method, filled / hollow) pair drawn.
"""

from __future__ import annotations

import math
import textwrap

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from maskbench.matrix.cells import BASELINE

SHAPES = {"-": "X", "A": "o", "B": "s", "C": "^", "D": "D"}
LABEL_WIDTH = 60  # characters an axis label line holds before it wraps (a panel is about 4.6 inches wide)
# matplotlib's tab20, dark shades first: twenty methods before a colour repeats
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7",
           "#dbdb8d", "#9edae5"]


def method_colours(methods) -> dict[str, str]:
    names = [BASELINE] * (BASELINE in set(methods)) + sorted(set(methods) - {BASELINE})
    others = [m for m in names if m != BASELINE]
    return {BASELINE: "black", **{m: PALETTE[i % len(PALETTE)] for i, m in enumerate(others)}}


def y_of(rows: pd.DataFrame) -> tuple[str, str, str]:
    """Which score a benchmark's panel puts on y: ("ood", label) when any method has an OOD score, else bias."""
    if rows.ood_mean.notna().any():
        return "ood_mean", "ood_sd", f"OOD: {rows.ood_name.dropna().iloc[0]}" if "ood_name" in rows else "OOD"
    return "bias_mean", "bias_sd", f"bias: {rows.bias_name.dropna().iloc[0]}" if "bias_name" in rows else "bias"


def matrix_figure(table: pd.DataFrame, title: str) -> Figure:
    benchmarks = sorted(table.benchmark.unique())
    colours = method_colours(table.method)
    cols = min(3, len(benchmarks))
    rows_n = math.ceil(len(benchmarks) / cols)
    fig = Figure(figsize=(4.6 * cols, 3.9 * rows_n + 1.6), layout="constrained")
    axes = fig.subplots(rows_n, cols, squeeze=False).ravel()
    drawn: dict[tuple[str, bool], Line2D] = {}
    for ax, benchmark in zip(axes, benchmarks, strict=False):
        rows = table[table.benchmark == benchmark]
        y, y_sd, y_label = y_of(rows)
        for row in rows.itertuples():
            if math.isnan(getattr(row, y)):
                continue
            filled = bool(row.native) or row.method == BASELINE
            x = row.id_mean if not math.isnan(row.id_mean) else 0.0
            ax.errorbar(x, getattr(row, y), xerr=None if math.isnan(row.id_sd) else row.id_sd,
                        yerr=None if math.isnan(getattr(row, y_sd)) else getattr(row, y_sd),
                        marker=SHAPES[row.method_paper], markersize=8, color=colours[row.method],
                        markerfacecolor=colours[row.method] if filled else "none", linestyle="none", capsize=2)
            drawn.setdefault((row.method, filled), Line2D(
                [], [], marker=SHAPES[row.method_paper], color=colours[row.method], linestyle="none",
                markerfacecolor=colours[row.method] if filled else "none",
                label=_label(row.method, row.method_paper, filled)))
        if y == "bias_mean":
            ax.axhline(float(rows.bias_ideal.iloc[0]), color="grey", linestyle=":", linewidth=1)
        ax.set_title(benchmark, fontsize=10)
        ax.set_xlabel(textwrap.fill(f"ID: {rows.id_name.iloc[0]}" if rows.id_mean.notna().any()
                                    else "(no ID score: x = 0)", LABEL_WIDTH), fontsize=8)
        ax.set_ylabel(textwrap.fill(y_label, LABEL_WIDTH), fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in axes[len(benchmarks):]:
        ax.set_visible(False)
    handles = [drawn[k] for k in sorted(drawn, key=lambda k: (k[0] != BASELINE, k[0], not k[1]))]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=10)
    return fig


def _label(method: str, paper: str, filled: bool) -> str:
    if method == BASELINE:
        return "baseline (unpruned)"
    return f"{method} ({paper})" + (", its own paper's benchmark" if filled else "")
