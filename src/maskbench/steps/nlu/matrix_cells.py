"""Entry point: the nlu track's records of the cross-paper matrix (``maskbench.matrix.cells``) — paper D's FFW runs
on the task's baseline beside the native rows (the baseline, paper A's movement-score masks, paper C's mask
training and IMP subnetworks), one record per (benchmark, method, gamma or sparsity, seed).

    python -m maskbench.steps nlu.matrix_cells --records JSON --out results/matrix/cells/nlu.csv

``--records`` (``tracks/nlu/ffw_plan.FFWPlan.records``): the evaluation sets of each role (id: paper A's "Val."
accuracy; ood: HANS accuracy; id_dev: the task's dev set, what the selection rule reads; negation: the negation
subset, its own benchmark ``mnli_negation``), and per run its evaluation JSONs and the file its training seconds
come from. The bias readout of an FFW run is its summary's fresh bias head accuracy on the held-out readout slice
(the masked model), with the slice's majority share as the unbiased ideal; the native rows have none (NaN).

A run's training seconds are its ``cost`` file's ``cost_key`` — or the sum over a list of files (paper C's IMP
level: every round up to it, ``tracks/nlu/srnets/matrix``); its density is 1 - ``exact_sparsity`` of its
``sparsity_file`` when it has one (paper C's summaries), else the ID evaluation's ``mask_density`` (1.0 without a
mask). ``native_on`` lists the benchmarks a run is native on (paper C: mnli_hans only), else ``native`` holds for
every benchmark; a run's ``model`` overrides the records' (a subnetwork cut from another model than the baseline).
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.matrix.cells import Cell, write_cells
from maskbench.report.captions import data_kind
from maskbench.steps import run_step, step_main

log = logging.getLogger("maskbench.steps.nlu.matrix_cells")
NAN = float("nan")


@dataclass
class MatrixCellsArgs:
    records: str = field(metadata={"help": "JSON: sets, model, data and runs (FFWPlan.records)"})
    out: Path = field(metadata={"help": "the track's records CSV"})


def read_json(path: str) -> dict:
    with open(path) as handle:
        return json.load(handle)


def accuracy(path: str, where: str) -> float:
    metrics = read_json(path).get("metrics") or {}
    if "accuracy" not in metrics:
        raise ValueError(f"{path}: field 'metrics.accuracy' is missing ({where})")
    return float(metrics["accuracy"])


def cells_of(records: dict) -> list[Cell]:
    sets = records["sets"]
    benchmarks = [("mnli_hans", "ood", f"{sets['ood']} accuracy (%)")]
    if sets.get("negation"):
        benchmarks.append(("mnli_negation", "negation", f"{sets['negation']} accuracy (%, paper A's negation subset)"))
    cells = []
    for run in records["runs"]:
        files = run["evaluations"]
        where = f"{run['method']} seed {run['seed']}"
        id_score = accuracy(files["id"], where)
        id_dev = accuracy(files["id_dev"], where)
        if run.get("sparsity_file"):
            density = 1.0 - float(read_json(run["sparsity_file"])["exact_sparsity"])
        else:
            density = float(read_json(files["id"]).get("mask_density", 1.0))
        costs = [] if run["cost"] is None else [run["cost"]] if isinstance(run["cost"], str) else run["cost"]
        seconds = sum(float(read_json(path)[run["cost_key"]]) for path in costs)
        bias, bias_ideal, bias_name = NAN, NAN, "fresh bias head accuracy (%): FFW rows only"
        if run.get("attribute"):
            readout = read_json(run["cost"])["bias_readout"]
            bias, bias_ideal = float(readout["masked"]), float(readout["majority"])
            bias_name = (f"fresh head's accuracy (%) predicting the {run['attribute']} attribute from the classifier's "
                         "input, held-out training pairs")
        for benchmark, role, ood_name in benchmarks:
            cells.append(Cell(
                benchmark=benchmark, method=run["method"], method_paper=run["paper"],
                native=benchmark in run["native_on"] if "native_on" in run else run["native"],
                knob=run["knob"], value=NAN if run["value"] is None else run["value"], seed=run["seed"],
                id=id_score, ood=accuracy(files[role], where), bias=bias, id_dev=id_dev,
                id_name=f"{sets['id']} accuracy (%, MNLI dev-matched)", ood_name=ood_name, bias_name=bias_name,
                bias_ideal=bias_ideal, density=density, train_seconds=seconds, data=f"{data_kind(records['data_source'])}: {records['data']}",
                model=run.get("model", records["model"])))
    return cells


@step_main(MatrixCellsArgs)
def main(args: MatrixCellsArgs) -> int:
    cells = cells_of(json.loads(args.records))
    frame = write_cells(cells, args.out)
    log.info("wrote %d records to %s (%d with a bias readout)", len(frame), args.out,
             sum(not math.isnan(c.bias) for c in cells))
    return 0


if __name__ == "__main__":
    run_step(main)
