"""The budget study's table, selection rule and figure (maskbench.tracks.nlu.report.budget_study, step
nlu.budget_study) on runs written by hand: the rule reads dev accuracy and engagement only."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from maskbench.steps.nlu import budget_study as step
from maskbench.tracks.nlu.report.budget_study import (
    baseline_curve,
    mask_points,
    select_baseline,
    select_mask_point,
    study_table,
)


def _finetune(folder, n_train, devs):
    folder.mkdir(parents=True)
    (folder / "train_summary.json").write_text(json.dumps({"n_train": n_train, "final_dev_accuracy": devs[-1]}))
    rows = []
    for epoch, dev in enumerate(devs, start=1):
        rows += [{"step": 10 * epoch - 5, "epoch": epoch, "dev_accuracy": None},
                 {"step": 10 * epoch, "epoch": epoch, "dev_accuracy": dev}]
    pd.DataFrame(rows).to_csv(folder / "train_curve.csv", index=False)
    return str(folder / "train_summary.json")


def _eval(path, accuracy, ent=None):
    metrics = {"accuracy": accuracy}
    if ent is not None:
        metrics |= {"accuracy/label=entailment": ent, "accuracy/label=non-entailment": 100 - ent}
    path.write_text(json.dumps({"metrics": metrics}))
    return str(path)


def _runs(tmp_path):
    runs = []
    # baseline: 1,000 pairs plateaus at 50 after 2 epochs; 3,000 pairs reaches 55 after 3 (best)
    curves = {"small": (1000, {1: [45, 50.0, 50.5], 2: [45, 50.5, 50.0], 3: [46, 49.5, 50.5]}),
              "big": (3000, {1: [50, 54, 55.0], 2: [51, 54, 55.5], 3: [49, 54, 54.5]})}
    for name, (n, per_seed) in curves.items():
        for seed, devs in per_seed.items():
            runs.append({"kind": "baseline", "train_set": name, "seed": seed,
                         "summary": _finetune(tmp_path / f"b_{name}_{seed}", n, devs)})
    for seed in (1, 2, 3):
        start = tmp_path / f"start{seed}"
        summary = _finetune(start, 3000, [56.0])
        runs.append({"kind": "start", "seed": seed, "summary": summary,
                     "evals": {"hans": _eval(tmp_path / f"start{seed}_hans.json", 50.0 + seed, 90.0)}})
        # lr 0.03, 1 epoch: keeps everything; lr 0.1, 1 epoch: prunes 2 %, dev 50 (drop 6 > 5); lr 0.03, 3 epochs:
        # prunes 1 %, dev 53 (drop 3)
        for row in ("ce", "poe"):
            for lr, epochs, steps, density, dev in ((0.03, 1, 10, 1.0, 56.0), (0.1, 1, 10, 0.98, 50.0),
                                                    (0.03, 3, 30, 0.99, 53.0)):
                path = tmp_path / f"m_{row}_{lr}_{epochs}_{seed}.search.json"
                path.write_text(json.dumps({"density": density, "steps": steps, "final_dev_accuracy": dev,
                                            "meta": {"loss": row}, "curve": [{"train_loss": 1.0}, {"train_loss": 0.8}]}))
                runs.append({"kind": "mask", "row": row, "learning_rate": lr, "epochs": epochs, "seed": seed,
                             "summary": str(path),
                             "evals": {"hans": _eval(tmp_path / f"m_{row}_{lr}_{epochs}_{seed}_hans.json",
                                                     52.0 + seed, 80.0)}})
    return runs


def test_selection_reads_dev_and_engagement(tmp_path):
    table = study_table(_runs(tmp_path))
    curve = baseline_curve(table)
    big3 = curve[(curve.train_set == "big") & (curve.epoch == 3)].iloc[0]
    assert big3["mean"] == pytest.approx(55.0) and big3["count"] == 3
    # best mean 55.0 (big, epoch 3); within 1 point: big epoch 2 (54.0, 6,000 pairs seen) and big epoch 3; the small
    # set peaks at 50.33: the cheapest within the plateau is big at 2 epochs
    assert select_baseline(curve, 1.0) == {"train_set": "big", "n_train": 3000, "epochs": 2, "dev_mean": 54.0,
                                           "best_dev_mean": 55.0, "plateau": 1.0}
    points = mask_points(table)
    assert list(points[points.row == "ce"].all_engaged) == [False, True, True]  # ordered by lr, epochs
    pick = select_mask_point(points, 5.0)
    # 0.03 x 1 never engages; 0.1 x 1 engages at a 6-point drop (> 5); 0.03 x 3 engages at 3
    assert pick["found"] and (pick["learning_rate"], pick["epochs"], pick["steps"]) == (0.03, 3, 30)
    assert pick["worst_drop"] == pytest.approx(3.0)
    # with a 10-point bound the cheapest engaged point is 0.1 x 1 (10 steps beat 30)
    assert select_mask_point(points, 10.0)["learning_rate"] == 0.1
    # with a 1-point bound none qualifies: the study says so
    assert select_mask_point(points, 1.0)["found"] is False


def test_step_writes_table_rule_and_figure(tmp_path):
    runs = tmp_path / "runs.json"
    runs.write_text(json.dumps(_runs(tmp_path)))
    out = tmp_path / "out"
    assert step.main(["--runs", str(runs), "--out-csv", str(out / "s.csv"), "--out-md", str(out / "s.md"),
                      "--figure", str(out / "s.png")]) == 0
    md = (out / "s.md").read_text()
    assert "**big (3,000 pairs), 2 epoch(s)**, dev 54.0" in md
    assert "| big | 3,000 | 2 | 6,000 | 54.0 ± 0.0 | 3 |" in md
    assert "**learning rate 0.03, 3 epoch(s) (30 steps)**, worst dev drop 3.0" in md
    # HANS is reported (gain +2 on every seed: SE 0), not selected on
    assert "| ce | 0.03 | 3 | +2.0 ± 0.0 | 3 |" in md
    assert (out / "s.png").stat().st_size > 0 and (out / "s.svg").exists()
    table = pd.read_csv(out / "s.csv")
    assert len(table) == 2 * 3 * 3 + 2 * 3 * 3  # 18 baseline epochs, 18 mask runs


def test_an_empty_run_list_is_refused(tmp_path):
    from maskbench.data.schema import DataError

    with pytest.raises(DataError, match="--runs: expected a non-empty JSON list"):
        step.main(["--runs", "[]", "--out-csv", str(tmp_path / "a"), "--out-md", str(tmp_path / "b"),
                   "--figure", str(tmp_path / "c.png")])


def test_the_suites_own_baseline_is_a_point_of_the_curve_named_apart(tmp_path):
    # the masks' start, given its training set, adds its epochs to the curve under its own name; the study's
    # baselines keep theirs
    runs = [{"kind": "start", "train_set": "mnli_train", "seed": seed,
             "summary": _finetune(tmp_path / f"start{seed}", 3000, [40.0 + seed, 45.0 + seed])} for seed in (1, 2, 3)]
    runs.append({"kind": "baseline", "train_set": "mnli_train_all", "seed": 1,
                 "summary": _finetune(tmp_path / "all1", 6815, [50.0])})
    curve = baseline_curve(study_table(runs))
    suite = curve[curve.train_set == "mnli_train (suite's baseline)"]
    assert list(suite.epoch) == [1, 2] and list(suite.pairs_seen) == [3000, 6000]
    assert list(suite["mean"]) == pytest.approx([42.0, 47.0]) and list(suite["count"]) == [3, 3]
    assert curve[curve.train_set == "mnli_train_all"]["mean"].tolist() == pytest.approx([50.0])


def test_the_markdown_names_the_picks_and_the_curve_at_the_picked_epoch(tmp_path):
    from maskbench.tracks.nlu.report.budget_study import markdown

    text = markdown(study_table(_runs(tmp_path)), id_cost_max=5.0, plateau=1.0, ood_set="hans")
    # big: 50.0, 54.0, 55.0 over epochs 1-3; the pick is epoch 2 (54.0), 4 points over epoch 1: still rising
    assert "**big (3,000 pairs), 2 epoch(s)**, dev 54.0; its curve at that epoch: still rising." in text
    assert "| ce | 0.03 | 3 | 30 | 99.000 % | yes | 53.0 | +3.0 | 3 |" in text  # epochs and steps as integers


def test_a_study_without_baselines_of_its_own_applies_rule_2_only(tmp_path):
    """configs/budget-resized.yaml: the masks searched from the config's own baseline, no study fine-tunings; the
    curve is that baseline's, named apart, and rule 1 says it is not applied."""
    from maskbench.tracks.nlu.report.budget_study import markdown

    runs = [run for run in _runs(tmp_path) if run["kind"] != "baseline"]
    for run in runs:
        if run["kind"] == "start":
            run["train_set"] = "mnli_train_all"
    text = markdown(study_table(runs), id_cost_max=5.0, plateau=1.0, ood_set="hans")
    assert "| mnli_train_all (suite's baseline) | 3,000 | 1 | 3,000 | 56.0 ± 0.0 | 3 |" in text
    assert "**Rule 1 not applied**" in text and "**Rule 1** (" not in text
    # rule 2 as with the baselines: lr 0.03 over 3 epochs, the one point engaged within the bound
    assert "**learning rate 0.03, 3 epoch(s) (30 steps)**, worst dev drop 3.0." in text


