"""Paper D's figures from the vision track's summary: FFW against magnitude pruning over sparsity (figure 6), the
per-layer sparsity of the FFW subnetworks (figure 4), and a grid of biased and unbiased samples per dataset, so a
reader sees what the bias is. Matplotlib ``Figure`` objects only (no pyplot, no GUI backend)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from maskbench.report.figure_files import save_figure


def build_magnitude_vs_ffw_figure(summary: pd.DataFrame, dataset: str, level: str, gamma: float) -> Figure:
    """Task and bias accuracy against sparsity: magnitude pruning of the vanilla model (a line over its
    sparsities), FFW's subnetworks at the config's gamma (points at the sparsity they chose), the vanilla model
    at 0; mean ± std over seeds."""
    part = summary[(summary.dataset == dataset) & (summary.level == level) & (summary.start == "final")]
    fig = Figure(figsize=(10, 4), layout="constrained")
    axes = fig.subplots(1, 2)
    for ax, metric, title in ((axes[0], "task_accuracy", "task accuracy (unbiased test)"),
                              (axes[1], "bias_accuracy", "bias accuracy (fresh head)")):
        magnitude = pd.concat([part[part.method == "vanilla"], part[part.method == "magnitude"]])
        magnitude = magnitude.sort_values("sparsity_mean")
        ax.errorbar(magnitude.sparsity_mean, magnitude[f"{metric}_mean"], yerr=magnitude[f"{metric}_std"],
                    marker="o", capsize=3, label="magnitude pruning (no retraining)")
        for method, marker in (("ffw", "s"), ("ffw_structured", "^")):
            points = part[(part.method == method) & np.isclose(part.gamma.astype(float), gamma)]
            if len(points):
                ax.errorbar(points.sparsity_mean, points[f"{metric}_mean"], xerr=points.sparsity_std,
                            yerr=points[f"{metric}_std"], marker=marker, linestyle="none", capsize=3,
                            label=f"{method} (gamma {gamma:g})")
        ax.set_xlabel("sparsity (%)")
        ax.set_ylabel(f"{title} (%)")
        ax.set_title(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Paper D figure 6 analogue: {dataset} at {level} (mean ± std over seeds)")
    return fig


def plot_magnitude_vs_ffw(summary: pd.DataFrame, dataset: str, level: str, gamma: float, out: str | Path) -> None:
    """``build_magnitude_vs_ffw_figure`` as a PNG at ``out`` and an SVG beside it (``save_figure``)."""
    save_figure(build_magnitude_vs_ffw_figure(summary, dataset, level, gamma), out, dpi=110)


def build_layer_sparsity_figure(layers: pd.DataFrame) -> Figure:
    """Per-layer sparsity (mean over seeds) of each FFW variant, one group of bars per layer (figure 4)."""
    fig = Figure(figsize=(max(6, 0.9 * layers.layer.nunique() + 3), 4), layout="constrained")
    ax = fig.subplots()
    order = list(dict.fromkeys(layers.layer))
    methods = list(dict.fromkeys(layers.method))
    width = 0.8 / max(1, len(methods))
    for i, method in enumerate(methods):
        part = layers[layers.method == method].set_index("layer").reindex(order)
        ax.bar(np.arange(len(order)) + i * width, part["mean"], width, yerr=part["std"], capsize=2, label=method)
    ax.set_xticks(np.arange(len(order)) + width * (len(methods) - 1) / 2, order, rotation=30, ha="right")
    ax.set_ylabel("pruned weights (%)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    title = ", ".join(f"{d} at {lv}" for d, lv in dict.fromkeys(zip(layers.dataset, layers.level, strict=True)))
    ax.set_title(f"Paper D figure 4 analogue: where FFW prunes ({title})")
    return fig


def plot_layer_sparsity(layers: pd.DataFrame, out: str | Path) -> None:
    """``build_layer_sparsity_figure`` as a PNG at ``out`` and an SVG beside it (``save_figure``)."""
    save_figure(build_layer_sparsity_figure(layers), out, dpi=110)


def build_samples_figure(grids: list[tuple[str, np.ndarray]]) -> Figure:
    """One row per (title, uint8 H x W x 3 grid): biased training samples beside unbiased test samples."""
    fig = Figure(figsize=(12, 1.6 * len(grids) + 0.5), layout="constrained")
    axes = fig.subplots(len(grids), 1, squeeze=False)[:, 0]
    for ax, (title, grid) in zip(axes, grids, strict=True):
        ax.imshow(grid, interpolation="nearest")
        ax.set_title(title, fontsize=9, loc="left")
        ax.axis("off")
    fig.suptitle("What the bias is: training samples (biased) | unbiased test samples; one column per class")
    return fig


def plot_samples(grids: list[tuple[str, np.ndarray]], out: str | Path) -> None:
    """``build_samples_figure`` as a PNG at ``out`` and an SVG beside it (``save_figure``)."""
    save_figure(build_samples_figure(grids), out, dpi=100)
