import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from maskbench.steps.nlu import table1 as cli
from maskbench.tracks.nlu.report.table1_builder import (
    build_table1,
    format_cell,
    latex_escape,
    load_paper_table1,
    to_latex,
    to_markdown,
)

REQUIRED = ["row", "task", "eval_set", "metric", "mean", "std", "n_seeds", "paper"]

COLUMNS = {
    "mnli_val": {"task": "mnli", "eval_set": "mnli_dev", "metric": "accuracy"},
    "hans": {"task": "mnli", "eval_set": "hans", "metric": "accuracy"},
    "paws": {"task": "qqp", "eval_set": "paws", "metric": "accuracy"},  # paper A's script: plain accuracy
    "paws_wf1": {"task": "qqp", "eval_set": "paws", "metric": "weighted_f1"},  # no paper A figure
    "paws_neg": {"task": "qqp", "eval_set": "paws", "metric": "non_duplicate_accuracy"},
}
ROWS = ["baseline", "sd_undertrained", "md_hyponly", "my_row"]


def ev(row, task, eval_set, seed, **metrics):
    return {"track": "nlu", "task": task, "row": row, "seed": seed, "eval_set": eval_set, "metrics": metrics}


def make_evals():
    return [
        ev("baseline", "mnli", "mnli_dev", 1, accuracy=80.0),
        ev("baseline", "mnli", "mnli_dev", 2, accuracy=82.0),
        ev("baseline", "mnli", "hans", 1, accuracy=60.0),
        ev("baseline", "mnli", "hans", 2, accuracy=64.0),
        ev("baseline", "qqp", "paws", 1, accuracy=50.0, weighted_f1=40.0, non_duplicate_accuracy=20.0),
        ev("baseline", "qqp", "paws", 2, accuracy=52.0, weighted_f1=42.0, non_duplicate_accuracy=30.0),
        ev("md_hyponly", "mnli", "mnli_dev", 1, accuracy=83.0),
        ev("my_row", "mnli", "hans", 7, accuracy=70.0),
        # a row that is not asked for is ignored
        ev("other", "mnli", "hans", 1, accuracy=1.0),
    ]


@pytest.fixture
def long():
    return build_table1(make_evals(), COLUMNS, ROWS)


def test_paper_table_copy():
    paper = load_paper_table1()
    assert paper.loc[paper["row"] == "baseline", "paws_neg"].item() == 23.37
    assert math.isnan(paper.loc[paper["row"] == "md_hyponly", "fever_val"].item())


def test_long_frame_columns_and_order(long):
    assert list(long.columns[: len(REQUIRED)]) == REQUIRED
    assert list(zip(long["row"], long["column"], strict=True)) == [
        ("baseline", "mnli_val"),
        ("baseline", "hans"),
        ("baseline", "paws"),
        ("baseline", "paws_wf1"),
        ("baseline", "paws_neg"),
        ("md_hyponly", "mnli_val"),
        ("my_row", "hans"),
    ]
    assert "sd_undertrained" not in set(long["row"])


def test_mean_std_over_two_seeds(long):
    line = long.set_index(["row", "column"])
    assert line.loc[("baseline", "mnli_val"), "mean"] == 81.0
    assert line.loc[("baseline", "mnli_val"), "std"] == pytest.approx(math.sqrt(2))  # ddof=1
    assert line.loc[("baseline", "hans"), "std"] == pytest.approx(math.sqrt(8))
    assert line.loc[("baseline", "paws"), "mean"] == 51.0  # accuracy 50, 52
    assert line.loc[("baseline", "paws_wf1"), "mean"] == 41.0  # weighted F1 40, 42
    assert line.loc[("baseline", "paws_neg"), "mean"] == 25.0
    assert line.loc[("baseline", "paws_neg"), "n_seeds"] == 2
    assert line.loc[("baseline", "paws_neg"), "metric"] == "non_duplicate_accuracy"
    assert math.isnan(line.loc[("md_hyponly", "mnli_val"), "std"])
    assert line.loc[("md_hyponly", "mnli_val"), "n_seeds"] == 1