def _srnet_runs(tmp_path):
    """Paper C's part on a start of dev 56 (seeds 1-3): mask training at 0.5 epoch reaches its targets but loses 8
    points at 50 %; at 1 epoch it loses 1 and 4; IMP at 0.5 epoch misses 50 % on seed 3 (reached 40 %); at 1 epoch
    it reaches both within 2 points."""
    runs = []
    for seed in (1, 2, 3):
        runs.append({"kind": "start", "train_set": "all", "seed": seed,
                     "summary": _finetune(tmp_path / f"start{seed}", 6815, [56.0]),
                     "evals": {"hans": _eval(tmp_path / f"start{seed}_hans.json", 50.0)}})
        cases = {("mask_train", 0.5): {0.2: (0.2, 55.0), 0.5: (0.5, 48.0)},
                 ("mask_train", 1.0): {0.2: (0.2, 55.0), 0.5: (0.5, 52.0)},
                 ("imp", 0.5): {0.2: (0.2, 55.5), 0.5: (0.4 if seed == 3 else 0.5, 55.0)},
                 ("imp", 1.0): {0.2: (0.2, 55.5), 0.5: (0.5, 54.0)}}
        for (method, epochs), levels in cases.items():
            for target, (reached, dev) in levels.items():
                name = f"{method}_{epochs}_{target}_{seed}"
                dev_key = "saved_mask_dev_accuracy" if method == "mask_train" else "final_dev_accuracy"
                summary = tmp_path / f"{name}.json"
                summary.write_text(json.dumps({"sparsity": target, "exact_sparsity": reached, dev_key: 0.0,
                                               "total_steps": int(100 * epochs)}))
                runs.append({"kind": "srnet", "method": method, "epochs": epochs, "sparsity": target, "seed": seed,
                             "summary": str(summary),
                             "evals": {"dev": _eval(tmp_path / f"{name}_dev.json", dev),
                                       "hans": _eval(tmp_path / f"{name}_hans.json", 50.0 + seed)}})
    return runs


