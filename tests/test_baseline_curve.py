"""The baselines' dev-accuracy curves (steps/nlu/baseline_curve.py) from hand-made checkpoint folders."""

import json

import pandas as pd

from maskbench.steps.nlu import baseline_curve


def folder(tmp_path, seed, accuracies, best, stopped):
    out = tmp_path / f"seed~{seed}"
    out.mkdir()
    rows = [{"step": 10 * e, "epoch": e, "train_loss": 1.0, "dev_accuracy": None} for e in range(1, len(accuracies) + 1)]
    rows += [{"step": 10 * e, "epoch": e, "train_loss": None, "dev_accuracy": a} for e, a in enumerate(accuracies, 1)]
    pd.DataFrame(rows).to_csv(out / "train_curve.csv", index=False)
    (out / "train_summary.json").write_text(json.dumps(
        {"provenance": {"seed": seed}, "early_stop": {"best_epoch": best, "stopped_epoch": stopped}}))
    return out


def test_the_curve_lists_every_epoch_and_marks_the_kept_and_the_stopping_epoch(tmp_path):
    a = folder(tmp_path, 1, [70.0, 75.5, 74.0], best=2, stopped=3)
    b = folder(tmp_path, 2, [71.0, 72.0], best=2, stopped=None)
    csv, md = tmp_path / "c.csv", tmp_path / "c.md"
    assert baseline_curve.main(["--models", str(a), str(b), "--tasks", "mnli", "mnli", "--out-csv", str(csv),
                                "--out-md", str(md)]) == 0
    long = pd.read_csv(csv)
    assert long[["seed", "epoch", "dev_accuracy"]].values.tolist() == [[1, 1, 70.0], [1, 2, 75.5], [1, 3, 74.0],
                                                                      [2, 1, 71.0], [2, 2, 72.0]]
    assert long["kept"].tolist() == [False, True, False, False, True]
    assert long["stopped"].tolist() == [False, False, True, False, False]
    lines = md.read_text().splitlines()
    assert "mnli seed 1" in lines[0] and "mnli seed 2" in lines[0]
    assert "**75.50**" in lines[3] and "74.00" in lines[4] and "**72.00**" in lines[3]


def test_a_labelled_config_puts_its_label_over_the_table(tmp_path):
    a = folder(tmp_path, 1, [70.0, 75.5], best=2, stopped=None)
    md = tmp_path / "c.md"
    assert baseline_curve.main(["--models", str(a), "--tasks", "mnli", "--out-csv", str(tmp_path / "c.csv"),
                                "--out-md", str(md), "--label", "Quick look: 1 seed, no verdicts"]) == 0
    lines = md.read_text().splitlines()
    assert lines[0] == "**Quick look: 1 seed, no verdicts**" and lines[1] == "" and "mnli seed 1" in lines[2]