def test_paper_column(long):
    line = long.set_index(["row", "column"])
    assert line.loc[("baseline", "mnli_val"), "paper"] == 84.38
    assert line.loc[("baseline", "paws_neg"), "paper"] == 23.37
    assert line.loc[("baseline", "paws"), "paper"] == 44.28  # paper A's PAWS figure sits beside our accuracy
    assert math.isnan(line.loc[("baseline", "paws_wf1"), "paper"])  # and none beside the weighted F1
    assert line.loc[("md_hyponly", "mnli_val"), "paper"] == 82.87
    assert math.isnan(line.loc[("my_row", "hans"), "paper"])  # not a paper row


def test_missing_metric_names_file_and_metric():
    evals = make_evals()
    evals[4] = {**evals[4], "metrics": {"accuracy": 50.0}, "_source": "results/x/paws.json"}
    with pytest.raises(ValueError, match=r"results/x/paws\.json.*'paws'.*'weighted_f1'"):
        build_table1(evals, COLUMNS, ROWS)


def test_duplicate_eval_rejected():
    evals = make_evals() + [ev("baseline", "mnli", "hans", 2, accuracy=1.0)]
    with pytest.raises(ValueError, match="duplicate evaluation.*row=baseline.*eval_set=hans.*seed=2"):
        build_table1(evals, COLUMNS, ROWS)


def test_bad_columns_config():
    with pytest.raises(ValueError, match="'hans' lacks metric"):
        build_table1(make_evals(), {"hans": {"task": "mnli", "eval_set": "hans"}}, ROWS)


def test_no_evals_gives_empty_frame():
    long = build_table1([], COLUMNS, ROWS)
    assert long.empty and list(long.columns[: len(REQUIRED)]) == REQUIRED


def test_format_cell():
    assert format_cell(71.234, 0.449, 84.38) == "71.23 ± 0.45 (84.38)"
    assert format_cell(math.nan, math.nan, 84.38) == "– (84.38)"
    assert format_cell(71.0, math.nan, math.nan) == "71.00 ± – (–)"
    assert format_cell(math.nan, math.nan, math.nan) == "–"


def test_markdown(long):
    md = to_markdown(long, COLUMNS, {"baseline": "Baseline", "md_hyponly": "HypOnly MD"})
    lines = md.splitlines()
    assert lines[0] == "| Method | MNLI Val. | MNLI HANS | QQP PAWS acc. | QQP PAWS w-F1 | QQP PAWS (¬) |"
    assert lines[2] == ("| Baseline | 81.00 ± 1.41 (84.38) | 62.00 ± 2.83 (61.97) | 51.00 ± 1.41 (44.28) "
                        "| 41.00 ± 1.41 (–) | 25.00 ± 7.07 (23.37) |")
    assert lines[3] == "| HypOnly MD | 83.00 ± – (82.87) | – (64.26) | – | – | – |"
    assert lines[4] == "| my_row | – | 70.00 ± – (–) | – | – | – |"
    assert len(lines) == 5  # sd_undertrained has no eval and is not filled in


def test_markdown_default_labels_and_only_configured_columns(long):
    md = to_markdown(long, {"hans": COLUMNS["hans"]})
    assert md.splitlines()[0] == "| Method | MNLI HANS |"
    assert "| Baseline | 62.00 ± 2.83 (61.97) |" in md


def test_latex(long):
    tex = to_latex(long, COLUMNS)
    assert tex.startswith("\\begin{tabular}{lccccc}\n\\toprule\n")
    assert r" & \multicolumn{2}{c}{MNLI} & \multicolumn{3}{c}{QQP} \\" in tex
    assert r"\cmidrule(lr){2-3} \cmidrule(lr){4-6}" in tex
    assert r"Method & Val. & HANS & PAWS acc. & PAWS w-F1 & PAWS ($\neg$) \\" in tex
    assert r"Baseline & 81.00 $\pm$ 1.41 (84.38) &" in tex
    assert r"HypOnly MD & 83.00 $\pm$ -- (82.87) & -- (64.26) & -- & -- & -- \\" in tex
    assert r"my\_row & " in tex
    assert tex.rstrip().endswith("\\bottomrule\n\\end{tabular}")


