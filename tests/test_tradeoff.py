"""Trade-off curves: the interpolated "best OOD at an ID drop of at most d", the verdict, the selection rule, the
long form and Table 1's "selected" rows, on hand-made curves and evaluation JSONs; the strength knobs of the
losses; the sweep section's config check."""

import copy
import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml

from maskbench.objectives.losses import LOSSES, get_loss, hyperparameters
from maskbench.objectives.needs import HYPERPARAMETERS
from maskbench.steps.nlu import table1 as table1_step
from maskbench.steps.nlu import tradeoff_report
from maskbench.tracks.nlu.report.tradeoff import (
    Change,
    best_ood_at_drop,
    long_form,
    pick_stability,
    select_point,
    summarise,
    verdict,
)
from maskbench.tracks.nlu.sweep_points import point_name
from maskbench.workflow.workflow_config import ConfigError, check_references

REPO = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ interpolation


def test_best_ood_at_an_id_drop_interpolates_where_the_curve_crosses_the_threshold():
    """Baseline ID 90. Curve (ID, OOD) in knob order: (89.5, 60), (88, 70), (84, 80).
    d = 1: threshold 89; only (89.5, 60) is feasible; the segment to (88, 70) crosses 89 at t = 1/3 -> 63.33.
    d = 2: threshold 88: (88, 70) is feasible (equality counts) -> 70.
    d = 5: threshold 85: (84, 80) is not; the segment (88, 70) -> (84, 80) crosses at t = 3/4 -> 77.5.
    d = 0.1: threshold 89.9: no point; the curve starts below it -> NaN."""
    curve = [(89.5, 60.0), (88.0, 70.0), (84.0, 80.0)]
    assert best_ood_at_drop(curve, 90.0, 1.0) == pytest.approx(60 + 10 / 3)
    assert best_ood_at_drop(curve, 90.0, 2.0) == pytest.approx(70.0)
    assert best_ood_at_drop(curve, 90.0, 5.0) == pytest.approx(77.5)
    assert math.isnan(best_ood_at_drop(curve, 90.0, 0.1))


def test_a_curve_that_comes_back_above_the_threshold_keeps_its_best_feasible_point():
    """(91, 50) feasible; (80, 90) not; (89, 55) feasible again at d = 2: best = max(50, 55, two crossings)."""
    curve = [(91.0, 50.0), (80.0, 90.0), (89.0, 55.0)]
    # crossings of ID 88: 91 -> 80 at t = 3/11 (OOD 50 + 40 * 3/11), 80 -> 89 at t = 8/9 (OOD 90 - 35 * 8/9)
    expected = max(50.0, 55.0, 50 + 40 * 3 / 11, 90 - 35 * 8 / 9)
    assert best_ood_at_drop(curve, 90.0, 2.0) == pytest.approx(expected)


def C(effect, se, n=3):
    return Change(effect, se, n)


