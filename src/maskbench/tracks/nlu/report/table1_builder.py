"""Paper A's Table 1: aggregate evaluation JSONs over seeds and render them next to the paper's figures.

A *column* is a key of the columns config (the column names of ``paper_a_table1.csv``: mnli_val, hans,
mnli_neg, qqp_val, paws, paws_neg, fever_val, fever_symm) mapping to ``{"task", "eval_set", "metric"}``
and optionally ``"label"`` (the sub-header shown in rendered tables).
A *row* is a model row id (baseline, mask_no_debias, sd_undertrained, ...).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench.report.captions import data_kind, data_label, resolve_kinds, table_cell

# data: the kind of the column's evaluation set (report.captions.data_kind of its source: real / synthetic; "" when
# the evaluation JSONs do not say), so that a heading can say "synthetic MNLI" where the data is not the paper's
LONG_COLUMNS = ["row", "task", "eval_set", "metric", "mean", "std", "n_seeds", "paper", "column", "data"]

ROW_LABELS = {
    "baseline": "Baseline",
    "mask_no_debias": "Masking w/o Debiasing",
    "sd_undertrained": "Undertrained SD",
    "sd_underparam": "Underparam. SD",
    "md_undertrained": "Undertrained MD",
    "md_underparam": "Underparam. MD",
    "md_hyponly": "HypOnly MD",
}

SELECTED = "_selected"  # the trade-off selection rule's row of a swept row: "<row>_selected"


def row_label(row: str, labels: Mapping[str, str] | None = None) -> str:
    """A row's display label: the configured or paper A's wording; "<label> (selected)" for a selection row."""
    labels = ROW_LABELS if labels is None else labels
    if row in labels:
        return str(labels[row])
    if row.endswith(SELECTED):
        base = row.removesuffix(SELECTED)
        return f"{labels.get(base, ROW_LABELS.get(base, base))} (selected)"
    return row


COLUMN_LABELS = {
    "mnli_val": "Val.",
    "hans": "HANS",
    # HANS per gold-label half and per heuristic (McCoy et al.'s breakdown; paper A reports none of them)
    "hans_ent": "HANS ent.",
    "hans_nonent": "HANS non-ent.",
    "hans_lex": "HANS lex.",
    "hans_sub": "HANS subseq.",
    "hans_const": "HANS const.",
    "mnli_neg": "Neg.",
    "qqp_val": "Val.",
    "paws": "PAWS acc.",      # paper A's script reports plain accuracy on PAWS
    "paws_wf1": "PAWS w-F1",  # weighted F1 (paper C's "average_f1"); paper A has no such column
    "paws_neg": "PAWS (¬)",
    "fever_val": "Val.",
    "fever_symm": "Symm.",
}

TASK_LABELS = {"mnli": "MNLI", "qqp": "QQP", "fever": "FEVER"}

MISSING = "–"


PAPER_A = "A"  # a table that reproduces paper A's Table 1 (config `report.table1.paper: A`)


def load_paper_table1() -> pd.DataFrame:
    """Paper A's Table 1 as published: one line per row id, one float column per Table 1 column."""
    with resources.files("maskbench.tracks.nlu.report").joinpath("paper_a_table1.csv").open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype={"row": str, "method": str, "bias_source": str})


def paper_figures(paper: str | None) -> pd.DataFrame | None:
    """The published table a Table 1 prints its figures from: paper A's for ``PAPER_A``, none for a table of the
    config's own (None), whose rows and columns may carry paper A's names without being paper A's."""
    if paper is None:
        return None
    if paper != PAPER_A:
        raise ValueError(f"--paper has value {paper!r}; a Table 1 reproduces paper {PAPER_A!r} or none")
    return load_paper_table1()


def paper_value(paper: pd.DataFrame | None, row: str, column: str) -> float:
    """The paper's figure for (row, column), NaN where the paper has none or does not know the row, and
    everywhere for a table without a paper (None)."""
    if paper is None or column not in paper.columns:
        return math.nan
    hit = paper.loc[paper["row"] == row, column]
    return float(hit.iloc[0]) if len(hit) else math.nan


