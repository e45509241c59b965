"""One verdict per paper: its central claim, the paper's own figure, ours (effect ± SE over seeds, paired by seed),
whether the mechanism engaged, and the word — from the matrix's cell records (maskbench.matrix.cells) alone.

The one definition of the words, for every page (docs/glossary.md):

- **not engaged**: the method's mechanism did not act on some seed (a mask or gate set that keeps ≥ 99.9 % of what
  it scores, or a mask trained to a sparsity that misses it by over 1 point, ``maskbench.report.engagement``), or,
  for an OOD claim, the model it acts on did not train (the baseline's ID development score within 5 points of
  chance; a bias claim reads the frozen encoder, which needs no task training): no claim either way;
- **debiases**: the OOD gain (or the bias readout's move towards its ideal) is beyond ``NOISE_SE`` (2) standard
  errors of the per-seed differences over at least ``MIN_SEEDS`` (3) seeds, and the ID cost (the baseline's ID
  score minus the method's, paired by seed) is at most ``ID_COST_MAX`` (5) points;
- **trades ID for OOD**: that gain, at an ID cost over ``ID_COST_MAX``;
- **gain, ID cost not measured**: that gain, where the ID score itself is within 5 points of chance (paper B's
  task column at CPU scale): the cost cannot be read;
- **hurts**: the OOD score (or the bias readout) moves the wrong way beyond 2 SE over ≥ 3 seeds;
- **no effect shown**: engaged, and the change is within 2 SE;
- **no verdict (N seeds)**: fewer than 3 paired seeds.

The SE here is of the *paired* differences (sample std of the per-seed differences / √n), as paper-level claims
compare a method with the baseline of the same seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources

import pandas as pd

from maskbench.matrix.cells import BASELINE
from maskbench.matrix.table import matrix_table
from maskbench.report import engagement
from maskbench.report.captions import table_cell
from maskbench.report.engagement import CHANCE_MARGIN, MASK_KEPT_MAX, SPARSITY_TOLERANCE
from maskbench.report.evidence import ID_COST_MAX, MIN_SEEDS, NOISE_SE, TRADES

NOT_ENGAGED = "not engaged"
DEBIASES = "debiases"
GAIN_ID_UNMEASURED = "gain, ID cost not measured"
HURTS = "hurts"
NO_EFFECT = "no effect shown"
NOT_RUN = "not run here"
NO_VERDICT = "no verdict"


@dataclass(frozen=True)
class Claim:
    """A paper's central claim as the matrix can test it: on ``benchmark``, ``method`` against the baseline, the
    effect on ``score`` ("ood": higher is better; "bias": closer to the benchmark's ideal is better); ``chance``:
    the ID score of a model that learned nothing (its classes' uniform accuracy); ``paper_figure``: the paper's
    number, from the reference tables the package ships."""

    paper: str
    claim: str
    benchmark: str
    method: str
    score: str
    chance: float


CLAIMS: Sequence[Claim] = (
    Claim("A", "a mask learned with a debiasing loss (PoE) on a frozen fine-tuned model lifts HANS at a small MNLI "
          "cost", "mnli_hans", "movement_poe", "ood", 100 / 3),
    Claim("B", "head pruning of the frozen encoder with Kaneko–Bollegala's objective lowers SEAT's gender effect "
          "sizes", "gender_seat", "block_movement_frozen_head_all_token", "bias", 100 / 3),
    Claim("C", "a subnetwork of the fine-tuned model, mask-trained with PoE, is more robust on HANS than the full "
          "model", "mnli_hans", "mask_training", "ood", 100 / 3),
    Claim("D", "FFW's gates on a frozen biased model raise unbiased accuracy on Biased-MNIST (ρ 0.99)",
          "biased_mnist_0.99", "ffw", "ood", 10.0),
)


def _reference(package: str, name: str) -> pd.DataFrame:
    with resources.files(package).joinpath(name).open("r", encoding="utf-8") as fh:
        return pd.read_csv(fh)


def paper_figures() -> dict[str, str]:
    """Each paper's own figure for its claim, in words, computed from the shipped reference tables."""
    a = _reference("maskbench.tracks.nlu.report", "paper_a_table1.csv").set_index("row")
    b = _reference("maskbench.tracks.gender.report", "paper_b_table1.csv")
    d = _reference("maskbench.tracks.vision.report", "paper_d_table2_biased_mnist.csv")
    base, poe = a.loc["baseline"], a.loc["md_hyponly"]
    head = b[(b["block"] == "64x768_head") & (b["layer"] == "all") & (b["mode"] == "token")].iloc[0]
    original = b[b.block == "original"].iloc[0]
    seat = ["seat6", "seat7", "seat8"]
    mean_abs = lambda r: sum(abs(float(r[c])) for c in seat) / len(seat)  # noqa: E731
    vanilla = d[(d.method == "vanilla") & (d.rho == 0.99)].iloc[0]
    ffw = d[(d.method == "ffw") & (d.rho == 0.99)].iloc[0]
    return {
        "A": (f"HANS {poe.hans - base.hans:+.1f} at MNLI {poe.mnli_val - base.mnli_val:+.1f} (its PoE mask against "
              "the hypothesis-only model, BERT-base, Table 1; no overlap-model row)"),
        "B": (f"mean |SEAT 6–8| {mean_abs(original):.2f} → {mean_abs(head):.2f}, MNLI {original.mnli:.1f} → "
              f"{head.mnli:.1f} (head pruning, all layers, token; Table 1)"),
        "C": "reported as curves over sparsity: no paired number in its tables",
        "D": f"unbiased test {vanilla.task:.1f} → {ffw.task:.1f} (Table 2, ρ 0.99)",
    }


def paired(base: pd.DataFrame, mine: pd.DataFrame, score: str, ideal: float | None) -> tuple[float, float, int]:
    """(mean, SE, n) of the per-seed gain of ``mine`` over ``base`` on ``score`` (with ``ideal``: how much closer
    to it), over the seeds both have; SE NaN below two seeds."""
    joined = base.set_index("seed")[[score]].join(mine.set_index("seed")[[score]].add_suffix("_m"), how="inner").dropna()
    if joined.empty:
        return math.nan, math.nan, 0
    b, m = joined[score].to_numpy(float), joined[f"{score}_m"].to_numpy(float)
    gains = m - b if ideal is None else abs(b - ideal) - abs(m - ideal)
    n = len(gains)
    se = float(pd.Series(gains).std(ddof=1)) / math.sqrt(n) if n > 1 else math.nan
    return float(gains.mean()), se, n


def word(gain: float, se: float, n: int, id_cost: float, id_measured: bool, engaged: bool) -> str:
    """The verdict word (module docstring) for a paired gain ± se over n seeds at ``id_cost``."""
    if not engaged:
        return NOT_ENGAGED
    if n < MIN_SEEDS or math.isnan(se) or math.isnan(gain):
        return f"{NO_VERDICT} ({n} seed{'s' if n != 1 else ''})"
    if abs(gain) <= NOISE_SE * se:
        return NO_EFFECT
    if gain < 0:
        return HURTS
    if not id_measured:
        return GAIN_ID_UNMEASURED
    return DEBIASES if id_cost <= ID_COST_MAX else TRADES


def verdict_row(claim: Claim, cells: pd.DataFrame, picks: pd.DataFrame, figures: Mapping[str, str]) -> dict:
    """The claim's row: the picked knob value (the matrix's selection rule: no OOD label), ours, engagement, word."""
    out = {"paper": claim.paper, "claim": claim.claim, "benchmark": claim.benchmark, "method": claim.method,
           "paper_figure": figures.get(claim.paper, ""), "knob": "", "value": math.nan, "seeds": "",
           "gain": math.nan, "gain_se": math.nan, "id_cost": math.nan, "id_cost_se": math.nan, "n": 0,
           "density": math.nan, "engagement": "", "verdict": NOT_RUN, "score": claim.score}
    bench = cells[cells.benchmark == claim.benchmark]
    pick = picks[(picks.benchmark == claim.benchmark) & (picks.method == claim.method)]
    base = bench[bench.method == BASELINE]
    if pick.empty or base.empty:
        return out
    chosen = pick.iloc[0]
    mine = bench[(bench.method == claim.method) & (bench.knob == chosen.knob)]
    if chosen.knob:
        mine = mine[mine.value == chosen.value]
    ideal = float(chosen.bias_ideal) if claim.score == "bias" else None
    gain, gain_se, n = paired(base, mine, claim.score, ideal)
    cost, cost_se, _ = paired(mine, base, "id", None)
    base_dev = base.id_dev.where(base.id_dev.notna(), base.id)
    base_trained = bool((base_dev >= claim.chance + CHANCE_MARGIN).all())
    mask_acts = bool((mine.density < MASK_KEPT_MAX).all())
    id_measured = bool((base.id >= claim.chance + CHANCE_MARGIN).all())
    on_target = True
    if chosen.knob == "sparsity" and not math.isnan(chosen.value):
        on_target = all(engagement.sparsity_target(1 - d, chosen.value).engaged for d in mine.density)
    if not mask_acts:
        why = f"{NOT_ENGAGED}: keeps {100 * mine.density.max():.2f} % on a seed"
    elif not on_target:
        why = f"{NOT_ENGAGED}: {100 * (1 - mine.density).mean():.1f} % sparsity against a {100 * chosen.value:g} % target"
    elif claim.score == "ood" and not base_trained:
        why = f"{NOT_ENGAGED}: the baseline's ID dev within {CHANCE_MARGIN:g} points of chance"
    else:
        why = f"engaged: keeps {100 * mine.density.mean():.1f} %"
    engaged = why.startswith("engaged")
    out.update({"knob": chosen.knob, "value": chosen.value, "seeds": " ".join(str(int(s)) for s in sorted(mine.seed)),
                "gain": gain, "gain_se": gain_se, "id_cost": cost, "id_cost_se": cost_se, "n": n,
                "density": float(mine.density.mean()), "engagement": why,
                "verdict": word(gain, gain_se, n, cost, id_measured, engaged)})
    return out


def verdict_table(cells: pd.DataFrame, delta: float, claims: Sequence[Claim] = CLAIMS,
                  prices: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per claim; ``prices``: paper -> the GPU-hours of that paper's target in the paper config (the cost
    sheet's, docs/facts.json ``gpu_hours_by_paper``), what testing the claim at the paper's scale would take."""
    picks = matrix_table(cells, delta)
    figures = paper_figures()
    rows = [verdict_row(c, cells, picks, figures) for c in claims]
    for row in rows:
        row["paper_scale_gpu_hours"] = float((prices or {}).get(row["paper"], math.nan))
    return pd.DataFrame(rows)


def _pm(mean: float, se: float) -> str:
    if math.isnan(mean):
        return "–"
    return f"{mean:+.1f}" + (" (no SE)" if math.isnan(se) else f" ± {se:.1f} SE")


def ours_text(row: Mapping) -> str:
    if row["verdict"] == NOT_RUN:
        return "not run in this config"
    what = "OOD" if row["score"] == "ood" else "bias towards its ideal"
    knob = f"; {row['knob']} {row['value']:g}" if row["knob"] else ""
    seeds = f"{row['n']} seed{'s' if row['n'] != 1 else ''} paired"
    return f"{what} {_pm(row['gain'], row['gain_se'])}, ID cost {_pm(row['id_cost'], row['id_cost_se'])} ({seeds}{knob})"


def price_text(gpu_hours: float) -> str:
    return "–" if gpu_hours is None or math.isnan(gpu_hours) else f"{gpu_hours:,.0f} GPU-h"


def legend(words: Iterable[str]) -> str:
    """The verdict words' definitions (the module docstring's, in a line each) for a table's caption: debiases,
    trades ID for OOD, not engaged and no effect shown always, then every other word among ``words``."""
    short = {
        DEBIASES: f"gain beyond {NOISE_SE:g} SE over ≥ {MIN_SEEDS} seeds at an ID cost ≤ {ID_COST_MAX:g} points",
        TRADES: "that gain at a larger cost",
        NOT_ENGAGED: f"a mask that keeps ≥ {100 * MASK_KEPT_MAX:g} % on a seed or misses its sparsity target by over "
                     f"{100 * SPARSITY_TOLERANCE:g} point, or, for an OOD claim, a baseline whose ID dev score is within "
                     f"{CHANCE_MARGIN:g} points of chance",
        NO_EFFECT: f"engaged, within {NOISE_SE:g} SE",
        GAIN_ID_UNMEASURED: f"that gain, where the ID score itself is within {CHANCE_MARGIN:g} points of chance",
        HURTS: f"a move the wrong way beyond {NOISE_SE:g} SE over ≥ {MIN_SEEDS} seeds",
        NO_VERDICT: f"fewer than {MIN_SEEDS} paired seeds: the numbers, no word",
        NOT_RUN: "the config has no cell for the claim",
    }
    used = {NO_VERDICT if w.startswith(NO_VERDICT) else w for w in words}
    shown = [w for w in short if w in (DEBIASES, TRADES, NOT_ENGAGED, NO_EFFECT) or w in used]
    return "; ".join(f"**{w}** = {short[w]}" for w in shown)


def markdown(table: pd.DataFrame) -> str:
    priced = "paper_scale_gpu_hours" in table.columns and table["paper_scale_gpu_hours"].notna().any()
    lines = ["| paper | claim | paper's figure | ours (paired by seed) | engagement | verdict |"
             + (" at the paper's scale |" if priced else ""),
             "|---|---|---|---|---|---|" + ("---:|" if priced else "")]
    for row in table.to_dict("records"):
        cells = [row["paper"], row["claim"], row["paper_figure"], ours_text(row), row["engagement"] or "–",
                 f"**{row['verdict']}**"] + ([price_text(row["paper_scale_gpu_hours"])] if priced else [])
        lines.append("| " + " | ".join(table_cell(c) for c in cells) + " |")
    return "\n".join(lines) + "\n"
