"""Paper B's figures from the gender track's runs: the density each layer keeps per granularity and mode (figure 1)
and which attention heads survive (figure 2, a layers x heads grid). Matplotlib ``Figure`` objects only."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure


def layer_density_frame(runs: list[dict], summaries: list[dict]) -> pd.DataFrame:
    """Long form: kind, granularity, layers, mode, seed, layer, part (attention / ffn), density."""
    rows = []
    for run, summary in zip(runs, summaries, strict=True):
        for entry in summary.get("layer_density", []):
            rows.append({**{k: run[k] for k in ("kind", "granularity", "layers", "mode", "seed")}, **entry})
    return pd.DataFrame(rows, columns=["kind", "granularity", "layers", "mode", "seed", "layer", "part", "density"])


def build_layer_density_figure(density: pd.DataFrame, kind: str = "frozen") -> Figure:
    """One panel per granularity: the attention density of every layer, a line per (layers, mode), mean over
    seeds; the FFN's as dashed lines of the same colour."""
    part = density[density["kind"] == kind]
    granularities = list(dict.fromkeys(part["granularity"]))
    fig = Figure(figsize=(4 * max(1, len(granularities)), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(1, len(granularities)), sharey=True))
    for ax, granularity in zip(axes, granularities, strict=False):
        runs = part[part["granularity"] == granularity]
        for i, ((layers, mode), group) in enumerate(runs.groupby(["layers", "mode"], sort=False)):
            colour = f"C{i}"
            for piece, style in (("attention", "-"), ("ffn", "--")):
                curve = group[group["part"] == piece].groupby("layer")["density"].mean()
                ax.plot(curve.index, 100 * curve.values, style, color=colour, marker="o", markersize=3,
                        label=f"{layers}-{mode}" if piece == "attention" else None)
        ax.set_title(granularity)
        ax.set_xlabel("layer")
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("density kept (%): attention —, FFN - -")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Paper B figure 1 analogue: density per layer ({kind} weights, mean over seeds)")
    return fig


def heads_frame(runs: list[dict], summaries: list[dict]) -> pd.DataFrame:
    """Long form: one row per (run, layer, head) with pruned 0/1."""
    rows = []
    for run, summary in zip(runs, summaries, strict=True):
        grid = np.asarray(summary.get("heads_pruned", []), dtype=int)
        for (layer, head), pruned in np.ndenumerate(grid):
            rows.append({**{k: run[k] for k in ("kind", "granularity", "layers", "mode", "seed")},
                         "layer": layer, "head": head, "pruned": int(pruned)})
    return pd.DataFrame(rows, columns=["kind", "granularity", "layers", "mode", "seed", "layer", "head", "pruned"])


def build_heads_figure(heads: pd.DataFrame, granularity: str = "head", kind: str = "frozen") -> Figure:
    """A layers x heads grid per (layers, mode): the share of seeds in which each head survives."""
    part = heads[(heads["kind"] == kind) & (heads["granularity"] == granularity)]
    groups = list(part.groupby(["layers", "mode"], sort=False))
    fig = Figure(figsize=(3.2 * max(1, len(groups)), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(1, len(groups))))
    image = None
    for ax, ((layers, mode), group) in zip(axes, groups, strict=False):
        survive = 1 - group.groupby(["layer", "head"])["pruned"].mean().unstack("head")
        image = ax.imshow(survive.values, vmin=0, vmax=1, cmap="Greens", aspect="auto")
        ax.set_title(f"{layers}-{mode}", fontsize=9)
        ax.set_xlabel("head")
        ax.set_ylabel("layer")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="share of seeds keeping the head")
    else:
        axes[0].text(0.5, 0.5, f"no {kind} {granularity} runs", ha="center", va="center")
    # two lines: on a one- or two-panel canvas one line was wider than the figure and lost its ends
    fig.suptitle(f"Paper B figure 2 analogue:\nsurviving heads ({granularity}, {kind} weights)", fontsize=10)
    return fig


# bias measures figure 3 can put on its x axis: runs.csv column -> label (0 or 50 = no measured bias)
BIAS_AXES = {"seat_mean_abs": ("mean |SEAT effect size|", 0.0), "crows_pairs": ("CrowS-Pairs bias score (%)", 50.0),
             "stereoset_ss": ("StereoSet SS (%)", 50.0)}


def performance_bias_frame(runs: pd.DataFrame, original: dict) -> pd.DataFrame:
    """One row per (kind, granularity, layers, mode) and the original: mean and std over seeds of the task
    accuracy (``performance``) and of every bias measure the runs have. ``original`` holds the original model's
    values (``performance`` as the list of its per-seed accuracies)."""
    measures = ["performance", *[c for c in BIAS_AXES if c in runs.columns]]
    keys = ["kind", "granularity", "layers", "mode"] + (["objective"] if "objective" in runs.columns else [])
    named = runs.fillna({"granularity": "none"})
    rows = []
    for key, group in named.groupby(keys, sort=False):
        row = dict(zip(keys, key, strict=True))
        for m in measures:
            row[m], row[f"{m}_std"] = group[m].mean(), group[m].std(ddof=1) if len(group) > 1 else 0.0
        rows.append(row)
    base = {"kind": "original", "granularity": "", "layers": "", "mode": "", **({"objective": ""} if "objective" in keys else {})}
    for m in measures:
        values = np.atleast_1d(np.asarray(original.get(m, np.nan), dtype=float))
        base[m], base[f"{m}_std"] = float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0
    return pd.DataFrame([base, *rows])


def build_performance_bias_figure(points: pd.DataFrame) -> Figure:
    """Paper B figure 3 analogue: task accuracy against each bias measure, a point per table row (mean ± std over
    seeds; marker per kind), the original model as a star, the no-bias value as a dotted line."""
    axes_of = [c for c in BIAS_AXES if c in points.columns]
    fig = Figure(figsize=(4.4 * len(axes_of), 3.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(axes_of), sharey=True))
    markers = {"frozen": "o", "unfrozen": "s", "debias_only": "^"}
    for ax, column in zip(axes, axes_of, strict=True):
        label, unbiased = BIAS_AXES[column]
        for kind, group in points[points["kind"] != "original"].groupby("kind", sort=False):
            ax.errorbar(group[column], group["performance"], xerr=group[f"{column}_std"],
                        yerr=group["performance_std"], fmt=markers.get(kind, "o"), alpha=0.75, capsize=2,
                        markersize=5, label=kind.replace("_", " "))
        base = points[points["kind"] == "original"]
        ax.errorbar(base[column], base["performance"], yerr=base["performance_std"], fmt="*", color="black",
                    markersize=12, label="original")
        ax.axvline(unbiased, color="grey", linestyle=":", linewidth=1)
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("task accuracy (%)")
    axes[0].legend(fontsize=7)
    fig.suptitle("Paper B figure 3 analogue:\nperformance against bias (mean ± std over seeds)", fontsize=10)
    return fig
