"""Paper D's tables from the vision track's evaluation JSONs: a long-form record per (dataset, level, seed, run),
mean ± std over seeds, and Tables 1–6 beside the paper's numbers where ../shared/reference has them (shipped as
``report/paper_d_table*.csv``). Without torch: the report reads JSON only.

Tables (paper D's numbering): 1 the gamma sweep, 2 Biased-MNIST per rho, 3 CelebA per target (offline: the
two-attribute stand-in), 4 Corrupted CIFAR-10 per rho (offline: the Corrupted-MNIST stand-in), 5 Multi-Color MNIST
per background group, 6 FFW on models trained for fewer epochs. A dataset says which of 2–5 it rebuilds
(config ``vision.datasets.<name>.table``); a level names the paper's row it stands for (``paper_row``, default its
rho or its name).
"""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pandas as pd

from maskbench.report import engagement

METRICS = ("task_accuracy", "bias_accuracy", "sparsity", "biased_test_accuracy", "unbiased_accuracy")
PAPER_FILES = {2: "paper_d_table2_biased_mnist.csv", 3: "paper_d_table3_celeba.csv",
               4: "paper_d_table4_corrupted_cifar10.csv"}
PAPER_KEY = {2: "rho", 3: "target", 4: "rho"}
TITLES = {1: "Table 1 — the MI weight gamma (FFW, unstructured)",
          2: "Table 2 — Biased-MNIST", 3: "Table 3 — CelebA", 4: "Table 4 — Corrupted CIFAR-10",
          5: "Table 5 — Multi-Color MNIST, accuracy per background group",
          6: "Table 6 — FFW on models trained for fewer epochs"}


def paper_reference(table: int) -> pd.DataFrame | None:
    name = PAPER_FILES.get(table)
    if name is None:
        return None
    with resources.files("maskbench.tracks.vision.report").joinpath(name).open() as handle:
        return pd.read_csv(handle, dtype={"rho": str, "target": str})


def runs_frame(evals: list[dict], datasets: dict) -> pd.DataFrame:
    """One row per (dataset, level, seed, run): the run's parameters, metrics and per-group accuracies."""
    rows = []
    for ev in evals:
        spec = datasets[ev["dataset"]]
        level = spec["levels"][ev["level"]]
        for run in ev["runs"]:
            params = run.get("params", {})
            row = {"dataset": ev["dataset"], "level": ev["level"], "table": spec["table"],
                   "stand_in": spec["generator"].endswith("_standin"),
                   "paper_row": str(level.get("paper_row", level.get("rho", ev["level"]))),
                   "seed": ev["seed"], "run": run["run"], "method": params.get("method", run["run"]),
                   "gamma": params.get("gamma", math.nan), "start": params.get("start", "final"),
                   "sparsity_target": params.get("sparsity", math.nan), "num_labels": run.get("num_labels")}
            row.update({m: run.get(m) if run.get(m) is not None else math.nan for m in METRICS})
            groups = run.get("task_groups", {})
            for group, value in groups.items():
                row[f"group:{group}"] = value
            # paper D's "Unbiased" (Table 5): the mean of the group accuracies, whatever the evaluation recorded
            row["unbiased_accuracy"] = sum(groups.values()) / len(groups) if groups else math.nan
            for attribute, value in run.get("bias_accuracy_per_attribute", {}).items():
                row[f"bias:{attribute}"] = value
            rows.append(row)
    return pd.DataFrame(rows)


def run_engagement(row: pd.Series) -> engagement.Engagement | None:
    """Whether one run's mechanism acted (maskbench.report.engagement): a gate set or mask by the share it prunes;
    the vanilla model as a fine-tuning, by its in-distribution (biased test) accuracy against chance. None when the
    evaluation did not record what it takes (an evaluation from before ``num_labels`` was recorded)."""
    if row["method"] == "vanilla":
        labels, accuracy = row.get("num_labels"), row.get("biased_test_accuracy")
        if labels is None or pd.isna(labels) or pd.isna(accuracy):
            return None
        return engagement.fine_tuning([float(accuracy)], int(labels))
    if pd.isna(row["sparsity"]):
        return None
    return engagement.mask(1.0 - float(row["sparsity"]) / 100.0)


def summary_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean, std and the number of seeds of every metric per (dataset, level, run), and the row's engagement over its
    seeds (``engagement.seeds_word``)."""
    keys = ["table", "dataset", "level", "paper_row", "stand_in", "run", "method", "gamma", "start",
            "sparsity_target"]
    values = [c for c in runs.columns if c in METRICS or c.startswith(("group:", "bias:"))]
    grouped = runs.groupby(keys, dropna=False, sort=False)[values]
    mean, std = grouped.mean(), grouped.std(ddof=1)
    out = mean.add_suffix("_mean").join(std.add_suffix("_std"))
    out["n_seeds"] = grouped.size()
    found = runs.apply(run_engagement, axis=1) if len(runs) else pd.Series(dtype=object)
    out["engagement"] = found.groupby([runs[k] for k in keys], dropna=False, sort=False).agg(
        lambda seeds: engagement.seeds_word(list(seeds)))
    return out.reset_index()


def fmt(mean: float, std: float) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    return f"{mean:.2f}" if std is None or math.isnan(std) else f"{mean:.2f} ± {std:.2f}"


def _cells(row: pd.Series, metrics=("task_accuracy", "bias_accuracy", "sparsity")) -> dict:
    return {m.replace("_accuracy", ""): fmt(row[f"{m}_mean"], row[f"{m}_std"]) for m in metrics}


def main_rows(summary: pd.DataFrame, gamma: float) -> pd.DataFrame:
    """The vanilla model and each FFW variant at the config's gamma, on the final model (not the sweeps)."""
    final = summary[summary.start == "final"]
    ffw = final.method.isin(["ffw", "ffw_structured"]) & np.isclose(final.gamma.astype(float), gamma)
    return final[(final.method == "vanilla") | ffw]


