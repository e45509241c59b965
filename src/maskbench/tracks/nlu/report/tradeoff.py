"""ID-OOD trade-off curves: every swept method as a line through its strength knob's values, not one point.

A *point* is one run of a Table 1 row at one value of one knob (its evaluation JSONs carry the point's name,
``<row>@<knob>~<value>``; the row's own Table 1 run is the point at the row's configured value). From the
evaluation JSONs alone this module builds

- the long form (``tradeoff.csv``): track, task, method, knob, value, seed, eval_set, metric, score — every
  evaluation set's accuracy and its accuracy per gold label (HANS entailed / non-entailed, PAWS duplicate /
  non-duplicate: a method that trades one half against the other shows it there);
- the summary: per (task, method, knob, OOD set) the best OOD accuracy at an ID drop of at most d points,
  interpolated along the curve (``best_ood_at_drop``), its spread over seeds, and a verdict (``verdict``):
  "debiases", "trades ID for OOD", "trades OOD subsets" or "hurts" only for a change beyond 2 standard errors
  over 3 seeds or more, "moves" (what moved, no verdict) with fewer, "within noise" otherwise — the words of
  ``maskbench.report.evidence``, always written with their numbers;
- the selection rule, which needs no OOD label (``select_point``): the strongest value of the row's first knob
  whose mean ID dev accuracy stays within delta points of the baseline's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from maskbench.report.evidence import (
    MOVES,
    WITHIN,
    beyond_noise,
    caveat,
    evidence_word,
    numbers,
    se_of_difference,
)

LONG_COLUMNS = ["track", "task", "method", "knob", "value", "seed", "eval_set", "metric", "score"]
BASELINE = "baseline"


# --------------------------------------------------------------------------------------------- long form


def long_form(evals: Iterable[Mapping], points: Sequence[Mapping], track: str = "nlu") -> pd.DataFrame:
    """One line per (point, seed, eval set, metric). ``points`` lists {point, task, method, knob, value}: the
    evaluation JSON whose ``row`` is ``point`` (for its task) belongs to (method, knob, value); the baseline's
    JSONs (row "baseline") get method "baseline", knob "" and value NaN."""
    where: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
    for p in points:  # a row's own run is the point at its configured value on every one of its knobs' lines
        where.setdefault((str(p["task"]), str(p["point"])), []).append(
            (str(p["method"]), str(p["knob"]), float(p["value"])))
    records = []
    for ev in evals:
        task, row = str(ev["task"]), str(ev["row"])
        lines = [(BASELINE, "", math.nan)] if row == BASELINE else where.get((task, row), [])
        for method, knob, value in lines:
            for metric, score in sorted(ev["metrics"].items()):
                if metric == "accuracy" or (metric.startswith("accuracy/label=") and metric.count("/") == 1):
                    records.append({"track": track, "task": task, "method": method, "knob": knob, "value": value,
                                    "seed": int(ev["seed"]), "eval_set": str(ev["eval_set"]), "metric": metric,
                                    "score": float(score)})
    frame = pd.DataFrame.from_records(records, columns=LONG_COLUMNS)
    return frame.sort_values(["task", "method", "knob", "value", "eval_set", "metric", "seed"],
                             na_position="first", kind="mergesort").reset_index(drop=True)


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (NaN with one value)."""
    values = [float(v) for v in values]
    if not values:
        return math.nan, math.nan
    return float(np.mean(values)), (float(np.std(values, ddof=1)) if len(values) > 1 else math.nan)


def _select(long: pd.DataFrame, task: str, method: str, knob: str, eval_set: str, metric: str) -> pd.DataFrame:
    return long[(long["task"] == task) & (long["method"] == method) & (long["knob"] == knob)
                & (long["eval_set"] == eval_set) & (long["metric"] == metric)]


def scores(long: pd.DataFrame, task: str, method: str, knob: str, eval_set: str,
           metric: str = "accuracy") -> dict[float, dict[int, float]]:
    """{value: {seed: score}} of one line of the curve."""
    out: dict[float, dict[int, float]] = {}
    for rec in _select(long, task, method, knob, eval_set, metric).itertuples(index=False):
        out.setdefault(float(rec.value), {})[int(rec.seed)] = float(rec.score)
    return out


def baseline_scores(long: pd.DataFrame, task: str, eval_set: str, metric: str = "accuracy") -> dict[int, float]:
    """{seed: score} of the baseline (no knob, no value)."""
    return {int(rec.seed): float(rec.score)
            for rec in _select(long, task, BASELINE, "", eval_set, metric).itertuples(index=False)}


