"""Entry point: the gender track's records of the cross-paper matrix — paper D's FFW runs on the encoder, paper
B's block / head pruning runs and the original encoder, from their SEAT, masked-LM and task files
(``maskbench.tracks.gender.matrix_cells``), written with ``maskbench.matrix.cells.write_cells``.

    python -m maskbench.steps gender.matrix_cells --records '[{"method": "ffw", ...}]' \
        --benchmarks gender_seat gender_crows --data "..." --model minilm-l6 --out results/matrix/cells/gender.csv
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.matrix.cells import write_cells
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.matrix_cells import gender_cells

log = logging.getLogger("maskbench.steps.gender.matrix_cells")


@dataclass
class GenderMatrixCellsArgs:
    records: str = field(metadata={"help": "JSON list of the runs' records (the plan's matrix_records)"})
    benchmarks: list[str] = field(metadata={"help": "gender_seat and / or gender_crows"})
    data: str = field(metadata={"help": "the data, as the captions say it"})
    model: str = field(metadata={"help": "the model's name"})
    out: Path = field(metadata={"help": "the records CSV to write"})


@step_main(GenderMatrixCellsArgs)
def main(args: GenderMatrixCellsArgs) -> int:
    cells = gender_cells(json.loads(args.records), args.benchmarks, args.data, args.model)
    frame = write_cells(cells, args.out)
    log.info("wrote %s: %d cells", args.out, len(frame))
    return 0


if __name__ == "__main__":
    run_step(main)