@pytest.mark.parametrize("gains,moves,expected", [
    # +3 (se 1: beyond 2 se) at an ID cost of 0.5 point, 3 seeds
    ({0.1: (0.5, C(3.0, 1.0)), 0.3: (8.0, C(9.0, 1.0))}, {},
     "debiases (at 0.1, ID drop 0.50: OOD +3.00 ± 1.00 SE, 3 seeds)"),
    # +1.5 is within 2 se; +9 only at an ID cost of 8
    ({0.1: (0.5, C(1.5, 1.0)), 0.3: (8.0, C(9.0, 1.0))}, {0.1: [("a", C(5.0, 1.0)), ("b", C(-2.0, 1.0))]},
     "trades ID for OOD (at 0.3, ID drop 8.00: OOD +9.00 ± 1.00 SE, 3 seeds)"),
    # HANS halves swap (+40 / -39, se 2), overall flat
    ({0.1: (0.5, C(0.5, 1.0)), 0.3: (0.2, C(0.0, 1.0))},
     {0.1: [("a", C(0.5, 2.0))], 0.3: [("entailment", C(40.0, 2.0)), ("non-entailment", C(-39.0, 2.0))]},
     "trades OOD subsets (at 0.3, ID drop 0.20: entailment accuracy +40.00 ± 2.00 SE, 3 seeds)"),
    ({0.1: (0.5, C(0.5, 1.0))}, {0.1: [("a", C(0.5, 2.0)), ("b", C(-0.5, 2.0))]},
     "within noise (at 0.1, ID drop 0.50: OOD +0.50 ± 1.00 SE, 3 seeds)"),
    # -4 beyond 2 se, both labels down: it hurts
    ({0.1: (1.0, C(-4.0, 1.0)), 0.3: (2.0, C(-1.0, 1.0))}, {0.1: [("a", C(-3.0, 1.0)), ("b", C(-5.0, 1.0))]},
     "hurts (at 0.1, ID drop 1.00: OOD -4.00 ± 1.00 SE, 3 seeds)"),
    # one seed, no standard error: +2 at an ID cost of 5 (<= 5 counts) moves, and is no verdict
    ({0.1: (5.0, C(2.0, math.nan, 1))}, {},
     "moves: OOD up within the ID cost (at 0.1, ID drop 5.00: OOD +2.00, 1 seed, no SE: no verdict)"),
    # one seed whose gain is 0.00: nothing moved
    ({0.1: (0.0, C(0.0, math.nan, 1))}, {}, "within noise (at 0.1, ID drop 0.00: OOD +0.00, 1 seed, no SE)"),
    # two seeds, +3 beyond 2 se: moves, no verdict
    ({0.1: (0.5, C(3.0, 1.0, 2))}, {}, "moves: OOD up within the ID cost (at 0.1, ID drop 0.50: OOD +3.00 ± 1.00 SE, "
                                       "2 seeds: no verdict)"),
])
def test_the_verdict(gains, moves, expected):
    assert verdict(gains, 5.0, moves).text() == expected


def test_the_verdict_word_needs_three_seeds():
    """The same gains over 3 seeds and over 2 or 1: only 3 say "debiases"."""
    assert verdict({0.1: (0.5, C(3.0, 1.0, 3))}, 5.0, {}).word == "debiases"
    assert verdict({0.1: (0.5, C(3.0, 1.0, 2))}, 5.0, {}).word == "moves"
    assert verdict({0.1: (0.5, C(3.0, math.nan, 1))}, 5.0, {}).word == "moves"
    assert verdict({0.1: (8.0, C(-3.0, 1.0, 3))}, 5.0, {}).word == "hurts"


def test_a_curve_that_swaps_the_hans_halves_is_called_a_trade_and_shows_where():
    """md_y leaves the overall HANS accuracy as the baseline's, but at lr 0.3 the entailed half rises 96 -> 100 and
    the non-entailed half falls 6 -> 2 (means over two seeds; each change 4 beyond 2 standard errors,
    se = sqrt(2 / 2 + 2 / 2) = 1.41): the subsets trade, but two seeds make it "moves", the changes shown at 0.3."""
    evals = [e for e in hand_made_evals() if e["row"] == "baseline"]
    for seed, base_hans in ((1, 50), (2, 52)):
        for value, (ent, non) in ((0.1, (96, 6)), (0.3, (99, 1))):
            row = "md_y" if value == 0.1 else point_name("md_y", "learning_rate", value)
            evals.append(ev(row, "mnli", "mnli_dev", seed, 89.0 - (seed - 1) * 2))
            evals.append(ev(row, "mnli", "hans", seed, base_hans, {"entailment": ent + (seed - 1) * 2,
                                                                   "non-entailment": non + (seed - 1) * 2}))
    points = [{"point": "md_y", "task": "mnli", "method": "md_y", "knob": "learning_rate", "value": 0.1},
              {"point": point_name("md_y", "learning_rate", 0.3), "task": "mnli", "method": "md_y",
               "knob": "learning_rate", "value": 0.3}]
    rec = summarise(long_form(evals, points), [{"task": "mnli", "method": "md_y", "knob": "learning_rate"}],
                    {"mnli": "mnli_dev"}, [5]).iloc[0]
    assert rec["verdict"] == ("moves: OOD subsets traded (at 0.3, ID drop 1.00: entailment accuracy +4.00 ± 1.41 SE, "
                              "2 seeds: no verdict)") and rec["changes_at"] == pytest.approx(0.3)
    assert rec["change_entailment"] == pytest.approx(4.0) and rec["change_non-entailment"] == pytest.approx(-4.0)


