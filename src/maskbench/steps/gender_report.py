"""Entry point: paper B's tables and figures from the gender track's run summaries and SEAT files.

    python -m maskbench.steps.gender_report --runs JSON --original-seat results/gender/m/original.seat.json \
        --tests sent-weat6 sent-weat7 --tables-dir results/tables/gender --figures-dir results/figures/gender

``--runs``: a JSON list of the workflow's run records (kind, granularity, layers, mode, seed, summary, seat), the
files of each read here. Writes runs.csv, seat_long.csv, layer_density.csv, heads.csv, one table per planned kind
(table1 frozen, table2 unfrozen, table4 debias only; csv and markdown) and tables.md, then the figures.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.report.gender_figures import (
    build_heads_figure,
    build_layer_density_figure,
    heads_frame,
    layer_density_frame,
)
from maskbench.report.gender_tables import KIND_TABLE, kind_table, original_frame, read_json, runs_frame
from maskbench.steps import run_step

log = logging.getLogger("maskbench.steps.gender_report")
CAPTIONS = {
    "table1": "Paper B Table 1 analogue: block / head movement pruning with frozen weights. SEAT effect sizes on "
              "the last layer's [CLS] (mean ± std over seeds; 0 = no measured bias), the density the mask keeps, "
              "the whole heads it removes; paper B's BERT-base numbers beside (its SS and GLUE are not measured here).",
    "table2": "Paper B Table 2 analogue: the same pruning with the weights training too (paper B's numbers are not "
              "among the project's references).",
    "table4": "Paper B Table 4 analogue: the debiasing objective alone, every weight training, no pruning.",
}


@dataclass
class GenderReportArgs:
    runs: str = field(metadata={"help": "JSON list of run records (kind, granularity, layers, mode, seed, summary, seat)"})
    original_seat: Path = field(metadata={"help": "SEAT JSON of the pre-trained model"})
    tests: list[str] = field(metadata={"help": "SEAT test names, in table order"})
    tables_dir: Path = field(metadata={"help": "folder of the tables"})
    figures_dir: Path = field(metadata={"help": "folder of the figures"})


def main(argv=None) -> int:
    setup_logging()
    args = parse_dataclass(GenderReportArgs, argv, "python -m maskbench.steps.gender_report", __doc__.splitlines()[0])
    runs = json.loads(args.runs)
    summaries = [read_json(r["summary"]) for r in runs]
    seats = [read_json(r["seat"]) for r in runs]
    original = original_frame(read_json(args.original_seat))
    frame, seat = runs_frame(runs, summaries, seats)
    density, heads = layer_density_frame(runs, summaries), heads_frame(runs, summaries)
    out = args.tables_dir
    for name, table in (("runs", frame), ("seat_long", seat), ("layer_density", density), ("heads", heads)):
        runtime.atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))
    sections = []
    for kind, name in KIND_TABLE.items():
        if not (frame["kind"] == kind).any():
            continue
        table = kind_table(kind, frame, seat, original, args.tests)
        runtime.atomic_write_text(out / f"{name}.csv", table.to_csv(index=False))
        sections.append(f"### {name}\n\n{CAPTIONS[name]}\n\n{table.to_markdown(index=False)}\n")
    runtime.atomic_write_text(out / "tables.md", "\n".join(sections))
    for name, figure in (("layer_density", build_layer_density_figure(density)), ("heads", build_heads_figure(heads))):
        with runtime.atomic_path(args.figures_dir / f"{name}.png") as tmp:
            figure.savefig(tmp, dpi=120)
    log.info("wrote %d tables and 2 figures from %d runs", len(sections), len(runs))
    return 0


if __name__ == "__main__":
    run_step(main)
