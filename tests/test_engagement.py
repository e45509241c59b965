"""Engagement (maskbench.report.engagement), its step, Table 1's marking and the four papers' verdict table
(maskbench.matrix.verdict): hand-computed values."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from maskbench.matrix.cells import COLUMNS
from maskbench.matrix.verdict import (
    CLAIMS,
    DEBIASES,
    GAIN_ID_UNMEASURED,
    HURTS,
    NO_EFFECT,
    NOT_ENGAGED,
    NOT_RUN,
    TRADES,
    paired,
    paper_figures,
    verdict_table,
    word,
)
from maskbench.report import engagement
from maskbench.steps.nlu import engagement as engagement_step
from maskbench.steps.nlu.table1 import engagement_labels


def test_mask_engagement_threshold():
    assert engagement.mask(0.999).engaged is False          # keeps 99.9 %: not engaged
    assert engagement.mask(0.9989).engaged is True
    found = engagement.mask(0.75)
    assert found.measures["pruned_share"] == pytest.approx(0.25)
    assert found.reason == "prunes 25 % of its weights"
    with pytest.raises(ValueError, match="density must be within"):
        engagement.mask(1.5)


def test_fine_tuning_engagement_and_trend():
    # 3 labels: chance 33.3, engaged from 38.3
    flat = engagement.fine_tuning([40.0, 40.5], 3)
    assert flat.engaged and flat.measures["trend"] == "flat"
    rising = engagement.fine_tuning([40.0, 41.5], 3)
    assert rising.measures["trend"] == "still rising"
    at_chance = engagement.fine_tuning([33.0, 36.0], 3)
    assert not at_chance.engaged and at_chance.word == "not engaged"
    assert engagement.fine_tuning([50.0], 2).measures["trend"] == "one epoch"
    assert engagement.fine_tuning([54.9], 2).engaged is False  # chance 50, margin 5
    assert engagement.fine_tuning([55.0], 2).engaged is True


def test_sparsity_target_and_loss_trend():
    assert engagement.sparsity_target(0.495, 0.5).engaged
    assert not engagement.sparsity_target(0.45, 0.5).engaged
    # eight points: the tail is the last two (25 %): (0.5 - 1.0) / 1.0
    curve = [{"train_loss": v} for v in (2, 2, 2, 2, 2, 2, 1.0, 0.5)] + [{"dev_accuracy": 40.0}]
    assert engagement.loss_trend(curve) == pytest.approx(-0.5)
    assert math.isnan(engagement.loss_trend([{"train_loss": 1.0}]))


def test_engagement_step_reads_runs(tmp_path):
    ft = tmp_path / "ft"
    ft.mkdir()
    (ft / "train_summary.json").write_text(json.dumps({"labels": ["a", "b", "c"]}))
    pd.DataFrame({"step": [5, 10, 10, 20, 20], "epoch": [1, 1, 1, 2, 2],
                  "dev_accuracy": [None, None, 45.0, None, 47.5]}).to_csv(ft / "train_curve.csv", index=False)
    search = tmp_path / "m.search.json"
    search.write_text(json.dumps({"density": 1.0, "steps": 94, "curve": [{"train_loss": 1.0}, {"train_loss": 0.9}]}))
    runs = [{"row": "baseline", "task": "mnli", "seed": 1, "kind": "fine_tuning", "path": str(ft / "train_summary.json")},
            {"row": "md", "task": "mnli", "seed": 1, "kind": "mask_search", "path": str(search)}]
    csv, md = tmp_path / "e.csv", tmp_path / "e.md"
    assert engagement_step.main(["--runs", json.dumps(runs), "--out-csv", str(csv), "--out-md", str(md)]) == 0
    table = pd.read_csv(csv)
    assert list(table.word) == ["engaged", "not engaged"]
    assert table.loc[0, "trend"] == "still rising" and table.loc[0, "dev_accuracy"] == 47.5
    assert table.loc[1, "loss_tail_change"] == pytest.approx(-0.1)
    assert "| mnli | md | 1 | not engaged | seed 1: keeps 100 % of its weights" in md.read_text()
    labels = engagement_labels(table, ["baseline", "md"], {"md": "PoE mask"})
    assert labels["md"] == "PoE mask (not engaged)" and "baseline" not in labels
    # not engaged on one of two tasks: the label says where
    two = pd.DataFrame({"row": ["md", "md"], "task": ["mnli", "qqp"], "word": ["not engaged", "engaged"]})
    assert engagement_labels(two, ["md"], {})["md"] == "md (not engaged on MNLI)"


def test_a_selected_row_is_labelled_by_its_points_runs():
    from maskbench.steps.nlu.table1 import selected_points

    # the row's own run engaged; the point the rule picked on MNLI (its learning rate 0.01) kept every weight
    runs = pd.DataFrame({"row": ["md", "md@learning_rate~0.01", "md@learning_rate~0.1", "md@learning_rate~0.01"],
                         "task": ["mnli", "mnli", "mnli", "qqp"],
                         "word": ["engaged", "not engaged", "engaged", "engaged"]})
    selection = pd.DataFrame({"task": ["mnli", "qqp"], "method": ["md", "md"], "within_delta": [True, True],
                              "point": ["md@learning_rate~0.01", "md@learning_rate~0.01"]})
    picked = selected_points(selection)
    assert picked == {"md_selected": {"mnli": "md@learning_rate~0.01", "qqp": "md@learning_rate~0.01"}}
    labels = engagement_labels(runs, ["md", "md_selected"], {"md_selected": "PoE mask (selected)"}, picked)
    assert labels["md_selected"] == "PoE mask (selected) (not engaged on MNLI)" and "md" not in labels
    # picked at the row's own value on both tasks: the row's own runs (engaged), no label
    own = selection.assign(point="md")
    assert "md_selected" not in engagement_labels(runs, ["md_selected"], {}, selected_points(own))
    # no point within delta on QQP: the row is MNLI's point alone, not engaged wherever it has a run
    mnli_only = selection.assign(within_delta=[True, False])
    assert engagement_labels(runs, ["md_selected"], {}, selected_points(mnli_only))["md_selected"] == \
        "md (selected) (not engaged)"


def test_verdict_words():
    assert word(3.0, 1.0, 3, 2.0, True, True) == DEBIASES
    assert word(3.0, 1.0, 3, 5.01, True, True) == TRADES
    assert word(3.0, 1.0, 3, 9.0, False, True) == GAIN_ID_UNMEASURED
    assert word(2.0, 1.0, 3, 0.0, True, True) == NO_EFFECT      # exactly 2 SE: not beyond
    assert word(-3.0, 1.0, 3, 0.0, True, True) == HURTS
    assert word(30.0, 1.0, 2, 0.0, True, True) == "no verdict (2 seeds)"
    assert word(30.0, 1.0, 3, 0.0, True, False) == NOT_ENGAGED


def test_the_legend_defines_the_four_main_words_and_every_other_word_the_table_uses():
    from maskbench.matrix.verdict import legend

    four = ["debiases", "trades ID for OOD", "not engaged", "no effect shown"]
    assert [part.split("**")[1] for part in legend([]).split("; ")] == four
    text = legend([GAIN_ID_UNMEASURED, "no verdict (1 seed)", DEBIASES])
    assert [part.split("**")[1] for part in text.split("; ")] == four + [GAIN_ID_UNMEASURED, "no verdict"]
    assert "**debiases** = gain beyond 2 SE over ≥ 3 seeds at an ID cost ≤ 5 points" in text
    assert ("**not engaged** = a mask that keeps ≥ 99.9 % on a seed or misses its sparsity target by over 1 point, or, for an "
            "OOD claim, a baseline whose ID dev score is within 5 points of chance") in text
    assert "**no verdict** = fewer than 3 paired seeds: the numbers, no word" in text


def test_a_cell_with_pipes_stays_one_cell():
    from maskbench.matrix.verdict import markdown

    table = pd.DataFrame([{"paper": "B", "claim": "c", "paper_figure": "mean |SEAT 6–8| 0.63 → 0.51", "verdict": NOT_RUN,
                           "engagement": "", "score": "bias"}])
    row = markdown(table).splitlines()[2]
    assert row == "| B | c | mean \\|SEAT 6–8\\| 0.63 → 0.51 | not run in this config | – | **not run here** |"


def test_paired_gain_and_se():
    base = pd.DataFrame({"seed": [1, 2, 3], "ood": [50.0, 52.0, 54.0]})
    mine = pd.DataFrame({"seed": [3, 1, 2], "ood": [58.0, 51.0, 55.0]})
    # per seed: +1, +3, +4 -> mean 8/3, sample sd sqrt(7/3), SE sqrt(7/9)
    gain, se, n = paired(base, mine, "ood", None)
    assert (gain, n) == (pytest.approx(8 / 3), 3) and se == pytest.approx(math.sqrt(7 / 9))
    # towards an ideal of 0: |b| - |m| per seed
    bias = paired(base.rename(columns={"ood": "b"}), pd.DataFrame({"seed": [1, 2, 3], "b": [40.0, 52.0, 60.0]}),
                  "b", 0.0)
    assert bias[0] == pytest.approx((10 + 0 - 6) / 3)


def _cell(**values) -> dict:
    row = {c: "" for c in COLUMNS}
    row.update({"method_paper": "D", "native": True, "knob": "", "value": math.nan, "id": math.nan,
                "ood": math.nan, "bias": math.nan, "id_dev": math.nan, "bias_ideal": 10.0, "density": 1.0,
                "train_seconds": 0.0, "data": "real", "model": "mlp"})
    row.update(values)
    return row


def test_verdict_table_on_cells():
    cells = []
    for seed, (b_ood, b_id, m_ood, m_id) in {1: (36, 99, 80, 82), 2: (30, 99, 81, 83), 3: (44, 99, 82, 81)}.items():
        cells.append(_cell(benchmark="biased_mnist_0.99", method="baseline", method_paper="-", native=False, seed=seed,
                           ood=b_ood, id=b_id, id_dev=b_id))
        cells.append(_cell(benchmark="biased_mnist_0.99", method="ffw", seed=seed, ood=m_ood, id=m_id, id_dev=m_id,
                           density=0.42))
    table = verdict_table(pd.DataFrame(cells), delta=1.0)
    d = table[table.paper == "D"].iloc[0]
    # gains 44, 51, 38: mean 44.33; ID costs 17, 16, 18: mean 17 > 5 -> trades ID for OOD
    assert d.gain == pytest.approx(133 / 3) and d.id_cost == pytest.approx(17.0) and d.n == 3
    assert d.verdict == TRADES and d.engagement.startswith("engaged")
    assert set(table[table.paper != "D"].verdict) == {"not run here"}
    assert len(table) == len(CLAIMS)
    # a gate set that keeps everything on one seed: not engaged, whatever the gain
    closed = pd.DataFrame(cells)
    closed.loc[(closed.method == "ffw") & (closed.seed == 2), "density"] = 0.9995
    assert verdict_table(closed, 1.0).set_index("paper").loc["D", "verdict"] == NOT_ENGAGED


def test_a_sparsity_knob_must_reach_its_target():
    cells = []
    for seed in (1, 2, 3):
        cells.append(_cell(benchmark="mnli_hans", method="baseline", method_paper="-", native=False, seed=seed,
                           ood=50.0, id=55.0, id_dev=55.0, bias_ideal=math.nan))
        cells.append(_cell(benchmark="mnli_hans", method="mask_training", method_paper="C", seed=seed, knob="sparsity",
                           value=0.5, ood=53.0 + seed / 10, id=54.0, id_dev=54.5, density=0.6 if seed == 2 else 0.5,
                           bias_ideal=math.nan))
    row = verdict_table(pd.DataFrame(cells), 1.0).set_index("paper").loc["C"]
    # seed 2 reached 40 % of a 50 % target: not engaged
    assert row.verdict == NOT_ENGAGED and "sparsity against a 50 % target" in row.engagement


def test_paper_figures_from_reference_tables():
    figures = paper_figures()
    # paper D Table 2, rho 0.99: vanilla 88.46, FFW 97.79; paper A: HypOnly MD 64.26 vs baseline 61.97 on HANS
    assert figures["D"].startswith("unbiased test 88.5 → 97.8")
    assert figures["A"].startswith("HANS +2.3 at MNLI -1.5")


def test_the_verdict_table_prices_each_claim_at_the_papers_scale(tmp_path):
    from maskbench.matrix.verdict import markdown
    from maskbench.steps.matrix.verdict import caption, read_prices

    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"jobs": {}, "gpu_hours_by_paper": {"priced_with": "gpu_check.json",
                                                                    "priced_on": "NVIDIA H200",
                                                                    "priced_at": "abc1234", "A": 1385, "D": 65}}))
    prices, priced_with, priced_on = read_prices(facts)
    assert prices == {"A": 1385.0, "D": 65.0} and (priced_with, priced_on) == ("gpu_check.json", "NVIDIA H200")
    cells = [_cell(benchmark="biased_mnist_0.99", method="baseline", method_paper="-", native=False, seed=1, ood=30.0,
                   id=99.0, id_dev=99.0)]
    table = verdict_table(pd.DataFrame(cells), 1.0, prices=prices).set_index("paper")
    # the caption names the card the GPU check ran on, as the record gives it, and defines the words the table uses
    text = caption(table, priced_with, priced_on)
    assert "rates of results/benchmarks/gpu_check.json (one NVIDIA H200; docs/cost.md)" in text
    assert "**not run here** = the config has no cell for the claim" in text and "no verdict" not in text
    assert table.loc["A", "paper_scale_gpu_hours"] == 1385.0 and math.isnan(table.loc["B", "paper_scale_gpu_hours"])
    text = markdown(table.reset_index())
    assert text.splitlines()[0].endswith("| verdict | at the paper's scale |")
    rows = {line.split(" | ")[0]: line for line in text.splitlines()[2:]}
    assert rows["| A"].endswith("| 1,385 GPU-h |") and rows["| B"].endswith("| – |")
    # without prices the column is left out
    assert "paper's scale" not in markdown(verdict_table(pd.DataFrame(cells), 1.0))
    assert read_prices(None) == ({}, "", "")