def test_paper_cs_budget_is_the_fewest_epochs_on_target_within_the_bound(tmp_path):
    from maskbench.tracks.nlu.report.budget_study import markdown, select_srnet_budget, srnet_points

    table = study_table(_srnet_runs(tmp_path), dev_set="dev")
    points = srnet_points(table)
    # the dev accuracy is the scored dev set's, not the summary's (0.0 here)
    row = points[(points.method == "mask_train") & (points.epochs == 0.5) & (points.sparsity == 0.5)].iloc[0]
    assert row.dev == pytest.approx(48.0) and row.dev_drop == pytest.approx(8.0) and row.all_engaged
    imp = points[(points.method == "imp") & (points.epochs == 0.5) & (points.sparsity == 0.5)].iloc[0]
    assert imp.reached == pytest.approx(0.4667, abs=1e-4) and not imp.all_engaged
    picks = select_srnet_budget(points, id_cost_max=5.0)
    assert picks["mask_train"] == {"found": True, "epochs": 1.0, "steps": 100, "worst_drop": pytest.approx(4.0),
                                   "id_cost_max": 5.0}
    assert picks["imp"]["found"] and picks["imp"]["epochs"] == 1.0  # 0.5 is within the bound but off target
    strict = select_srnet_budget(points, id_cost_max=3.0)
    # no mask-training budget within 3 points: the closest keeps one of two sparsities within it, drop 4 at 1 epoch
    assert strict["mask_train"] == {"found": False, "epochs": 1.0, "steps": 100, "worst_drop": pytest.approx(4.0),
                                    "within": 1, "levels": 2, "id_cost_max": 3.0}
    text = markdown(table, id_cost_max=5.0, plateau=1.0, ood_set="hans")
    assert "| mask training | 0.5 | 50 % | 50 | 50.0 % | yes | 48.0 | +8.0 | 3 |" in text
    assert "**Rule 3, IMP** (the fewest epochs" in text and "**1 epoch(s)**, worst dev drop 2.0." in text
    # HANS, paired with the start of the same seed (50.0): +1, +2, +3 -> +2.0 ± 0.6 SE
    assert "| IMP | 1 | 20 % | +2.0 ± 0.6 | 3 |" in text
