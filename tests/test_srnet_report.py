"""maskbench.steps.nlu.srnet_report: evaluation JSONs of the srnet runs -> curves, Table 5 and the timing study."""

import json

import numpy as np
import pandas as pd
import pytest

from maskbench.masking.codec import write_mask_file
from maskbench.steps.nlu import srnet_report

RUNS = {"a_mask_ce": {"paradigm": "a", "method": "mask train", "loss": "ce"}}
T5 = {"sparsity": 0.9, "variants": {"fixed_hard": {"schedule": "fixed_0.9", "init": "hard"}},
      "columns": {"hans": ["mnli", "hans"]}}


def write_eval(folder, name, row, seed, eval_set, accuracy, mask=None):
    path = folder / f"{name}.json"
    record = {"task": "mnli", "row": row, "seed": seed, "eval_set": eval_set, "metrics": {"accuracy": accuracy}}
    if mask:
        record["mask"] = str(mask)
    path.write_text(json.dumps(record))
    return str(path)


def test_report_averages_seeds_and_places_every_row(tmp_path):
    evals, mask = [], {"m": np.ones((2, 2), dtype=bool)}
    for seed, (acc, t5_acc, step_acc) in {1: (80.0, 50.0, 60.0), 2: (90.0, 54.0, 70.0)}.items():
        evals.append(write_eval(tmp_path, f"a{seed}", "srnets/a_mask_ce/0.5", seed, "hans", acc))
        evals.append(write_eval(tmp_path, f"t{seed}", "srnets/t5/fixed_hard", seed, "hans", t5_acc))
        write_mask_file(tmp_path / f"s{seed}.mask", mask, {"start_step": 300, "sparsity": 0.7, "loss": "ce"})
        evals.append(write_eval(tmp_path, f"s{seed}", "srnets/timing/step~300", seed, "hans", step_acc,
                                mask=tmp_path / f"s{seed}.mask"))
    base = [write_eval(tmp_path, f"b{seed}", "baseline", seed, "hans", 70.0) for seed in (1, 2)]
    out = tmp_path / "results"
    assert srnet_report.main(["--evals", *evals, "--reference", *base, "--runs", json.dumps(RUNS),
                              "--table5", json.dumps(T5), "--results", str(out)]) == 0
    curves = pd.read_csv(out / "tables/sparsity_curves.csv")
    assert len(curves) == 1
    line = curves.iloc[0]
    assert (line.paradigm, line.method, line.loss, line.sparsity, line.n_seeds) == ("a", "mask train", "ce", 0.5, 2)
    assert line["mean"] == 85.0 and line["std"] == pytest.approx(np.sqrt(50.0))  # sample std of 80, 90
    t5 = pd.read_csv(out / "tables/table5.csv")
    assert (t5.iloc[0]["mean"], t5.iloc[0]["paper"]) == (52.0, 52.56)  # paper C's fixed/hard HANS
    timing = pd.read_csv(out / "tables/timing_curves.csv")
    assert (timing.iloc[0].start_step, timing.iloc[0]["mean"], timing.iloc[0].method) == (300, 65.0, "mask train (70%)")
    for name in ("sparsity_curves.png", "timing_curves.png"):
        assert (out / "figures" / name).stat().st_size > 5000


def test_report_refuses_unknown_rows_and_missing_metrics(tmp_path):
    out = tmp_path / "results"
    bad_run = write_eval(tmp_path, "x", "srnets/a_mask_typo/0.5", 1, "hans", 80.0)
    with pytest.raises(ValueError, match=r"x.json: field 'row' names run 'a_mask_typo'"):
        srnet_report.main(["--evals", bad_run, "--runs", json.dumps(RUNS), "--results", str(out)])
    bad_row = write_eval(tmp_path, "y", "a_mask_ce/0.5", 1, "hans", 80.0)
    with pytest.raises(ValueError, match=r"y.json: field 'row' is 'a_mask_ce/0.5'"):
        srnet_report.main(["--evals", bad_row, "--runs", json.dumps(RUNS), "--results", str(out)])
    no_f1 = write_eval(tmp_path, "z", "srnets/a_mask_ce/0.5", 1, "hans", 80.0)
    with pytest.raises(ValueError, match=r"z.json: field 'metrics' has no 'weighted_f1'"):
        srnet_report.main(["--evals", no_f1, "--runs", json.dumps(RUNS), "--metrics", '{"hans": "weighted_f1"}',
                           "--results", str(out)])
    no_step = write_eval(tmp_path, "w", "srnets/timing/step~3", 1, "hans", 80.0)
    with pytest.raises(ValueError, match=r"w.json: a timing row needs the field 'mask'"):
        srnet_report.main(["--evals", no_step, "--runs", json.dumps(RUNS), "--results", str(out)])
    assert not out.exists()
