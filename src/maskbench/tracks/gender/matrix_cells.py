"""The gender track's cells of the cross-paper matrix (``maskbench.matrix.cells``): paper D's FFW runs on the
encoder, paper B's own block / head movement-pruning runs (its native cells) and the original encoder (the
baseline), each read from the files the track's evaluations wrote.

Two benchmarks share every run's scores but the bias readout:

* ``gender_seat``: bias = the mean over the SEAT tests of |effect size| (May et al.'s d on the last layer's [CLS],
  the track's ``gender_seat`` step; 0 for an unbiased encoder);
* ``gender_crows``: bias = the CrowS-Pairs gender score (% of pairs whose more stereotypical sentence the masked-LM
  head prefers, the ``gender_lm_bias`` step; 50 unbiased), when the config measures it (``gender.lm_bias``).

``id`` is the track's task column (paper B's GLUE column: the encoder under a new head, fine-tuned with its pruned
weights held at zero, ``gender_task``), the mean ``dev_score`` (%) over the config's tasks; NaN when the FFW runs
are not scored on it (``gender.ffw.task_column: false``). The track has no dev score beside it that reads no bias
label, so ``id_dev`` is the same number: the task's labels are no bias labels, and its split is the one the task
column is scored on (a held-out part of the task's data; no test split exists beside it). ``ood`` is NaN: the
gender benchmarks have no OOD set. ``density`` is the kept share of the six encoder matrices paper B masks (Q, K,
V, attention output, both FFN matrices; for a structured FFW run its heads and neurons spread over all six).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from maskbench.matrix.cells import Cell

BENCHMARKS = {"gender_seat": 0.0, "gender_crows": 50.0}  # benchmark -> bias of an unbiased model


def _read(path: str | Path, where: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{where}: {path} does not exist")
    return json.loads(path.read_text())


def seat_mean_abs_effect(seat: Mapping, where: str) -> tuple[float, list[str]]:
    rows = seat.get("seat")
    if not rows:
        raise ValueError(f"{where}: field 'seat' is missing or empty")
    return sum(abs(float(r["effect_size"])) for r in rows) / len(rows), [r["test"] for r in rows]


def crows_score(lm: Mapping, where: str) -> float:
    if "crows_pairs" not in lm:
        raise ValueError(f"{where}: field 'crows_pairs' is missing (gender.lm_bias.crows_pairs)")
    return float(lm["crows_pairs"]["score"])


def task_score(tasks: Mapping[str, str], where: str) -> tuple[float, str]:
    """Mean dev score (%) over the tasks, and its name; NaN and "" without tasks."""
    if not tasks:
        return math.nan, ""
    scores, names = [], []
    for task, path in sorted(tasks.items()):
        data = _read(path, where)
        scores.append(float(data["dev_score"]))
        names.append(f"{task} {data.get('metric', 'accuracy')}")
    return sum(scores) / len(scores), (f"task column ({', '.join(names)}, %, held-out split; encoder + new head "
                                       "fine-tuned with pruned weights held at zero)")


def gender_cells(records: Sequence[Mapping], benchmarks: Sequence[str], data: str, model: str) -> list[Cell]:
    """One cell per record and benchmark. A record: method, paper, native, knob, value, seed, and the files
    summary (None for the baseline), seat, lm (None without masked-LM measures), tasks {task: file}."""
    unknown = [b for b in benchmarks if b not in BENCHMARKS]
    if unknown or not benchmarks:
        raise ValueError(f"gender matrix cells: benchmarks {list(benchmarks)}; choose from {list(BENCHMARKS)}")
    cells = []
    for record in records:
        where = f"gender matrix cell {record['method']} seed {record['seed']}"
        if record["summary"] is None:
            density, seconds = 1.0, 0.0
        else:
            summary = _read(record["summary"], where)
            density, seconds = float(summary["density"]), float(summary["seconds"])
        identity, id_name = task_score(record["tasks"], where)
        seat, tests = seat_mean_abs_effect(_read(record["seat"], where), where)
        for benchmark in benchmarks:
            if benchmark == "gender_seat":
                bias, bias_name = seat, f"SEAT mean |effect size| ({', '.join(tests)}; last-layer [CLS])"
            else:
                if not record["lm"]:
                    raise ValueError(f"{where}: benchmark gender_crows needs the masked-LM bias file (gender.lm_bias)")
                bias = crows_score(_read(record["lm"], where), where)
                bias_name = "CrowS-Pairs gender score (% stereotypical preferred)"
            value = record["value"]
            cells.append(Cell(
                benchmark=benchmark, method=record["method"], method_paper=record["paper"], native=record["native"],
                knob=record["knob"], value=math.nan if value is None else float(value), seed=int(record["seed"]),
                id=identity, ood=math.nan, bias=bias, id_dev=identity, id_name=id_name, ood_name="",
                bias_name=bias_name, bias_ideal=BENCHMARKS[benchmark], density=density, train_seconds=seconds,
                data=data, model=model))
    return cells
