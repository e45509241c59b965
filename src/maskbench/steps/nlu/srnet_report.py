"""Entry point: paper C's sparsity curves, Table 5 and the timing study from the srnet runs' evaluation JSONs.

    python -m maskbench.steps nlu.srnet_report --evals E1.json ... --reference B1.json ... --runs JSON --metrics JSON \
        --table5 JSON --results results

An evaluation JSON's ``row`` is ``srnets/<run>/<x>``: ``<x>`` a sparsity for the curve runs (``--runs`` names
each run's paradigm, method and loss, config-derived), a Table 5 variant for run ``t5`` (``--table5``: config
``srnets.table5``) and a start checkpoint for run ``timing`` (its fine-tuning step is read from the mask's header,
``meta.start_step``). ``--metrics`` names the metric of an evaluation set (default accuracy), ``--reference`` the
full fine-tuned models' JSONs (the dashed line). Writes under ``<results>``: ``tables/sparsity_curves.csv`` (long
form: paradigm, method, loss, task, eval_set, sparsity, mean, std, n_seeds, metric) and
``figures/sparsity_curves.png``; with Table 5 variants ``tables/table5.{csv,md}`` beside paper C's values; with
timing rows ``tables/timing_curves.csv`` (start_step in place of sparsity) and ``figures/timing_curves.png``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.masking.codec import read_mask_header
from maskbench.report.captions import labelled
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.report.sparsity_curves import (
    curve_table,
    plot_sparsity_curves,
    plot_timing_curves,
    table5,
    table5_markdown,
)
from maskbench.tracks.nlu.report.table1_builder import task_kinds

log = logging.getLogger("maskbench.steps.nlu.srnet_report")

@dataclass
class SrnetReportArgs:
    evals: list[Path] = field(metadata={"help": "evaluation JSONs of the srnet runs"})
    runs: str = field(metadata={"help": "JSON: curve run -> {paradigm, method, loss} (its labels)"})
    results: Path = field(metadata={"help": "results folder (tables/ and figures/ below it)"})
    reference: list[Path] = field(default_factory=list, metadata={"help": "the full models' evaluation JSONs"})
    metrics: str = field(default="{}", metadata={"help": "JSON: eval set -> metric (default accuracy)"})
    table5: str = field(default="{}", metadata={"help": "JSON: config srnets.table5"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})


def parse_row(row: str, path: Path) -> tuple[str, str]:
    parts = row.split("/")
    if len(parts) != 3 or parts[0] != "srnets":
        raise ValueError(f"{path}: field 'row' is {row!r}, not srnets/<run>/<sparsity, variant or start>")
    return parts[1], parts[2]


def timing_record(result: dict, path: Path) -> dict:
    """A timing row's x: the fine-tuning step its mask training started from, as the mask file records it."""
    mask = result.get("mask")
    if not mask:
        raise ValueError(f"{path}: a timing row needs the field 'mask' (the start step is read from its header)")
    meta = read_mask_header(mask)["meta"]
    if meta.get("start_step") is None:
        raise ValueError(f"{path}: the mask {mask} has no field 'meta.start_step' (a timing row's start checkpoint)")
    sparsity = meta.get("sparsity", float("nan"))
    return {"paradigm": "timing", "method": f"mask train ({100 * sparsity:.0f}%)", "loss": meta.get("loss", "ce"),
            "start_step": int(meta["start_step"])}


@step_main(SrnetReportArgs)
def main(args: SrnetReportArgs) -> int:
    runs, metrics, t5 = json.loads(args.runs), json.loads(args.metrics), json.loads(args.table5)
    variants = t5.get("variants", {})
    curves, t5_records, timing, results = [], [], [], []
    for path in args.evals:
        result = json.loads(Path(path).read_text())
        results.append(result)
        run, x = parse_row(result["row"], path)
        metric = metrics.get(result["eval_set"], "accuracy")
        value = result["metrics"].get(metric)
        if value is None:
            raise ValueError(f"{path}: field 'metrics' has no {metric!r} (srnets.metrics.{result['eval_set']})")
        common = {"task": result["task"], "eval_set": result["eval_set"], "metric": metric, "seed": result["seed"],
                  "value": value}
        if run == "t5":
            if x not in variants:
                raise ValueError(f"{path}: field 'row' names Table 5 variant {x!r}, not one of {sorted(variants)}")
            t5_records.append({"schedule": variants[x]["schedule"], "init": variants[x]["init"], **common})
        elif run == "timing":
            timing.append({**timing_record(result, path), **common})
        elif run in runs:
            curves.append({**runs[run], "sparsity": float(x), **common})
        else:
            raise ValueError(f"{path}: field 'row' names run {run!r}, not one of {sorted(runs)} (--runs), t5, timing")
    ref = reference_table(args.reference, metrics)
    kinds = task_kinds(results)  # a synthetic task's panels and columns say so
    table = curve_table(curves)
    runtime.atomic_write_text(args.results / "tables" / "sparsity_curves.csv", table.to_csv(index=False))
    plot_sparsity_curves(table, args.results / "figures" / "sparsity_curves.png", reference=ref, task_kinds=kinds)
    if variants:
        columns = {name: tuple(spec) for name, spec in t5.get("columns", {}).items()}
        t5_table = table5(t5_records, columns)
        runtime.atomic_write_text(args.results / "tables" / "table5.csv", t5_table.to_csv(index=False))
        runtime.atomic_write_text(args.results / "tables" / "table5.md", labelled(table5_markdown(t5_table, kinds), args.label) + "\n")
    if timing:
        timing_table = curve_table(timing, x="start_step")
        runtime.atomic_write_text(args.results / "tables" / "timing_curves.csv", timing_table.to_csv(index=False))
        plot_timing_curves(timing_table, args.results / "figures" / "timing_curves.png", reference=ref,
                           task_kinds=kinds)
    log.info("wrote the curves of %d runs (%d points), %d Table 5 and %d timing records", len(runs), len(table),
             len(t5_records), len(timing))
    return 0


def reference_table(paths: list[Path], metrics: dict) -> pd.DataFrame | None:
    """The full fine-tuned models' scores (mean and std over seeds) per (task, eval_set, metric)."""
    reference = []
    for path in paths:
        result = json.loads(Path(path).read_text())
        metric = metrics.get(result["eval_set"], "accuracy")
        reference.append({"task": result["task"], "eval_set": result["eval_set"], "metric": metric,
                          "value": result["metrics"][metric]})
    if not reference:
        return None
    return (pd.DataFrame(reference).groupby(["task", "eval_set", "metric"]).value.agg(["mean", "std"])
            .fillna(0.0).reset_index())


if __name__ == "__main__":
    run_step(main)
