"""The real NLI text shipped in data/nli/ (counts, labels, checksums; a changed byte refused) and the gaps of the
`local:` data path a new user hits (issue 27, item 5): the local file an input of its preparation, a pair task
without a second text refused, positions as the file's line, a missing source key named."""

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from maskbench.data import local_source
from maskbench.data.registry import load_dataset
from maskbench.data.schema import DataError
from maskbench.steps import prepare

REPO = Path(__file__).resolve().parents[1]
NLI = REPO / "data/nli"
MNLI_LABELS = ["entailment", "neutral", "contradiction"]
MNLI_SPEC = {"task": "mnli", "source": "local:data/nli/mnli_dev_matched.tsv",
             "sha256": "3af35cbc6a04be98789ba9bab69205ce3e85c03e19d16fc7243c867f2ee3fbcb",
             "columns": {"id": "index", "text_a": "premise", "text_b": "hypothesis", "label": "gold_label"},
             "labels": MNLI_LABELS}
HANS_SPEC = {"task": "mnli", "source": "local:data/nli/hans_evaluation_regenerated_seed1.tsv",
             "sha256": "e0bfd3fda8a3975e2e20c1c858d88f07ffe1d5105e0d787e4c68810dad1838ad",
             "columns": {"id": "pairID", "text_a": "sentence1", "text_b": "sentence2", "label": "gold_label",
                         "heuristic": "heuristic", "subcase": "subcase"},
             "labels": ["entailment", "non-entailment"]}
PAPER = yaml.safe_load((REPO / "configs/paper.yaml").read_text(encoding="utf-8"))


def readme_checksums() -> dict[str, str]:
    block = (NLI / "README.md").read_text(encoding="utf-8").split("sha256")[-1]
    return {name: digest for digest, name in re.findall(r"^([0-9a-f]{64})  (\S+)$", block, re.M)}


# ------------------------------------------------------------------------------------------ the shipped files
def test_every_shipped_file_matches_the_readme_checksum():
    sums = readme_checksums()
    data_files = sorted(p.name for p in NLI.iterdir() if p.suffix in (".tsv", ".jsonl"))
    assert sorted(sums) == data_files and len(sums) == 5
    for name, digest in sums.items():
        assert hashlib.sha256((NLI / name).read_bytes()).hexdigest() == digest, name
    assert sorted(p.name for p in (NLI / "licences").iterdir()) == ["LICENSE-fever-symmetric.txt", "LICENSE-hans.md"]


def test_mnli_dev_matched_loads_with_its_real_counts():
    df, labels = load_dataset("mnli_dev", MNLI_SPEC, base_dir=REPO)
    assert labels == MNLI_LABELS and len(df) == 9815
    assert df["label"].value_counts().sort_index().tolist() == [3479, 3123, 3213]
    # the first line of the file, and a text with an unbalanced quote kept as is (no quoting in the file)
    assert df.iloc[0][["id", "text_a", "label"]].tolist() == ["0", "The new rights are nice enough", 1]
    assert df["text_a"].str.contains('"').sum() > 0 and df["text_b"].str.len().min() > 0


def test_hans_regenerated_is_30_subcases_of_1000_half_entailed():
    df, _ = load_dataset("hans", HANS_SPEC, base_dir=REPO)
    assert len(df) == 30_000 and df["id"].is_unique
    assert df["label"].value_counts().to_dict() == {0: 15_000, 1: 15_000}
    assert df["subcase"].nunique() == 30 and (df["subcase"].value_counts() == 1000).all()
    assert df["heuristic"].value_counts().to_dict() == {"lexical_overlap": 10_000, "subsequence": 10_000,
                                                        "constituent": 10_000}
    # each subcase is entirely entailed or entirely not: 15 of each
    per_subcase = df.groupby("subcase")["label"].agg(["min", "max"])
    assert (per_subcase["min"] == per_subcase["max"]).all() and (per_subcase["min"] == 0).sum() == 15


@pytest.mark.parametrize("name,n", [("fever_symmetric_v1", 956), ("fever_symmetric_v2_dev", 708),
                                    ("fever_symmetric_v2", 712)])