def test_the_selection_rule_takes_the_strongest_value_within_delta():
    candidates = {0.01: 89.9, 0.03: 89.2, 0.1: 87.0, 0.3: 89.5}
    assert select_point(candidates, 90.0, 1.0) == 0.3          # the largest value within 1 point, not the nearest
    assert select_point({0.01: 89.9, 0.03: 89.2, 0.1: 87.0}, 90.0, 1.0) == 0.03
    assert select_point(candidates, 90.0, 0.05) is None        # nothing within 0.05 points


# ------------------------------------------------------------------------------------ from evaluation JSONs


def ev(row, task, eval_set, seed, acc, labels=None):
    metrics = {"accuracy": acc, "weighted_f1": acc - 1, "accuracy/heuristic=x": 0.0}
    metrics.update({f"accuracy/label={k}": v for k, v in (labels or {}).items()})
    return {"row": row, "task": task, "eval_set": eval_set, "seed": seed, "metrics": metrics}


def hand_made_evals():
    """Baseline ID 90 / 88 (seeds 1, 2), OOD 50 / 52, HANS halves 95/5 and 97/7. A mask row at lr 0.1 (its own
    Table 1 run) and two sweep points: lr 0.01 (ID -0.5, OOD +1) and lr 0.3 (ID -6, OOD +20, the halves move
    apart: the non-entailed half +45, the entailed half -5)."""
    evals = []
    table = {  # row: {seed: (id, ood, entailed, non-entailed)}
        "baseline": {1: (90, 50, 95, 5), 2: (88, 52, 97, 7)},
        "md_x": {1: (89, 55, 93, 17), 2: (87, 57, 95, 19)},
        point_name("md_x", "learning_rate", 0.01): {1: (89.5, 51, 95, 7), 2: (87.5, 53, 97, 9)},
        point_name("md_x", "learning_rate", 0.3): {1: (84, 70, 90, 50), 2: (82, 72, 92, 52)},
    }
    for row, seeds in table.items():
        for seed, (id_acc, ood, ent, non) in seeds.items():
            evals.append(ev(row, "mnli", "mnli_dev", seed, id_acc))
            evals.append(ev(row, "mnli", "hans", seed, ood, {"entailment": ent, "non-entailment": non}))
    return evals


POINTS = [{"point": "md_x", "task": "mnli", "method": "md_x", "knob": "learning_rate", "value": 0.1},
          {"point": "md_x@learning_rate~0.01", "task": "mnli", "method": "md_x", "knob": "learning_rate",
           "value": 0.01},
          {"point": "md_x@learning_rate~0.3", "task": "mnli", "method": "md_x", "knob": "learning_rate", "value": 0.3}]
LINES = [{"task": "mnli", "method": "md_x", "knob": "learning_rate"}]