# ------------------------------------------------------------------------------------------- the summary


def best_ood_at_drop(curve: Sequence[tuple[float, float]], base_id: float, drop: float) -> float:
    """The best OOD score along a piecewise-linear curve of (ID, OOD) points (in knob order) whose ID score is at
    least ``base_id - drop``: the feasible points themselves and the points where a segment crosses the ID
    threshold. NaN when no part of the curve is feasible."""
    threshold = base_id - drop
    best = -math.inf
    pts = [(float(i), float(o)) for i, o in curve]
    for i, o in pts:
        if i >= threshold:
            best = max(best, o)
    for (i0, o0), (i1, o1) in zip(pts, pts[1:], strict=False):
        if (i0 - threshold) * (i1 - threshold) < 0:  # the segment crosses the threshold strictly
            t = (threshold - i0) / (i1 - i0)
            best = max(best, o0 + t * (o1 - o0))
    return best if best > -math.inf else math.nan


def _curve(by_value_id: Mapping[float, float], by_value_ood: Mapping[float, float]) -> list[tuple[float, float]]:
    values = sorted(v for v in by_value_id if v in by_value_ood)
    return [(by_value_id[v], by_value_ood[v]) for v in values]


VERDICTS = ("debiases", "trades ID for OOD", "trades OOD subsets", "hurts", MOVES, WITHIN)
# what a curve does beyond noise, whatever the seeds -> the word it earns with at least MIN_SEEDS seeds
CLAIMS = {"OOD up within the ID cost": "debiases", "OOD up at a larger ID cost": "trades ID for OOD",
          "OOD subsets traded": "trades OOD subsets", "OOD down": "hurts"}


@dataclass(frozen=True)
class Change:
    """A change against the baseline: its size, the standard error of that difference of means
    (``evidence.se_of_difference``) and the smaller side's number of seeds."""

    effect: float
    se: float
    n_seeds: int


@dataclass(frozen=True)
class Verdict:
    """A curve's verdict on one OOD set: the word (one of ``VERDICTS``), what moved beyond noise (a key of
    ``CLAIMS``; "" when nothing did), the knob value that decides it with its ID drop, the deciding change and the
    gold label it is of ("" for the OOD accuracy itself)."""

    word: str
    moved: str
    value: float
    id_drop: float
    change: Change
    label: str = ""

    def text(self) -> str:
        """As the summary writes it, with its numbers: ``"debiases (at 0.1, ID drop 1.00: OOD +5.00 ± 1.15 SE,
        3 seeds)"``, ``"moves: OOD up within the ID cost (at 0.03, ID drop 1.95: OOD +2.25 ± 0.32 SE, 2 seeds: no
        verdict)"``."""
        head = f"{self.word}: {self.moved}" if self.word == MOVES else self.word
        what = f"{self.label} accuracy" if self.label else "OOD"
        drop = "–" if math.isnan(self.id_drop) else f"{self.id_drop:.2f}"
        return (f"{head} (at {format(self.value, 'g')}, ID drop {drop}: {what} "
                f"{numbers(self.change.effect, self.change.se, self.change.n_seeds)}{caveat(self.word)})")


def _up(change: Change) -> bool:
    return change.effect > 0 and beyond_noise(change.effect, change.se)


def _down(change: Change) -> bool:
    return change.effect < 0 and beyond_noise(change.effect, change.se)


def trades_subsets(moves: Sequence[tuple[str, Change]]) -> bool:
    """One gold label's accuracy rises and another's falls, each beyond noise (``evidence.beyond_noise``)."""
    return any(_up(c) for _, c in moves) and any(_down(c) for _, c in moves)


