"""Entry point: the four papers' verdict table from every track's matrix cell records (maskbench.matrix.verdict).

    python -m maskbench.steps matrix.verdict --cells results/default/matrix/cells/nlu.csv ... --delta 1.0 \
        --table results/default/tables/verdict.csv --markdown results/default/tables/verdict.md [--label TEXT] \
        [--prices docs/facts.json]

One row per paper: its central claim in one line, the paper's own figure, ours (the gain and the ID cost, mean ± SE
of the per-seed differences against the baseline of the same seed, at the knob value the matrix's selection rule
picks without any OOD label), whether the mechanism engaged, the verdict word of the one definition and, with
``--prices``, what the paper's own scale would cost (the paper config's target for that paper, in GPU-hours).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.matrix.cells import read_cells
from maskbench.matrix.verdict import legend, markdown, verdict_table
from maskbench.report.captions import labelled
from maskbench.steps import run_step, step_main


@dataclass
class VerdictArgs:
    cells: list[Path] = field(metadata={"help": "cell record CSVs, one per track (maskbench.matrix.cells)"})
    table: Path = field(metadata={"help": "the verdict table to write (CSV)"})
    markdown: Path = field(metadata={"help": "the same in markdown, with what the words mean"})
    delta: float = field(default=1.0, metadata={"help": "the matrix's selection rule's delta (ID dev points)"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the table's first line"})
    prices: Path | None = field(default=None, metadata={
        "help": "docs/facts.json: its gpu_hours_by_paper prices each claim at the paper config's scale"})


def read_prices(path: Path | None) -> tuple[dict[str, float], str, str]:
    """paper -> GPU-hours of its target in the paper config, the GPU check they were priced with and its card."""
    if path is None:
        return {}, "", ""
    found = json.loads(path.read_text(encoding="utf-8")).get("gpu_hours_by_paper") or {}
    return ({k: float(v) for k, v in found.items() if isinstance(v, (int, float))},
            str(found.get("priced_with", "")), str(found.get("priced_on", "")))


def caption(table, priced_with: str = "", priced_on: str = "") -> str:
    card = f"one {priced_on}; " if priced_on else ""
    price = (f" **At the paper's scale**: the GPU-hours of the paper's target in configs/paper.yaml, priced by the "
             f"cost sheet at the rates of results/benchmarks/{priced_with} ({card}docs/cost.md): what testing a "
             "claim this config leaves open would take." if priced_with else "")
    return (f"**The four papers' claims at this config's scale** (data and model: docs/glossary.md and each cell's "
            f"benchmark in matrix.md). Ours: the gain and the ID cost as mean ± SE of per-seed differences against the "
            f"baseline of the same seed. Verdict: {legend(table['verdict'])}.{price}\n\n")


@step_main(VerdictArgs)
def main(args: VerdictArgs) -> int:
    if args.delta < 0:
        raise ValueError(f"--delta must be >= 0, got {args.delta}")
    prices, priced_with, priced_on = read_prices(args.prices)
    table = verdict_table(read_cells(args.cells), args.delta, prices=prices)
    with runtime.atomic_path(args.table) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    runtime.atomic_write_text(args.markdown, labelled(caption(table, priced_with, priced_on) + markdown(table), args.label))
    return 0


if __name__ == "__main__":
    run_step(main)