def test_the_long_form_keeps_accuracy_and_its_per_label_halves_only():
    long = long_form(hand_made_evals(), POINTS)
    assert list(long.columns) == ["track", "task", "method", "knob", "value", "seed", "eval_set", "metric", "score"]
    assert set(long["metric"]) == {"accuracy", "accuracy/label=entailment", "accuracy/label=non-entailment"}
    assert len(long) == 4 * 2 * (1 + 3)  # 4 runs x 2 seeds x (ID accuracy + HANS accuracy and its two halves)
    base = long[(long["method"] == "baseline") & (long["eval_set"] == "hans") & (long["metric"] == "accuracy")]
    assert base["value"].isna().all() and sorted(base["score"]) == [50.0, 52.0]


def test_the_summary_by_hand():
    """Mean curve in lr order: 0.01 (88.5, 52), 0.1 (88, 56), 0.3 (83, 71); baseline ID 89, OOD 51.
    d = 1: threshold 88 -> 0.01 and 0.1 feasible -> 56. d = 5: threshold 84; 0.1 -> 0.3 crosses at t = 0.8 ->
    56 + 0.8 * 15 = 68. Largest gain at lr 0.3: 71 - 51 = 20; spread sqrt(2 + 2) = 2, standard error
    sqrt(2 / 2 + 2 / 2) = 1.41; HANS halves: non-entailed 5 -> 51 (+45), entailed 96 -> 91 (-5). lr 0.1 (ID -1)
    already gains 56 - 51 = 5 > 2 standard errors (2.83) within the largest drop (5): OOD up within the ID cost, but
    over two seeds only: "moves"; with drops up to 0.5 only, every gain costs more ID: up at a larger ID cost."""
    long = long_form(hand_made_evals(), POINTS)
    summary = summarise(long, LINES, {"mnli": "mnli_dev"}, [1, 5])
    assert len(summary) == 1
    rec = summary.iloc[0]
    assert rec["best_ood_id_drop_1"] == pytest.approx(56.0)
    assert rec["best_ood_id_drop_5"] == pytest.approx(68.0)
    assert rec["best_value"] == pytest.approx(0.3) and rec["ood_gain"] == pytest.approx(20.0)
    assert rec["ood_gain_spread"] == pytest.approx(2.0) and rec["ood_gain_se"] == pytest.approx(math.sqrt(2))
    assert rec["change_non-entailment"] == pytest.approx(45.0) and rec["change_entailment"] == pytest.approx(-5.0)
    # two seeds: what moved, with its numbers, and no verdict ("debiases" needs 3 seeds: report.evidence)
    assert rec["verdict"] == ("moves: OOD up within the ID cost (at 0.1, ID drop 1.00: OOD +5.00 ± 1.41 SE, 2 seeds: "
                              "no verdict)") and rec["id_drop"] == pytest.approx(6.0)
    assert rec["verdict_word"] == "moves" and rec["verdict_at"] == pytest.approx(0.1)
    assert summarise(long, LINES, {"mnli": "mnli_dev"}, [0.5]).iloc[0]["verdict"] == (
        "moves: OOD up at a larger ID cost (at 0.3, ID drop 6.00: OOD +20.00 ± 1.41 SE, 2 seeds: no verdict)")
    # per seed, each against its own baseline: seed 1 (ID 90): d = 1 -> 55 at lr 0.1 (ID 89) ; seed 2 (ID 88):
    # threshold 87 -> 57 at lr 0.1 (87); spread of (55, 57) = sqrt(2)
    assert rec["best_ood_id_drop_1_std"] == pytest.approx(math.sqrt(2))


