"""The budget study's table, selection rule and figure: where the suite's sizes come from.

Two parts, each on the config's real data and seeds:

- **the baseline**: dev accuracy after each epoch of a fine-tuning on each training set (one line per training set,
  epoch and seed);
- **paper A's mask search** from the config's own baselines: per masked-debiasing row and (score learning rate,
  search epochs) point, the mask's density (its share of scores past the final threshold), its engagement, the loss
  curve's tail, its dev accuracy, and its scores on the task's evaluation sets (reported, never selected on);
- **paper C's subnetworks** of the same baselines (``budget_study.srnets``): mask training and IMP per training
  budget (epochs) and target sparsity, the sparsity reached (engagement), the dev accuracy, and the evaluation sets'
  scores (reported, never selected on).

**The selection rule reads dev accuracy and engagement only** (no HANS, negation or test score):

1. the baseline's size: the cheapest (training pairs × epochs) whose mean dev accuracy over seeds is within
   ``plateau`` points of the best mean dev accuracy in the study;
2. the mask search's point: among the points where *every* row's mask engages on *every* seed
   (``maskbench.report.engagement``) and every row's mean dev accuracy is at most ``id_cost_max`` points below the
   baseline's mean dev accuracy, the one with the fewest search steps, then the smallest learning rate; none: the
   study says so, with the point that came closest;
3. paper C's budget, per method: the fewest epochs at which every target sparsity is reached on every seed and every
   sparsity's mean dev accuracy is at most ``id_cost_max`` points below the start's; none: the study says so, with the
   budget that came closest.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.report import engagement

# the name of the config's own baseline (the masks' start) on the curve, after its training set's
SUITE_BASELINE = " (suite's baseline)"
# what the report calls paper C's methods
SRNET_METHODS = {"mask_train": "mask training", "imp": "IMP"}


def _json(path: str | Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _curve_dev(summary_path: str | Path) -> list[tuple[int, int, float]]:
    """(epoch, step, dev accuracy) of the last dev score of each epoch of a fine-tuning (its train_curve.csv)."""
    curve = pd.read_csv(Path(summary_path).parent / "train_curve.csv").dropna(subset=["dev_accuracy"])
    last = curve.groupby("epoch", sort=True).tail(1)
    return [(int(r.epoch), int(r.step), float(r.dev_accuracy)) for r in last.itertuples()]


def _eval_scores(evals: Mapping[str, str]) -> dict:
    out = {}
    for name, path in evals.items():
        metrics = _json(path)["metrics"]
        out[f"{name}:accuracy"] = float(metrics["accuracy"])
        for key in ("accuracy/label=entailment", "accuracy/label=non-entailment"):
            if key in metrics:
                out[f"{name}:{key.removeprefix('accuracy/label=')}"] = float(metrics[key])
    return out


def study_table(runs: Sequence[Mapping], dev_set: str | None = None) -> pd.DataFrame:
    """One long table: a line per (baseline, epoch, seed), per (mask row, point, seed) and per (paper C method,
    epochs, sparsity, seed); ``dev_set``: the evaluation set whose score is a subnetwork's dev accuracy."""
    lines = []
    start_dev = {}
    start_scores = {}
    for run in runs:
        if run["kind"] == "start":
            start_dev[int(run["seed"])] = float(_json(run["summary"])["final_dev_accuracy"])
            start_scores[int(run["seed"])] = _eval_scores(run.get("evals") or {})
    for run in runs:
        seed = int(run["seed"])
        # the suite's own baseline (the masks' start, with its epochs and early stop) is a point of the curve too,
        # named apart: its learning rate decays over its own epochs, so its epoch 1 is not a longer run's epoch 1
        if run["kind"] == "baseline" or (run["kind"] == "start" and run.get("train_set")):
            summary = _json(run["summary"])
            n_train = int(summary["n_train"])
            name = run["train_set"] if run["kind"] == "baseline" else f"{run['train_set']}{SUITE_BASELINE}"
            for epoch, _step, dev in _curve_dev(run["summary"]):
                lines.append({"part": "baseline", "train_set": name, "n_train": n_train, "seed": seed,
                              "epoch": epoch, "pairs_seen": epoch * n_train, "dev_accuracy": dev})
        elif run["kind"] == "mask":
            summary = _json(run["summary"])
            found = engagement.mask_search(summary)
            line = {"part": "mask", "row": run["row"], "loss": summary["meta"].get("loss", ""),
                    "learning_rate": float(run["learning_rate"]), "epochs": int(run["epochs"]),
                    "steps": int(summary["steps"]), "seed": seed, "density": float(summary["density"]),
                    "pruned_share": found.measures["pruned_share"], "engaged": found.engaged,
                    "loss_tail_change": found.measures["loss_tail_change"],
                    "dev_accuracy": float(summary["final_dev_accuracy"]),
                    "start_dev_accuracy": start_dev.get(seed, math.nan)}
            scores = _eval_scores(run.get("evals") or {})
            line.update(scores)
            line.update({f"{k} (baseline)": v for k, v in start_scores.get(seed, {}).items()})
            lines.append(line)
        elif run["kind"] == "srnet":
            lines.append(_srnet_line(run, dev_set, start_dev.get(seed, math.nan), start_scores.get(seed, {})))
    return pd.DataFrame(lines)


