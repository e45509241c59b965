"""The evidence rule: "debiases" / "hurts" only for an effect beyond 2 standard errors of the difference over at
least 3 seeds; "moves" beyond noise with fewer seeds; "within noise" otherwise. Numbers worked out by hand."""

import math
import statistics

import pytest

from maskbench.report.evidence import beyond_noise, evidence_word, numbers, se_of_difference, worded


def effect_of(ours: list[float], base: list[float]) -> tuple[float, float, int]:
    """(mean difference, its standard error, the smaller seed count) of two lists of per-seed scores."""
    std = [statistics.stdev(x) if len(x) > 1 else math.nan for x in (ours, base)]
    return (statistics.mean(ours) - statistics.mean(base), se_of_difference(std[0], len(ours), std[1], len(base)),
            min(len(ours), len(base)))


BASE = [69.0, 70.0, 71.0]  # mean 70, sample std 1


def test_the_standard_error_of_a_difference_by_hand():
    # ours [72, 74, 76]: mean 74, std 2 -> se = sqrt(4 / 3 + 1 / 3) = sqrt(5 / 3) = 1.2910
    effect, se, n = effect_of([72.0, 74.0, 76.0], BASE)
    assert (effect, n) == (4.0, 3) and se == pytest.approx(math.sqrt(5 / 3)) and se == pytest.approx(1.2910, abs=1e-4)
    assert math.isnan(se_of_difference(math.nan, 1, 1.0, 3))  # one seed: no standard error


def test_three_seeds_beyond_two_standard_errors_debias():
    effect, se, n = effect_of([72.0, 74.0, 76.0], BASE)  # 4.0 > 2 * 1.2910 = 2.582
    assert evidence_word(effect, se, n) == "debiases"
    assert worded(effect, se, n) == "debiases (+4.00 ± 1.29 SE, 3 seeds)"


def test_three_seeds_within_two_standard_errors_are_within_noise():
    effect, se, n = effect_of([70.0, 72.0, 74.0], BASE)  # 2.0 <= 2.582
    assert (effect, n) == (2.0, 3) and evidence_word(effect, se, n) == "within noise"
    assert worded(effect, se, n) == "within noise (+2.00 ± 1.29 SE, 3 seeds)"
    # exactly 2 standard errors is not beyond: 2.582 against se 1.291
    assert evidence_word(2 * 1.291, 1.291, 3) == "within noise"


def test_a_fall_beyond_two_standard_errors_hurts():
    effect, se, n = effect_of([64.0, 66.0, 68.0], BASE)  # -4.0 < -2.582
    assert evidence_word(effect, se, n) == "hurts"
    assert worded(effect, se, n) == "hurts (-4.00 ± 1.29 SE, 3 seeds)"
    assert evidence_word(effect, se, n, up="up", down="down") == "down"


def test_one_seed_never_debiases():
    effect, se, n = effect_of([90.0], [70.0])  # +20 points, but one seed each: no standard error
    assert (effect, n) == (20.0, 1) and math.isnan(se)
    assert evidence_word(effect, se, n) == "moves"
    assert worded(effect, se, n) == "moves (+20.00, 1 seed, no SE: no verdict)"
    # even with a standard error from elsewhere, one seed is no claim; nor two
    assert evidence_word(20.0, 0.0, 1) == "moves" and evidence_word(20.0, 0.5, 2) == "moves"
    assert evidence_word(0.0, math.nan, 1) == "within noise"  # nothing moved at all


def test_two_seeds_move_or_stay_within_noise():
    effect, se, n = effect_of([74.0, 76.0], [69.0, 71.0])  # +5, se = sqrt(2 / 2 + 2 / 2) = 1.414; 5 > 2.83
    assert se == pytest.approx(math.sqrt(2)) and evidence_word(effect, se, n) == "moves"
    assert worded(effect, se, n) == "moves (+5.00 ± 1.41 SE, 2 seeds: no verdict)"
    effect, se, n = effect_of([72.0, 74.0], [69.0, 71.0])  # +3 <= 2.83? no: 3 > 2.83 -> moves; +2 is within
    assert evidence_word(effect, se, n) == "moves" and evidence_word(2.0, se, n) == "within noise"
    # the spread of 0.00 of a two-seed run whose seeds agree bounds nothing: any change moves, never debiases
    assert evidence_word(0.5, 0.0, 2) == "moves" and evidence_word(0.5, 0.0, 3) == "debiases"


def test_no_effect_and_the_beyond_noise_test():
    assert evidence_word(math.nan, 1.0, 3) == "no data" and worded(math.nan, 1.0, 3) == "no data"
    assert beyond_noise(2.6, 1.29) and not beyond_noise(-2.5, 1.29) and beyond_noise(-0.1, math.nan)
    assert numbers(-0.5, 0.25, 5) == "-0.50 ± 0.25 SE, 5 seeds" and numbers(1.0, math.nan, 1) == "+1.00, 1 seed, no SE"
    assert worded(0.5, 1.0, 2) == "within noise (+0.50 ± 1.00 SE, 2 seeds)"  # no claim made, none withheld