def test_three_seeds_beyond_two_standard_errors_debias():
    """A third seed at every run's mean keeps the means (baseline 89 / 51, lr 0.1 88 / 56) and makes every std 1:
    the gain at lr 0.1, 5, has se sqrt(1 / 3 + 1 / 3) = 0.82; 5 > 1.63 at an ID drop of 1 <= 5: "debiases"."""
    third = {"baseline": (89, 51, 96, 6), "md_x": (88, 56, 94, 18),
             point_name("md_x", "learning_rate", 0.01): (88.5, 52, 96, 8),
             point_name("md_x", "learning_rate", 0.3): (83, 71, 91, 51)}
    evals = hand_made_evals()
    for row, (id_acc, ood, ent, non) in third.items():
        evals += [ev(row, "mnli", "mnli_dev", 3, id_acc),
                  ev(row, "mnli", "hans", 3, ood, {"entailment": ent, "non-entailment": non})]
    rec = summarise(long_form(evals, POINTS), LINES, {"mnli": "mnli_dev"}, [1, 5]).iloc[0]
    assert rec["verdict"] == "debiases (at 0.1, ID drop 1.00: OOD +5.00 ± 0.82 SE, 3 seeds)"
    assert rec["n_seeds"] == 3 and rec["verdict_word"] == "debiases"


def test_a_pick_far_from_the_boundary_survives_every_seed_resample():
    # paired seeds: the value's ID accuracy equals the baseline's on each seed, so every resample keeps it; 0.3 is
    # 15 points below on both seeds and never feasible
    ids = {0.1: {1: 80.0, 2: 70.0}, 0.3: {1: 65.0, 2: 55.0}}
    assert pick_stability(ids, {1: 80.0, 2: 70.0}, delta=1.0) == 1.0


def test_a_pick_at_the_boundary_flips_in_the_resamples_that_cross_it():
    # all seeds: mean 76.0 against 76.5 - 1 -> 0.1 picked. Seeds {1, 1}: 80 >= 78, kept; {2, 2}: 72 < 73, None;
    # {1, 2} or {2, 1}: as all seeds. Drawn with replacement: kept with probability 3/4
    ids = {0.1: {1: 80.0, 2: 72.0}}
    base = {1: 79.0, 2: 74.0}
    assert select_point({0.1: 76.0}, 76.5, 1.0) == 0.1
    assert abs(pick_stability(ids, base, delta=1.0, resamples=4000) - 0.75) < 0.03
    assert pick_stability(ids, base, delta=1.0) == pick_stability(ids, base, delta=1.0)  # seeded: reproducible
    assert math.isnan(pick_stability({0.1: {3: 1.0}}, base, delta=1.0))  # no shared seed


def test_the_step_writes_tables_figures_and_the_selection(tmp_path):
    evals = []
    for i, data in enumerate(hand_made_evals()):
        path = tmp_path / f"e{i}.json"
        path.write_text(json.dumps(data))
        evals.append(str(path))
    figure = tmp_path / "fig" / "mnli_hans.png"
    out = {k: tmp_path / f"{k}.csv" for k in ("long", "summary", "selection")}
    assert tradeoff_report.main(["--evals", *evals, "--points", json.dumps(POINTS), "--lines", json.dumps(LINES),
                                 "--id-sets", json.dumps({"mnli": "mnli_dev"}), "--delta", "1", "--drops", "1", "5",
                                 "--out-csv", str(out["long"]), "--out-summary", str(out["summary"]),
                                 "--out-summary-md", str(tmp_path / "summary.md"),
                                 "--out-selection", str(out["selection"]), "--figures-dir", str(figure.parent),
                                 "--figures", "mnli:hans"]) == 0
    selection = pd.read_csv(out["selection"])
    # baseline ID 89, delta 1: lr 0.01 (88.5) and 0.1 (88) are within, 0.3 (83) is not -> the strongest is 0.1
    assert selection.to_dict("records")[0] == {
        "task": "mnli", "method": "md_x", "knob": "learning_rate", "value": 0.1, "point": "md_x", "id_mean": 88.0,
        "baseline_id": 89.0, "delta": 1.0, "within_delta": True, "candidates": "0.01 0.1 0.3",
        "pick_stability": 1.0}  # every seed resample keeps 0.1 (each seed alone: within 1 point, 0.3 never)
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = (tmp_path / "summary.md").read_text()
    assert "| mnli | md_x | learning_rate | hans | 0.01 0.1 0.3 | 51.00 ± 1.41 | 56.00 ± 1.41 |" in md
    assert ("| **moves: OOD up within the ID cost** (at 0.1, ID drop 1.00: OOD +5.00 ± 1.41 SE, 2 seeds: no "
            "verdict) |") in md and "debiases" not in md

    # Table 1 with the selected row: the point's scores beside the row's own, labelled "(selected)"
    columns = {"mnli_val": {"task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy"},
               "hans": {"task": "mnli", "eval_set": "hans", "metric": "accuracy"}}
    selection.loc[0, ["value", "point"]] = [0.01, "md_x@learning_rate~0.01"]  # as if delta had picked lr 0.01
    selection.to_csv(out["selection"], index=False)
    assert table1_step.main(["--evals", *evals, "--columns", json.dumps(columns), "--rows",
                             json.dumps(["baseline", "md_x"]), "--selected", str(out["selection"]),
                             "--out-csv", str(tmp_path / "t.csv"), "--out-md", str(tmp_path / "t.md"),
                             "--out-tex", str(tmp_path / "t.tex")]) == 0
    table = pd.read_csv(tmp_path / "t.csv")
    assert list(dict.fromkeys(table["row"])) == ["baseline", "md_x", "md_x_selected"]
    picked = table[(table["row"] == "md_x_selected") & (table["column"] == "hans")].iloc[0]
    assert picked["mean"] == pytest.approx(52.0) and picked["n_seeds"] == 2
    own = table[(table["row"] == "md_x") & (table["column"] == "hans")].iloc[0]
    assert own["mean"] == pytest.approx(56.0)
    assert "md_x (selected)" in (tmp_path / "t.md").read_text()


