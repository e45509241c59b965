import json
import math
import os

import pandas as pd
import pytest

from maskbench.steps.nlu import figure_id_ood as cli
from maskbench.tracks.nlu.report.figure_id_ood import figure_data, plot_id_ood
from maskbench.tracks.nlu.report.table1_builder import build_table1

COLUMNS = {
    "mnli_val": {"task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy"},
    "hans": {"task": "mnli", "eval_set": "hans", "metric": "accuracy"},
    "qqp_val": {"task": "qqp", "eval_set": "qqp_dev", "metric": "accuracy"},
    "paws_neg": {"task": "qqp", "eval_set": "paws", "metric": "non_duplicate_accuracy"},
}


def ev(row, task, eval_set, seed, metric, value):
    return {"task": task, "row": row, "seed": seed, "eval_set": eval_set, "metrics": {metric: value}}


def make_long():
    evals = [
        ev("baseline", "mnli", "mnli_dev", 1, "accuracy", 80.0),
        ev("baseline", "mnli", "mnli_dev", 2, "accuracy", 84.0),
        ev("baseline", "mnli", "hans", 1, "accuracy", 55.0),
        ev("baseline", "mnli", "hans", 2, "accuracy", 57.0),
        ev("md_underparam", "mnli", "mnli_dev", 1, "accuracy", 79.0),
        ev("md_underparam", "mnli", "hans", 1, "accuracy", 66.0),
        ev("baseline", "qqp", "qqp_dev", 1, "accuracy", 90.0),
        ev("baseline", "qqp", "paws", 1, "non_duplicate_accuracy", 20.0),
    ]
    return build_table1(evals, COLUMNS, ["baseline", "md_underparam"])


def test_figure_data_lines():
    data = figure_data(make_long(), COLUMNS)
    assert list(zip(data["task"], data["row"], data["column"], strict=True)) == [
        ("mnli", "baseline", "mnli_val"),
        ("mnli", "baseline", "hans"),
        ("mnli", "md_underparam", "mnli_val"),
        ("mnli", "md_underparam", "hans"),
        ("qqp", "baseline", "qqp_val"),
        ("qqp", "baseline", "paws_neg"),
    ]
    first = data.iloc[0]
    assert (first["mean"], first["paper"], first["row_label"], first["column_label"]) == (
        82.0,
        84.38,
        "Baseline",
        "Val.",
    )
    assert first["std"] == pytest.approx(math.sqrt(8))
    assert data.iloc[5]["column_label"] == "PAWS (¬)"


def test_plot_rejects_empty_data(tmp_path):
    with pytest.raises(ValueError, match="nothing to plot"):
        plot_id_ood(figure_data(make_long().iloc[0:0], COLUMNS), tmp_path / "f.png")


def test_cli_writes_png_and_csv(tmp_path):
    table = tmp_path / "table1.csv"
    make_long().to_csv(table, index=False)
    out = tmp_path / "fig"
    argv = ["--table", str(table), "--columns", json.dumps(COLUMNS)]
    argv += ["--out", str(out / "f.png"), "--out-csv", str(out / "f.csv")]
    assert cli.main(argv) == 0
    assert sorted(os.listdir(out)) == ["f.csv", "f.png", "f.svg"]
    png = (out / "f.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
    plotted = pd.read_csv(out / "f.csv")
    assert len(plotted) == 6
    assert set(zip(plotted["row"], plotted["column"], strict=True)) == {
        ("baseline", "mnli_val"),
        ("baseline", "hans"),
        ("md_underparam", "mnli_val"),
        ("md_underparam", "hans"),
        ("baseline", "qqp_val"),
        ("baseline", "paws_neg"),
    }
    assert (
        plotted.loc[(plotted["row"] == "md_underparam") & (plotted["column"] == "hans"), "paper"].item()
        == 67.86
    )
