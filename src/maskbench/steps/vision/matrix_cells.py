"""Entry point: the vision track's matrix cells (``maskbench.matrix.cells``) — papers A's and C's masks on the
vanilla model (the ``vision.masks`` runs), paper D's FFW (its native rows, knob gamma) and the unpruned baseline,
per benchmark and seed, from their evaluation outputs.

    python -m maskbench.steps vision.matrix_cells --manifest JSON --out results/matrix/cells/vision.csv

Scores (%): id = accuracy on the biased test split (the test digits coloured as the training split); ood = the
track's unbiased accuracy (Biased-MNIST: on the unbiased test split; Multi-Color MNIST: paper D Table 5's unweighted
mean over the bias-alignment groups); bias = the bias ("private") accuracy of a fresh head on the model's features,
as paper D's rows (mean over bias attributes; ideal: chance); id_dev = accuracy on the biased dev split (MNIST
training digits the training split does not use, coloured as it is). Density: the kept fraction of every conv and
linear weight.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.matrix.cells import BASELINE, Cell, write_cells
from maskbench.steps import run_step, step_main

log = logging.getLogger("maskbench.steps.vision.matrix_cells")

METHOD_PAPER = {"movement_poe": "A", "movement_reweight": "A", "mask_training": "C", "imp": "C", "ffw": "D",
                "ffw_structured": "D"}
NATIVE_BENCHMARKS = {"biased_mnist": "D", "multi_color_mnist": "D"}  # paper D evaluates FFW on both generators
ID_NAME = "accuracy on the biased test split (%)"
BIAS_NAME = "bias accuracy of a fresh head on the features, unbiased test (%)"


@dataclass
class MatrixCellsArgs:
    manifest: str = field(metadata={"help": "JSON: per benchmark its level and input files (the plan's)"})
    out: Path = field(metadata={"help": "the CSV of cell records"})


def _read(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def ood_of(record: dict) -> tuple[float, str]:
    """Paper D's unbiased score: the groups' unweighted mean where the test split has alignment groups of two
    attributes (Multi-Color MNIST), else the accuracy on the unbiased test split."""
    groups = record.get("task_groups") or {}
    if record.get("unbiased_accuracy") is not None and any("," in key for key in groups):
        return float(record["unbiased_accuracy"]), "unbiased test accuracy, mean over the bias-alignment groups (%)"
    return float(record["task_accuracy"]), "accuracy on the unbiased test split (%)"


def _scores(record: dict, id_dev: float) -> dict:
    ood, ood_name = ood_of(record)
    return {"id": record["biased_test_accuracy"], "ood": ood, "bias": record["bias_accuracy"], "id_dev": id_dev,
            "id_name": ID_NAME, "ood_name": ood_name, "bias_name": BIAS_NAME,
            "density": 1.0 - float(record["sparsity"]) / 100.0}


def benchmark_cells(name: str, spec: dict) -> list[Cell]:
    runs = [(entry, _read(entry["path"])) for entry in spec["runs"]]
    if not runs:
        raise ValueError(f"--manifest: benchmark {name!r} has no vision.masks run")
    bias_classes = runs[0][1]["bias_classes"]
    common = {"benchmark": name, "bias_ideal": 100.0 / bias_classes[0],
              "data": f"real MNIST, {spec['generator']} {spec['level']}, {runs[0][1]['n_train']} biased training "
                      "images",
              "model": spec["model"]}
    native = spec["generator"] in NATIVE_BENCHMARKS
    cells = [Cell(method=entry["method"], method_paper=METHOD_PAPER[entry["method"]], native=False,
                  knob="sparsity", value=entry["sparsity"], seed=entry["seed"], train_seconds=record["train_seconds"],
                  **_scores(record, record["biased_dev_accuracy"]), **common) for entry, record in runs]
    dev = {entry["seed"]: {r["run"]: r["biased_dev_accuracy"] for r in _read(entry["path"])["runs"]}
           for entry in spec["dev"]}
    seconds = {(e["run"], e["seed"]): max((p.get("seconds", 0.0) for p in _read(e["path"]).get("curve", [])),
                                          default=0.0) for e in spec["ffw"]}
    gates = {(e["run"], e["seed"]): e for e in spec["ffw"]}
    for entry in spec["evals"]:
        seed = entry["seed"]
        for record in _read(entry["path"])["runs"]:
            if record["run"] == "vanilla":
                cells.append(Cell(method=BASELINE, method_paper="-", native=False, knob="", value=math.nan,
                                  seed=seed, train_seconds=0.0, **{**_scores(record, dev[seed]["vanilla"]),
                                                                   "density": 1.0}, **common))
            elif (record["run"], seed) in gates:
                gate = gates[record["run"], seed]
                cells.append(Cell(method=gate["method"], method_paper="D", native=native, knob="gamma",
                                  value=gate["gamma"], seed=seed, train_seconds=seconds[record["run"], seed],
                                  **_scores(record, dev[seed][record["run"]]), **common))
    return cells


@step_main(MatrixCellsArgs)
def main(args: MatrixCellsArgs) -> int:
    manifest = json.loads(args.manifest)
    cells = [cell for name, spec in manifest.items() for cell in benchmark_cells(name, spec)]
    frame = write_cells(cells, args.out)
    log.info("wrote %d vision matrix cells to %s", len(frame), args.out)
    return 0


if __name__ == "__main__":
    run_step(main)
