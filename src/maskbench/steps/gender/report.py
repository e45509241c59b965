"""Entry point: paper B's tables and figures from the gender track's run summaries and SEAT files.

    python -m maskbench.steps gender.report --runs JSON --original-seat results/gender/m/original.seat.json \
        --tests sent-weat6 sent-weat7 --tables-dir results/tables/gender --figures-dir results/figures/gender

``--runs``: a JSON list of the workflow's run records (kind, granularity, layers, mode, seed, summary, seat, and
optionally tasks: {task: JSON} and lm: JSON), the files of each read here; ``--original-tasks`` / ``--original-lm``
the pre-trained encoder's. Writes runs.csv, seat_long.csv, layer_density.csv, heads.csv, performance_bias.csv, one
table per planned kind (table1 frozen, table2 unfrozen, table4 debias only; csv and markdown) and tables.md, then
figures 1 (layer_density), 2 (heads) and 3 (performance_bias).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.report.captions import labelled
from maskbench.report.figure_files import save_figure
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.report.figures import (
    build_heads_figure,
    build_layer_density_figure,
    build_performance_bias_figure,
    heads_frame,
    layer_density_frame,
    performance_bias_frame,
)
from maskbench.tracks.gender.report.tables import (
    KIND_TABLE,
    kind_table,
    lm_columns,
    original_extras,
    original_frame,
    read_json,
    runs_frame,
    task_columns,
)

log = logging.getLogger("maskbench.steps.gender.report")
CAPTIONS = {
    "table1": "Paper B Table 1 analogue: block / head movement pruning with frozen weights. SEAT effect sizes on "
              "the last layer's [CLS] (mean ± std over seeds; 0 = no measured bias), the density the mask keeps, "
              "the whole heads it removes, the task accuracy of the encoder fine-tuned with its pruned weights held "
              "at zero (paper B: GLUE) and the masked-LM bias scores when measured (CrowS-Pairs, StereoSet SS: 50 = no "
              "preference); paper B's BERT-base numbers beside.",
    "table2": "Paper B Table 2 analogue: the same pruning with the weights training too (paper B's numbers are not "
              "among the project's references).",
    "table4": "Paper B Table 4 analogue: the debiasing objective alone, every weight training, no pruning (an "
              "objective column names the gender.runs.objectives rows, each with its own objective settings and no "
              "paper B figure beside it).",
}


@dataclass
class GenderReportArgs:
    runs: str = field(metadata={"help": "JSON list of run records (kind, granularity, layers, mode, seed, summary, seat)"})
    original_seat: Path = field(metadata={"help": "SEAT JSON of the pre-trained model"})
    tests: list[str] = field(metadata={"help": "SEAT test names, in table order"})
    tables_dir: Path = field(metadata={"help": "folder of the tables"})
    figures_dir: Path = field(metadata={"help": "folder of the figures"})
    original_tasks: list[Path] = field(default_factory=list, metadata={
        "help": "task JSONs of the pre-trained encoder (maskbench.steps.gender.task without --run), any tasks and seeds"})
    original_lm: Path | None = field(default=None, metadata={"help": "masked-LM bias JSON of the pre-trained encoder"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})


@step_main(GenderReportArgs)
def main(args: GenderReportArgs) -> int:
    runs = json.loads(args.runs)
    summaries = [read_json(r["summary"]) for r in runs]
    seats = [read_json(r["seat"]) for r in runs]
    tasks = [{name: read_json(path) for name, path in r.get("tasks", {}).items()} for r in runs]
    lm = [read_json(r["lm"]) if r.get("lm") else None for r in runs]
    original_seat = read_json(args.original_seat)
    original = original_frame(original_seat)
    original_tasks = original_task_sets([read_json(p) for p in args.original_tasks])
    original_lm = read_json(args.original_lm) if args.original_lm else None
    frame, seat = runs_frame(runs, summaries, seats, tasks, lm)
    density, heads = layer_density_frame(runs, summaries), heads_frame(runs, summaries)
    out = args.tables_dir
    for name, table in (("runs", frame), ("seat_long", seat), ("layer_density", density), ("heads", heads)):
        runtime.atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))
    sections = []
    for kind, name in KIND_TABLE.items():
        if not (frame["kind"] == kind).any():
            continue
        table = kind_table(kind, frame, seat, original, args.tests, original_extras(original_tasks, original_lm))
        runtime.atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))
        sections.append(f"### {name}\n\n{CAPTIONS[name]}\n\n{table.to_markdown(index=False)}\n")
    runtime.atomic_write_text(out / "tables.md", labelled("\n".join(sections), args.label))
    figures = [("layer_density", build_layer_density_figure(density)), ("heads", build_heads_figure(heads))]
    if "performance" in frame.columns:
        base = {"performance": [task_columns(t)["performance"] for t in original_tasks],
                "seat_mean_abs": float(original["effect_size"].abs().mean()), **lm_columns(original_lm)}
        points = performance_bias_frame(frame, base)
        runtime.atomic_write_text(out / "performance_bias.csv", points.to_csv(index=False))
        figures.append(("performance_bias", build_performance_bias_figure(points)))
    for name, figure in figures:
        save_figure(figure, args.figures_dir / f"{name}.png", dpi=120)
    log.info("wrote %d tables and %d figures from %d runs", len(sections), len(figures), len(runs))
    return 0


def original_task_sets(reports: list[dict]) -> list[dict]:
    """The pre-trained encoder's task files grouped by seed: one {task: JSON} per seed (every task present)."""
    by_seed: dict[int, dict] = {}
    for report in reports:
        by_seed.setdefault(report["provenance"]["seed"], {})[report["task"]] = report
    tasks = {report["task"] for report in reports}
    incomplete = [seed for seed, found in by_seed.items() if set(found) != tasks]
    if incomplete:
        raise ValueError(f"--original-tasks: seeds {incomplete} lack some of the tasks {sorted(tasks)}")
    return [by_seed[seed] for seed in sorted(by_seed)]


if __name__ == "__main__":
    run_step(main)
