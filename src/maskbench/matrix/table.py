"""The matrix table: methods x benchmarks, one value per cell picked without any OOD label.

From the cell records (``cells.py``) of every track:

1. per (benchmark, method, knob value): the mean, sample standard deviation and seed count of every score, the
   mean density and training time (``summarise``);
2. per (benchmark, method): the *selection rule*'s pick among the knob's values — the strongest (largest) value
   whose mean ID dev score is at least the benchmark's baseline mean minus ``delta`` points; no value qualifies:
   the weakest value, marked so; no ID dev score on the benchmark: the strongest value, marked so; a method
   without a knob has its one run (``pick``);
3. each picked cell against the benchmark's baseline, with the project's evidence words
   (``maskbench.report.evidence``): the OOD score's change ("debiases" / "hurts" only beyond 2 standard errors
   over at least 3 seeds) and the bias readout's move towards its ideal ("less bias" / "more bias", same rule).

``matrix_table`` returns the long table (``matrix.csv``), ``markdown`` renders the grid the docs show with
``reading``: per benchmark, which method's pick has the largest gain that debiases, which are tied with it, and
which others move beyond noise (trading ID for OOD, hurting).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from maskbench.matrix.cells import BASELINE
from maskbench.report.engagement import MASK_KEPT_MAX, NOT_ENGAGED
from maskbench.report.evidence import (
    ID_COST_MAX,
    MIN_SEEDS,
    MOVES,
    NO_DATA,
    NOISE_SE,
    TRADES,
    evidence_word,
    se_of_difference,
    worded,
)

SCORES = ("id", "ood", "bias", "id_dev")
PICKED = "id_dev within delta: strongest"
NONE_WITHIN = "none within delta: weakest"
NO_ID_DEV = "no ID dev score: strongest"
NO_KNOB = "no knob"
# what a grid cell adds to its knob value when the rule could not pick as it asks
SELECTION_NOTE = {NONE_WITHIN: " (the weakest: no value within delta)", NO_ID_DEV: " (the strongest: no ID dev score)"}

# the pairs of a method and a benchmark that no config runs, and why (the matrix's missing cells)
NOT_FITTING: Sequence[tuple[str, str, str]] = (
    ("block_movement (B)", "vision", "paper B's objective pulls the hidden states of a word's gendered and "
     "neutral contexts apart; an image has no words or attribute lists to define it"),
    ("block_movement (B)", "mnli_hans", "the objective is defined by gender word lists; NLI's shortcut "
     "(lexical overlap) has no such list, and with one it becomes paper A's loss on a bias model"),
    ("mask_training / imp (C)", "gender", "paper C's losses are classification losses (CE, PoE, focal) against a "
     "task's bias model; the gender benchmark has no task label to debias"),
    ("movement (A)", "gender", "paper A's debiasing losses need a task and a bias model's class probabilities; "
     "the gender benchmark measures representations (SEAT, CrowS-Pairs), not a task"),
)


def mean_sd(values: pd.Series) -> tuple[float, float, int]:
    """Mean, sample standard deviation (NaN for one value) and count of the non-NaN values."""
    v = values.dropna().to_numpy(float)
    if v.size == 0:
        return math.nan, math.nan, 0
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan, int(v.size)


def summarise(cells: pd.DataFrame) -> pd.DataFrame:
    """One row per (benchmark, method, knob, value): each score's mean, sd and n; density and seconds means."""
    rows = []
    keys = ["benchmark", "method", "knob", "value"]
    for key, group in cells.groupby(keys, dropna=False, sort=True):
        first = group.iloc[0]
        row = dict(zip(keys, key, strict=True))
        row.update({"method_paper": first.method_paper, "native": bool(group.native.any()),
                    "seeds": " ".join(str(s) for s in sorted(group.seed)), "n_seeds": int(group.seed.nunique())})
        for score in SCORES:
            row[f"{score}_mean"], row[f"{score}_sd"], row[f"{score}_n"] = mean_sd(group[score])
        row["density"] = float(group.density.mean())
        row["train_seconds"] = float(group.train_seconds.mean())
        for name in ("id_name", "ood_name", "bias_name", "bias_ideal", "data", "model"):
            row[name] = first[name]
        rows.append(row)
    return pd.DataFrame(rows)