# ------------------------------------------------------------------------------------------- loss knobs


def test_the_loss_hyperparameter_table_matches_the_losses():
    assert {name: hyperparameters(name) for name in LOSSES} == HYPERPARAMETERS


def test_the_strength_knobs_of_poe_and_reweighting_by_hand():
    torch.manual_seed(0)
    logits, labels = torch.randn(5, 3), torch.tensor([0, 1, 2, 1, 0])
    bias = torch.softmax(torch.randn(5, 3), dim=1)
    ce = F.cross_entropy(logits, labels)
    # poe: bias_weight 0 -> CE; 1 -> the default; 0.5 -> CE(log softmax z + 0.5 log p_b)
    assert torch.allclose(get_loss("poe", bias_weight=0.0)(logits, labels, bias_probs=bias), ce)
    assert torch.equal(get_loss("poe", bias_weight=1.0)(logits, labels, bias_probs=bias),
                       get_loss("poe")(logits, labels, bias_probs=bias))
    half = F.cross_entropy(F.log_softmax(logits, 1) + 0.5 * bias.log(), labels)
    assert torch.allclose(get_loss("poe", bias_weight=0.5)(logits, labels, bias_probs=bias), half)
    # reweight: strength s -> weights 1 - s p_b(y), normalised
    p_y = bias[torch.arange(5), labels]
    per = F.cross_entropy(logits, labels, reduction="none")
    for s in (0.0, 0.5):
        w = 1 - s * p_y
        assert torch.allclose(get_loss("reweight", strength=s)(logits, labels, bias_probs=bias), (w * per).sum() / w.sum())
    with pytest.raises(ValueError, match="strength must lie in"):
        get_loss("reweight", strength=1.5)(logits, labels, bias_probs=bias)
    with pytest.raises(ValueError, match="bias_weight must be >= 0"):
        get_loss("poe", bias_weight=-1.0)(logits, labels, bias_probs=bias)


# ----------------------------------------------------------------------------------------- config check

DEFAULT = yaml.safe_load((REPO / "tests/configs/synthetic.yaml").read_text())


