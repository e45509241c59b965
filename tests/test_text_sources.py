"""The user-supplied text sources of configs/paper.yaml: FEVER's repeated claim ids (`duplicate_ids`), the
Python 3 PAWS-QQP builder (maskbench.tools.paws_qqp), the bytes-literal refusal, and the miniature inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from maskbench.data.registry import check_spec, load_dataset
from maskbench.data.schema import DataError, read_prepared
from maskbench.miniature.text_sources import write_text_sources
from maskbench.steps.prepare import PrepareArgs, prepare
from maskbench.tools import paws_qqp

ROOT = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((ROOT / "configs/paper.yaml").read_text())["datasets"]
FEVER_SPEC = {"task": "fever", "source": "local:fever.jsonl",
              "columns": {"id": "id", "text_a": "evidence", "text_b": "claim", "label": "gold_label"},
              "labels": ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]}
# claim 75397 has two evidence sentences (as the NLI-style files repeat a claim id), 150448 three
FEVER_RECORDS = [
    {"id": 75397, "claim": "C1 .", "evidence": "E1a .", "gold_label": "SUPPORTS", "weight": 1.0},
    {"id": 150448, "claim": "C2 .", "evidence": "E2a .", "gold_label": "REFUTES", "weight": 1.0},
    {"id": 75397, "claim": "C1 .", "evidence": "E1b .", "gold_label": "SUPPORTS", "weight": 1.0},
    {"id": 214861, "claim": "C3 .", "evidence": "E3 .", "gold_label": "NOT ENOUGH INFO", "weight": 1.0},
    {"id": 150448, "claim": "C2 .", "evidence": "E2b .", "gold_label": "REFUTES", "weight": 1.0},
    {"id": 150448, "claim": "C2 .", "evidence": "E2c .", "gold_label": "REFUTES", "weight": 1.0},
]


def _jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_repeated_id_is_refused_naming_file_field_value_and_the_option(tmp_path):
    path = _jsonl(tmp_path / "fever.jsonl", FEVER_RECORDS)
    with pytest.raises(DataError) as err:
        load_dataset("fever_train", FEVER_SPEC, base_dir=tmp_path)
    message = str(err.value)
    assert str(path) in message and "field 'id'" in message and "'75397'" in message
    assert "at line 3 (first at line 1; 3 repeated ids in all)" in message
    assert "duplicate_ids: renumber" in message and "\n" not in message


def test_renumbered_ids_are_unique_and_deterministic(tmp_path):
    _jsonl(tmp_path / "fever.jsonl", FEVER_RECORDS)
    spec = {**FEVER_SPEC, "duplicate_ids": "renumber"}
    df, labels = load_dataset("fever_train", spec, base_dir=tmp_path)
    assert df["id"].tolist() == ["75397-1", "150448-1", "75397-2", "214861", "150448-2", "150448-3"]
    assert df["source_id"].tolist() == ["75397", "150448", "75397", "214861", "150448", "150448"]
    assert df["text_a"].tolist() == ["E1a .", "E2a .", "E1b .", "E3 .", "E2b .", "E2c ."]
    again, _ = load_dataset("fever_train", spec, base_dir=tmp_path)
    assert again["id"].tolist() == df["id"].tolist()


def test_renumbering_that_would_hit_an_existing_id_is_refused(tmp_path):
    _jsonl(tmp_path / "fever.jsonl", [{**FEVER_RECORDS[0], "id": "7"}, {**FEVER_RECORDS[0], "id": "7"},
                                      {**FEVER_RECORDS[1], "id": "7-2"}])
    with pytest.raises(DataError, match=r"renumbered to '7-2' .*another row has as its id"):
        load_dataset("fever_train", {**FEVER_SPEC, "duplicate_ids": "renumber"}, base_dir=tmp_path)


@pytest.mark.parametrize("value", ["suffix", True, "Renumber"])
def test_duplicate_ids_value_is_checked(value):
    with pytest.raises(DataError, match=r"dataset 'fever_train' .*field 'duplicate_ids' has value .*'refuse', "
                                        r"'renumber'"):
        check_spec("fever_train", {**FEVER_SPEC, "duplicate_ids": value})


def test_prepare_records_how_many_ids_were_renumbered(tmp_path):
    path = _jsonl(tmp_path / "fever.jsonl", FEVER_RECORDS)
    spec = {**FEVER_SPEC, "duplicate_ids": "renumber"}
    out, summary_path = tmp_path / "fever.parquet", tmp_path / "fever.json"
    summary = prepare(PrepareArgs(name="fever_train", spec=spec, out=out, summary=summary_path, local_file=path))
    assert summary["ids_renumbered"] == 5
    assert json.loads(summary_path.read_text())["ids_renumbered"] == 5
    df, _, meta = read_prepared(out)
    assert meta["ids_renumbered"] == 5 and df["id"].is_unique


# Two QQP questions and three PAWS rows in their real layouts; the tokens are NLTK word_tokenize's (by hand:
# "?" and "'s" split off, double quotes become `` and ''). qid 1's second question is not tokenized: the first
# row naming a qid wins (_fake_nltk would raise KeyError).
QQP_TSV = ("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
           "0\t1\t2\tWhat's the best way to learn Python?\t\"How do I say \"\"hello\"\" in French?\"\t0\n"
           "1\t1\t3\tWhich is better?\tHow can I learn Python fast?\t1\n")
TOKENS = {
    "What's the best way to learn Python?": ["What", "'s", "the", "best", "way", "to", "learn", "Python", "?"],
    'How do I say "hello" in French?': ["How", "do", "I", "say", "``", "hello", "''", "in", "French", "?"],
    "How can I learn Python fast?": ["How", "can", "I", "learn", "Python", "fast", "?"],
}
PAWS_TSV = ("id\tqid1\tsentence1\tqid2\tsentence2\tlabel\n"
            "1\t1\t0/1/2/3/4/5/6/7/8\t1\t0/1/2/3/4/5/7/6/8\t0\n"
            "2\t3\t0/1/2/3/4/5/6\t2\t0/1/2/3/(2, 4):(2, 5):(2, 6)/7/8/9\t1\n"
            "3\t2\t2/3/5/7/8/9\t3\t(1, 0):(1, 1)/1/2/3\t0\n")


def _fake_nltk(text: str) -> list[str]:
    return list(TOKENS[text])


def test_paws_qqp_writes_what_the_original_writes(tmp_path):
    (tmp_path / "qqp.tsv").write_text(QQP_TSV, encoding="utf-8")
    (tmp_path / "paws.tsv").write_text(PAWS_TSV, encoding="utf-8")
    n = paws_qqp.build(tmp_path / "qqp.tsv", tmp_path / "paws.tsv", tmp_path / "out/train.tsv", tokenize=_fake_nltk)
    assert n == 3
    assert (tmp_path / "out/train.tsv").read_bytes().decode("utf-8") == (
        "id\tsentence1\tsentence2\tlabel\r\n"
        "1\tWhat 's the best way to learn Python ?\tWhat 's the best way to Python learn ?\t0\r\n"
        "2\tHow can I learn Python fast ?\tHow do I say ``hello'' in French ?\t1\r\n"
        "3\tI say hello in French ?\tWhat's can I learn\t0\r\n")


def test_paws_qqp_output_reads_through_the_paper_config(tmp_path):
    (tmp_path / "qqp.tsv").write_text(QQP_TSV, encoding="utf-8")
    (tmp_path / "paws.tsv").write_text(PAWS_TSV, encoding="utf-8")
    out = tmp_path / "data/paws_qqp/dev_and_test.tsv"
    paws_qqp.build(tmp_path / "qqp.tsv", tmp_path / "paws.tsv", out, tokenize=_fake_nltk)
    df, labels = load_dataset("paws", PAPER["paws"], base_dir=tmp_path)
    assert df["id"].tolist() == ["1", "2", "3"] and df["label"].tolist() == [0, 1, 0]
    assert df["text_b"].tolist()[1] == "How do I say ``hello'' in French ?"


def test_paws_qqp_missing_qqp_id_names_file_line_and_id(tmp_path):
    (tmp_path / "qqp.tsv").write_text(QQP_TSV, encoding="utf-8")
    paws = tmp_path / "paws.tsv"
    paws.write_text(PAWS_TSV.replace("3\t2\t2/3/5", "3\t4\t2/3/5"), encoding="utf-8")
    with pytest.raises(DataError) as err:
        paws_qqp.build(tmp_path / "qqp.tsv", paws, tmp_path / "out.tsv", tokenize=_fake_nltk)
    assert str(err.value) == (f"{paws}: line 4, field 'sentence1': qid 4 is not in the QQP file (another QQP "
                              f"version?)")
    assert not (tmp_path / "out.tsv").exists()


def test_paws_qqp_cli_reports_a_bad_index_on_one_line(tmp_path, capsys):
    (tmp_path / "qqp.tsv").write_text(QQP_TSV, encoding="utf-8")
    paws = tmp_path / "paws.tsv"
    paws.write_text(PAWS_TSV.replace("0/1/2/3/4/5/6\t2", "0/1/2/3/4/5/60\t2"), encoding="utf-8")
    with pytest.raises(DataError, match=r"paws.tsv: line 3, field 'sentence1': token index 60 of qid 3, whose "
                                        r"question has 7 tokens"):
        paws_qqp.build(tmp_path / "qqp.tsv", paws, tmp_path / "out.tsv", tokenize=_fake_nltk)


def test_paws_qqp_tsv_with_python_bytes_literals_is_refused(tmp_path):
    # what a naive Python 3 port of qqp_generate_data.py writes: str() of the utf-8 bytes
    path = tmp_path / "data/paws_qqp/train.tsv"
    path.parent.mkdir(parents=True)
    path.write_text("id\tsentence1\tsentence2\tlabel\n"
                    "1\tWhat is it ?\tWhat is it ?\t1\n"
                    "2\tb'What is the best way ?'\tb'What is the way best ?'\t0\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dataset("paws_qqp_train", PAPER["paws_qqp_train"], base_dir=tmp_path)
    message = str(err.value)
    assert message.startswith(f"{path} (dataset 'paws_qqp_train'): line 3, column 'sentence1' has value "
                              f"\"b'What is the best way ?'\"")
    assert "maskbench.tools.paws_qqp" in message


def test_miniature_text_sources_read_through_the_paper_config(tmp_path):
    paths = write_text_sources(tmp_path, n=24, seed=0)
    expected = {"fever_train": 24, "fever_dev": 12, "paws_qqp_train": 24, "paws": 12}
    for name, rows in expected.items():
        assert paths[name] == tmp_path / PAPER[name]["source"].removeprefix("local:")
        df, labels = load_dataset(name, PAPER[name], base_dir=tmp_path)
        assert len(df) == rows and df["id"].is_unique, name
        assert labels == PAPER[name]["labels"]
    train = [json.loads(line) for line in paths["fever_train"].read_text().splitlines()]
    assert sorted(train[0]) == ["claim", "evidence", "gold_label", "id", "weight"]
    assert len({r["id"] for r in train}) < len(train)  # the claim ids repeat, as in the real files
    fever, _ = load_dataset("fever_train", PAPER["fever_train"], base_dir=tmp_path)
    assert sorted(set(fever["label"])) == [0, 1, 2]
    dev, _ = load_dataset("fever_dev", PAPER["fever_dev"], base_dir=tmp_path)
    assert sorted(set(dev["label"])) == [0, 1]  # the real dev file has SUPPORTS and REFUTES only
    paws, _ = load_dataset("paws", PAPER["paws"], base_dir=tmp_path)
    assert paws["label"].tolist() == [0, 1] * 6
    assert paws["text_a"].iloc[1] == paws["text_b"].iloc[1]  # a label-1 row repeats its question
    assert write_text_sources(tmp_path / "again", n=24, seed=0)["paws"].read_bytes() == paths["paws"].read_bytes()
