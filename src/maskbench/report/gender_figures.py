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
    fig.suptitle(f"Paper B figure 2 analogue: surviving heads ({granularity}, {kind} weights)")
    return fig
