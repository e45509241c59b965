"""Entry point: the cross-paper matrix (methods x benchmarks) from every track's cell records.

    python -m maskbench.steps matrix.report --cells results/matrix/cells/nlu.csv ... --delta 1.0 \
        --table results/tables/matrix.csv --markdown results/tables/matrix.md --figure results/figures/matrix.png

Writes the long table (a row per benchmark and method: the selection rule's pick, its scores as mean, sd and seed
count, its effects against the baseline with the evidence words), the grid in markdown with what each benchmark's
scores are and the pairs that do not fit, and the figure (maskbench.matrix.figure). The figure is written last.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.matrix.cells import read_cells
from maskbench.matrix.figure import matrix_figure
from maskbench.matrix.table import markdown, matrix_table
from maskbench.report.captions import labelled
from maskbench.report.figure_files import save_figure
from maskbench.steps import run_step, step_main

log = logging.getLogger("maskbench.steps.matrix.report")


@dataclass
class MatrixReportArgs:
    cells: list[Path] = field(metadata={"help": "cell record CSVs, one per track (maskbench.matrix.cells)"})
    table: Path = field(metadata={"help": "the long matrix table to write (CSV)"})
    markdown: Path = field(metadata={"help": "the grid to write (markdown)"})
    figure: Path = field(metadata={"help": "the figure to write (PNG)"})
    delta: float = field(default=1.0, metadata={
        "help": "selection rule: the strongest knob value whose mean ID dev score is within delta points of the "
                "baseline's"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the first line of each markdown table"})


def caption(table, delta: float) -> str:
    seeds = sorted({int(s) for text in table.seeds for s in str(text).split()})
    return (f"**The cross-paper matrix**: {table.method.nunique()} methods (baseline included) on "
            f"{table.benchmark.nunique()} benchmarks; each cell is the method's run at the value of its strength "
            f"knob that the selection rule picks without any OOD label (the strongest value whose mean ID dev score "
            f"stays within {delta:g} points of the baseline's), mean ± sd over seeds {seeds}; the words against the "
            "baseline say \"debiases\" or \"less bias\" only beyond 2 standard errors over at least 3 seeds.\n\n")


@step_main(MatrixReportArgs)
def main(args: MatrixReportArgs) -> int:
    if args.delta < 0:
        raise ValueError(f"--delta must be >= 0, got {args.delta}")
    cells = read_cells(args.cells)
    table = matrix_table(cells, args.delta)
    with runtime.atomic_path(args.table) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    runtime.atomic_write_text(args.markdown, labelled(caption(table, args.delta) + markdown(table), args.label))
    title = f"Methods x benchmarks: the selection rule's pick (delta {args.delta:g})"
    figure = matrix_figure(table, f"{args.label}\n{title}" if args.label else title)
    save_figure(figure, args.figure, dpi=110)
    log.info("matrix: %d cells from %d records -> %s", len(table), len(cells), args.table)
    return 0


if __name__ == "__main__":
    run_step(main)
