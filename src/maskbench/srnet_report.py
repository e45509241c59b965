"""Entry point: paper C's sparsity curves and Table 5 from the evaluation JSONs of the srnet runs.

    python -m maskbench.srnet_report --evals E1.json ... --reference B1.json ... --runs JSON --metrics JSON \
        --table5 JSON --results results

An evaluation JSON's ``row`` is ``srnets/<run>/<sparsity>``; ``--runs`` names each run's paradigm, method and
loss (config-derived), ``--metrics`` the metric of an evaluation set (default accuracy), ``--reference`` the full
fine-tuned models' JSONs (the dashed line). Writes ``<results>/tables/sparsity_curves.csv`` (long form:
paradigm, method, loss, task, eval_set, sparsity, mean, std, n_seeds, metric), ``<results>/figures/
sparsity_curves.png`` and, with Table 5 variants, ``<results>/tables/table5.{csv,md}`` beside paper C's values.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.report.sparsity_curves import curve_table, plot_sparsity_curves, table5, table5_markdown

log = logging.getLogger("maskbench.srnet_report")

METHOD_LABELS = {"mask_train": "mask train", "imp": "imp", "retrain": "retrain"}


@dataclass
class SrnetReportArgs:
    evals: list[Path] = field(metadata={"help": "evaluation JSONs of the srnet runs"})
    runs: str = field(metadata={"help": "JSON: run -> {paradigm, method, loss, ...}"})
    results: Path = field(metadata={"help": "results folder (tables/ and figures/ below it)"})
    reference: list[Path] = field(default_factory=list, metadata={"help": "the full models' evaluation JSONs"})
    metrics: str = field(default="{}", metadata={"help": "JSON: eval set -> metric (default accuracy)"})
    table5: str = field(default="{}", metadata={"help": "JSON: config srnets.table5"})


def parse_row(row: str, path: Path) -> tuple[str, float]:
    parts = row.split("/")
    if len(parts) != 3 or parts[0] != "srnets":
        raise ValueError(f"{path}: field 'row' is {row!r}, not srnets/<run>/<sparsity>")
    return parts[1], float(parts[2])


def main(argv=None) -> int:
    setup_logging()
    args = parse_dataclass(SrnetReportArgs, argv, "python -m maskbench.srnet_report", __doc__.splitlines()[0])
    runs, metrics, t5 = json.loads(args.runs), json.loads(args.metrics), json.loads(args.table5)
    variants = t5.get("variants", {})
    curves, t5_records = [], []
    for path in args.evals:
        result = json.loads(Path(path).read_text())
        run, sparsity = parse_row(result["row"], path)
        metric = metrics.get(result["eval_set"], "accuracy")
        value = result["metrics"].get(metric)
        if value is None:
            raise ValueError(f"{path}: field 'metrics' has no {metric!r} (srnets.metrics.{result['eval_set']})")
        common = {"task": result["task"], "eval_set": result["eval_set"], "metric": metric, "seed": result["seed"],
                  "value": value}
        if run.startswith("t5_"):
            variant = variants[run.removeprefix("t5_")]
            t5_records.append({"schedule": variant["schedule"], "init": variant["init"], **common})
        else:
            spec = runs[run]
            method = METHOD_LABELS.get(spec["method"], spec["method"])
            if spec["method"] == "retrain":
                method = f"{runs.get(spec['from'], {}).get('method', 'imp_rewind')} → retrain"
            curves.append({"paradigm": spec["paradigm"], "method": method, "loss": spec["loss"],
                           "sparsity": sparsity, **common})
    table = curve_table(curves)
    reference = []
    for path in args.reference:
        result = json.loads(Path(path).read_text())
        metric = metrics.get(result["eval_set"], "accuracy")
        reference.append({"task": result["task"], "eval_set": result["eval_set"], "metric": metric,
                          "value": result["metrics"][metric]})
    ref = (pd.DataFrame(reference).groupby(["task", "eval_set", "metric"]).value.agg(["mean", "std"])
           .fillna(0.0).reset_index()) if reference else None
    runtime.atomic_write_text(args.results / "tables" / "sparsity_curves.csv", table.to_csv(index=False))
    plot_sparsity_curves(table, args.results / "figures" / "sparsity_curves.png", reference=ref)
    if variants:
        columns = {name: tuple(spec) for name, spec in t5.get("columns", {}).items()}
        t5_table = table5(t5_records, columns)
        runtime.atomic_write_text(args.results / "tables" / "table5.csv", t5_table.to_csv(index=False))
        runtime.atomic_write_text(args.results / "tables" / "table5.md", table5_markdown(t5_table) + "\n")
    log.info("wrote the curves of %d runs (%d points) and %d Table 5 records", len(runs), len(table), len(t5_records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
