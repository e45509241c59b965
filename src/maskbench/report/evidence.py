"""The word a generated table may say about an effect, decided from the effect, its standard error and the seeds.

One rule for every verdict the code writes (the trade-off summary, the README's effects against the baseline):

- the *standard error of a difference* of two means over seeds is ``sqrt(s_a² / n_a + s_b² / n_b)`` (sample
  standard deviations; undefined, NaN, when either side has a single seed);
- an effect is *beyond noise* when ``|effect| > NOISE_SE × SE``; with no SE (one seed) any non-zero effect is, as
  nothing bounds it;
- a claim ("debiases", or "hurts" for a fall) needs at least ``MIN_SEEDS`` seeds (the smaller side's count) AND an
  effect beyond noise; below ``MIN_SEEDS`` seeds an effect beyond noise only "moves"; an effect within
  ``NOISE_SE`` standard errors is "within noise" whatever the seeds.
"""

from __future__ import annotations

import math

MIN_SEEDS = 3
NOISE_SE = 2.0
# "debiases" also needs the ID cost (the baseline's ID score minus the method's) within this many points; beyond it
# the same gain "trades ID for OOD" (maskbench.matrix.verdict, the matrix, the trade-off summary)
ID_COST_MAX = 5.0
TRADES = "trades ID for OOD"
WITHIN = "within noise"
MOVES = "moves"
NO_DATA = "no data"


def se_of_difference(std_a: float, n_a: int, std_b: float, n_b: int) -> float:
    """``sqrt(std_a² / n_a + std_b² / n_b)``: the standard error of mean_a - mean_b; NaN when either std is NaN."""
    return math.sqrt(float(std_a) ** 2 / int(n_a) + float(std_b) ** 2 / int(n_b))


def beyond_noise(effect: float, se: float) -> bool:
    """``|effect| > NOISE_SE * se``; with no standard error (NaN: one seed) any non-zero effect."""
    if math.isnan(se):
        return effect != 0
    return abs(effect) > NOISE_SE * se


def evidence_word(effect: float, se: float, n_seeds: int, up: str = "debiases", down: str = "hurts") -> str:
    """The word for an effect (a difference of means, e.g. OOD accuracy minus the baseline's) with its standard
    error ``se`` over ``n_seeds`` seeds (the smaller side's count):

    ``up`` (default "debiases") when n_seeds >= MIN_SEEDS (3), the standard error is known and
    effect > NOISE_SE (2) × se; ``down`` (default "hurts") when n_seeds >= 3 and effect < -2 × se;
    "within noise" when |effect| <= 2 × se (any number of seeds), or the effect is exactly 0;
    "moves" otherwise (beyond noise, or unbounded with one seed, but fewer than 3 seeds: no claim);
    "no data" when the effect is NaN."""
    if math.isnan(effect):
        return NO_DATA
    if not beyond_noise(effect, se):
        return WITHIN
    if n_seeds < MIN_SEEDS or math.isnan(se):
        return MOVES
    return up if effect > 0 else down


def seeds_text(n_seeds: int) -> str:
    return f"{n_seeds} seed{'' if n_seeds == 1 else 's'}"


def numbers(effect: float, se: float, n_seeds: int) -> str:
    """``"+4.20 ± 1.00 SE, 3 seeds"``; a single seed: ``"+5.00, 1 seed, no SE"``."""
    text = f"{effect:+.2f}" + (", " if math.isnan(se) else f" ± {se:.2f} SE, ") + seeds_text(n_seeds)
    return text + (", no SE" if math.isnan(se) else "")


def caveat(word: str) -> str:
    """What follows the numbers of a word: ": no verdict" after "moves" (an effect beyond noise over too few
    seeds to claim it), nothing after any other."""
    return ": no verdict" if word == MOVES else ""


def worded(effect: float, se: float, n_seeds: int, up: str = "debiases", down: str = "hurts") -> str:
    """The word with its numbers, as the tables write it: ``"debiases (+4.20 ± 1.00 SE, 3 seeds)"``,
    ``"within noise (+1.00 ± 1.00 SE, 3 seeds)"``, ``"moves (+2.25 ± 0.32 SE, 2 seeds: no verdict)"``."""
    word = evidence_word(effect, se, n_seeds, up, down)
    return word if word == NO_DATA else f"{word} ({numbers(effect, se, n_seeds)}{caveat(word)})"