def test_latex_escapes_labels(long):
    columns = {"hans": {**COLUMNS["hans"], "label": "R&D_1 50%"}}
    tex = to_latex(long, columns, {"baseline": "A #1 {x}"})
    assert r"R\&D\_1 50\%" in tex
    assert r"A \#1 \{x\}" in tex
    assert latex_escape("a\\b~^") == r"a\textbackslash{}b\textasciitilde{}\textasciicircum{}"


def test_long_from_csv_without_column_field_renders_the_same(long, tmp_path):
    path = tmp_path / "t.csv"
    long.drop(columns="column").to_csv(path, index=False)
    back = pd.read_csv(path, dtype={"row": str})
    assert to_markdown(back, COLUMNS) == to_markdown(long, COLUMNS)


def _write_evals(directory: Path) -> list[str]:
    paths = []
    for i, e in enumerate(make_evals()):
        path = directory / f"{e['row']}-{e['eval_set']}-{e['seed']}-{i}.json"
        path.write_text(json.dumps(e))
        paths.append(str(path))
    return paths


def test_cli_writes_three_files(tmp_path):
    evals = _write_evals(tmp_path)
    columns_file = tmp_path / "columns.json"
    columns_file.write_text(json.dumps(COLUMNS))
    out = tmp_path / "out"
    argv = ["--evals", *evals, "--columns", str(columns_file), "--rows", json.dumps(ROWS)]
    argv += ["--out-csv", str(out / "t.csv"), "--out-md", str(out / "t.md"), "--out-tex", str(out / "t.tex")]
    assert cli.main(argv) == 0
    assert sorted(os.listdir(out)) == ["t.csv", "t.md", "t.tex"]  # no temporary files left behind
    table = pd.read_csv(out / "t.csv")
    assert list(table.columns[: len(REQUIRED)]) == REQUIRED
    assert len(table) == 7
    assert "| Baseline | 81.00 ± 1.41 (84.38) |" in (out / "t.md").read_text()
    assert r"\multicolumn{3}{c}{QQP}" in (out / "t.tex").read_text()


def test_cli_rows_mapping_sets_labels(tmp_path):
    evals = _write_evals(tmp_path)
    argv = ["--evals", *evals, "--columns", json.dumps(COLUMNS), "--rows", json.dumps({"my_row": "Mine"})]
    argv += ["--out-csv", str(tmp_path / "t.csv"), "--out-md", str(tmp_path / "t.md")]
    argv += ["--out-tex", str(tmp_path / "t.tex")]
    cli.main(argv)
    assert (tmp_path / "t.md").read_text().splitlines()[2].startswith("| Mine | – | 70.00 ± – (–) |")


def test_cli_rejects_table_without_matches(tmp_path):
    evals = _write_evals(tmp_path)
    argv = ["--evals", *evals, "--columns", json.dumps(COLUMNS), "--rows", '["nobody"]']
    argv += ["--out-csv", str(tmp_path / "t.csv"), "--out-md", str(tmp_path / "t.md")]
    argv += ["--out-tex", str(tmp_path / "t.tex")]
    with pytest.raises(ValueError, match="none of the 9 evaluation JSONs"):
        cli.main(argv)
    assert not (tmp_path / "t.csv").exists()


def test_module_entry_point(tmp_path):
    evals = _write_evals(tmp_path)
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "maskbench.steps.nlu.table1", "--evals", *evals, "--columns", json.dumps(COLUMNS)]
    cmd += ["--rows", json.dumps(ROWS), "--out-csv", str(tmp_path / "t.csv")]
    cmd += ["--out-md", str(tmp_path / "t.md"), "--out-tex", str(tmp_path / "t.tex")]
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    assert (tmp_path / "t.tex").stat().st_size > 0
