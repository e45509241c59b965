"""The comparison of two runs' output trees (maskbench.tools.compare_results), on hand-made trees."""

import json

import pandas as pd
import torch
from safetensors.torch import save_file

from maskbench.tools import compare_results


def tree(root, seconds, loss=0.5, weight=1.0, project_note=""):
    (root / "results" / "tables").mkdir(parents=True)
    (root / "results" / "models").mkdir()
    (root / "results" / "logs").mkdir()
    results = root / "results"
    (results / "tables" / "table1.csv").write_text(f"row,acc\nbaseline,{loss}\n")
    (results / "models" / "train_curve.csv").write_text(f"step,loss,seconds\n1,{loss},{seconds}\n")
    (results / "models" / "summary.json").write_text(json.dumps(
        {"loss": loss, "fit_seconds": seconds, "file": f"{root}/data/x.csv{project_note}",
         "provenance": {"host": str(seconds)}, "curve": [{"step": 1, "seconds": seconds}]}))
    save_file({"w": torch.full((2,), weight)}, str(results / "models" / "model.safetensors"),
              metadata={"host": str(seconds)})
    pd.DataFrame({"p": [loss]}).to_parquet(results / "models" / "probs.parquet")
    (results / "logs" / "job.log").write_text(str(seconds))  # logs are never compared
    return results


def test_trees_that_differ_only_in_timing_provenance_and_project_folder_are_equal(tmp_path):
    before = tree(tmp_path / "a", seconds=1.5)
    after = tree(tmp_path / "b", seconds=9.25)
    report = compare_results.compare_trees(before, after, [])
    assert report["mismatches"] == [] and report["missing_after"] == [] and report["only_after"] == []
    assert report["compared"] == {"bytes": 1, "csv without timing": 1, "frame": 1, "json": 1, "tensors": 1}


def test_a_moved_number_is_found_in_every_kind_of_file(tmp_path):
    before = tree(tmp_path / "a", seconds=1.5)
    after = tree(tmp_path / "b", seconds=1.5, loss=0.25, weight=2.0)
    report = compare_results.compare_trees(before, after, [])
    differs = {m["file"]: m["compared"] for m in report["mismatches"]}
    assert differs == {"tables/table1.csv": "bytes", "models/train_curve.csv": "csv without timing",
                       "models/summary.json": "json", "models/model.safetensors": "tensors",
                       "models/probs.parquet": "frame"}
    assert compare_results.main([str(before), str(after)]) == 1


def test_a_renamed_folder_is_followed_and_a_missing_file_named(tmp_path, capsys):
    before = tree(tmp_path / "a", seconds=1.0)
    after = tree(tmp_path / "b", seconds=1.0)
    (after / "models").rename(after / "nlu_models")
    assert compare_results.main([str(before), str(after), "--rename", "models=nlu_models",
                                 "--out", str(tmp_path / "r.json")]) == 0
    assert json.loads((tmp_path / "r.json").read_text())["equal"] == 5
    (after / "nlu_models" / "probs.parquet").unlink()
    assert compare_results.main([str(before), str(after), "--rename", "models=nlu_models"]) == 1
    assert "missing after: models/probs.parquet" in capsys.readouterr().out


def test_bad_arguments_are_named(tmp_path, capsys):
    assert compare_results.main([str(tmp_path / "nope"), str(tmp_path)]) == 2
    assert f"{tmp_path / 'nope'} is not a folder" in capsys.readouterr().err
    assert compare_results.main([str(tmp_path), str(tmp_path), "--rename", "x"]) == 2
    assert "--rename 'x' is not OLD=NEW" in capsys.readouterr().err


def test_mask_files_equal_but_for_their_command_line_are_equal(tmp_path):
    import numpy as np

    from maskbench.masking.codec import write_mask_file

    mask = {"layer.0.query": np.array([[True, False], [False, True]])}
    for name, argv, m in (("a", ["--x", "1", "--y", "2"], mask), ("b", ["--y", "2", "--x", "1"], mask),
                          ("c", ["--x", "1"], {"layer.0.query": np.array([[True, True], [False, True]])})):
        (tmp_path / name).mkdir()
        write_mask_file(tmp_path / name / "m.mask", m, {"seed": 1, "provenance": {"argv": argv}})
    assert compare_results.compare_file(tmp_path / "a" / "m.mask", tmp_path / "b" / "m.mask") == (
        "mask without provenance", None)
    assert compare_results.compare_file(tmp_path / "a" / "m.mask", tmp_path / "a" / "m.mask") == ("bytes", None)
    assert compare_results.compare_file(tmp_path / "a" / "m.mask", tmp_path / "c" / "m.mask") == (
        "mask without provenance", "1 of 1 masks differ, e.g. layer.0.query")