def pick(values: pd.DataFrame, base_id_dev: float, delta: float) -> tuple[pd.Series, str]:
    """The selection rule on one (benchmark, method)'s summary rows; returns the picked row and how it was picked."""
    if len(values) == 1 and not values.iloc[0].knob:
        return values.iloc[0], NO_KNOB
    ordered = values.sort_values("value")
    if math.isnan(base_id_dev) or ordered.id_dev_mean.isna().all():
        return ordered.iloc[-1], NO_ID_DEV
    feasible = ordered[ordered.id_dev_mean >= base_id_dev - delta]
    if feasible.empty:
        return ordered.iloc[0], NONE_WITHIN
    return feasible.iloc[-1], PICKED


def _against(cells: pd.DataFrame, picked: pd.Series, baseline: pd.DataFrame, score: str,
             toward: float | None = None) -> tuple[float, float, int]:
    """(effect, SE of the difference, smaller seed count) of the picked value's ``score`` against the baseline's;
    with ``toward``, the effect is how much closer to ``toward`` the method's mean is than the baseline's."""
    mine = cells[(cells.method == picked.method) & (cells.knob == picked.knob)
                 & ((cells.value == picked.value) | (cells.value.isna() & math.isnan(picked.value)))][score]
    m, s, n = mean_sd(mine)
    b, sb, nb = mean_sd(baseline[score])
    if n == 0 or nb == 0:
        return math.nan, math.nan, 0
    effect = m - b if toward is None else abs(b - toward) - abs(m - toward)
    se = se_of_difference(s, n, sb, nb) if n > 1 and nb > 1 else math.nan
    return effect, se, min(n, nb)


def _one_definition(record: dict, mine: pd.DataFrame, picked: pd.Series, baseline: pd.DataFrame) -> None:
    """The project's one definition of the OOD word (maskbench.matrix.verdict): a mask that keeps >= 99.9 % of its
    weights on a seed is "not engaged"; a gain beyond noise at an ID cost over ID_COST_MAX points "trades ID for
    OOD", not "debiases". Records the ID cost beside it."""
    id_effect, _, _ = _against(mine, picked, baseline, "id")
    record["id_cost"] = -id_effect
    runs = mine[(mine.knob == picked.knob)
                & ((mine.value == picked.value) | (mine.value.isna() & math.isnan(picked.value)))]
    if len(runs) and (runs.density >= MASK_KEPT_MAX).any():
        record["ood_word"] = NOT_ENGAGED
        record["ood_verdict"] = f"{NOT_ENGAGED} (keeps {100 * runs.density.max():.2f} % on a seed)"
    elif record["ood_word"] == "debiases" and -id_effect > ID_COST_MAX:
        record["ood_word"] = TRADES
        record["ood_verdict"] = record["ood_verdict"].replace("debiases", TRADES, 1) + f" at an ID cost of {-id_effect:.1f}"


def matrix_table(cells: pd.DataFrame, delta: float) -> pd.DataFrame:
    """The long matrix table: one row per (benchmark, method), the baseline first, with the picked value's scores
    (mean, sd, n), how it was picked, the knob's values, and its OOD and bias effects against the baseline."""
    summary = summarise(cells)
    out = []
    for benchmark, rows in summary.groupby("benchmark", sort=True):
        bench_cells = cells[cells.benchmark == benchmark]
        base_rows = rows[rows.method == BASELINE]
        base_cells = bench_cells[bench_cells.method == BASELINE]
        base_id_dev = float(base_rows.id_dev_mean.iloc[0]) if len(base_rows) else math.nan
        for method, values in rows.groupby("method", sort=False):
            chosen, how = pick(values, base_id_dev, delta)
            record = chosen.to_dict()
            record["selection"] = how
            record["knob_values"] = " ".join(f"{v:g}" for v in sorted(values.value.dropna()))
            mine = bench_cells[bench_cells.method == method]
            for score, toward, up, down in (("ood", None, "debiases", "hurts"),
                                            ("bias", chosen.bias_ideal, "less bias", "more bias")):
                if method == BASELINE or base_cells.empty:
                    effect, se, n = math.nan, math.nan, 0
                else:
                    effect, se, n = _against(mine, chosen, base_cells, score, toward)
                record[f"{score}_effect"], record[f"{score}_effect_se"] = effect, se
                record[f"{score}_verdict"] = (NO_DATA if method == BASELINE or math.isnan(effect)
                                              else worded(effect, se, n, up, down))
                record[f"{score}_word"] = (NO_DATA if math.isnan(effect) else evidence_word(effect, se, n, up, down))
                if method != BASELINE and score == "ood":
                    _one_definition(record, mine, chosen, base_cells)
            out.append(record)
    table = pd.DataFrame(out)
    order = {m: (m != BASELINE, m) for m in table.method}
    table = table.sort_values(["benchmark", "method"], key=lambda c: c.map(order) if c.name == "method" else c,
                              kind="mergesort").reset_index(drop=True)
    first = ["benchmark", "method", "method_paper", "native", "knob", "value", "selection", "knob_values", "n_seeds",
             "seeds"]
    return table[first + [c for c in table.columns if c not in first]]