def dataset_table(summary: pd.DataFrame, table: int, gamma: float) -> pd.DataFrame:
    """Tables 2–4: per dataset level and method, ours (mean ± std over seeds) beside the paper's row."""
    paper = paper_reference(table)
    rows = []
    for _, row in main_rows(summary[summary.table == table], gamma).iterrows():
        out = {"dataset": row.dataset + (" (stand-in)" if row.stand_in else ""), "level": row.level,
               "method": row.method, **_cells(row), "biased test": fmt(row["biased_test_accuracy_mean"],
                                                                       row["biased_test_accuracy_std"]),
               "seeds": int(row.n_seeds), "engagement": row.engagement}
        if paper is not None:
            match = paper[(paper.method == row.method) & (paper[PAPER_KEY[table]] == row.paper_row)]
            for metric in ("task", "bias", "sparsity"):
                value = match[metric].iloc[0] if len(match) else math.nan
                out[f"paper {metric}"] = "—" if pd.isna(value) else f"{value:.2f}"
            out["paper row"] = row.paper_row if len(match) else "—"
        rows.append(out)
    return pd.DataFrame(rows)


def gamma_table(summary: pd.DataFrame, dataset: str, level: str, method: str) -> pd.DataFrame:
    part = summary[(summary.dataset == dataset) & (summary.level == level) & (summary.method == method)
                   & (summary.start == "final")].sort_values("gamma")
    return pd.DataFrame([{"gamma": f"{row.gamma:g}", **_cells(row), "seeds": int(row.n_seeds)}
                         for _, row in part.iterrows()])


def group_table(summary: pd.DataFrame, gamma: float, table: int = 5) -> pd.DataFrame:
    """Table 5 as paper D lays it out: sparsity, the bias accuracy of each bias attribute (left, right), the task
    accuracy per bias-alignment group (A/A, A/C, C/A, C/C), "unbiased" = the mean of the group accuracies (paper D's
    "Unbiased") and, beside it, the accuracy pooled over the test split."""
    part = main_rows(summary[summary.table == table], gamma)
    groups = sorted({c[len("group:"):-len("_mean")] for c in part.columns
                     if c.startswith("group:") and c.endswith("_mean") and part[c].notna().any()})
    biases = [c[len("bias:"):-len("_mean")] for c in part.columns
              if c.startswith("bias:") and c.endswith("_mean") and part[c].notna().any()]
    rows = []
    for _, row in part.iterrows():
        out = {"dataset": row.dataset, "level": row.level, "method": row.method,
               "sparsity": fmt(row.sparsity_mean, row.sparsity_std)}
        for attribute in biases:
            out[f"bias {attribute}"] = fmt(row.get(f"bias:{attribute}_mean", math.nan),
                                           row.get(f"bias:{attribute}_std", math.nan))
        if not biases:
            out["bias"] = fmt(row.bias_accuracy_mean, row.bias_accuracy_std)
        for group in groups:
            out[group] = fmt(row.get(f"group:{group}_mean", math.nan), row.get(f"group:{group}_std", math.nan))
        out["unbiased"] = fmt(row.unbiased_accuracy_mean, row.unbiased_accuracy_std)
        out["pooled"] = fmt(row.task_accuracy_mean, row.task_accuracy_std)
        out["seeds"] = int(row.n_seeds)
        out["engagement"] = row.engagement
        rows.append(out)
    return pd.DataFrame(rows)


def epochs_table(summary: pd.DataFrame, dataset: str, level: str, method: str, gamma: float) -> pd.DataFrame:
    """Table 6: the vanilla model and FFW at each start (epoch~E snapshots, then the final model)."""
    part = summary[(summary.dataset == dataset) & (summary.level == level)]
    rows = []
    starts = sorted(set(part.start), key=lambda s: (s == "final", int(s.split("~")[1]) if "~" in s else 0))
    for start in starts:
        for name, sub in (("vanilla", part[(part.method == "vanilla") & (part.start == start)]),
                          (method, part[(part.method == method) & (part.start == start)
                                        & np.isclose(part.gamma.astype(float), gamma)])):
            if len(sub):
                row = sub.iloc[0]
                rows.append({"trained": start.replace("epoch~", "") + (" epochs" if start != "final" else ""),
                             "method": name, **_cells(row), "seeds": int(row.n_seeds)})
    return pd.DataFrame(rows)


def markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "(no rows)\n"
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    lines = [header, rule] + ["| " + " | ".join(str(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"