@pytest.mark.parametrize("edit,message", [
    (lambda t: t["sweeps"].update(md_hyponly={"temperature": [2.0]}),
     "tradeoff.sweeps.md_hyponly.temperature is not a strength knob of this row; choose one of ['learning_rate', "
     "'epochs', 'l1_lambda', 'bias_weight']"),
    (lambda t: t["sweeps"].update(sd_undertrained={"l1_lambda": [2.0]}),
     "tradeoff.sweeps.sd_undertrained.l1_lambda is not a strength knob of this row"),
    (lambda t: t["sweeps"].update(md_hyponly={"learning_rate": []}), "tradeoff.sweeps.md_hyponly.learning_rate has no values"),
    (lambda t: t["sweeps"].update(md_typo={"learning_rate": [0.1]}), "tradeoff.sweeps.md_typo is not a masked_debiasing"),
    (lambda t: t["sweeps"].update(sd_undertrained={"strength": [1.5]}), "tradeoff.sweeps.sd_undertrained.strength has 1.5"),
    (lambda t: t["sweeps"].update(md_hyponly={"epochs": [1.5]}), "tradeoff.sweeps.md_hyponly.epochs has 1.5"),
])
def test_a_bad_sweep_stops_at_the_config_check(edit, message):
    config = copy.deepcopy(DEFAULT)
    edit(config["tradeoff"])
    with pytest.raises(ConfigError, match=re.escape(f"config: {message}")):
        check_references(config)


def test_the_readme_shows_the_curves_and_the_picks():
    from maskbench.tracks.nlu.report.readme_sections import selection_markdown, tradeoff_curves_markdown

    md = tradeoff_curves_markdown(long_form(hand_made_evals(), POINTS))
    lines = md.splitlines()
    assert lines[2] == "| method | knob | value | mnli_dev | hans | hans entailment | hans non-entailment |"
    assert lines[4] == "| baseline | – |  | 89.0 ± 1.4 | 51.0 ± 1.4 | 96.0 ± 1.4 | 6.0 ± 1.4 |"
    assert "| md_x | learning_rate | 0.3 | 83.0 ± 1.4 | 71.0 ± 1.4 | 91.0 ± 1.4 | 51.0 ± 1.4 |" in lines
    picks = pd.DataFrame([{"task": "mnli", "method": "md_x", "knob": "learning_rate", "value": math.nan,
                           "point": "", "id_mean": math.nan, "baseline_id": 89.0, "delta": 0.5,
                           "within_delta": False, "candidates": "0.01 0.1 0.3"}])
    assert "| mnli | md_x | learning_rate | 0.01 0.1 0.3 | none | – | 89.0 | no (δ = 0.5) |" in selection_markdown(picks)


def test_a_rows_own_run_sits_on_every_one_of_its_knobs_lines():
    points = POINTS + [{"point": "md_x", "task": "mnli", "method": "md_x", "knob": "bias_weight", "value": 1.0}]
    long = long_form(hand_made_evals(), points)
    hans = long[(long.method == "md_x") & (long.eval_set == "hans") & (long.metric == "accuracy") & (long.seed == 1)]
    assert sorted(zip(hans.knob, hans.value, hans.score, strict=True)) == [
        ("bias_weight", 1.0, 55.0), ("learning_rate", 0.01, 51.0), ("learning_rate", 0.1, 55.0),
        ("learning_rate", 0.3, 70.0)]


def test_selection_rows_are_labelled_after_their_row():
    from maskbench.tracks.nlu.report.table1_builder import row_label

    assert row_label("md_hyponly_selected") == "HypOnly MD (selected)"
    assert row_label("sd_x_selected", {"sd_x": "My SD"}) == "My SD (selected)"
    assert row_label("md_new") == "md_new" and row_label("baseline") == "Baseline"


