"""Entry point: the ID-OOD trade-off curves of every swept method, their summary, and the selection rule.

    python -m maskbench.steps nlu.tradeoff_report --evals E1.json ... --points POINTS --lines LINES --id-sets IDS \
        --columns COLUMNS --delta 1 --drops 1 2 5 --out-csv tradeoff.csv --out-summary S.csv --out-summary-md S.md \
        --out-selection selection.csv --figures-dir results/figures/tradeoff --figures mnli:hans ...

POINTS: JSON list of {point, task, method, knob, value} (a sweep point's evaluation JSONs carry ``row`` = point;
a row's own Table 1 run is listed with point = the row). LINES: [{task, method, knob}], the curves. IDS: {task: its
in-distribution dev set}. COLUMNS: report.table1.columns (paper A's reported points are read through them).
Writes the long form, the summary (CSV and markdown), the selection (one line per swept row and task) and one
figure per (task, OOD set) named by ``--figures``, as ``<figures-dir>/<task>_<set>.png``. Reads evaluation JSONs
only.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench.report import json_arg
from maskbench.report.figure_files import save_figure
from maskbench.runtime import atomic_path
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.report.table1_builder import (
    ROW_LABELS,
    load_evals,
    load_paper_table1,
    paper_value,
    task_kinds,
    task_label,
)
from maskbench.tracks.nlu.report.tradeoff import (
    baseline_scores,
    build_tradeoff_figure,
    long_form,
    mean_std,
    pick_stability,
    scores,
    select_point,
    summarise,
)


def _figure(text: str) -> str:
    if text.count(":") != 1:
        raise ValueError(f"{text!r} is not task:ood_set")
    return text


@dataclass
class Args:
    evals: list[Path] = field(metadata={"help": "evaluation JSON files"})
    points: list = field(metadata={"help": "JSON list of {point, task, method, knob, value}", "parse": json_arg})
    lines: list = field(metadata={"help": "JSON list of {task, method, knob}", "parse": json_arg})
    id_sets: dict = field(metadata={"help": "JSON {task: in-distribution dev set}", "parse": json_arg})
    out_csv: Path = field(metadata={"help": "every point's scores (CSV)"})
    out_summary: Path = field(metadata={"help": "the selection's summary (CSV)"})
    out_summary_md: Path = field(metadata={"help": "the summary in markdown"})
    out_selection: Path = field(metadata={"help": "the selected point per task and swept row (CSV)"})
    columns: dict = field(default_factory=dict, metadata={
        "help": "report.table1.columns (paper A's points)", "parse": json_arg})
    delta: float = field(default=1.0, metadata={"help": "selection: ID drop allowed (points)"})
    drops: list[float] = field(default_factory=lambda: [1.0, 2.0, 5.0], metadata={
        "help": "the ID drops (points) the summary reads the OOD gain at"})
    figures_dir: Path = field(default=Path("."), metadata={"help": "the folder of the figures"})
    figures: list[str] = field(default_factory=list, metadata={
        "help": "task:ood_set of every figure to draw", "parse": _figure})


def selection_table(long: pd.DataFrame, points: list[dict], lines: list[dict], id_sets: dict, delta: float
                    ) -> pd.DataFrame:
    """One line per (task, swept row): the value of the row's first knob that the rule selects."""
    records = []
    first_knob: dict[tuple[str, str], str] = {}
    for line in lines:
        first_knob.setdefault((str(line["task"]), str(line["method"])), str(line["knob"]))
    for (task, method), knob in first_knob.items():
        ids = scores(long, task, method, knob, id_sets[task])
        means = {v: mean_std(list(s.values()))[0] for v, s in ids.items()}
        base_mean = mean_std(list(baseline_scores(long, task, id_sets[task]).values()))[0]
        chosen = select_point(means, base_mean, delta)
        stability = pick_stability(ids, baseline_scores(long, task, id_sets[task]), delta)
        point = ""
        if chosen is not None:
            point = next(str(p["point"]) for p in points if str(p["task"]) == task and p["method"] == method
                         and p["knob"] == knob and float(p["value"]) == chosen)
        records.append({"task": task, "method": method, "knob": knob,
                        "value": chosen if chosen is not None else math.nan, "point": point,
                        "id_mean": means.get(chosen, math.nan) if chosen is not None else math.nan,
                        "baseline_id": base_mean, "delta": delta, "within_delta": chosen is not None,
                        "candidates": " ".join(format(v, "g") for v in sorted(means)),
                        "pick_stability": stability})
    return pd.DataFrame.from_records(records)