def load_evals(paths: Iterable[str | Path]) -> list[dict]:
    """Read evaluation JSONs, remembering each file name under ``_source`` for error messages."""
    evals = []
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: an evaluation JSON must hold an object, got {type(data).__name__}")
        data["_source"] = str(path)
        evals.append(data)
    return evals


def _describe(ev: Mapping) -> str:
    if "_source" in ev:
        return str(ev["_source"])
    return f"eval (row={ev.get('row')}, task={ev.get('task')}, eval_set={ev.get('eval_set')}, seed={ev.get('seed')})"


def _check_columns(columns: Mapping[str, Mapping]) -> None:
    for name, spec in columns.items():
        missing = [k for k in ("task", "eval_set", "metric") if k not in spec]
        if missing:
            raise ValueError(f"columns config {name!r} lacks {', '.join(missing)}")


def _index_evals(evals: Iterable[Mapping]) -> dict[tuple, Mapping]:
    index: dict[tuple, Mapping] = {}
    for ev in evals:
        missing = [k for k in ("row", "task", "eval_set", "seed", "metrics") if k not in ev]
        if missing:
            raise ValueError(f"{_describe(ev)}: evaluation JSON lacks {', '.join(missing)}")
        key = (str(ev["row"]), str(ev["task"]), str(ev["eval_set"]), ev["seed"])
        if key in index:
            raise ValueError(
                f"duplicate evaluation for row={key[0]} task={key[1]} eval_set={key[2]} seed={key[3]}: "
                f"{_describe(index[key])} and {_describe(ev)}"
            )
        index[key] = ev
    return index


def build_table1(evals: list[dict], columns: dict[str, dict], rows: list[str], paper: str | None = PAPER_A
                 ) -> pd.DataFrame:
    """Long Table 1: one line per (row, column) with at least one evaluation JSON.

    ``mean``/``std`` are over seeds (sample std, ddof=1; NaN with a single seed), ``paper`` is
    paper A's figure for that row and column (NaN where it has none, and everywhere with ``paper=None``: a table
    of the config's own), ``data`` the kind of the evaluation set's
    source (``column_kinds``). Lines follow the order of ``rows``, then of ``columns``. Rows without any evaluation
    are left out, never filled in.
    """
    _check_columns(columns)
    index = _index_evals(evals)
    published = paper_figures(paper)
    kinds = column_kinds(evals, columns)
    records = []
    for row in rows:
        for name, spec in columns.items():
            task, eval_set, metric = str(spec["task"]), str(spec["eval_set"]), str(spec["metric"])
            matches = [ev for (r, t, e, _), ev in index.items() if (r, t, e) == (row, task, eval_set)]
            if not matches:
                continue
            values = []
            for ev in matches:
                if metric not in ev["metrics"]:
                    raise ValueError(
                        f"{_describe(ev)}: eval set {eval_set!r} has no metric {metric!r} "
                        f"(needed by column {name!r}); it has {', '.join(sorted(ev['metrics']))}"
                    )
                values.append(float(ev["metrics"][metric]))
            records.append(
                {
                    "row": row,
                    "task": task,
                    "eval_set": eval_set,
                    "metric": metric,
                    "mean": float(np.mean(values)),
                    "std": float(np.std(values, ddof=1)) if len(values) > 1 else math.nan,
                    "n_seeds": len(values),
                    "paper": paper_value(published, row, name),
                    "column": name,
                    "data": kinds[name],
                }
            )
    long = pd.DataFrame.from_records(records, columns=LONG_COLUMNS)
    return long.astype({"mean": float, "std": float, "n_seeds": int, "paper": float})