def _num(mean: float, sd: float, digits: int = 1) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:.{digits}f}" + ("" if math.isnan(sd) else f" ± {sd:.{digits}f}")


def cell_text(row: pd.Series) -> str:
    """One grid cell: OOD, ID and bias (mean ± sd over seeds), kept share, seconds, the picked knob value (and why,
    when no value was within delta or no ID dev score exists), the words against the baseline; a ★ where the
    method's own paper evaluates it on this benchmark."""
    parts = []
    if not math.isnan(row.ood_mean):
        parts.append(f"OOD {_num(row.ood_mean, row.ood_sd)}")
    if not math.isnan(row.id_mean):
        parts.append(f"ID {_num(row.id_mean, row.id_sd)}")
    if not math.isnan(row.bias_mean):
        parts.append(f"bias {_num(row.bias_mean, row.bias_sd, 2)}")
    parts.append(f"{100 * row.density:.0f} % kept")
    if row.method != BASELINE:
        parts.append(f"{row.train_seconds:.0f} s")
    if row.knob:
        parts.append(f"{row.knob} {row.value:g}" + SELECTION_NOTE.get(row.selection, ""))
    text = "; ".join(parts) + f" ({row.n_seeds} seed{'s' if row.n_seeds != 1 else ''})"
    words = [f"{name} {word}" for name, word in (("OOD", row.ood_verdict), ("bias", row.bias_verdict))
             if word != NO_DATA]
    if words:
        text += " — " + "; ".join(words)
    return ("★ " if row.native else "") + text


