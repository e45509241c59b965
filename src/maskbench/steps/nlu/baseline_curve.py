"""Write the baselines' development-accuracy curves: every epoch's dev accuracy of every (task, seed) baseline, with
the epoch early stopping kept and the one it stopped at, as CSV and markdown.

    python -m maskbench.steps nlu.baseline_curve --models M1 M2 ... --out-csv C.csv --out-md C.md [--label TEXT]

``--models``: baseline checkpoint folders (each with ``train_summary.json`` and ``train_curve.csv``; the summary
names the task through its training file's prepared metadata and carries the seed).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report.captions import labelled
from maskbench.runtime import atomic_write_text
from maskbench.steps import run_step, step_main


@dataclass
class BaselineCurveArgs:
    models: list[Path] = field(metadata={"help": "baseline checkpoint folders"})
    out_csv: Path = field(metadata={"help": "long table: task, seed, epoch, step, dev_accuracy, kept, stopped"})
    out_md: Path = field(metadata={"help": "the same as a markdown table, an epoch per row, a seed per column"})
    tasks: list[str] = field(default_factory=list, metadata={"help": "the task of each model folder, in order"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the markdown table's first line"})


def curve_rows(folder: Path, task: str) -> list[dict]:
    summary = json.loads((folder / "train_summary.json").read_text(encoding="utf-8"))
    curve = pd.read_csv(folder / "train_curve.csv")
    early = summary.get("early_stop") or {}
    seed = summary["provenance"]["seed"]
    points = curve.dropna(subset=["dev_accuracy"]) if "dev_accuracy" in curve.columns else curve.iloc[0:0]
    return [{"task": task, "seed": seed, "epoch": int(p.epoch), "step": int(p.step),
             "dev_accuracy": float(p.dev_accuracy), "kept": int(p.epoch) == early.get("best_epoch"),
             "stopped": int(p.epoch) == early.get("stopped_epoch")} for p in points.itertuples()]


def curve_markdown(long: pd.DataFrame) -> str:
    """Epochs as rows, one column per (task, seed): the dev accuracy, "**x**" where early stopping kept the epoch."""
    cells = long.assign(cell=[f"**{a:.2f}**" if k else f"{a:.2f}" for a, k in zip(long.dev_accuracy, long.kept,
                                                                                    strict=True)])
    wide = cells.pivot_table(index="epoch", columns=["task", "seed"], values="cell", aggfunc="first").fillna("")
    wide.columns = [f"{task} seed {seed}" for task, seed in wide.columns]
    return wide.reset_index().to_markdown(index=False) + "\n"


@step_main(BaselineCurveArgs)
def main(args: BaselineCurveArgs) -> int:
    if len(args.tasks) != len(args.models):
        raise ValueError(f"--tasks names {len(args.tasks)} tasks for {len(args.models)} --models")
    rows = [row for folder, task in zip(args.models, args.tasks, strict=True) for row in curve_rows(folder, task)]
    long = pd.DataFrame(rows, columns=["task", "seed", "epoch", "step", "dev_accuracy", "kept", "stopped"])
    atomic_write_text(args.out_csv, long.to_csv(index=False))
    atomic_write_text(args.out_md, labelled(curve_markdown(long), args.label))
    return 0


if __name__ == "__main__":
    run_step(main)
