"""The README's measured sections, generated from a run's tables: never typed by hand.

A generated section sits between two markers, ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``;
``replace_section`` swaps what is between them and nothing else. ``effects`` turns Table 1's long frame into the
change of every row against the baseline with its spread over seeds, so that a claim in prose can point at a
number that says whether it is larger than the noise.
"""

from __future__ import annotations

import math

import pandas as pd

from maskbench.report.table1 import COLUMN_LABELS, ROW_LABELS, TASK_LABELS

# a difference of means counts as an effect when it exceeds this many standard errors
NOISE_SE = 2.0


def markers(name: str) -> tuple[str, str]:
    return f"<!-- generated:{name} -->", f"<!-- /generated:{name} -->"


def replace_section(text: str, name: str, body: str, where: str = "README") -> str:
    """``text`` with the lines between the markers of section ``name`` replaced by ``body``."""
    start, end = markers(name)
    if text.count(start) != 1 or text.count(end) != 1:
        raise ValueError(f"{where}: section {name!r} needs exactly one {start!r} and one {end!r} line "
                         f"(found {text.count(start)} and {text.count(end)})")
    i, j = text.index(start) + len(start), text.index(end)
    if j < i:
        raise ValueError(f"{where}: section {name!r} ends before it starts")
    return text[:i] + "\n" + body.strip("\n") + "\n" + text[j:]


def effects(long: pd.DataFrame, baseline: str = "baseline") -> pd.DataFrame:
    """Per row and column of Table 1: delta = mean - the baseline's mean, its standard error
    se = sqrt(s_row^2 / n_row + s_base^2 / n_base) from the sample stds over seeds, and whether |delta| exceeds
    NOISE_SE standard errors ("up" / "down"), does not ("within noise"), or cannot be told (a single seed)."""
    base = long[long["row"] == baseline].set_index("column")
    records = []
    for rec in long[long["row"] != baseline].itertuples(index=False):
        if rec.column not in base.index:
            continue
        ref = base.loc[rec.column]
        delta = float(rec.mean) - float(ref["mean"])
        se = math.sqrt(float(rec.std) ** 2 / int(rec.n_seeds) + float(ref["std"]) ** 2 / int(ref["n_seeds"]))
        if math.isnan(se):
            verdict = "one seed"
        elif abs(delta) > NOISE_SE * se:
            verdict = "up" if delta > 0 else "down"
        else:
            verdict = "within noise"
        records.append({"row": rec.row, "column": rec.column, "task": rec.task, "delta": delta, "se": se,
                        "verdict": verdict})
    return pd.DataFrame(records, columns=["row", "column", "task", "delta", "se", "verdict"])


def format_effect(delta: float, se: float, verdict: str) -> str:
    """``"+1.03 ± 0.62"`` (delta ± its standard error); prefixed ``≈`` when within noise."""
    if math.isnan(delta):
        return "–"
    text = f"{delta:+.2f}" + ("" if math.isnan(se) else f" ± {se:.2f}")
    return f"≈ {text}" if verdict == "within noise" else text


def effects_markdown(table: pd.DataFrame, row_labels: dict | None = None) -> str:
    """One line per row, one column per Table 1 column, in Table 1's order."""
    labels = {**ROW_LABELS, **(row_labels or {})}
    columns = list(dict.fromkeys(table["column"]))
    task_of = dict(zip(table["column"], table["task"], strict=False))
    head = ["Row vs baseline"] + [f"{TASK_LABELS.get(task_of[c], task_of[c])} {COLUMN_LABELS.get(c, c)}"
                                  for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * len(columns)]
    cells = table.set_index(["row", "column"])
    for row in dict.fromkeys(table["row"]):
        out = [labels.get(row, row)]
        for column in columns:
            if (row, column) in cells.index:
                rec = cells.loc[(row, column)]
                out.append(format_effect(float(rec["delta"]), float(rec["se"]), str(rec["verdict"])))
            else:
                out.append("–")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)