def markdown(table: pd.DataFrame) -> str:
    """The grid: a row per method, a column per benchmark; then what each benchmark's scores are, and the pairs
    that do not fit."""
    benchmarks = sorted(table.benchmark.unique())
    methods = [m for m in dict.fromkeys(table.method)]
    methods = [BASELINE] * (BASELINE in methods) + sorted(m for m in methods if m != BASELINE)
    paper = dict(zip(table.method, table.method_paper, strict=False))
    lines = ["| method | " + " | ".join(benchmarks) + " |", "|---|" + "---|" * len(benchmarks)]
    for method in methods:
        cells = []
        for benchmark in benchmarks:
            row = table[(table.method == method) & (table.benchmark == benchmark)]
            cells.append(cell_text(row.iloc[0]) if len(row) else "not run")
        label = method if paper[method] == "-" else f"{method} ({paper[method]})"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Scores per benchmark (★: the method's own paper evaluates it there):", ""]
    for benchmark in benchmarks:
        row = table[table.benchmark == benchmark].iloc[0]
        names = [f"{k} = {v}" for k, v in (("ID", row.id_name), ("OOD", row.ood_name), ("bias", row.bias_name)) if v]
        lines.append(f"- **{benchmark}** ({row.data}; {row.model}): " + "; ".join(names)
                     + _unbiased(table[table.benchmark == benchmark]) + ".")
    lines += ["", "Which method wins where (from the cells above, by the effect the benchmark is scored on: the OOD "
              f"score where it has one, else the bias readout; ties: within {NOISE_SE:g} standard errors of the "
              "difference):", ""]
    lines += [f"- **{benchmark}**: {line}" for benchmark, line in reading(table)]
    lines += ["", "Pairs that do not fit:", ""]
    lines += [f"- {method} on {benchmark}: {why}." for method, benchmark, why in NOT_FITTING]
    return "\n".join(lines) + "\n"


def reading(table: pd.DataFrame) -> list[tuple[str, str]]:
    """Per benchmark, in words: the method whose picked cell has the largest gain that debiases (its word: an OOD
    gain beyond noise over ≥ 3 seeds at an ID cost within ID_COST_MAX; on a benchmark without an OOD score, the bias
    readout's move towards its ideal, "less bias"), with its ID score against the baseline's and how it was picked;
    the methods tied with it (their difference within NOISE_SE standard errors) and the others with its word; or
    that none has it; then every method whose cell says otherwise beyond noise (trades ID for OOD, hurts / more
    bias, moves with fewer seeds)."""
    out = []
    for benchmark, rows in table.groupby("benchmark", sort=True):
        base = rows[rows.method == BASELINE]
        rows = rows[rows.method != BASELINE]
        score = "ood" if rows.ood_effect.notna().any() else "bias"
        good, bad = ("debiases", "hurts") if score == "ood" else ("less bias", "more bias")
        label = "OOD" if score == "ood" else "bias"
        words = rows[f"{score}_word"]
        beyond = rows[words == good].sort_values(f"{score}_effect", ascending=False)
        if beyond.empty:
            line = (f"no method debiases (an OOD gain beyond noise over {MIN_SEEDS} or more seeds at an ID cost within "
                    f"{ID_COST_MAX:g} points)" if score == "ood" else
                    f"no method lowers the bias readout beyond noise over {MIN_SEEDS} or more seeds")
        else:
            best = beyond.iloc[0]
            effect, se = best[f"{score}_effect"], best[f"{score}_effect_se"]
            what = "debiases" if score == "ood" else "lowers the bias"
            line = f"largest gain that {what}: {_name(best)}, {label} {effect:+.2f} ± {se:.2f} SE ({good})"
            if len(base) and not (math.isnan(best.id_mean) or math.isnan(base.id_mean.iloc[0])):
                line += f", ID {best.id_mean - base.id_mean.iloc[0]:+.1f} points against the baseline"
            if best.selection in SELECTION_NOTE:
                line += f", {best.knob} {best.value:g}{SELECTION_NOTE[best.selection]}"
            others = beyond.iloc[1:]
            within = (others[f"{score}_effect"] - effect).abs() <= NOISE_SE * (others[f"{score}_effect_se"] ** 2
                                                                             + se ** 2) ** 0.5
            tied, rest = others[within], others[~within]
            if len(tied):
                line += f"; tied with it: {_names(tied)}"
            if len(rest):
                line += f"; {good} too, short of it by more than the spread: {_names(rest)}"
            if not len(tied) and not len(rest):
                line += f"; the only method whose word is {good}"
        fewer = f"{MOVES} with fewer than {MIN_SEEDS} seeds (no claim)"
        for word, said in ((TRADES, TRADES), (bad, bad), (MOVES, fewer)):
            named = rows[words == word].sort_values(f"{score}_effect", ascending=False)
            if len(named):
                line += f"; {said}: {_names(named)}"
        out.append((benchmark, line + "."))
    return out


def _name(row) -> str:
    return row.method if row.method_paper == "-" else f"{row.method} ({row.method_paper})"


def _names(rows: pd.DataFrame) -> str:
    return ", ".join(_name(r) for r in rows.itertuples())


def _unbiased(rows: pd.DataFrame) -> str:
    """What an unbiased model's bias readout would be on a benchmark: one value, or that it differs per row."""
    ideals = sorted(set(rows.bias_ideal[rows.bias_mean.notna()].dropna()))
    if not ideals:
        return ""
    if len(ideals) == 1:
        return f" (unbiased: {ideals[0]:g})"
    return " (unbiased: " + ", ".join(f"{r.method} {r.bias_ideal:.3g}" for r in rows.itertuples()
                                      if not math.isnan(r.bias_mean)) + ")"
