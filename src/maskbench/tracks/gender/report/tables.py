"""Paper B's tables from the gender track's outputs: the long-form runs and SEAT tables, and Tables 1 (pruning with
frozen weights), 2 (pruning with the weights training) and 4 (debias only) with paper B's numbers beside ours.

A run's row carries its kind, granularity (``block32`` ... or ``head``), layers and mode; a table row is a
(granularity, layers, mode) of one kind, each SEAT effect size as mean ± std over seeds (signed, as paper B prints
them; closer to 0 is less bias), the density the mask keeps, and the whole heads it prunes. Paper B's own row (its
``block`` spelling: ``32x32``, ``64x768_head`` for BERT-base's heads) stands beside it; its Table 2 numbers are not
in the project's references, so Table 2 has ours only.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.report import engagement
from maskbench.tracks.gender.workflow_plan import KIND_TABLE

# a run's row: its grid point, and the gender.runs.objectives row it belongs to ("" for the grids' runs)
KEYS = ["kind", "granularity", "layers", "mode", "objective"]
# the two counts of whole heads pruned: ours (V's rows all masked: the head outputs nothing) and paper B's #P as its
# compile_model counts it (nn_pruning's BertHeadsPruner: any of Q, K, V all zero; one head kept per layer)
HEADS_V = "heads pruned, V all zero (ours)"
HEADS_NNP = "heads pruned, Q, K or V all zero (#P, ours)"


def paper_block(granularity: str | None) -> str | None:
    """Paper B's spelling of a granularity in its Table 1."""
    if granularity is None:
        return None
    if granularity == "head":
        return "64x768_head"
    size = int(granularity.removeprefix("block"))
    return f"{size}x{size}"


def paper_table(name: str) -> pd.DataFrame:
    with resources.files("maskbench.tracks.gender.report").joinpath(f"paper_b_{name}.csv").open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, keep_default_na=False, na_values=[""])


def task_columns(tasks: dict[str, dict] | None) -> dict:
    """``task_<name>`` dev score per task (its metric: accuracy, or GLUE's Matthews / F1-accuracy mean) and
    ``performance``, their mean (paper B's GLUE column), ``performance_metrics`` naming the metrics; empty without
    tasks."""
    if not tasks:
        return {}
    scores = {f"task_{name}": report.get("dev_score", report["dev_accuracy"]) for name, report in tasks.items()}
    return {**scores, "performance": float(np.mean(list(scores.values()))),
            "performance_metrics": task_metrics(tasks)}


def task_metrics(tasks: dict[str, dict]) -> str:
    """"accuracy" when every task is scored by accuracy, else "<task>:<metric>" of each task, comma-separated."""
    metrics = {name: report.get("metric", "accuracy") for name, report in tasks.items()}
    if set(metrics.values()) == {"accuracy"}:
        return "accuracy"
    return ",".join(f"{name}:{metric}" for name, metric in metrics.items())


def performance_heading(metrics) -> str:
    """The task column's heading: "task acc" when every task is scored by accuracy, else "task score" (the mean of
    each task's own metric, GLUE's convention)."""
    return "task acc" if set(metrics) <= {"accuracy"} else "task score"