def test_paper_config_reads_fever_symmetric_from_the_shipped_files(name, n):
    spec = PAPER["datasets"][name]
    assert spec["source"].startswith("local:data/nli/fever_symmetric_")
    assert spec["sha256"] == readme_checksums()[spec["source"].rsplit("/", 1)[1]]
    df, labels = load_dataset(name, spec, base_dir=REPO)
    assert len(df) == n and labels == ["SUPPORTS", "REFUTES"]
    assert df["label"].value_counts().to_dict() == {0: n // 2, 1: n // 2}  # balanced, as the sets are built


def test_a_changed_byte_is_refused_before_the_file_is_read(tmp_path, monkeypatch):
    raw = bytearray((NLI / "mnli_dev_matched.tsv").read_bytes())
    raw[1000] ^= 0x01  # one bit of one byte, somewhere in the texts
    changed = tmp_path / "mnli_dev_matched.tsv"
    changed.write_bytes(bytes(raw))
    actual = hashlib.sha256(bytes(raw)).hexdigest()

    def never(*args, **kwargs):  # the checksum comes before any parsing
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(local_source, "_read_delimited", never)
    with pytest.raises(DataError) as err:
        load_dataset("mnli_dev", {**MNLI_SPEC, "source": f"local:{changed}"})
    message = str(err.value)
    assert str(changed) in message and "'mnli_dev'" in message and "field 'sha256'" in message
    assert MNLI_SPEC["sha256"] in message and actual in message


def test_prepare_refuses_the_changed_file_naming_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = bytearray((NLI / "fever_symmetric_test.jsonl").read_bytes())
    raw[-2] = ord("x") if raw[-2] != ord("x") else ord("y")
    Path("symm.jsonl").write_bytes(bytes(raw))
    spec = {**PAPER["datasets"]["fever_symmetric_v2"], "source": "local:symm.jsonl"}
    with pytest.raises(DataError) as refused:
        prepare.main(["--name", "fever_symmetric_v2", "--spec", json.dumps(spec), "--out", "out/s.parquet",
                      "--summary", "out/s.json"])
    err = str(refused.value)
    assert "symm.jsonl (dataset 'fever_symmetric_v2'): field 'sha256'" in err and spec["sha256"] in err
    assert not Path("out").exists()


@pytest.mark.parametrize("spec,named", [
    ({**MNLI_SPEC, "sha256": "3AF35"}, "64 lower-case hex digits"),
    ({"task": "mnli", "source": "synthetic:nli", "split": "dev", "sha256": "0" * 64}, "local"),
])
def test_a_bad_sha256_entry_is_refused(spec, named):
    with pytest.raises(DataError, match=re.escape(named)):
        load_dataset("x", spec, base_dir=REPO)


# ------------------------------------------------------------------------- 5b: a pair task without text_b
def write_pairs(path, rows=(("a cat sat", "a cat sat", "entailment"), ("a dog ran", "no dog ran", "contradiction"))):
    path.write_text("id\tpremise\thypothesis\tgold_label\n"
                    + "".join(f"p{i}\t{a}\t{b}\t{c}\n" for i, (a, b, c) in enumerate(rows)), encoding="utf-8")
    return path


NO_TEXT_B = {"source": "local:pairs.tsv", "columns": {"id": "id", "text_a": "premise", "label": "gold_label"},
             "labels": MNLI_LABELS, "task": "mnli"}


def test_a_pair_task_whose_columns_leave_text_b_unmapped_is_refused(tmp_path):
    path = write_pairs(tmp_path / "pairs.tsv")
    with pytest.raises(DataError) as err:
        load_dataset("mnli_dev", NO_TEXT_B, base_dir=tmp_path)
    message = str(err.value)
    assert f"{path} (dataset 'mnli_dev')" in message and "'text_b'" in message
    assert "it has: id, premise, hypothesis, gold_label" in message and "single_text" in message


def test_a_single_text_task_prepares_with_empty_second_texts(tmp_path):
    write_pairs(tmp_path / "pairs.tsv")
    df, _ = load_dataset("mnli_dev", NO_TEXT_B, base_dir=tmp_path, single_text=True)
    assert df["text_b"].tolist() == ["", ""] and df["text_a"].tolist() == ["a cat sat", "a dog ran"]
    with pytest.raises(DataError, match="single-text but its `columns` map 'text_b' to 'hypothesis'"):
        load_dataset("mnli_dev", {**NO_TEXT_B, "columns": {**NO_TEXT_B["columns"], "text_b": "hypothesis"}},
                     base_dir=tmp_path, single_text=True)


def test_prepare_cli_takes_single_text(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_pairs(tmp_path / "pairs.tsv")
    base = ["--name", "mnli_dev", "--spec", json.dumps(NO_TEXT_B), "--out", "o.parquet", "--summary", "o.json"]
    with pytest.raises(DataError, match="text_b"):
        prepare.main(base)
    assert not Path("o.parquet").exists()
    assert prepare.main(base + ["--single-text"]) == 0 and Path("o.parquet").exists()


# -------------------------------------------------------------- 5c: positions are the file's line, from 1
def test_a_bad_label_in_a_tsv_is_named_by_its_line(tmp_path):
    path = write_pairs(tmp_path / "pairs.tsv", rows=[("a", "b", "neutral"), ("c", "d", "maybe")])
    spec = {**NO_TEXT_B, "columns": {**NO_TEXT_B["columns"], "text_b": "hypothesis"}}
    with pytest.raises(DataError) as err:
        load_dataset("mnli_dev", spec, base_dir=tmp_path)
    # header = line 1, so the second data row is line 3
    assert f"{path} (dataset 'mnli_dev'): field 'label' (source column 'gold_label') has unknown value 'maybe' " \
           "at line 3;" in str(err.value)


def test_a_csv_record_spanning_lines_is_named_by_its_first_line(tmp_path):
    (tmp_path / "q.csv").write_text('question1,question2,label\n"two\nlines",b,0\nc,,1\n', encoding="utf-8")
    spec = {"source": "local:q.csv", "columns": {"text_a": "question1", "text_b": "question2", "label": "label"},
            "labels": ["no", "yes"], "label_map": {"0": "no"}}
    with pytest.raises(DataError, match=r"unknown value '1' at line 4;"):
        load_dataset("q", spec, base_dir=tmp_path)


def test_jsonl_positions_are_lines_blank_lines_counted(tmp_path):
    good = {"premise": "a", "hypothesis": "b", "label": "neutral"}
    (tmp_path / "p.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "hypothesis": None}) + "\n"
                                      + json.dumps({**good, "label": "maybe"}) + "\n", encoding="utf-8")
    spec = {"source": "local:p.jsonl", "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
            "labels": MNLI_LABELS}
    with pytest.raises(DataError, match=r"p\.jsonl \(dataset 'x'\): field 'text_b' \(source column 'hypothesis'\) "
                                        r"has a null value at line 3$"):
        load_dataset("x", spec, base_dir=tmp_path)
    (tmp_path / "p.jsonl").write_text(json.dumps(good) + "\n\n" + json.dumps({**good, "label": "maybe"}) + "\n")
    with pytest.raises(DataError, match=r"unknown value 'maybe' at line 3;"):
        load_dataset("x", spec, base_dir=tmp_path)
    (tmp_path / "p.jsonl").write_text(json.dumps(good) + "\n\n[1, 2]\n")
    with pytest.raises(DataError, match=r"p\.jsonl: line 3 has non-object value \[1, 2\]"):
        load_dataset("x", spec, base_dir=tmp_path)


def test_a_duplicated_id_names_both_lines(tmp_path):
    path = write_pairs(tmp_path / "pairs.tsv", rows=[("a", "b", "neutral")] * 3)
    path.write_text(path.read_text().replace("p2\t", "p0\t"))
    spec = {**NO_TEXT_B, "columns": {**NO_TEXT_B["columns"], "text_b": "hypothesis"}}
    with pytest.raises(DataError) as err:
        load_dataset("mnli_dev", spec, base_dir=tmp_path)
    assert str(err.value).startswith(f"{path} (dataset 'mnli_dev'): field 'id' (source column 'id') has "
                                     "duplicated value 'p0' at line 4 (first at line 2;")
    assert "duplicate_ids: renumber" in str(err.value)  # the option that makes the ids unique, named


# ------------------------------------------------------------------------ 5d: a missing source key is named
def test_a_jsonl_record_without_the_mapped_key_names_the_key(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"premise": "a", "hypothesis": "b", "label": "neutral"}) + "\n"
                    + json.dumps({"premise": "a", "label": "neutral"}) + "\n", encoding="utf-8")
    spec = {"source": "local:p.jsonl", "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
            "labels": MNLI_LABELS}
    with pytest.raises(DataError) as err:
        load_dataset("x", spec, base_dir=tmp_path)
    assert str(err.value) == (f"{path} (dataset 'x'): column 'hypothesis' (mapped to text_b) is missing from "
                              f"line 2; it has: premise, label")