def tiny_long() -> pd.DataFrame:
    """A hand-made long form: the baseline (ID 90 / 88, OOD 50 / 52) and md_x at lr 0.01 and 0.3, two seeds."""
    rows = []
    for method, knob, value, (id1, ood1) in (("baseline", "", math.nan, (90.0, 50.0)),
                                             ("md_x", "learning_rate", 0.01, (89.0, 55.0)),
                                             ("md_x", "learning_rate", 0.3, (84.0, 70.0))):
        for seed in (1, 2):
            for eval_set, score in (("mnli_dev", id1 - 2 * (seed - 1)), ("hans", ood1 + 2 * (seed - 1))):
                rows.append({"track": "nlu", "task": "mnli", "method": method, "knob": knob, "value": value,
                             "seed": seed, "eval_set": eval_set, "metric": "accuracy", "score": score})
    return pd.DataFrame(rows)


@pytest.mark.parametrize("paper", [
    {"baseline": (84.38, 61.97), "md_x": (82.0, 68.0)},  # the paper's baseline star and the method's diamond
    {"baseline": (84.38, 61.97)},                        # the star alone: no diamond drawn, none in the legend
    {"md_x": (math.nan, 68.0)},                          # a point the paper lacks: nothing drawn, nothing named
    {},
])
def test_the_figure_names_every_marker_and_its_title_fits_the_canvas(paper):
    """Every marker style drawn (filled dot, filled star, hollow star, hollow diamond) has a legend entry and every
    legend entry's marker is drawn; the title (two lines, the task as its data is) and the legend lie inside the
    canvas (a one-line title wider than the axes was clipped at its start)."""
    from figure_checks import drawn, marker_styles_drawn, marker_styles_named, outside_canvas

    from maskbench.tracks.nlu.report.tradeoff import build_tradeoff_figure

    fig = build_tradeoff_figure(tiny_long(), "mnli", "mnli_dev", "hans", LINES, paper_points=paper,
                                task_name="synthetic MNLI")
    drawn(fig)
    ax = fig.axes[0]
    assert marker_styles_drawn(ax) == marker_styles_named(ax)
    fills = {filled for _, filled in marker_styles_drawn(ax)}  # hollow markers: the paper's points
    assert fills == ({True, False} if "baseline" in paper or "md_x" in paper and not math.isnan(paper["md_x"][0])
                     else {True})
    labels = sorted(t.get_text() for t in ax.get_legend().get_texts())
    expected = ["baseline", "md_x (learning_rate)"]
    if "baseline" in paper:
        expected.append("paper A's baseline (its BERT-base, its data)")
    if not any(math.isnan(x) for x in paper.get("md_x", (math.nan,))):
        expected.append("paper A's reported point (its BERT-base, its data)")
    assert labels == sorted(expected)
    assert ax.get_title() == ("synthetic MNLI: ID against OOD along each method's strength knob\n"
                              "(mean ± std over seeds)")
    assert outside_canvas(fig) == []
    box, canvas = ax.get_legend().get_window_extent(fig.canvas.get_renderer()), fig.bbox
    assert box.x0 >= canvas.x0 and box.x1 <= canvas.x1 and box.y0 >= canvas.y0 and box.y1 <= canvas.y1


def test_the_figure_checks_catch_an_unnamed_hollow_star_and_a_clipped_title():
    """The checks themselves, on a figure drawn wrong on purpose: a hollow star outside the legend, and a one-line
    title far wider than the canvas."""
    from figure_checks import marker_styles_drawn, marker_styles_named, outside_canvas
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3, 2))
    ax = fig.subplots()
    ax.plot([1, 2], [1, 2], marker="o", label="a line")
    ax.scatter([1.5], [1.5], marker="*", facecolors="none", edgecolors="black")  # no label
    ax.legend()
    ax.set_title("a title much wider than its three-inch canvas, so that its first letters fall off the left edge")
    assert len(marker_styles_drawn(ax) - marker_styles_named(ax)) == 1
    assert (marker_styles_drawn(ax) - marker_styles_named(ax)).pop()[1] is False  # the hollow one
    assert outside_canvas(fig) == [ax.get_title()]
