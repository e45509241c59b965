"""The nlu track's README sections, generated from a run's tables: Table 1's effects against the baseline (with
their spread over seeds, so that a claim in prose can point at a number that says whether it is larger than the
noise), paper C's sparsity curves, the trade-off curves and their selection, the mask benchmark."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from maskbench.report.captions import data_label
from maskbench.report.evidence import WITHIN, evidence_word, se_of_difference
from maskbench.report.readme import cell
from maskbench.tracks.nlu.report.table1_builder import COLUMN_LABELS, ROW_LABELS, TASK_LABELS, row_label


def effects(long: pd.DataFrame, baseline: str = "baseline") -> pd.DataFrame:
    """Per row and column of Table 1: delta = mean - the baseline's mean, its standard error
    se = sqrt(s_row^2 / n_row + s_base^2 / n_base) from the sample stds over seeds, and its word
    (``evidence.evidence_word``): "up" / "down" beyond 2 standard errors over 3 seeds or more, "moves" beyond them
    (or unbounded, one seed) with fewer, "within noise" otherwise."""
    base = long[long["row"] == baseline].set_index("column")
    records = []
    for rec in long[long["row"] != baseline].itertuples(index=False):
        if rec.column not in base.index:
            continue
        ref = base.loc[rec.column]
        delta = float(rec.mean) - float(ref["mean"])
        se = se_of_difference(float(rec.std), int(rec.n_seeds), float(ref["std"]), int(ref["n_seeds"]))
        verdict = evidence_word(delta, se, min(int(rec.n_seeds), int(ref["n_seeds"])), up="up", down="down")
        records.append({"row": rec.row, "column": rec.column, "task": rec.task, "eval_set": rec.eval_set,
                        "delta": delta, "se": se, "verdict": verdict})
    return pd.DataFrame(records, columns=["row", "column", "task", "eval_set", "delta", "se", "verdict"])


def format_effect(delta: float, se: float, verdict: str) -> str:
    """``"+1.03 ± 0.62"`` (delta ± its standard error); prefixed ``≈`` when within noise."""
    if math.isnan(delta):
        return "–"
    text = f"{delta:+.2f}" + ("" if math.isnan(se) else f" ± {se:.2f}")
    return f"≈ {text}" if verdict == WITHIN else text


def effects_markdown(table: pd.DataFrame, row_labels: dict | None = None,
                     set_kinds: Mapping[str, str] | None = None) -> str:
    """One line per row, one column per Table 1 column, in Table 1's order; a column's heading names its task as
    its data is (``set_kinds``: {evaluation set: kind}, e.g. "synthetic MNLI HANS")."""
    labels = {**ROW_LABELS, **(row_labels or {})}
    columns = list(dict.fromkeys(table["column"]))
    task_of = dict(zip(table["column"], table["task"], strict=False))
    set_of = dict(zip(table["column"], table["eval_set"], strict=False))
    head = ["Row vs baseline"] + [
        f"{data_label(TASK_LABELS.get(task_of[c], task_of[c]), (set_kinds or {}).get(set_of[c], ''))} "
        f"{COLUMN_LABELS.get(c, c)}" for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|:---|" + "---:|" * len(columns)]
    cells = table.set_index(["row", "column"])
    for row in dict.fromkeys(table["row"]):
        out = [row_label(row, labels)]
        for column in columns:
            if (row, column) in cells.index:
                rec = cells.loc[(row, column)]
                out.append(format_effect(float(rec["delta"]), float(rec["se"]), str(rec["verdict"])))
            else:
                out.append("–")
        lines.append("| " + " | ".join(out) + " |")
    return "\n".join(lines)


def full_model_scores(table1: pd.DataFrame | None, tradeoff: pd.DataFrame | None) -> pd.DataFrame | None:
    """The full fine-tuned model's score per (task, evaluation set), columns task, eval_set, mean, std: Table 1's
    baseline row (``table1.csv``), and for a set Table 1 does not show (the ID dev set, whose column is the test
    split) the baseline's per-seed scores in ``tradeoff.csv``, as mean and sample std over seeds. None without
    either."""
    parts = []
    if table1 is not None:
        parts.append(table1[table1["row"] == "baseline"][["task", "eval_set", "mean", "std"]])
    if tradeoff is not None:
        base = tradeoff[(tradeoff["method"] == "baseline") & (tradeoff["metric"] == "accuracy")]
        parts.append(base.groupby(["task", "eval_set"], sort=False)["score"].agg(["mean", "std"]).reset_index())
    if not parts:
        return None
    return pd.concat(parts, ignore_index=True).drop_duplicates(["task", "eval_set"], keep="first")


def sparsity_curves_markdown(curves: pd.DataFrame, full: pd.DataFrame | None = None,
                             task_kinds: Mapping[str, set[str]] | None = None) -> str:
    """Paper C's curves as tables: per task and OOD evaluation set, one line per (paradigm, method, loss), one
    column per sparsity, each cell "ID / OOD" (mean ± std over seeds); the task's ID set is ``<task>_dev`` (else
    its first evaluation set). ``full`` (columns task, eval_set, mean, std: the full fine-tuned model) adds its
    "ID / OOD" to each table's heading; ``task_kinds`` ({task: kinds of its data}) names a synthetic task so."""
    blocks = []
    for task in dict.fromkeys(curves["task"]):
        of_task = curves[curves["task"] == task]
        sets = list(dict.fromkeys(of_task["eval_set"]))
        id_set, ood_sets = _id_set(task, sets), [s for s in sets if s != _id_set(task, sets)]
        sparsities = sorted(set(of_task["sparsity"]))
        for ood in ood_sets:
            metric = of_task[of_task["eval_set"] == ood]["metric"].iloc[0]
            head = f"**{data_label(TASK_LABELS.get(task, task), (task_kinds or {}).get(task, ''))}: {id_set} / " \
                   f"{ood}** ({metric}; mean ± std over " \
                   f"{'/'.join(str(n) for n in sorted(set(of_task['n_seeds'])))} seeds"
            if full is not None:
                ref = full[full["task"] == task].set_index("eval_set")
                if id_set in ref.index and ood in ref.index:
                    head += (f"; the full model θ_ft: {cell(ref.loc[id_set, 'mean'], ref.loc[id_set, 'std'])} / "
                             f"{cell(ref.loc[ood, 'mean'], ref.loc[ood, 'std'])}")
            lines = [head + ")", "", "| paradigm · method · loss | " + " | ".join(f"{100 * s:.0f}%" for s in sparsities)
                     + " |", "|:---|" + "---:|" * len(sparsities)]
            keyed = of_task.set_index(["paradigm", "method", "loss", "eval_set", "sparsity"])
            for key in dict.fromkeys(zip(of_task["paradigm"], of_task["method"], of_task["loss"], strict=True)):
                cells = []
                for s in sparsities:
                    pair = [keyed.loc[(*key, e, s)] if (*key, e, s) in keyed.index else None for e in (id_set, ood)]
                    cells.append(" / ".join("–" if p is None else cell(float(p["mean"]), float(p["std"]))
                                            for p in pair))
                lines.append(f"| {' · '.join(key)} | " + " | ".join(cells) + " |")
            blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def tradeoff_curves_markdown(long: pd.DataFrame, task_kinds: Mapping[str, set[str]] | None = None) -> str:
    """The trade-off curves (``tradeoff.csv``) as one table per task: a line per (method, knob, value), the
    baseline first, one column per evaluation set (accuracy, mean ± std over seeds; the task's ID set first) and
    per gold label of the OOD sets (e.g. HANS entailed / non-entailed); ``task_kinds`` ({task: kinds of its data})
    names a synthetic task so ("synthetic MNLI")."""
    blocks = []
    long = long.assign(knob=long["knob"].fillna(""))  # the baseline's empty knob reads back as NaN
    for task in dict.fromkeys(long["task"]):
        of_task = long[long["task"] == task]
        sets = list(dict.fromkeys(of_task["eval_set"]))
        id_set = _id_set(task, sets)
        columns = [(id_set, "accuracy")] + [(e, m) for e in sets if e != id_set
                                            for m in sorted(set(of_task.loc[of_task["eval_set"] == e, "metric"]))]
        heads = [e if m == "accuracy" else f"{e} {m.removeprefix('accuracy/label=')}" for e, m in columns]
        lines = [f"**{data_label(TASK_LABELS.get(task, task), (task_kinds or {}).get(task, ''))}** (accuracy %, mean ± std over "
                 f"{of_task['seed'].nunique()} seeds; {id_set} is in distribution)", "",
                 "| method | knob | value | " + " | ".join(heads) + " |", "|:---|:---|---:|" + "---:|" * len(columns)]
        keys = of_task[["method", "knob", "value"]].drop_duplicates()
        keys = pd.concat([keys[keys["method"] == "baseline"], keys[keys["method"] != "baseline"]])
        for key in keys.itertuples(index=False):
            same = of_task[(of_task["method"] == key.method) & (of_task["knob"] == key.knob)
                           & ((of_task["value"] == key.value) | (of_task["value"].isna() & pd.isna(key.value)))]
            cells = []
            for e, m in columns:
                values = same.loc[(same["eval_set"] == e) & (same["metric"] == m), "score"].to_numpy(float)
                cells.append(cell(float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else math.nan)
                             if len(values) else "–")
            value = "" if pd.isna(key.value) else format(float(key.value), "g")
            lines.append(f"| {key.method} | {key.knob or '–'} | {value} | " + " | ".join(cells) + " |")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def selection_markdown(selection: pd.DataFrame) -> str:
    """The selection rule's pick per task and swept row (``tradeoff_selection.csv``)."""
    stable = "pick_stability" in selection.columns  # written since the stability measure (older runs lack it)
    lines = ["| task | row | knob | values tried | picked | its ID dev | baseline ID dev | within delta |"
             + (" pick kept in seed resamples |" if stable else ""),
             "|:---|:---|:---|:---|---:|---:|---:|:---|" + ("---:|" if stable else "")]
    for rec in selection.itertuples(index=False):
        picked = "none" if pd.isna(rec.value) else format(float(rec.value), "g")
        line = (f"| {rec.task} | {rec.method} | {rec.knob} | {rec.candidates} | {picked} | "
                f"{cell(float(rec.id_mean), math.nan)} | {cell(float(rec.baseline_id), math.nan)} | "
                f"{'yes' if bool(rec.within_delta) else 'no'} (δ = {format(float(rec.delta), 'g')}) |")
        if stable:
            share = float(rec.pick_stability)
            line += " – |" if math.isnan(share) else f" {share:.0%} |"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _id_set(task: str, sets: list[str]) -> str:
    """The in-distribution set of a task: ``<task>_dev`` when present, else the first."""
    return f"{task}_dev" if f"{task}_dev" in sets else sets[0]