def test_a_short_csv_row_names_the_missing_column(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text("premise,hypothesis,label\na,b,neutral\nc\n", encoding="utf-8")
    spec = {"source": "local:q.csv", "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
            "labels": MNLI_LABELS}
    with pytest.raises(DataError) as err:
        load_dataset("x", spec, base_dir=tmp_path)
    assert str(err.value) == (f"{path} (dataset 'x'): column 'hypothesis' (mapped to text_b) is missing from "
                              f"line 3; it has: premise")


def test_a_column_absent_from_the_whole_file_names_the_key(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"premise": "a", "label": "neutral"}) + "\n", encoding="utf-8")
    spec = {"source": "local:p.jsonl", "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label"},
            "labels": MNLI_LABELS}
    with pytest.raises(DataError) as err:
        load_dataset("x", spec, base_dir=tmp_path)
    assert str(err.value) == (f"{path} (dataset 'x'): column 'hypothesis' (mapped to text_b) is missing from "
                              f"the file; it has: premise, label")


# ------------------------------------------------------- 5a: the local file is an input of its preparation
SNAKEMAKE = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile")]
PREPARED = "results/synthetic/nlu/data/prepared/hans.parquet"


def snakemake(workdir, *args, env=None):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {}),
           "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])}
    return subprocess.run([*SNAKEMAKE, "--directory", str(workdir), "--cores", "1", *args], capture_output=True,
                          text=True, timeout=600, cwd=workdir, env=env)


