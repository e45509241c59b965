"""Where do the masks prune?  Per-layer, per-module-type pruning rates (paper A, Figure 2) and seed stability.

A *mask* is ``{module_name: bool array}`` over the Linear layers of a BERT-like classifier, True meaning
the weight is kept and False that it is pruned. Module names follow Hugging Face's BERT layout, with or
without the ``bert.`` prefix: ``[bert.]encoder.layer.<i>.attention.self.{query,key,value}``,
``...attention.output.dense``, ``...intermediate.dense``, ``...output.dense``, plus ``[bert.]pooler.dense``
and ``classifier``.

A *record* is ``{"task", "row", "seed", "mask"}``: one trained mask of one model row on one task.

* ``layer_and_kind`` / ``pruning_rates``: one mask, one line per module (kinds from
  ``maskbench.masking.selectors``, counts from ``maskbench.masking.density``).
* ``pruning_rate_table``: records averaged over seeds, one line per (task, row, layer, kind) plus an
  ``overall`` line (layer -1) per (task, row); the data of the heatmap.
* ``seed_overlap_table`` / ``seed_overlap_summary``: how much the pruned sets of two seeds agree
  (Jaccard index), next to what two independent random masks with the same pruned counts would give.
* ``plot_pruning_heatmaps``: the heatmap figure, one panel per (task, row).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

from maskbench.masking.density import as_bool, kept_counts
from maskbench.masking.module_kinds import ENCODER_KINDS, layer_index, module_kind
from maskbench.report.figure_files import save_figure
from maskbench.tracks.nlu.report.table1_builder import ROW_LABELS, task_label

# short labels of the encoder-layer kinds; ENCODER_KINDS is in the order of paper A's Figure 2 (bottom to top of
# a layer)
KIND_LABELS = {
    "query": "Q",
    "key": "K",
    "value": "V",
    "attention_output": "Attn out",
    "ffn_in": "FFN in",
    "ffn_out": "FFN out",
}
OVERALL = "overall"
OVERALL_LAYER = -1

RATE_COLUMNS = ["layer", "kind", "module", "n_weights", "n_pruned", "pruned_fraction"]
TABLE_COLUMNS = ["task", "row", "layer", "kind", "pruned_mean", "pruned_std", "n_seeds"]
OVERLAP_COLUMNS = [
    "task",
    "row",
    "seed_a",
    "seed_b",
    "n_pruned_a",
    "n_pruned_b",
    "jaccard_pruned",
    "jaccard_chance",
    "n_weights",
]
SUMMARY_COLUMNS = [
    "task",
    "row",
    "n_pairs",
    "jaccard_mean",
    "jaccard_std",
    "jaccard_min",
    "jaccard_chance_mean",
]


def layer_and_kind(name: str) -> tuple[int | None, str]:
    """(layer index, kind) of a module (or ``.weight``) name: kind from the engine's table of BERT module kinds
    (``maskbench.masking.selectors.module_kind``), the layer for the encoder-layer kinds (``ENCODER_KINDS``)
    only, else None.

    >>> layer_and_kind("bert.encoder.layer.3.attention.output.dense")
    (3, 'attention_output')
    >>> layer_and_kind("encoder.layer.3.output.dense")
    (3, 'ffn_out')
    """
    name = name.removesuffix(".weight")
    kind = module_kind(name)
    return (layer_index(name) if kind in ENCODER_KINDS else None), kind


def _kind_rank(kind: str) -> int:
    order = (*ENCODER_KINDS, "pooler", "classifier", "other")
    return order.index(kind) if kind in order else len(order)


def pruning_rates(mask: Mapping[str, object]) -> pd.DataFrame:
    """One line per module of ``mask``: layer (nullable int), kind, module, n_weights, n_pruned and
    pruned_fraction (percent, 0-100). Encoder-layer modules come first, by layer then by kind."""
    records = []
    for name, (n_weights, n_kept) in kept_counts(mask).items():
        n_pruned = n_weights - n_kept
        layer, kind = layer_and_kind(name)
        records.append(
            {
                "layer": layer,
                "kind": kind,
                "module": name,
                "n_weights": n_weights,
                "n_pruned": n_pruned,
                "pruned_fraction": 100.0 * n_pruned / n_weights if n_weights else math.nan,
            }
        )
    records.sort(key=lambda r: (r["layer"] is None, r["layer"] or 0, _kind_rank(r["kind"]), r["module"]))
    df = pd.DataFrame.from_records(records, columns=RATE_COLUMNS)
    df["layer"] = df["layer"].astype("Int64")
    df["n_weights"] = df["n_weights"].astype("int64")
    df["n_pruned"] = df["n_pruned"].astype("int64")
    df["pruned_fraction"] = df["pruned_fraction"].astype(float)
    return df


def _check_records(records: Iterable[Mapping]) -> list[Mapping]:
    records = list(records)
    seen = set()
    for i, rec in enumerate(records):
        missing = [k for k in ("task", "row", "seed", "mask") if k not in rec]
        if missing:
            raise ValueError(f"record {i} lacks {', '.join(missing)}")
        key = (str(rec["task"]), str(rec["row"]), rec["seed"])
        if key in seen:
            raise ValueError(f"two masks for task={key[0]}, row={key[1]}, seed={key[2]}")
        seen.add(key)
    return records


def pruning_rate_table(records: Iterable[Mapping]) -> pd.DataFrame:
    """Pruned percentage per (task, row, layer, kind) averaged over seeds (long form).

    Columns ``TABLE_COLUMNS``: pruned_mean / pruned_std are the mean and sample std (ddof=1, 0 with a
    single seed) over seeds of the module's pruned percentage, n_seeds the number of seeds. Only
    encoder-layer modules count; each (task, row) also gets a ``kind == "overall"`` line with
    ``layer == -1``: the percentage of all masked encoder-layer weights that are pruned. Lines follow
    the first appearance of (task, row) in ``records``, then layer, then ``ENCODER_KINDS`` order, overall last.
    """
    records = _check_records(records)
    per_seed = []
    for rec in records:
        rates = pruning_rates(rec["mask"])
        enc = rates[rates["kind"].isin(ENCODER_KINDS)]
        if enc.empty:
            raise ValueError(
                f"mask of task={rec['task']}, row={rec['row']}, seed={rec['seed']} has no encoder-layer "
                f"module (names like 'bert.encoder.layer.0.attention.self.query')"
            )
        # sum first: a (layer, kind) split over several modules still gets one weight-weighted rate
        grouped = enc.groupby(["layer", "kind"], sort=False)[["n_weights", "n_pruned"]].sum().reset_index()
        total_w, total_p = int(enc["n_weights"].sum()), int(enc["n_pruned"].sum())
        grouped.loc[len(grouped)] = [OVERALL_LAYER, OVERALL, total_w, total_p]
        grouped["pct"] = 100.0 * grouped["n_pruned"] / grouped["n_weights"]
        grouped["task"], grouped["row"], grouped["seed"] = str(rec["task"]), str(rec["row"]), rec["seed"]
        per_seed.append(grouped)
    if not per_seed:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    long = pd.concat(per_seed, ignore_index=True)
    long["layer"] = long["layer"].astype(int)
    agg = (
        long.groupby(["task", "row", "layer", "kind"], sort=False)["pct"]
        .agg(pruned_mean="mean", pruned_std=lambda s: s.std(ddof=1), n_seeds="count")
        .reset_index()
    )
    agg["pruned_std"] = agg["pruned_std"].fillna(0.0)
    pair_order = {
        pair: i for i, pair in enumerate(dict.fromkeys(zip(long["task"], long["row"], strict=True)))
    }
    agg["_pair"] = [pair_order[p] for p in zip(agg["task"], agg["row"], strict=True)]
    agg["_overall"] = agg["kind"] == OVERALL
    agg["_kind"] = agg["kind"].map(_kind_rank)
    agg = agg.sort_values(["_pair", "_overall", "layer", "_kind"], kind="stable")
    agg = agg[TABLE_COLUMNS].reset_index(drop=True)
    agg["n_seeds"] = agg["n_seeds"].astype(int)
    return agg


def jaccard_chance(n_pruned_a: int, n_pruned_b: int, n_weights: int) -> float:
    """Expected-overlap Jaccard of two independent random pruned sets of sizes a and b among N weights:
    E = a*b/N shared weights, so E / (a + b - E); 1.0 when both sets are empty."""
    if n_pruned_a == 0 and n_pruned_b == 0:
        return 1.0
    if n_weights <= 0:
        raise ValueError("n_weights must be positive")
    expected = n_pruned_a * n_pruned_b / n_weights
    return expected / (n_pruned_a + n_pruned_b - expected)


def mask_overlap(mask_a: Mapping[str, object], mask_b: Mapping[str, object]) -> dict:
    """Pruned-set overlap of two masks over the modules they share: n_weights, n_pruned_a, n_pruned_b,
    n_pruned_both, jaccard_pruned (1.0 when neither prunes anything) and jaccard_chance."""
    common = [name for name in mask_a if name in mask_b]
    if not common:
        raise ValueError("the two masks share no module")
    n_weights = n_a = n_b = n_both = n_either = 0
    for name in common:
        kept_a, kept_b = as_bool(mask_a[name]), as_bool(mask_b[name])
        if kept_a.shape != kept_b.shape:
            raise ValueError(f"module {name!r}: mask shapes differ ({kept_a.shape} vs {kept_b.shape})")
        pruned_a, pruned_b = ~kept_a, ~kept_b
        n_weights += kept_a.size
        n_a += int(np.count_nonzero(pruned_a))
        n_b += int(np.count_nonzero(pruned_b))
        n_both += int(np.count_nonzero(pruned_a & pruned_b))
        n_either += int(np.count_nonzero(pruned_a | pruned_b))
    return {
        "n_weights": n_weights,
        "n_pruned_a": n_a,
        "n_pruned_b": n_b,
        "n_pruned_both": n_both,
        "jaccard_pruned": n_both / n_either if n_either else 1.0,
        "jaccard_chance": jaccard_chance(n_a, n_b, n_weights),
    }


def _sorted_seeds(seeds: Iterable) -> list:
    seeds = list(seeds)
    try:
        return sorted(seeds)
    except TypeError:
        return sorted(seeds, key=str)


def seed_overlap_table(records: Iterable[Mapping]) -> pd.DataFrame:
    """One line per (task, row) and pair of seeds seed_a < seed_b: the Jaccard index of the two pruned
    sets over the modules common to both masks, with each pruned count, the Jaccard expected by chance
    (``jaccard_chance``) and the number of weights compared. A (task, row) with one seed has no line."""
    records = _check_records(records)
    groups: dict[tuple[str, str], dict] = {}
    for rec in records:
        groups.setdefault((str(rec["task"]), str(rec["row"])), {})[rec["seed"]] = rec["mask"]
    lines = []
    for (task, row), by_seed in groups.items():
        for seed_a, seed_b in combinations(_sorted_seeds(by_seed), 2):
            ov = mask_overlap(by_seed[seed_a], by_seed[seed_b])
            lines.append({"task": task, "row": row, "seed_a": seed_a, "seed_b": seed_b, **ov})
    return pd.DataFrame.from_records(lines, columns=OVERLAP_COLUMNS)


def seed_overlap_summary(overlap: pd.DataFrame) -> pd.DataFrame:
    """Per (task, row) of ``seed_overlap_table`` output: n_pairs and the mean, sample std (0 with a
    single pair) and min of jaccard_pruned, plus the mean chance-level Jaccard for comparison."""
    if overlap.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    out = (
        overlap.groupby(["task", "row"], sort=False)
        .agg(
            n_pairs=("jaccard_pruned", "count"),
            jaccard_mean=("jaccard_pruned", "mean"),
            jaccard_std=("jaccard_pruned", lambda s: s.std(ddof=1)),
            jaccard_min=("jaccard_pruned", "min"),
            jaccard_chance_mean=("jaccard_chance", "mean"),
        )
        .reset_index()
    )
    out["jaccard_std"] = out["jaccard_std"].fillna(0.0)
    out["n_pairs"] = out["n_pairs"].astype(int)
    return out[SUMMARY_COLUMNS]


def heatmap_matrix(table: pd.DataFrame, task: str, row: str) -> tuple[np.ndarray, list[int]]:
    """The (len(ENCODER_KINDS), n_layers) matrix of pruned_mean for one (task, row) of a
    ``pruning_rate_table``, NaN where a (layer, kind) is missing, and the 0-based layers of its columns."""
    part = table[(table["task"] == task) & (table["row"] == row) & table["kind"].isin(ENCODER_KINDS)]
    layers = sorted(int(x) for x in part["layer"].unique())
    matrix = np.full((len(ENCODER_KINDS), len(layers)), np.nan)
    col = {layer: j for j, layer in enumerate(layers)}
    for rec in part.itertuples(index=False):
        matrix[ENCODER_KINDS.index(rec.kind), col[int(rec.layer)]] = float(rec.pruned_mean)
    return matrix, layers


def build_pruning_heatmaps_figure(table: pd.DataFrame) -> Figure:
    """Paper A Figure 2 style: one heatmap per (task, row) of a ``pruning_rate_table`` (rows Q ... FFN out,
    columns layers 1..L, colour and annotation = mean pruned %), shared colour scale and colourbar."""
    layer_lines = table[table["kind"].isin(ENCODER_KINDS)]
    if layer_lines.empty:
        raise ValueError("nothing to plot: the table has no encoder-layer line")
    pairs = list(dict.fromkeys(zip(layer_lines["task"], layer_lines["row"], strict=True)))
    panels = [(task, row, *heatmap_matrix(table, task, row)) for task, row in pairs]
    overall = {
        (rec.task, rec.row): float(rec.pruned_mean)
        for rec in table[table["kind"] == OVERALL].itertuples(index=False)
    }
    vmax = max(float(np.nanmax(m)) for *_, m, _ in panels)
    norm = Normalize(vmin=0.0, vmax=vmax if vmax > 0 else 1.0)
    cmap = colormaps["viridis"].with_extremes(bad="0.85")

    n_cols = math.ceil(math.sqrt(len(panels)))
    n_rows = math.ceil(len(panels) / n_cols)
    max_layers = max(len(layers) for *_, layers in panels)
    panel_w = max(3.0, 0.55 * max_layers + 1.4)
    # a Figure without pyplot needs no GUI backend and leaves global matplotlib state alone (Agg canvas)
    fig = Figure(figsize=(panel_w * n_cols + 1.2, 3.3 * n_rows + 0.6), layout="constrained")
    axes = fig.subplots(n_rows, n_cols, squeeze=False)
    font = 8 if max_layers <= 12 else 6
    image = None
    for ax, (task, row, matrix, layers) in zip(axes.flat, panels, strict=False):
        image = ax.imshow(np.ma.masked_invalid(matrix), cmap=cmap, norm=norm, aspect="auto")
        for i, j in np.ndindex(matrix.shape):
            value = matrix[i, j]
            if np.isnan(value):
                continue
            # white on the dark (low) end of viridis, black on the bright end
            colour = "white" if norm(value) < 0.55 else "black"
            ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=font, color=colour)
        ax.set_xticks(range(len(layers)), [str(layer + 1) for layer in layers])
        ax.set_yticks(range(len(ENCODER_KINDS)), [KIND_LABELS[k] for k in ENCODER_KINDS])
        ax.set_xlabel("layer")
        title = f"{task_label(task)} · {ROW_LABELS.get(row, row)}"
        if (task, row) in overall:
            title += f"\n(overall {overall[(task, row)]:.1f}% pruned)"
        ax.set_title(title, fontsize="medium")
    for ax in axes.flat[len(panels) :]:
        ax.remove()  # an empty grid cell; removed rather than hidden so the colourbar hugs the panels
    fig.colorbar(
        image,
        ax=list(axes.flat[: len(panels)]),
        label="pruned weights (%, mean over seeds)",
        shrink=0.9,
        fraction=0.03,
        pad=0.01,
    )
    fig.suptitle("Pruning rate per module type and layer")
    return fig


def plot_pruning_heatmaps(table: pd.DataFrame, path: str | Path) -> None:
    """Draw ``build_pruning_heatmaps_figure(table)`` and write it atomically as a PNG at ``path`` and an SVG beside it; missing
    parent folders are created."""
    save_figure(build_pruning_heatmaps_figure(table), path, dpi=150)
