"""One record per run of a matrix cell: (benchmark, method, strength knob value, seed) -> scores, density, cost.

Every track turns the evaluations of its runs into these records (a CSV per track, ``write_cells``); the matrix
report reads them all (``read_cells``) and knows nothing else about the tracks. The fields:

- ``benchmark``: what the method is evaluated on (``mnli_hans``, ``gender_seat``, ``biased_mnist_0.99``, ...);
  ``method``: the pruning method (``movement_poe``, ``mask_training``, ``imp``, ``block_movement``, ``ffw``,
  ``ffw_structured``, ...), ``baseline`` for the unpruned model the benchmark's cells start from;
  ``method_paper``: the paper the method comes from (A-D; "-" for the baseline); ``native``: True where that
  paper itself evaluates the method on this benchmark (the matrix marks these cells);
- ``knob`` / ``value``: the strength knob the cell sweeps and this run's value ("" and NaN when none);
- ``id`` / ``ood`` / ``bias``: in-distribution score, OOD / unbiased score, bias readout (NaN where a benchmark
  has none); ``id_dev``: the in-distribution *development* score the OOD-label-free selection rule reads (NaN
  where there is none); ``id_name`` / ``ood_name`` / ``bias_name``: what each is, in words, with its unit;
  ``bias_ideal``: the bias readout of an unbiased model (0 for an effect size or an MI, 50 for CrowS-Pairs' %, the
  chance accuracy for a bias head's accuracy);
- ``density``: the fraction of the masked weights kept (1.0 for the baseline); ``train_seconds``: the mask's
  training time on the machine that ran it (0 for the baseline);
- ``data`` / ``model``: the data (real / synthetic / stand-in, sizes) and the model, as the captions say them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pandas as pd

from maskbench.runtime import atomic_path

PAPERS = ("A", "B", "C", "D", "-")
BASELINE = "baseline"


class CellError(ValueError):
    """A cell record that cannot be right (names the file when read from one)."""


@dataclass
class Cell:
    benchmark: str
    method: str
    method_paper: str
    native: bool
    knob: str
    value: float
    seed: int
    id: float
    ood: float
    bias: float
    id_dev: float
    id_name: str
    ood_name: str
    bias_name: str
    bias_ideal: float
    density: float
    train_seconds: float
    data: str
    model: str

    def __post_init__(self):
        for name in ("benchmark", "method", "data", "model"):
            if not str(getattr(self, name)).strip():
                raise CellError(f"matrix cell: field {name!r} is empty")
        if self.method_paper not in PAPERS:
            raise CellError(f"matrix cell {self.benchmark}/{self.method}: field 'method_paper' is "
                            f"{self.method_paper!r}; choose one of {PAPERS}")
        for name in ("value", "id", "ood", "bias", "id_dev", "bias_ideal", "density", "train_seconds"):
            setattr(self, name, float(getattr(self, name)))
        if bool(self.knob) == math.isnan(self.value):
            raise CellError(f"matrix cell {self.benchmark}/{self.method}: knob {self.knob!r} with value "
                            f"{self.value}: a knob needs a value and a value a knob")
        if not 0.0 <= self.density <= 1.0:
            raise CellError(f"matrix cell {self.benchmark}/{self.method}: field 'density' is {self.density}, "
                            "not a fraction in [0, 1]")
        if self.train_seconds < 0:
            raise CellError(f"matrix cell {self.benchmark}/{self.method}: field 'train_seconds' is negative")
        self.seed, self.native = int(self.seed), bool(self.native)


COLUMNS = [f.name for f in fields(Cell)]


def write_cells(cells: Iterable[Cell], path: Path) -> pd.DataFrame:
    """Write the records as one CSV (atomically, ``runtime.atomic_path``), sorted for stable bytes."""
    frame = pd.DataFrame([asdict(c) for c in cells], columns=COLUMNS)
    if frame.empty:
        raise CellError(f"{path}: no matrix cell to write")
    frame = frame.sort_values(["benchmark", "method", "knob", "value", "seed"], kind="mergesort",
                              na_position="first").reset_index(drop=True)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, float_format="%.10g")
    return frame


def read_cells(paths: Iterable[Path]) -> pd.DataFrame:
    """Every record of the given CSVs, each checked as a ``Cell`` (empty text fields read back as ""); an error
    names the file and the row."""
    frames = []
    for path in paths:
        frame = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])
        missing = [c for c in COLUMNS if c not in frame.columns]
        if missing:
            raise CellError(f"{path}: matrix cells lack column(s) {missing}")
        records = []
        for i, row in enumerate(frame[COLUMNS].to_dict("records")):
            try:
                records.append(asdict(Cell(**_typed(row))))
            except (CellError, TypeError, ValueError) as error:
                raise CellError(f"{path}: row {i + 2}: {error}") from None
        frames.append(pd.DataFrame(records, columns=COLUMNS))
    if not frames:
        raise CellError("no matrix cell file given")
    out = pd.concat(frames, ignore_index=True)
    duplicated = out.duplicated(["benchmark", "method", "knob", "value", "seed"], keep=False)
    if duplicated.any():
        first = out[duplicated].iloc[0]
        raise CellError(f"matrix cells: ({first.benchmark}, {first.method}, {first.knob}={first.value}, seed "
                        f"{first.seed}) appears more than once across {[str(p) for p in paths]}")
    return out


def _typed(row: Mapping) -> dict:
    row = dict(row)
    row["knob"] = "" if row["knob"] is None or (isinstance(row["knob"], float) and math.isnan(row["knob"])) \
        else str(row["knob"])
    for name in ("id_name", "ood_name", "bias_name"):
        value = row[name]
        row[name] = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    native = row["native"]
    row["native"] = native if isinstance(native, bool) else str(native).strip().lower() == "true"
    return row