def verdict(gains: Mapping[float, tuple[float, Change]], max_drop: float,
            label_moves: Mapping[float, Sequence[tuple[str, Change]]]) -> Verdict:
    """What a curve does to one OOD set. ``gains``: per knob value, (its mean ID drop, its OOD accuracy change
    against the baseline); ``label_moves``: per knob value, (gold label, that label's accuracy change) per label.

    First what moved beyond noise (``evidence.beyond_noise``: more than 2 standard errors of the difference),
    whatever the seeds: "OOD up within the ID cost" when some value raises the OOD accuracy at an ID drop of at most
    ``max_drop``; "OOD up at a larger ID cost" when only costlier values do; "OOD subsets traded" when none does but
    at some value one label's accuracy rises and another's falls (HANS: the heuristic strengthened or inverted);
    "OOD down" when some value lowers it and none raises it. The deciding change is the largest such gain (for a
    trade: the largest label change there; for a fall: the largest fall). The word is ``evidence.evidence_word`` of
    that change: the claim of ``CLAIMS`` with at least 3 seeds, "moves" with fewer; "within noise" when nothing
    moved (numbers then at the value of the largest OOD accuracy)."""
    up = [v for v, (_, c) in gains.items() if _up(c)]
    cheap = [v for v in up if gains[v][0] <= max_drop]
    trading = [v for v in gains if trades_subsets(label_moves.get(v, []))]
    label = ""
    if up:
        moved = "OOD up within the ID cost" if cheap else "OOD up at a larger ID cost"
        value = max(cheap or up, key=lambda v: (gains[v][1].effect, -v))
        change = gains[value][1]
    elif trading:
        moved = "OOD subsets traded"
        value = max(trading, key=lambda v: max(abs(c.effect) for _, c in label_moves[v]))
        label, change = max(label_moves[value], key=lambda m: abs(m[1].effect))
    elif any(_down(c) for _, c in gains.values()):
        moved = "OOD down"
        value = min(gains, key=lambda v: (gains[v][1].effect, v))
        change = gains[value][1]
    else:
        moved = ""
        value = max(gains, key=lambda v: (gains[v][1].effect, -v))
        change = gains[value][1]
    claim = CLAIMS.get(moved, WITHIN)
    word = evidence_word(change.effect, change.se, change.n_seeds, up=claim, down=claim)
    return Verdict(word, moved, value, gains[value][0], change, label)


def summarise(long: pd.DataFrame, lines: Sequence[Mapping], id_sets: Mapping[str, str], drops: Sequence[float]
              ) -> pd.DataFrame:
    """Per (task, method, knob, OOD set): the baseline's OOD accuracy, the best OOD accuracy at an ID drop of at
    most each d (mean curve; its spread = the std over seeds of the same quantity on each seed's own curve against
    that seed's baseline), the value of the largest OOD accuracy with its gain over the baseline, the gain's spread
    (sqrt of the two variances) and standard error (``evidence.se_of_difference``), its ID drop and its per-label
    changes, and the verdict (``verdict``, the largest d as the ID cost a debiasing method may have): ``verdict``
    its text with the numbers, ``verdict_word`` the word alone, ``verdict_at`` the deciding value. ``lines``:
    {task, method, knob}."""
    records = []
    for line in lines:
        task, method, knob = str(line["task"]), str(line["method"]), str(line["knob"])
        id_set = id_sets[task]
        eval_sets = sorted(set(long.loc[long["task"] == task, "eval_set"]) - {id_set})
        base_id = baseline_scores(long, task, id_set)
        ids = scores(long, task, method, knob, id_set)
        for eval_set in eval_sets:
            oods = scores(long, task, method, knob, eval_set)
            base_ood = baseline_scores(long, task, eval_set)
            if not oods or not base_ood:
                continue
            mean_id = {v: mean_std(list(s.values()))[0] for v, s in ids.items()}
            mean_ood = {v: mean_std(list(s.values()))[0] for v, s in oods.items()}
            base_id_mean, _ = mean_std(list(base_id.values()))
            base_ood_mean, base_ood_std = mean_std(list(base_ood.values()))
            record = {"task": task, "method": method, "knob": knob, "eval_set": eval_set,
                      "values": " ".join(format(v, "g") for v in sorted(mean_ood)),
                      "baseline_id": base_id_mean, "baseline_ood": base_ood_mean, "baseline_ood_std": base_ood_std}
            seeds = sorted(set(base_id) & set(base_ood))
            for d in drops:
                record[f"best_ood_id_drop_{format(d, 'g')}"] = best_ood_at_drop(
                    _curve(mean_id, mean_ood), base_id_mean, d)
                per_seed = [best_ood_at_drop(_curve({v: s[seed] for v, s in ids.items() if seed in s},
                                                    {v: s[seed] for v, s in oods.items() if seed in s}),
                                             base_id[seed], d) for seed in seeds]
                per_seed = [x for x in per_seed if not math.isnan(x)]
                record[f"best_ood_id_drop_{format(d, 'g')}_std"] = mean_std(per_seed)[1]
            gains = {v: (base_id_mean - mean_id.get(v, math.nan), _change(by_seed, base_ood))
                     for v, by_seed in oods.items()}
            best_value = max(mean_ood, key=lambda v: (mean_ood[v], -v))
            best = gains[best_value][1]
            moves = {v: _label_moves(long, task, method, knob, eval_set, v) for v in mean_ood}
            decided = verdict(gains, max(drops), moves)
            # the per-label changes where the subsets trade, else at the largest OOD accuracy
            shown = decided.value if decided.moved == "OOD subsets traded" else best_value
            for label, change in moves[shown]:
                record[f"change_{label}"] = change.effect
            record.update({"best_value": best_value, "best_id": mean_id.get(best_value, math.nan),
                           "best_ood": mean_ood[best_value], "ood_gain": best.effect,
                           "ood_gain_spread": _spread(mean_std(list(oods[best_value].values()))[1], base_ood_std),
                           "ood_gain_se": best.se, "id_drop": gains[best_value][0], "changes_at": shown,
                           "verdict": decided.text(), "verdict_word": decided.word, "verdict_at": decided.value,
                           "n_seeds": len(seeds)})
            records.append(record)
    return pd.DataFrame.from_records(records)


