"""Entry point: paper D's tables and figures from the vision track's evaluation JSONs.

    python -m maskbench.steps vision.report --evals E1.json ... --config JSON --samples S1.safetensors ... \
        --tables-dir results/tables/vision --figures-dir results/figures/vision

``--config`` is the config's ``vision:`` section (datasets with their table and levels, the FFW gamma, the gamma
sweep, the epochs ablation, the magnitude baseline). ``--samples`` are prepared splits (a biased training split
and an unbiased test split per dataset) for the samples figure. Writes ``runs.csv`` (long form: a row per
dataset, level, seed and run), ``summary.csv`` (mean, std and seed count per dataset, level and run),
``table<N>.csv`` for each of paper D's tables the config rebuilds, ``tables.md`` (all of them, captioned, the
paper's numbers beside ours, stand-ins named), and the figures ``magnitude_vs_ffw.png``, ``layer_sparsity.png``
and ``samples.png``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.report.captions import labelled
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.report.figures import plot_layer_sparsity, plot_magnitude_vs_ffw, plot_samples
from maskbench.tracks.vision.report.tables import (
    TITLES,
    dataset_table,
    epochs_table,
    gamma_table,
    group_table,
    markdown,
    runs_frame,
    summary_frame,
)

log = logging.getLogger("maskbench.steps.vision.report")


@dataclass
class VisionReportArgs:
    evals: list[Path] = field(metadata={"help": "evaluation JSONs (vision_evaluate)"})
    config: str = field(metadata={"help": "JSON: the config's vision section"})
    tables_dir: Path = field(metadata={"help": "folder of the tables"})
    figures_dir: Path = field(metadata={"help": "folder of the figures"})
    samples: list[Path] = field(default_factory=list, metadata={"help": "prepared splits for the samples figure"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})


def tables_of(vision: dict) -> dict[int, str]:
    """Which of paper D's tables the config rebuilds, each with its caption's subject."""
    out = {t: "" for t in sorted({spec["table"] for spec in vision["datasets"].values()})}
    if vision.get("gamma_sweep"):
        out[1] = ""
    if vision.get("epochs_ablation"):
        out[6] = ""
    return dict(sorted(out.items()))


def build_tables(summary: pd.DataFrame, vision: dict) -> dict[int, pd.DataFrame]:
    gamma = float(vision["ffw"]["gamma"])
    tables = {}
    for table in tables_of(vision):
        if table in (2, 3, 4):
            tables[table] = dataset_table(summary, table, gamma)
        elif table == 5:
            tables[table] = group_table(summary, gamma)
        elif table == 1:
            sweep = vision["gamma_sweep"]
            tables[1] = gamma_table(summary, sweep["dataset"], str(sweep["level"]), sweep.get("method", "ffw"))
        elif table == 6:
            ablation = vision["epochs_ablation"]
            tables[6] = epochs_table(summary, ablation["dataset"], str(ablation["level"]),
                                     ablation.get("method", "ffw"), gamma)
    return tables


def caption(table: int, vision: dict) -> str:
    datasets = [name for name, spec in vision["datasets"].items() if spec["table"] == table]
    standins = [name for name in datasets if vision["datasets"][name]["generator"].endswith("_standin")]
    text = TITLES[table]
    if standins:
        text += (f" — offline STAND-IN ({', '.join(standins)}: the real MNIST digits with the bias built the same "
                 "way; the paper's numbers beside it are for the real dataset and are not comparable)")
    if table == 1:
        sweep = vision["gamma_sweep"]
        text += f" — {sweep['dataset']} at {sweep['level']}"
    if table == 6:
        ablation = vision["epochs_ablation"]
        text += f" — {ablation['dataset']} at {ablation['level']}"
    if table == 5:
        return text + (". Mean ± std over seeds; per group the task accuracy on the unbiased test split (left / right "
                       "background aligned A or conflicting C), unbiased = the mean of the group accuracies (paper D's "
                       "\"Unbiased\"), pooled = the accuracy over the whole split, bias = a fresh head's accuracy "
                       "per bias attribute.")
    return text + ". Mean ± std over seeds; task = unbiased test accuracy, bias = a fresh head's bias accuracy."


def layer_frame(runs_json: list[dict], vision: dict) -> pd.DataFrame:
    """Per-layer sparsity of the FFW runs at the main gamma on the magnitude (or first) dataset level."""
    target = vision.get("magnitude") or vision.get("gamma_sweep")
    rows = []
    for ev in runs_json:
        if target and (ev["dataset"], ev["level"]) != (target["dataset"], str(target["level"])):
            continue
        for run in ev["runs"]:
            params = run.get("params", {})
            if params.get("method") in ("ffw", "ffw_structured") and params.get("start") == "final" and \
                    float(params.get("gamma", -1)) == float(vision["ffw"]["gamma"]):
                for layer, value in run["layer_sparsity"].items():
                    rows.append({"dataset": ev["dataset"], "level": ev["level"], "method": params["method"],
                                 "layer": layer, "seed": ev["seed"], "sparsity": value})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    grouped = frame.groupby(["dataset", "level", "method", "layer"], sort=False)["sparsity"]
    return grouped.agg(["mean", "std"]).reset_index()


@step_main(VisionReportArgs)
def main(args: VisionReportArgs) -> int:
    vision = json.loads(args.config)
    evals = []
    for path in args.evals:
        record = json.loads(path.read_text())
        if record.get("dataset") not in vision["datasets"] or record.get("level") not in \
                {str(k) for k in vision["datasets"].get(record.get("dataset"), {}).get("levels", {})}:
            raise ValueError(f"{path}: fields 'dataset'/'level' are {record.get('dataset')!r}/{record.get('level')!r}, "
                             "not a dataset level of the config")
        evals.append(record)
    runs = runs_frame(evals, vision["datasets"])
    summary = summary_frame(runs)
    runtime.atomic_write_text(args.tables_dir / "runs.csv", runs.to_csv(index=False))
    runtime.atomic_write_text(args.tables_dir / "summary.csv", summary.to_csv(index=False))
    tables = build_tables(summary, vision)
    parts = []
    for number, frame in tables.items():
        runtime.atomic_write_text(args.tables_dir / f"table{number}.csv", frame.to_csv(index=False))
        parts.append(f"### {caption(number, vision)}\n\n{markdown(frame)}")
    runtime.atomic_write_text(args.tables_dir / "tables.md", labelled("\n".join(parts), args.label))

    target = vision.get("magnitude") or vision.get("gamma_sweep") or {
        "dataset": next(iter(vision["datasets"])), "level": next(iter(next(iter(vision["datasets"].values()))["levels"]))}
    # each figure written atomically, with its SVG beside (maskbench.report.figure_files)
    plot_magnitude_vs_ffw(summary, target["dataset"], str(target["level"]), float(vision["ffw"]["gamma"]),
                          args.figures_dir / "magnitude_vs_ffw.png")
    layers = layer_frame(evals, vision)
    plot_layer_sparsity(layers, args.figures_dir / "layer_sparsity.png")
    from maskbench.tracks.vision.biased_mnist import sample_grid  # numpy only
    from maskbench.tracks.vision.images import read_images

    grids = []
    for train_path, test_path in zip(args.samples[::2], args.samples[1::2], strict=True):
        # only the rows the figure shows are read (CelebA's train split is 24.5 GB); the jobs that trained and
        # evaluated on these files checked their checksums
        train, test = read_images(train_path, check_sha256=False), read_images(test_path, check_sha256=False)
        grids.append((f"{train.dataset} ({train_path.parent.name}): biased train | unbiased test",
                       sample_grid({"train": train, "test": test}, per_class=1)))
    plot_samples(grids, args.figures_dir / "samples.png")
    log.info("wrote %d tables and 3 figures", len(tables))
    return 0


if __name__ == "__main__":
    run_step(main)