def eval_set_kinds(evals: Iterable[Mapping]) -> dict[tuple[str, str], str]:
    """{(task, evaluation set): the kind of its data} from the evaluation JSONs' ``dataset_meta.source``
    (``report.captions.data_kind``: real / synthetic; a derived set takes its task's kind; "" when no JSON says)."""
    sources = {(str(ev["task"]), str(ev["eval_set"])): str((ev.get("dataset_meta") or {}).get("source", ""))
               for ev in evals}
    return resolve_kinds({key: (key[0], data_kind(source) if source else "") for key, source in sources.items()})


def task_kinds(evals: Iterable[Mapping]) -> dict[str, set[str]]:
    """{task: the kinds of its evaluation sets' data} (``eval_set_kinds``)."""
    out: dict[str, set[str]] = {}
    for (task, _), kind in eval_set_kinds(evals).items():
        out.setdefault(task, set()).add(kind)
    return out


def column_kinds(evals: Iterable[Mapping], columns: Mapping[str, Mapping]) -> dict[str, str]:
    """{column: the kind of its evaluation set's data} (``eval_set_kinds``; "" for a set no JSON has)."""
    kinds = eval_set_kinds(evals)
    return {name: kinds.get((str(spec["task"]), str(spec["eval_set"])), "") for name, spec in columns.items()}


# ---------------------------------------------------------------------------------------------------
# rendering


def column_label(name: str, spec: Mapping) -> str:
    """Sub-header of a column: the config's "label", else paper A's wording, else the column key."""
    return str(spec.get("label", COLUMN_LABELS.get(name, name)))


def task_label(task: str, kind: str | Iterable[str] = "") -> str:
    """A task's display name ("MNLI"), as its data is: "synthetic MNLI" for data of kind synthetic
    (``report.captions.data_label``)."""
    return data_label(TASK_LABELS.get(task, task.upper()), kind)


def kinds_by_column(long: pd.DataFrame) -> dict[str, str]:
    """{column: data kind} of a long Table 1 (empty for a table written before the ``data`` column)."""
    if "data" not in long.columns or "column" not in long.columns:
        return {}
    return {str(c): ("" if pd.isna(k) else str(k)) for c, k in zip(long["column"], long["data"], strict=True)}


def column_groups(columns: Mapping[str, Mapping]) -> list[tuple[str, list[str]]]:
    """Columns grouped by task, tasks in order of first appearance; e.g. [("mnli", ["mnli_val", ...]), ...]."""
    groups: dict[str, list[str]] = {}
    for name, spec in columns.items():
        groups.setdefault(str(spec["task"]), []).append(name)
    return list(groups.items())


def with_column_keys(long: pd.DataFrame, columns: Mapping[str, Mapping]) -> pd.DataFrame:
    """``long`` with its ``column`` field (the columns-config key of each line)."""
    # a table read back from CSV by an older writer may lack "column"; recover it from the config
    if "column" in long.columns:
        return long
    by_triple = {(str(s["task"]), str(s["eval_set"]), str(s["metric"])): n for n, s in columns.items()}
    keys = [
        by_triple.get((str(t), str(e), str(m)))
        for t, e, m in zip(long["task"], long["eval_set"], long["metric"], strict=True)
    ]
    return long.assign(column=keys)


def _cells(
    long: pd.DataFrame, columns: Mapping[str, Mapping], paper: str | None = PAPER_A
) -> tuple[list[str], dict[tuple[str, str], tuple]]:
    """Rows in table order and {(row, column): (mean, std, paper)}, paper figures filled for empty cells (none
    with ``paper=None``)."""
    long = with_column_keys(long, columns)
    rows = list(dict.fromkeys(str(r) for r in long["row"]))
    paper = paper_figures(paper)
    cells = {
        (row, name): (math.nan, math.nan, paper_value(paper, row, name)) for row in rows for name in columns
    }
    for rec in long.itertuples(index=False):
        if rec.column in columns:
            cells[(str(rec.row), rec.column)] = (float(rec.mean), float(rec.std), float(rec.paper))
    return rows, cells


def _num(value: float, missing: str) -> str:
    return missing if math.isnan(value) else f"{value:.2f}"