def runs_frame(runs: list[dict], summaries: list[dict], seats: list[dict],
               tasks: list[dict] | None = None, lm: list[dict] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, seat_long): one row per run, one row per (run, SEAT test); ``runs`` are the workflow's run records
    (kind, granularity, layers, mode, seed), the others the JSONs of each run in the same order: its summary, its
    SEAT file, and optionally its task files (task -> JSON) and its masked-LM bias file."""
    rows, seat_rows = [], []
    tasks = tasks if tasks is not None else [None] * len(runs)
    lm = lm if lm is not None else [None] * len(runs)
    for run, summary, seat, run_tasks, run_lm in zip(runs, summaries, seats, tasks, lm, strict=True):
        key = {**{k: run.get(k) for k in KEYS}, "objective": run.get("objective") or "", "seed": run["seed"]}
        curve = [p for p in summary["curve"] if "loss_debias" in p]
        heads = np.asarray(summary.get("heads_pruned", []), dtype=int)
        # nn_pruning's count (a head with Q, K or V all zero) exists in summaries written since it was added
        nnp = summary.get("heads_pruned_nn_pruning")
        nnp = np.asarray(nnp, dtype=int) if nnp is not None else None
        rows.append({**key, "density": summary.get("density", 1.0),
                     "heads_pruned": int(heads.sum()) if heads.size else 0,
                     "heads_pruned_nn_pruning": (int(nnp.sum()) if nnp is not None else
                                                 (0 if "density" not in summary else np.nan)),
                     "steps": summary["steps"],
                     "loss_debias_first": curve[0]["loss_debias"] if curve else np.nan,
                     "loss_debias_last": curve[-1]["loss_debias"] if curve else np.nan,
                     "loss_regularize_last": curve[-1]["loss_regularize"] if curve else np.nan,
                     "seat_mean_abs": float(np.mean([abs(t["effect_size"]) for t in seat["seat"]])),
                     **task_columns(run_tasks), **lm_columns(run_lm)})
        for test in seat["seat"]:
            seat_rows.append({**key, "test": test["test"], "effect_size": test["effect_size"],
                              "p_value": test["p_value"], "p_exact": test["p_exact"]})
    return pd.DataFrame(rows), pd.DataFrame(seat_rows)


# the masked-LM bias measures (maskbench.steps.gender.lm_bias's JSON), as runs.csv columns -> table headings
LM_COLUMNS = {"crows_pairs": "CrowS-Pairs", "stereoset_ss": "SS", "stereoset_lms": "LMS", "stereoset_icat": "ICAT"}
EXTRA_COLUMNS = {"performance": "task acc", **LM_COLUMNS}


def lm_columns(report: dict | None) -> dict:
    """CrowS-Pairs' bias score and StereoSet's SS, LMS and ICAT (overall) of a masked-LM bias file; what it
    lacks is left out."""
    if not report:
        return {}
    out = {}
    crows = report.get("crows_pairs")
    if crows:
        out["crows_pairs"] = crows["score"]
    stereoset = (report.get("stereoset") or {}).get("overall")
    if stereoset:
        out.update({"stereoset_ss": stereoset["ss"], "stereoset_lms": stereoset["lms"],
                    "stereoset_icat": stereoset["icat"]})
    return out


def original_extras(tasks: list[dict] | None, lm: dict | None) -> dict:
    """The original row's task accuracy (mean ± std over its per-seed fine-tunings) and masked-LM measures, as
    formatted table cells."""
    cells = {}
    if tasks:
        heading = performance_heading({task_metrics(t) for t in tasks})
        cells[f"{heading} (ours)"] = mean_std(pd.Series([task_columns(t)["performance"] for t in tasks]))
    for key, value in lm_columns(lm).items():
        cells[f"{LM_COLUMNS[key]} (ours)"] = f"{value:.2f}"
    return cells


def original_frame(seat: dict) -> pd.DataFrame:
    return pd.DataFrame([{"test": t["test"], "effect_size": t["effect_size"], "p_value": t["p_value"]}
                         for t in seat["seat"]])


def mean_std(values: pd.Series) -> str:
    values = values.dropna()
    if values.empty:
        return ""
    if len(values) == 1:
        return f"{values.iloc[0]:.2f}"
    return f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"


def kind_table(kind: str, runs: pd.DataFrame, seat: pd.DataFrame, original: pd.DataFrame,
               tests: list[str], original_cells: dict | None = None) -> pd.DataFrame:
    """One of paper B's tables: our rows (mean ± std over seeds) and paper B's beside, the original model first
    (``original_cells``: its task accuracy and masked-LM measures, ``original_extras``). The task accuracy and
    masked-LM columns appear when the runs have them."""
    paper = paper_table(KIND_TABLE[kind]) if kind in ("frozen", "debias_only") else None
    base = {"granularity": "original", "layers": "", "mode": "", "seeds": ""}
    base.update({f"{t} (ours)": f"{original.set_index('test').loc[t, 'effect_size']:.2f}" for t in tests})
    if kind != "debias_only":
        base.update({"density % (ours)": "100.00", HEADS_V: "0", HEADS_NNP: "0", "engagement": "—"})
    extras = [c for c in EXTRA_COLUMNS if c in runs.columns]
    headings = dict(EXTRA_COLUMNS)
    if "performance_metrics" in runs.columns:
        headings["performance"] = performance_heading(set(runs["performance_metrics"].dropna()))
    base.update({f"{headings[c]} (ours)": (original_cells or {}).get(f"{headings[c]} (ours)", "")
                 for c in extras})
    out = [base]
    ours = runs[runs["kind"] == kind].fillna({"granularity": "none"})  # debias-only runs prune nothing
    named = seat.fillna({"granularity": "none"})
    with_objective = bool((ours["objective"] != "").any())
    if with_objective:
        base["objective"] = ""
    for (granularity, layers, mode, objective), group in ours.groupby(["granularity", "layers", "mode", "objective"],
                                                                      sort=False):
        row = {"granularity": granularity, "layers": layers, "mode": mode,
               **({"objective": objective} if with_objective else {}), "seeds": len(group)}
        effects = named[(named[KEYS] == [kind, granularity, layers, mode, objective]).all(axis=1)]
        for test in tests:
            row[f"{test} (ours)"] = mean_std(effects[effects["test"] == test]["effect_size"])
        if kind != "debias_only":
            row["density % (ours)"] = mean_std(100 * group["density"])
            row[HEADS_V] = mean_std(group["heads_pruned"].astype(float))
            row[HEADS_NNP] = mean_std(group["heads_pruned_nn_pruning"].astype(float))
            row["engagement"] = engagement.seeds_word([engagement.mask(d) for d in group["density"].astype(float)])
        for column in extras:
            row[f"{headings[column]} (ours)"] = mean_std(group[column].astype(float))
        out.append(row)
    table = pd.DataFrame(out)
    if paper is not None:
        table = attach_paper(table, paper, kind)
    if with_objective:  # the grid's rows run the config's gender.objective
        table.loc[(table["objective"] == "") & (table["granularity"] != "original"), "objective"] = "the config's"
    return table


def attach_paper(table: pd.DataFrame, paper: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Paper B's SEAT 6/7/8, SS, GLUE (and heads pruned) of the matching row, prefixed "paper" (none for a
    gender.runs.objectives row: its objective is not the one paper B's row ran)."""
    columns = [c for c in ("seat6", "seat7", "seat8", "ss", "glue", "heads_pruned") if c in paper.columns]
    values = []
    for _, row in table.iterrows():
        if row.get("objective", ""):
            match = paper.iloc[0:0]
        elif row["granularity"] == "original":
            match = paper[paper["layer"] == "original"] if kind == "debias_only" else \
                paper[paper["block"] == "original"]
        elif kind == "debias_only":
            match = paper[(paper["layer"] == row["layers"]) & (paper["mode"] == row["mode"])]
        else:
            match = paper[(paper["block"] == paper_block(row["granularity"])) & (paper["layer"] == row["layers"])
                          & (paper["mode"] == row["mode"])]
        values.append({f"paper {c}": (match.iloc[0][c] if len(match) else np.nan) for c in columns})
    return pd.concat([table.reset_index(drop=True), pd.DataFrame(values)], axis=1)


def read_json(path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))