def _spread(std_a: float, std_b: float) -> float:
    """sqrt(std_a² + std_b²), the NaN ones left out; NaN when both are (a single seed each: no spread)."""
    known = [x for x in (std_a, std_b) if not math.isnan(x)]
    return math.sqrt(sum(x ** 2 for x in known)) if known else math.nan


def _change(at: Mapping[int, float], base: Mapping[int, float]) -> Change:
    """The change of the mean over seeds of ``at`` against that of ``base`` ({seed: score} each)."""
    (m_at, s_at), (m_base, s_base) = mean_std(list(at.values())), mean_std(list(base.values()))
    return Change(m_at - m_base, se_of_difference(s_at, len(at), s_base, len(base)), min(len(at), len(base)))


def _label_moves(long: pd.DataFrame, task: str, method: str, knob: str, eval_set: str, value: float
                 ) -> list[tuple[str, Change]]:
    """(label, change against the baseline) of each gold label's accuracy at ``value``."""
    moves = []
    for metric in sorted(set(long.loc[(long["task"] == task) & (long["eval_set"] == eval_set), "metric"])):
        if not metric.startswith("accuracy/label="):
            continue
        at = scores(long, task, method, knob, eval_set, metric).get(value, {})
        base = baseline_scores(long, task, eval_set, metric)
        if not at or not base:
            continue
        moves.append((metric.removeprefix("accuracy/label="), _change(at, base)))
    return moves


# --------------------------------------------------------------------------------------- the selection rule


def select_point(candidates: Mapping[float, float], base_id: float, delta: float) -> float | None:
    """The strongest knob value (the largest) whose mean ID dev accuracy is at least ``base_id - delta``; None
    when no value is. ``candidates``: {value: mean ID dev accuracy}."""
    feasible = [v for v, acc in candidates.items() if acc >= base_id - delta]
    return max(feasible) if feasible else None


def pick_stability(id_scores: Mapping[float, Mapping[int, float]], base_scores: Mapping[int, float], delta: float,
                   resamples: int = 1000, seed: int = 0) -> float:
    """How often the selection rule's pick survives seed noise: the fraction of bootstrap resamples of the seeds
    (drawn with replacement, the same draw for every knob value and the baseline, as they share their seeds) for
    which ``select_point`` on the resampled means picks what it picks on all the seeds. NaN when the values and the
    baseline share no seed. 1.0: no resample changes the pick; near 0.5: a coin flip (another machine's float noise,
    within the seeds' spread, can flip it)."""
    seeds = sorted(set(base_scores).intersection(*(set(s) for s in id_scores.values())))
    if not seeds:
        return math.nan

    def pick(drawn: Sequence[int]) -> float | None:
        means = {v: float(np.mean([s[d] for d in drawn])) for v, s in id_scores.items()}
        return select_point(means, float(np.mean([base_scores[d] for d in drawn])), delta)

    full = pick(seeds)
    draws = np.random.default_rng(seed).choice(seeds, size=(resamples, len(seeds)), replace=True)
    return float(np.mean([pick(list(d)) == full for d in draws]))


# ------------------------------------------------------------------------------------------------ figures


POINT_COLUMNS = ["value", "id_mean", "id_std", "ood_mean", "ood_std", "n"]