def mask_benchmark_markdown(bench: dict) -> str:
    """The mask benchmark (results/benchmarks/masks.json) as measure | value | target, medians of one process."""
    step, mask, apply = bench["step_model"], bench["mask_file"], bench["apply"]
    targets = bench["targets"]
    rows = [
        (f"mask-search step ÷ fine-tuning step (MiniLM-L6 shape: hidden {step['hidden']}, {step['layers']} layers; "
         "steps interleaved, both through `maskbench.training.loop.train_step`)",
         f"{bench['search_step_ratio']:.3f}", f"≤ {targets['search_step_ratio']}"),
        ("that fine-tuning step ÷ a plain torch loop's step (same batch, interleaved)",
         f"{bench['finetune_over_plain_ratio']:.3f}", f"≤ {targets['finetune_over_plain_ratio']}"),
        (f"mask file bytes ÷ entropy bound ({mask['n_modules']} matrices, {mask['n_elements'] / 1e6:.1f}M weights, "
         f"iid density {mask['nominal_density']}; header aside)",
         f"{bench['mask_bytes_over_entropy']:.3f}", f"≤ {targets['mask_bytes_over_entropy']}"),
        ("mask file bytes ÷ fp32 weight bytes (the same file, header included)", f"{bench['mask_bytes_over_fp32']:.4f}",
         "–"),
        (f"apply + revert of that mask on a {apply['model']['n_parameters'] / 1e6:.0f}M-parameter BERT-base "
         f"(decoding apart: {apply['decode_ms']:.0f} ms; a switch between two masks: {apply['switch_ms']:.1f} ms; "
         f"revert bit-exact: {'yes' if apply['revert_bit_exact'] else 'NO'})",
         f"{bench['apply_revert_ms']:.1f} ms", f"≤ {targets['apply_revert_ms']:.0f} ms"),
    ]
    lines = ["| measure | value | target |", "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows]
    met = all(bench["meets_targets"].values())
    real = bench.get("real_masks") or {}
    lines += ["", ("All the targets are met." if met else "NOT all targets are met: "
                   + ", ".join(k for k, v in bench["meets_targets"].items() if not v) + ".")
              + (f" On the run's {len(real['files'])} real masks (median density {real['median_density']:.2f}) the "
                 f"payload is {real['median_payload_over_entropy']:.3f} times the per-module entropy bound (median)."
                 if real.get("files") else "")]
    return "\n".join(lines)
