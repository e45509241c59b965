"""Entry point: one table of every prepared dataset and subset (source, size, labels), from their summaries.

    python -m maskbench.steps nlu.dataset_summary --summaries a.summary.json b.summary.json --out results/tables/datasets.csv
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.runtime import atomic_write_text
from maskbench.steps import run_step, step_main


@dataclass
class DatasetSummaryArgs:
    summaries: list[Path] = field(metadata={"help": "summary JSONs written by prepare / negation_subset"})
    out: Path = field(metadata={"help": "CSV to write"})


def summary_row(path: Path) -> dict:
    s = json.loads(Path(path).read_text())
    return {
        # the file is named after the dataset or subset it describes
        "dataset": Path(path).name.removesuffix(".summary.json"),
        "task": s.get("task"),
        "source": s.get("source") or f"negation subset of {s.get('input')}",
        "n_examples": s["n_examples"],
        "label_counts": json.dumps(s.get("label_counts", {}), sort_keys=True),
    }


@step_main(DatasetSummaryArgs)
def main(args: DatasetSummaryArgs) -> int:
    table = pd.DataFrame([summary_row(p) for p in args.summaries])
    atomic_write_text(args.out, table.to_csv(index=False))
    return 0


if __name__ == "__main__":
    run_step(main)
