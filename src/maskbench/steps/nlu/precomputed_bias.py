"""Entry point: a precomputed bias source's probabilities on the training set, from the columns of the user's file.

    python -m maskbench.steps nlu.precomputed_bias --train results/nlu/data/prepared/claims_train.parquet \
        --file data/claims/train.jsonl --source '{"kind": "precomputed", "columns": {"claims": {...}}}' \
        --name given --task claims --out results/nlu/claims/<model>/bias/given/seed~0/train_probs.parquet

Reads the bias columns of ``--file`` (the raw file the prepared training set was made from), checks every value
(``maskbench.tracks.nlu.bias.precomputed``), takes the rows the prepared set kept (its ``source_index``: a part or
sample of the file keeps its rows' places) and writes the probabilities file the debiasing losses read, atomically:
a bad column leaves no file behind.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from maskbench import runtime
from maskbench.data.local_source import read_local_table
from maskbench.data.schema import DataError, read_prepared
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.bias.precomputed import checked_values, columns_of, probabilities
from maskbench.tracks.nlu.bias.probs import write_probs

log = logging.getLogger("maskbench.steps.nlu.precomputed_bias")


@dataclass
class PrecomputedBiasArgs:
    train: Path = field(metadata={"help": "prepared training parquet (its source_index points into --file)"})
    file: Path = field(metadata={"help": "the local file the training set was prepared from, with the bias columns"})
    source: str = field(metadata={"help": "JSON of the bias source (config bias.sources.<name>)"})
    name: str = field(metadata={"help": "the bias source's name (messages and the file's metadata)"})
    task: str = field(metadata={"help": "the task whose columns to read"})
    out: Path = field(metadata={"help": "probabilities parquet to write"})
    format: str | None = field(default=None, metadata={"help": "the file's format when its suffix does not say"})


@step_main(PrecomputedBiasArgs)
def main(args: PrecomputedBiasArgs) -> int:
    spec = json.loads(args.source)
    if columns_of(spec, args.task) is None:
        raise DataError(f"bias.sources.{args.name}: field 'columns' names no column for task {args.task!r}")
    train, labels, meta = read_prepared(args.train)
    table = read_local_table(args.file, args.format)
    values = checked_values(table.frame, spec, args.task, labels, f"{args.file} (bias.sources.{args.name})",
                            table.position)
    if "source_index" not in train.columns:
        raise DataError(f"{args.train}: field 'source_index' is missing: the rows cannot be matched to {args.file}")
    rows = train["source_index"].to_numpy(dtype=np.int64)
    if len(rows) and (rows.min() < 0 or rows.max() >= len(values)):
        raise DataError(f"{args.train}: field 'source_index' has value {int(rows.max())}, but {args.file} has "
                        f"{len(values)} rows: the training set was prepared from another file")
    probs = probabilities(values[rows], train["label"].to_numpy(), len(labels))
    write_probs(args.out, train["id"], probs, labels,
                {"task": meta.get("task", args.task), "dataset": meta.get("dataset"), "source": str(args.file),
                 "bias_source": args.name, "form": columns_of(spec, args.task)[0],
                 "provenance": runtime.provenance(args)})
    log.info("wrote %s: %d examples, %s bias probabilities of %s", args.out, len(probs),
             columns_of(spec, args.task)[0], args.file)
    return 0


if __name__ == "__main__":
    run_step(main)