def _point(value: float, id_scores: dict[int, float], ood_scores: dict[int, float]) -> dict:
    (im, istd), (om, ostd) = mean_std(list(id_scores.values())), mean_std(list(ood_scores.values()))
    return {"value": value, "id_mean": im, "id_std": istd, "ood_mean": om, "ood_std": ostd, "n": len(id_scores)}


def curve_points(long: pd.DataFrame, task: str, method: str, knob: str, id_set: str, ood_set: str
                 ) -> pd.DataFrame:
    """The plotted points of one line: value, id_mean, id_std, ood_mean, ood_std, n (knob order)."""
    ids, oods = scores(long, task, method, knob, id_set), scores(long, task, method, knob, ood_set)
    return pd.DataFrame.from_records([_point(v, ids[v], oods[v]) for v in sorted(set(ids) & set(oods))],
                                     columns=POINT_COLUMNS)


def baseline_point(long: pd.DataFrame, task: str, id_set: str, ood_set: str) -> pd.DataFrame:
    """The baseline's (ID, OOD) point (empty when it has no scores)."""
    ids, oods = baseline_scores(long, task, id_set), baseline_scores(long, task, ood_set)
    return pd.DataFrame.from_records([_point(math.nan, ids, oods)] if ids and oods else [], columns=POINT_COLUMNS)


def build_tradeoff_figure(long: pd.DataFrame, task: str, id_set: str, ood_set: str, lines: Sequence[Mapping],
                          paper_points: Mapping[str, tuple[float, float]] | None = None,
                          labels: Mapping[str, str] | None = None, task_name: str | None = None):
    """ID accuracy (x) against OOD accuracy (y) for one task and OOD set: a line per (method, knob) through its
    values (mean ± std over seeds as error bars, each point labelled with its value), the baseline as a star,
    paper A's reported (ID, OOD) of a method as a hollow diamond in the line's colour and of its baseline as a
    hollow star; every marker drawn is named in the legend, under the axes. ``task_name``: the task as its data is
    ("synthetic MNLI"; default the task's id)."""
    from matplotlib.figure import Figure

    labels = labels or {}
    paper_drawn = False  # a method's reported point drawn: the legend names the hollow diamond
    fig = Figure(figsize=(7.5, 5.2), layout="constrained")
    ax = fig.subplots()
    for i, line in enumerate(lines):
        method, knob = str(line["method"]), str(line["knob"])
        pts = curve_points(long, task, method, knob, id_set, ood_set)
        if pts.empty:
            continue
        color = f"C{i % 10}"
        ax.errorbar(pts["id_mean"], pts["ood_mean"], xerr=pts["id_std"].fillna(0.0), yerr=pts["ood_std"].fillna(0.0),
                    color=color, marker="o", ms=4, capsize=2, lw=1.2,
                    label=f"{labels.get(method, method)} ({knob})")
        for rec in pts.itertuples(index=False):
            ax.annotate(format(rec.value, "g"), (rec.id_mean, rec.ood_mean), textcoords="offset points",
                        xytext=(4, 3), fontsize=7, color=color)
        paper = (paper_points or {}).get(method)
        if paper is not None and not any(math.isnan(x) for x in paper):
            ax.scatter([paper[0]], [paper[1]], marker="D", s=40, facecolors="none", edgecolors=color, zorder=3)
            paper_drawn = True
    base = baseline_point(long, task, id_set, ood_set)
    if not base.empty:
        ax.errorbar(base["id_mean"], base["ood_mean"], xerr=base["id_std"].fillna(0.0),
                    yerr=base["ood_std"].fillna(0.0), color="black", marker="*", ms=12, ls="none", capsize=2,
                    label="baseline")
    paper_base = (paper_points or {}).get(BASELINE)
    if paper_base is not None and not any(math.isnan(x) for x in paper_base):
        ax.scatter([paper_base[0]], [paper_base[1]], marker="*", s=120, facecolors="none", edgecolors="black",
                   label="paper A's baseline (its BERT-base, its data)")
    if paper_drawn:
        ax.scatter([], [], marker="D", facecolors="none", edgecolors="0.3",
                   label="paper A's reported point (its BERT-base, its data)")
    ax.set_xlabel(f"{id_set} accuracy (%, in distribution)")
    ax.set_ylabel(f"{ood_set} accuracy (%, out of distribution)")
    # two short lines: a one-line title wider than the axes was clipped at its start
    ax.set_title(f"{task_name or task}: ID against OOD along each method's strength knob\n(mean ± std over seeds)",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    return fig