def local_hans_config(tmp_path, source="local:pairs.tsv", single_text=False):
    config = yaml.safe_load((REPO / "tests/configs/synthetic.yaml").read_text(encoding="utf-8"))
    config["datasets"]["hans"] = {"task": "mnli", "source": source, "labels": MNLI_LABELS,
                                  "columns": {"id": "id", "text_a": "premise", "text_b": "hypothesis",
                                              "label": "gold_label"}}
    if single_text:
        config["tasks"]["mnli"]["single_text"] = True
        del config["datasets"]["hans"]["columns"]["text_b"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def test_a_changed_local_file_reruns_its_preparation(tmp_path):
    path = write_pairs(tmp_path / "pairs.tsv")
    config = str(local_hans_config(tmp_path))
    first = snakemake(tmp_path, PREPARED, "--configfile", config)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Nothing to be done" in snakemake(tmp_path, PREPARED, "-n", "--configfile", config).stdout
    with path.open("a", encoding="utf-8") as handle:  # a user appends a pair
        handle.write("p9\tthe end\tthe end\tentailment\n")
    os.utime(path, (path.stat().st_atime, path.stat().st_mtime + 10))
    again = snakemake(tmp_path, PREPARED, "-n", "--configfile", config)
    assert again.returncode == 0 and "rule prepare_dataset:" in again.stdout, again.stdout[-3000:]
    assert "pairs.tsv" in again.stdout.split("rule prepare_dataset:")[1]  # listed as its input


def test_a_missing_local_file_refuses_the_run_that_reads_it_naming_the_key_and_path(tmp_path):
    """A run that would read the file stops before its first job, in one line naming the key, the path and the
    columns expected, and lists it while planning (a dry run plans without it: tests/test_user_data.py)."""
    config = str(local_hans_config(tmp_path, "local:data/absent.tsv"))
    line = (f"datasets.hans.source: data/absent.tsv does not exist (neither {tmp_path / 'data/absent.tsv'} nor "
            f"{REPO / 'data/absent.tsv'}); expected a tsv file with the 4 column(s) its `columns:` maps: id, gold_label, "
            "premise, hypothesis; make it with: your own file")  # the config's order (yaml.safe_dump sorts keys)
    run = snakemake(tmp_path, PREPARED, "--configfile", config, env={"MASKBENCH_WARM": "0"})
    assert run.returncode != 0
    assert any(row.startswith(f"  {line}") for row in run.stderr.splitlines()), run.stderr[-3000:]  # listed
    assert any(row.startswith(line) for row in run.stderr.splitlines()), run.stderr[-3000:]  # the refusal
    assert not (tmp_path / "results").exists()  # refused before any job: nothing written


def test_the_dry_run_passes_the_file_and_single_text_to_the_step(tmp_path):
    write_pairs(tmp_path / "pairs.tsv")
    result = snakemake(tmp_path, PREPARED, "-n", "-p", "--configfile",
                       str(local_hans_config(tmp_path, single_text=True)))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "--local-file pairs.tsv" in result.stdout and "--single-text" in result.stdout
