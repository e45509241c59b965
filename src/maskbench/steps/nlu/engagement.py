"""Entry point: whether each run behind Table 1 engaged (maskbench.report.engagement), read from its own outputs.

    python -m maskbench.steps nlu.engagement --runs RUNS --out-csv E.csv --out-md E.md [--label TEXT]

RUNS is inline JSON (or a JSON file): a list of {"row", "task", "seed", "kind", "path"} with kind ``fine_tuning``
(path: a checkpoint's train_summary.json, its train_curve.csv beside it) or ``mask_search`` (path: a search's
.search.json). Writes one line per run (its measures, "engaged" or "not engaged" and why) and, in markdown, one
line per (task, row) with the word over its seeds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.data.schema import DataError
from maskbench.report import engagement, json_arg
from maskbench.report.captions import labelled
from maskbench.runtime import atomic_path, atomic_write_text
from maskbench.steps import run_step, step_main

KINDS = ("fine_tuning", "mask_search")


@dataclass
class EngagementArgs:
    runs: str = field(metadata={"help": "JSON list of {row, task, seed, kind, path} (inline or a file)"})
    out_csv: Path = field(metadata={"help": "one line per run"})
    out_md: Path = field(metadata={"help": "one line per (task, row): its word over the seeds and why"})
    label: str | None = field(default=None, metadata={"help": "the config's label: the table's first line"})


def dev_by_epoch(curve_csv: Path) -> list[float]:
    """The last development accuracy logged in each epoch of a train_curve.csv, in epoch order."""
    curve = pd.read_csv(curve_csv)
    if "dev_accuracy" not in curve.columns:
        raise DataError(f"{curve_csv}: field 'dev_accuracy' is missing: the fine-tuning scored no dev set")
    points = curve.dropna(subset=["dev_accuracy"])
    return [float(v) for v in points.groupby("epoch", sort=True)["dev_accuracy"].last()]


def read_run(run: dict) -> dict:
    path = Path(run["path"])
    if run["kind"] not in KINDS:
        raise DataError(f"--runs: field 'kind' is {run['kind']!r}, expected one of {list(KINDS)}")
    summary = json.loads(path.read_text(encoding="utf-8"))
    if run["kind"] == "mask_search":
        found = engagement.mask_search(summary)
    else:
        found = engagement.fine_tuning(dev_by_epoch(path.parent / "train_curve.csv"), len(summary["labels"]))
    return {"task": run["task"], "row": run["row"], "seed": int(run["seed"]), "kind": found.kind,
            "word": found.word, "reason": found.reason, **found.measures, "source": str(path)}


def by_row(table: pd.DataFrame) -> pd.DataFrame:
    """One line per (task, row), in the runs' order: the word over its seeds and each seed's reason."""
    lines = []
    for (task, row), group in table.groupby(["task", "row"], sort=False):
        word = engagement.ENGAGED if (group.word == engagement.ENGAGED).all() else engagement.NOT_ENGAGED
        reasons = "; ".join(f"seed {s}: {r}" for s, r in zip(group.seed, group.reason, strict=True))
        lines.append({"task": task, "row": row, "seeds": len(group), "engagement": word, "why": reasons})
    return pd.DataFrame(lines)


def markdown(rows: pd.DataFrame) -> str:
    head = ("**Engagement** of every run behind Table 1 (maskbench.report.engagement): a mask is engaged when it "
            f"prunes more than {100 * (1 - engagement.MASK_KEPT_MAX):.1f} % of its weights, a fine-tuning when its "
            f"dev accuracy ends at least {engagement.CHANCE_MARGIN:g} points above chance; a row is engaged when "
            "every seed's run is, and a row that is not reads \"not engaged\" in Table 1.\n\n")
    lines = ["| task | row | seeds | engagement | why |", "|---|---|---|---|---|"]
    lines += [f"| {r.task} | {r.row} | {r.seeds} | {r.engagement} | {r.why} |" for r in rows.itertuples()]
    return head + "\n".join(lines) + "\n"


@step_main(EngagementArgs)
def main(args: EngagementArgs) -> int:
    runs = json_arg(args.runs)
    if not runs:
        raise DataError("--runs: no run to read")
    table = pd.DataFrame([read_run(r) for r in runs])
    with atomic_path(args.out_csv) as tmp:
        table.to_csv(tmp, index=False, float_format="%.6g")
    atomic_write_text(args.out_md, labelled(markdown(by_row(table)), args.label))
    return 0


if __name__ == "__main__":
    run_step(main)