def _srnet_line(run: Mapping, dev_set: str | None, start_dev: float, start_scores: Mapping) -> dict:
    """One paper C subnetwork: its reached sparsity against the target (engagement), its dev accuracy (the scored
    ``dev_set`` when the run has it, else its summary's), and its scores beside the start's."""
    summary = _json(run["summary"])
    target = float(run["sparsity"])
    reached = float(summary["exact_sparsity"])
    scores = _eval_scores(run.get("evals") or {})
    own_dev = summary.get("saved_mask_dev_accuracy", summary.get("final_dev_accuracy"))
    dev = scores.get(f"{dev_set}:accuracy", own_dev) if dev_set else own_dev
    line = {"part": "srnet", "method": run["method"], "epochs": float(run["epochs"]), "sparsity": target,
            # IMP: the steps trained up to this level (end_step), mask training: its run's
            "steps": int(summary.get("end_step", summary.get("total_steps", 0))), "seed": int(run["seed"]),
            "reached_sparsity": reached,
            "engaged": engagement.sparsity_target(reached, target).engaged, "dev_accuracy": float(dev),
            "start_dev_accuracy": start_dev}
    line.update(scores)
    line.update({f"{k} (baseline)": v for k, v in start_scores.items()})
    return line


def baseline_curve(table: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and count of the baseline's dev accuracy per (training set, epoch)."""
    base = table[table.part == "baseline"]
    grouped = base.groupby(["train_set", "n_train", "epoch", "pairs_seen"], sort=True).dev_accuracy
    return grouped.agg(["mean", "std", "count"]).reset_index()


def mask_points(table: pd.DataFrame) -> pd.DataFrame:
    """Per (row, learning rate, epochs): steps, mean density, every seed engaged, mean dev and its drop."""
    masks = table[table.part == "mask"]
    if masks.empty:
        return pd.DataFrame()
    grouped = masks.groupby(["row", "learning_rate", "epochs"], sort=True)
    out = grouped.agg(steps=("steps", "first"), density=("density", "mean"), pruned_share=("pruned_share", "mean"),
                      all_engaged=("engaged", "all"), dev=("dev_accuracy", "mean"),
                      start_dev=("start_dev_accuracy", "mean"), seeds=("seed", "nunique")).reset_index()
    out["dev_drop"] = out.start_dev - out.dev
    return out


def srnet_points(table: pd.DataFrame) -> pd.DataFrame:
    """Per (paper C method, epochs, sparsity): steps, mean reached sparsity, every seed on target, mean dev, drop."""
    part = table[table.part == "srnet"] if "part" in table else pd.DataFrame()
    if part.empty:
        return pd.DataFrame()
    grouped = part.groupby(["method", "epochs", "sparsity"], sort=True)
    out = grouped.agg(steps=("steps", "max"), reached=("reached_sparsity", "mean"), all_engaged=("engaged", "all"),
                      dev=("dev_accuracy", "mean"), start_dev=("start_dev_accuracy", "mean"),
                      seeds=("seed", "nunique")).reset_index()
    out["dev_drop"] = out.start_dev - out.dev
    return out


def select_srnet_budget(points: pd.DataFrame, id_cost_max: float) -> dict[str, dict]:
    """Rule 3, per paper C method: the fewest epochs at which every sparsity is reached on every seed and every
    sparsity's mean dev accuracy is at most ``id_cost_max`` below the start's; ``found`` False (with the closest
    budget: the most sparsities within the bound, then the smallest worst drop) when none qualifies."""
    picks = {}
    for method, part in points.groupby("method", sort=True):
        per = part.groupby("epochs", sort=True).agg(
            steps=("steps", "max"), on_target=("all_engaged", "all"), worst_drop=("dev_drop", "max"),
            within=("dev_drop", lambda d: int((d <= id_cost_max).sum())), levels=("sparsity", "nunique")).reset_index()
        good = per[per.on_target & (per.worst_drop <= id_cost_max)].sort_values("epochs")
        if not good.empty:
            pick = good.iloc[0]
            picks[method] = {"found": True, "epochs": float(pick.epochs), "steps": int(pick.steps),
                             "worst_drop": float(pick.worst_drop), "id_cost_max": id_cost_max}
            continue
        close = per.sort_values(["within", "worst_drop"], ascending=[False, True]).iloc[0]
        picks[method] = {"found": False, "epochs": float(close.epochs), "steps": int(close.steps),
                         "worst_drop": float(close.worst_drop), "within": int(close.within),
                         "levels": int(close.levels), "id_cost_max": id_cost_max}
    return picks


def select_baseline(curve: pd.DataFrame, plateau: float) -> dict:
    """Rule 1: the cheapest (pairs seen) point within ``plateau`` of the best mean dev accuracy."""
    best = float(curve["mean"].max())
    within = curve[curve["mean"] >= best - plateau].sort_values(["pairs_seen", "n_train"])
    pick = within.iloc[0]
    return {"train_set": pick.train_set, "n_train": int(pick.n_train), "epochs": int(pick.epoch),
            "dev_mean": float(pick["mean"]), "best_dev_mean": best, "plateau": plateau}


def select_mask_point(points: pd.DataFrame, id_cost_max: float) -> dict:
    """Rule 2: the fewest steps, then the smallest learning rate, among points where every row engages on every
    seed within the ID bound; ``found`` False (with the closest point: the most rows engaged, then the smallest
    largest drop) when none qualifies."""
    per_point = points.groupby(["learning_rate", "epochs"], sort=True).agg(
        steps=("steps", "first"), rows_engaged=("all_engaged", "sum"), rows=("row", "nunique"),
        worst_drop=("dev_drop", "max")).reset_index()
    per_point["qualifies"] = (per_point.rows_engaged == per_point.rows) & (per_point.worst_drop <= id_cost_max)
    good = per_point[per_point.qualifies].sort_values(["steps", "learning_rate"])
    if not good.empty:
        pick = good.iloc[0]
        return {"found": True, "learning_rate": float(pick.learning_rate), "epochs": int(pick.epochs),
                "steps": int(pick.steps), "worst_drop": float(pick.worst_drop), "id_cost_max": id_cost_max}
    close = per_point.sort_values(["rows_engaged", "worst_drop"], ascending=[False, True]).iloc[0]
    return {"found": False, "learning_rate": float(close.learning_rate), "epochs": int(close.epochs),
            "steps": int(close.steps), "worst_drop": float(close.worst_drop), "rows_engaged": int(close.rows_engaged),
            "rows": int(close.rows), "id_cost_max": id_cost_max}


def ood_trend(table: pd.DataFrame, eval_set: str, part: str = "mask") -> pd.DataFrame:
    """Per (row, point) of paper A's masks (``part`` srnet: per paper C method, epochs and sparsity): the mean paired
    gain on ``eval_set`` over the baseline of the same seed, its SE and n — reported beside the study (the effect
    against the budget), never read by the selection rules."""
    col, base = f"{eval_set}:accuracy", f"{eval_set}:accuracy (baseline)"
    lines = table[table.part == part]
    if lines.empty or col not in lines.columns or base not in lines.columns:
        return pd.DataFrame()
    lines = lines.assign(gain=lines[col] - lines[base])
    keys = ["row", "learning_rate", "epochs"] if part == "mask" else ["method", "epochs", "sparsity"]
    out = lines.groupby(keys, sort=True).gain.agg(["mean", "std", "count"]).reset_index()
    out["se"] = out["std"] / np.sqrt(out["count"])
    return out


def markdown(table: pd.DataFrame, id_cost_max: float, plateau: float, ood_set: str | None) -> str:
    curve = baseline_curve(table)
    points = mask_points(table)
    lines = ["## The baseline: dev accuracy against training pairs and epochs", "",
             "| training set | pairs | epoch | pairs seen | dev accuracy (mean ± sd) | seeds |", "|---|---:|---:|---:|---|---:|"]
    lines += [f"| {r.train_set} | {int(r.n_train):,} | {int(r.epoch)} | {int(r.pairs_seen):,} | {r['mean']:.1f} ± "
              f"{r['std']:.1f} | {int(r['count'])} |" for _, r in curve.iterrows()]
    # rule 1 chooses among the study's own fine-tunings (the suite's baseline beside them); without them the curve is
    # the masks' start alone, and nothing is chosen
    own = any(not name.endswith(SUITE_BASELINE) for name in curve.get("train_set", []))
    pick = select_baseline(curve, plateau) if own else None
    if pick:
        part = curve[curve.train_set == pick["train_set"]].sort_values("epoch")
        trend = engagement.dev_trend(list(part[part.epoch <= pick["epochs"]]["mean"]))
        lines += ["", f"**Rule 1** (the cheapest size within {plateau:g} point of the best mean dev accuracy, "
                  f"{pick['best_dev_mean']:.1f}): **{pick['train_set']} ({pick['n_train']:,} pairs), "
                  f"{pick['epochs']} epoch(s)**, dev {pick['dev_mean']:.1f}; its curve at that epoch: {trend}."]
    elif not curve.empty:
        lines += ["", "**Rule 1 not applied**: this study fine-tunes no baseline of its own; the curve is the config's "
                  "baseline, the masks' start."]
    if not points.empty:
        lines += ["", "## Paper A's mask search: engagement against steps and score learning rate", "",
                  "| row | learning rate | epochs | steps | kept (mean) | every seed engaged | dev (mean) | dev drop | seeds |",
                  "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
        lines += [f"| {r.row} | {r.learning_rate:g} | {int(r.epochs)} | {int(r.steps)} | {100 * r.density:.3f} % | "
                  f"{'yes' if r.all_engaged else 'no'} | {r.dev:.1f} | {r.dev_drop:+.1f} | {r.seeds} |"
                  for r in points.itertuples()]
        choice = select_mask_point(points, id_cost_max)
        if choice["found"]:
            lines += ["", f"**Rule 2** (the fewest steps, then the smallest rate, where every row engages on every "
                      f"seed with a dev drop ≤ {id_cost_max:g}): **learning rate {choice['learning_rate']:g}, "
                      f"{choice['epochs']} epoch(s) ({choice['steps']} steps)**, worst dev drop "
                      f"{choice['worst_drop']:.1f}."]
        else:
            lines += ["", f"**Rule 2: no point qualifies** (every row engaged on every seed with a dev drop ≤ "
                      f"{id_cost_max:g}); the closest: learning rate {choice['learning_rate']:g}, {choice['epochs']} "
                      f"epoch(s), {choice['rows_engaged']} of {choice['rows']} rows engaged, worst dev drop "
                      f"{choice['worst_drop']:.1f}."]
    lines += _srnet_markdown(table, id_cost_max)
    if ood_set:
        trend = ood_trend(table, ood_set)
        if not trend.empty:
            lines += ["", f"## Reported, not selected on: {ood_set} against the baseline of the same seed", "",
                      "| row | learning rate | epochs | gain (mean ± SE) | seeds |", "|---|---:|---:|---|---:|"]
            lines += [f"| {r.row} | {r.learning_rate:g} | {int(r.epochs)} | {r['mean']:+.1f} ± {r.se:.1f} | {int(r['count'])} |"
                      for _, r in trend.iterrows()]
        trend = ood_trend(table, ood_set, part="srnet")
        if not trend.empty:
            lines += ["", f"## Reported, not selected on: paper C's subnetworks on {ood_set} against the start of the "
                      "same seed", "", "| method | epochs | sparsity | gain (mean ± SE) | seeds |", "|---|---:|---:|---|---:|"]
            lines += [f"| {SRNET_METHODS[r.method]} | {r.epochs:g} | {100 * r.sparsity:g} % | {r['mean']:+.1f} ± "
                      f"{r.se:.1f} | {int(r['count'])} |" for _, r in trend.iterrows()]
    return "\n".join(lines) + "\n"


def _srnet_markdown(table: pd.DataFrame, id_cost_max: float) -> list[str]:
    points = srnet_points(table)
    if points.empty:
        return []
    lines = ["", "## Paper C's subnetworks: dev accuracy against training epochs and sparsity", "",
             "| method | epochs | sparsity | steps | reached (mean) | every seed on target | dev (mean) | dev drop | seeds |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    lines += [f"| {SRNET_METHODS[r.method]} | {r.epochs:g} | {100 * r.sparsity:g} % | {int(r.steps)} | "
              f"{100 * r.reached:.1f} % | {'yes' if r.all_engaged else 'no'} | {r.dev:.1f} | {r.dev_drop:+.1f} | "
              f"{r.seeds} |" for r in points.itertuples()]
    lines += ["", "Epochs: mask training's at each sparsity; IMP's t_max, pruned by 10 % every tenth of it (a run to "
              "50 % trains half of it; steps: those trained up to the level)."]
    for method, pick in select_srnet_budget(points, id_cost_max).items():
        name = SRNET_METHODS[method]
        if pick["found"]:
            lines += ["", f"**Rule 3, {name}** (the fewest epochs at which every sparsity is reached on every seed "
                      f"with a dev drop ≤ {id_cost_max:g}): **{pick['epochs']:g} epoch(s)**, worst dev drop "
                      f"{pick['worst_drop']:.1f}."]
        else:
            lines += ["", f"**Rule 3, {name}: no budget qualifies** (every sparsity reached on every seed with a dev "
                      f"drop ≤ {id_cost_max:g}); the closest: {pick['epochs']:g} epoch(s), {pick['within']} of "
                      f"{pick['levels']} sparsities within the bound, worst dev drop {pick['worst_drop']:.1f}."]
    return lines


def figure(table: pd.DataFrame, title: str):
    """Three panels: the baseline's dev curve per training set; each row's kept share against search steps per
    learning rate; each row's dev accuracy against steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    srnets = srnet_points(table)
    fig, axes = plt.subplots(1, 4 if not srnets.empty else 3, figsize=(20 if not srnets.empty else 15, 4.2))
    curve = baseline_curve(table)
    for train_set, part in curve.groupby("train_set", sort=True):
        axes[0].errorbar(part.epoch, part["mean"], yerr=part["std"].fillna(0), marker="o", capsize=3,
                         label=f"{train_set} ({int(part.n_train.iloc[0]):,} pairs)")
    axes[0].set(xlabel="epoch", ylabel="dev accuracy (%)", title="baseline: dev accuracy (mean ± sd)")
    axes[0].legend(fontsize=8)
    points = mask_points(table)
    for (row, lr), part in points.groupby(["row", "learning_rate"], sort=True):
        part = part.sort_values("steps")
        axes[1].plot(part.steps, 100 * part.pruned_share.clip(lower=1e-7), marker="o", label=f"{row}, lr {lr:g}")
        axes[2].plot(part.steps, part.dev, marker="o", label=f"{row}, lr {lr:g}")
    axes[1].axhline(100 * (1 - engagement.MASK_KEPT_MAX), color="grey", ls="--", lw=1)
    axes[1].set(xlabel="search steps", ylabel="pruned (% of scored weights, log)", yscale="log",
                title="mask search: pruned share (dashed: engaged above)")
    axes[2].set(xlabel="search steps", ylabel="dev accuracy (%)", title="mask search: dev accuracy (mean)")
    for ax in axes[1:3]:
        ax.legend(fontsize=7)
    if not srnets.empty:
        for (method, epochs), part in srnets.groupby(["method", "epochs"], sort=True):
            part = part.sort_values("sparsity")
            axes[3].plot(100 * part.sparsity, part.dev, marker="o", label=f"{SRNET_METHODS[method]}, {epochs:g} epoch(s)")
        axes[3].axhline(float(srnets.start_dev.mean()), color="grey", ls="--", lw=1)
        axes[3].set(xlabel="sparsity (%)", ylabel="dev accuracy (%)", title="paper C: dev accuracy (mean; dashed: start)")
        axes[3].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
