"""Entry point: the bias models' accuracy on every evaluation set, from their evaluation JSONs.

    python -m maskbench.steps nlu.bias_models_table --evals a.json b.json ... --out results/tables/bias_models.csv
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.runtime import atomic_write_text
from maskbench.steps import run_step, step_main


@dataclass
class BiasModelsTableArgs:
    evals: list[Path] = field(metadata={"help": "evaluation JSONs of the bias_* rows"})
    out: Path = field(metadata={"help": "CSV to write"})


def bias_models_table(evals: list[dict]) -> pd.DataFrame:
    """One line per (bias source, task, evaluation set): mean and std of accuracy over the bias seeds."""
    frame = pd.DataFrame([{"source": e["row"].removeprefix("bias_"), "task": e["task"], "eval_set": e["eval_set"],
                           "seed": e["seed"], "accuracy": e["metrics"]["accuracy"]} for e in evals])
    table = frame.groupby(["source", "task", "eval_set"], sort=False).accuracy.agg(["mean", "std", "count"])
    return table.rename(columns={"count": "n_seeds"}).reset_index()


@step_main(BiasModelsTableArgs)
def main(args: BiasModelsTableArgs) -> int:
    table = bias_models_table([json.loads(Path(p).read_text()) for p in args.evals])
    atomic_write_text(args.out, table.to_csv(index=False))
    return 0


if __name__ == "__main__":
    run_step(main)