def format_cell(mean: float, std: float, paper: float, pm: str = "±", missing: str = MISSING,
                with_paper: bool = True) -> str:
    """``"71.23 ± 0.45 (84.38)"``: ours ± sample std over seeds (paper A's figure).

    A missing part (no value of ours, one seed so no std, no paper figure) becomes ``missing``,
    e.g. ``"– (84.38)"`` or ``"71.23 ± – (–)"``; a cell with neither our value nor the paper's is just ``missing``.
    ``with_paper=False`` (a table of the config's own): ``"71.23 ± 0.45"``, no parenthesis at all.
    """
    if math.isnan(mean) and (math.isnan(paper) or not with_paper):
        return missing
    ours = missing if math.isnan(mean) else f"{_num(mean, missing)} {pm} {_num(std, missing)}"
    return f"{ours} ({_num(paper, missing)})" if with_paper else ours


def _ordered(columns: Mapping[str, Mapping]) -> list[str]:
    return [name for _, names in column_groups(columns) for name in names]


def to_markdown(
    long: pd.DataFrame, columns: dict[str, dict], row_labels: Mapping[str, str] | None = None,
    paper: str | None = PAPER_A,
) -> str:
    """A Markdown version of paper A's Table 1; headers read "<TASK> <column>", e.g. "MNLI HANS"."""
    row_labels = ROW_LABELS if row_labels is None else row_labels
    rows, cells = _cells(long, columns, paper)
    names = _ordered(columns)

    kinds = kinds_by_column(long)
    # a table of no paper's setting heads a column with its config label as written ("Dev", not "NLI Dev")
    header = ["Method"] + [column_label(n, columns[n]) if paper is None and "label" in columns[n] else
                           f"{task_label(columns[n]['task'], kinds.get(n, ''))} {column_label(n, columns[n])}"
                           for n in names]
    lines = [
        "| " + " | ".join(table_cell(h) for h in header) + " |",
        "|" + "|".join([":---"] + ["---:"] * len(names)) + "|",
    ]
    for row in rows:
        values = [format_cell(*cells[(row, n)], with_paper=paper is not None) for n in names]
        lines.append("| " + " | ".join([table_cell(row_label(row, row_labels))] + values) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "¬": r"$\neg$",
    "–": "--",
    "±": r"$\pm$",
}


def latex_escape(text: str) -> str:
    """Make plain text safe inside a LaTeX table cell (special characters, ¬, en dash, ±)."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def to_latex(
    long: pd.DataFrame, columns: dict[str, dict], row_labels: Mapping[str, str] | None = None,
    paper: str | None = PAPER_A,
) -> str:
    """A booktabs ``tabular`` laid out like paper A's Table 1, with one \\multicolumn header per task."""
    row_labels = ROW_LABELS if row_labels is None else row_labels
    rows, cells = _cells(long, columns, paper)
    groups = column_groups(columns)
    names = _ordered(columns)
    spec = "l" + "".join("c" * len(group) for _, group in groups)

    kinds = kinds_by_column(long)
    group_heads, rules, start = [], [], 2
    for task, group in groups:
        label = task_label(task, [kinds.get(n, "") for n in group])
        group_heads.append(rf"\multicolumn{{{len(group)}}}{{c}}{{{latex_escape(label)}}}")
        rules.append(rf"\cmidrule(lr){{{start}-{start + len(group) - 1}}}")
        start += len(group)
    sub_heads = [latex_escape(column_label(n, columns[n])) for n in names]

    lines = [
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join([""] + group_heads) + r" \\",
        " ".join(rules),
        " & ".join(["Method"] + sub_heads) + r" \\",
        r"\midrule",
    ]
    for row in rows:
        values = [format_cell(*cells[(row, n)], pm=r"$\pm$", missing="--", with_paper=paper is not None)
                  for n in names]
        lines.append(" & ".join([latex_escape(row_label(row, row_labels))] + values) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"
