import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from maskbench.data.schema import DataError, read_prepared
from maskbench.steps import prepare

SRC = Path(__file__).resolve().parents[1] / "src"
LABELS = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
RECORDS = [
    {"id": 101, "claim": "Paris is in France.", "evidence": "Paris is the capital of France.", "gold_label": "SUPPORTS"},
    {"id": 102, "claim": "Paris is in Peru.", "evidence": "Paris is the capital of France.", "gold_label": "REFUTES"},
    {"id": 103, "claim": "Paris has 9 bridges.", "evidence": "Paris is a city.", "gold_label": "NOT ENOUGH INFO"},
    {"id": 104, "claim": "Lyon is in France.", "evidence": "Lyon is a French city.", "gold_label": "SUPPORTS"},
]
SPEC = {
    "source": "local:data/fever_dev.jsonl",
    "columns": {"id": "id", "text_a": "claim", "text_b": "evidence", "label": "gold_label"},
    "labels": LABELS,
    "task": "fever",
}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data/fever_dev.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def argv(spec, out="results/data/fever_dev.parquet", summary="results/data/fever_dev.json", task=None):
    args = ["--name", "fever_dev", "--spec", json.dumps(spec), "--out", out, "--summary", summary]
    return args + (["--task", task] if task else [])


def test_round_trip_on_local_jsonl(workdir):
    assert prepare.main(argv(SPEC)) == 0
    df, labels, meta = read_prepared(workdir / "results/data/fever_dev.parquet")
    assert labels == LABELS
    assert df[["id", "text_a", "text_b", "label"]].to_dict("records") == [
        {"id": str(r["id"]), "text_a": r["claim"], "text_b": r["evidence"], "label": LABELS.index(r["gold_label"])}
        for r in RECORDS
    ]
    assert meta["dataset"] == "fever_dev" and meta["task"] == "fever" and meta["source"] == SPEC["source"]
    summary = json.loads((workdir / "results/data/fever_dev.json").read_text())
    assert summary["n_examples"] == 4
    assert summary["label_counts"] == {"SUPPORTS": 2, "REFUTES": 1, "NOT ENOUGH INFO": 1}
    assert summary["columns"] == ["id", "text_a", "text_b", "label", "source_index"]
    assert summary["task"] == "fever" and summary["name"] == "fever_dev"
    assert summary["seconds"] >= 0
    assert summary["provenance"]["versions"]["pandas"]


def test_task_argument_overrides_spec(workdir):
    assert prepare.main(argv(SPEC, task="fever_nli")) == 0
    assert read_prepared("results/data/fever_dev.parquet")[2]["task"] == "fever_nli"


def test_bad_input_fails_and_writes_nothing(workdir):
    with open("data/fever_dev.jsonl", "a") as handle:
        handle.write(json.dumps({"id": 105, "claim": "c", "evidence": "e", "gold_label": "UNSURE"}) + "\n")
    with pytest.raises(DataError) as refused:
        prepare.main(argv(SPEC))
    assert not (workdir / "results").exists()
    err = str(refused.value)
    assert "data/fever_dev.jsonl" in err and "field 'label'" in err and "'UNSURE'" in err


def test_bad_spec_json_is_a_usage_error(workdir):
    with pytest.raises(SystemExit) as exit_info:
        prepare.main(["--name", "x", "--spec", "{not json", "--out", "o.parquet", "--summary", "o.json"])
    assert exit_info.value.code == 2


def test_module_exit_status_on_missing_file(tmp_path):
    spec = {**SPEC, "source": "local:data/absent.jsonl"}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-m", "maskbench.steps.prepare", *argv(spec)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "data/absent.jsonl" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_spec_that_says_single_text_leaves_text_b_empty_and_a_pair_spec_is_refused(tmp_path):
    """The gender track's CoLA / SST-2 splits (gender.performance.tasks.<t>.single_text) reach the step as a spec
    with single_text: true; the same one-text file as a pair task is refused, naming the columns it has."""
    tsv = tmp_path / "cola.tsv"
    tsv.write_text("idx\tsentence\tlabel\n1\tthe dog barked .\t1\n2\tdog the barked .\t0\n", encoding="utf-8")
    spec = {"task": "cola", "source": f"local:{tsv}", "format": "tsv",
            "columns": {"id": "idx", "text_a": "sentence", "label": "label"},
            "label_map": {"0": "unacceptable", "1": "acceptable"}, "labels": ["unacceptable", "acceptable"]}
    out = tmp_path / "cola.parquet"
    args = ["--name", "cola_train", "--out", str(out), "--summary", str(tmp_path / "s.json")]
    assert prepare.main([*args, "--spec", json.dumps({**spec, "single_text": True})]) == 0
    frame, labels, _ = read_prepared(out)
    assert list(frame["text_b"]) == ["", ""] and list(frame["label"]) == [1, 0]
    out.unlink()
    with pytest.raises(DataError, match="text_b"):
        prepare.main([*args, "--spec", json.dumps(spec)])
    assert not out.exists()