def paper_points(columns: dict, task: str, id_set: str, ood_set: str) -> dict[str, tuple[float, float]]:
    """Paper A's reported (ID, OOD) accuracy of each of its rows, through the Table 1 columns that name them."""
    def column(eval_set):
        return next((name for name, spec in columns.items() if spec["task"] == task and spec["eval_set"] == eval_set
                     and spec["metric"] == "accuracy"), None)

    id_col, ood_col = column(id_set), column(ood_set)
    if id_col is None or ood_col is None:
        return {}
    paper = load_paper_table1()
    return {str(row): (paper_value(paper, row, id_col), paper_value(paper, row, ood_col)) for row in paper["row"]}


def bold_word(verdict: str) -> str:
    """The verdict's word in bold, its numbers after it: "**debiases** (at 0.1, ID drop 1.00: OOD ...)"."""
    word, _, numbers = verdict.partition(" (")
    return f"**{word}**" + (f" ({numbers}" if numbers else "")


def summary_markdown(summary: pd.DataFrame, drops: list[float]) -> str:
    def num(mean, std=math.nan):
        if mean is None or (isinstance(mean, float) and math.isnan(mean)):
            return "–"
        return f"{mean:.2f}" + ("" if std is None or math.isnan(std) else f" ± {std:.2f}")

    heads = (["task", "method", "knob", "OOD set", "values", "baseline OOD"]
             + [f"best OOD, ID drop ≤ {format(d, 'g')}" for d in drops]
             + ["largest OOD gain (at value; its ID drop)", "label changes (at value)", "verdict"])
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for rec in summary.to_dict("records"):
        changes = ", ".join(f"{k.removeprefix('change_')} {v:+.1f}" for k, v in rec.items()
                            if k.startswith("change_") and not (isinstance(v, float) and math.isnan(v)))
        changes = f"{changes} ({format(rec['changes_at'], 'g')})" if changes else ""
        cells = [rec["task"], ROW_LABELS.get(rec["method"], rec["method"]), rec["knob"], rec["eval_set"],
                 rec["values"], num(rec["baseline_ood"], rec["baseline_ood_std"])]
        cells += [num(rec[f"best_ood_id_drop_{format(d, 'g')}"], rec[f"best_ood_id_drop_{format(d, 'g')}_std"])
                  for d in drops]
        cells += [f"{num(rec['ood_gain'], rec['ood_gain_spread'])} ({format(rec['best_value'], 'g')}; "
                  f"{num(rec['id_drop'])})", changes or "–", bold_word(str(rec["verdict"]))]
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"


@step_main(Args)
def main(args: Args) -> int:
    unknown = sorted({str(line["task"]) for line in args.lines} - set(args.id_sets))
    if unknown:
        raise ValueError(f"--lines: task {unknown[0]!r} has no entry in --id-sets")
    evals = load_evals(args.evals)
    long = long_form(evals, args.points)
    kinds = task_kinds(evals)
    if long.empty:
        raise ValueError(f"none of the {len(args.evals)} evaluation JSONs is the baseline or a listed point")
    summary = summarise(long, args.lines, args.id_sets, args.drops)
    selection = selection_table(long, args.points, args.lines, args.id_sets, args.delta)
    with atomic_path(args.out_csv) as tmp:
        long.to_csv(tmp, index=False)
    with atomic_path(args.out_summary) as tmp:
        summary.to_csv(tmp, index=False)
    with atomic_path(args.out_summary_md) as tmp:
        tmp.write_text(summary_markdown(summary, args.drops), encoding="utf-8")
    with atomic_path(args.out_selection) as tmp:
        selection.to_csv(tmp, index=False)
    for spec in args.figures:
        task, ood_set = spec.split(":")
        path = args.figures_dir / f"{task}_{ood_set}.png"
        lines = [line for line in args.lines if str(line["task"]) == task]
        fig = build_tradeoff_figure(long, task, args.id_sets[task], ood_set, lines,
                                    paper_points(args.columns, task, args.id_sets[task], ood_set), ROW_LABELS,
                                    task_label(task, kinds.get(task, set())))
        save_figure(fig, path, dpi=110)
    print(json.dumps({"points": len(args.points), "lines": len(args.lines), "figures": len(args.figures)}))
    return 0


if __name__ == "__main__":
    run_step(main)
