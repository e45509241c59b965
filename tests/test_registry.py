import json
import sys
import types

import datasets
import pandas as pd
import pytest

from maskbench.data import hf_source
from maskbench.data.registry import load_dataset
from maskbench.data.schema import DataError

MNLI_LABELS = ["entailment", "neutral", "contradiction"]
FEVER_LABELS = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
MNLI_SPEC = {
    "source": "hf:nyu-mll/glue",
    "config": "mnli",
    "split": "validation_matched",
    "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label", "id": "idx"},
    "labels": MNLI_LABELS,
    "task": "mnli",
}


@pytest.fixture(autouse=True)
def no_hub(monkeypatch, tmp_path):
    """Offline with an empty Hub cache: the real Hub loader runs (and fails on the missing snapshot, as on a compute
    node before the fetch); its calls are recorded."""
    calls = []
    real = hf_source._load_hub

    def recorded(hub_id, config, split, revision):
        calls.append((hub_id, config, split, revision))
        return real(hub_id, config, split, revision)

    monkeypatch.setattr(hf_source, "_load_hub", recorded)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.delenv(hf_source.MIRROR_ENV, raising=False)
    return calls


@pytest.fixture
def glue_mirror(tmp_path):
    """glue/mnli validation_matched in the Hub's column layout, saved with Dataset.save_to_disk."""
    features = datasets.Features({
        "premise": datasets.Value("string"),
        "hypothesis": datasets.Value("string"),
        "label": datasets.ClassLabel(names=MNLI_LABELS),
        "idx": datasets.Value("int32"),
    })
    data = {
        "premise": ["The new rights are nice enough", "This site includes a list", "yeah i know"],
        "hypothesis": ["Everyone really likes the newest benefits", "The site has no list", "I know"],
        "label": [1, 2, 0],
        "idx": [0, 1, 2],
    }
    mirror = tmp_path / "mirror"
    datasets.Dataset.from_dict(data, features=features).save_to_disk(
        str(mirror / "nyu-mll/glue/mnli/validation_matched")
    )
    return mirror


def test_hf_glue_mnli_from_saved_dataset_mirror(glue_mirror, no_hub):
    df, labels = load_dataset("mnli_dev", {**MNLI_SPEC, "mirror": str(glue_mirror)})
    assert labels == MNLI_LABELS
    assert df["id"].tolist() == ["0", "1", "2"]
    assert df["text_a"].tolist() == ["The new rights are nice enough", "This site includes a list", "yeah i know"]
    assert df["text_b"].tolist() == ["Everyone really likes the newest benefits", "The site has no list", "I know"]
    assert df["label"].tolist() == [1, 2, 0]
    assert df["source_index"].tolist() == [0, 1, 2]
    assert no_hub == []


def test_hf_mirror_from_environment_variable(glue_mirror, monkeypatch):
    monkeypatch.setenv("MASKBENCH_HF_MIRROR", str(glue_mirror))
    df, _ = load_dataset("mnli_dev", MNLI_SPEC)
    assert df["label"].tolist() == [1, 2, 0]


def test_hf_relative_mirror_resolves_against_base_dir(glue_mirror):
    df, _ = load_dataset("mnli_dev", {**MNLI_SPEC, "mirror": "mirror"}, base_dir=glue_mirror.parent)
    assert len(df) == 3


HANS_ROWS = [
    ("The doctor saw the lawyer.", "The lawyer saw the doctor.", 1, "lexical_overlap", "ln_subject/object_swap"),
    ("The actor slept.", "The actor slept.", 0, "lexical_overlap", "le_relative_clause"),
    ("The judge by the actor ran.", "The actor ran.", 1, "subsequence", "sn_PP_on_subject"),
    ("Certainly the senator left.", "The senator left.", 0, "constituent", "ce_adverb"),
]


@pytest.fixture
def hans_mirror(tmp_path):
    """HANS validation as the Hub's parquet conversion (refs/convert/parquet): plain_text/validation/ holding
    numbered parquet shards."""
    frame = pd.DataFrame(HANS_ROWS, columns=["premise", "hypothesis", "label", "heuristic", "subcase"])
    for column in ("parse_premise", "parse_hypothesis", "binary_parse_premise", "binary_parse_hypothesis"):
        frame[column] = "( ( x ) )"
    frame["template"] = "temp1"
    folder = tmp_path / "mirror/jhu-cogsci/hans/plain_text/validation"   # the parquet branch's config folder
    folder.mkdir(parents=True)
    frame.iloc[:2].to_parquet(folder / "0000.parquet", index=False)
    frame.iloc[2:].to_parquet(folder / "0001.parquet", index=False)
    return tmp_path / "mirror"


def test_hf_hans_from_parquet_mirror(hans_mirror, monkeypatch, tmp_path):
    monkeypatch.setenv("MASKBENCH_HF_MIRROR", str(hans_mirror))
    # datasets.load_dataset("parquet") builds an arrow cache; keep it out of the user's home.
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_cache")
    spec = {
        "source": "hf:jhu-cogsci/hans",
        "split": "validation",
        "columns": {"text_a": "premise", "text_b": "hypothesis", "label": "label",
                    "heuristic": "heuristic", "subcase": "subcase"},
        "label_map": {"0": "entailment", "1": "non-entailment"},
        "labels": ["entailment", "non-entailment"],
    }
    df, labels = load_dataset("hans", spec)
    assert labels == ["entailment", "non-entailment"]
    assert df["id"].tolist() == ["hans-0", "hans-1", "hans-2", "hans-3"]
    assert df["text_a"].tolist() == [r[0] for r in HANS_ROWS]
    assert df["label"].tolist() == [1, 0, 1, 0]
    assert df["heuristic"].tolist() == ["lexical_overlap", "lexical_overlap", "subsequence", "constituent"]
    assert df["subcase"].tolist()[0] == "ln_subject/object_swap"
    assert "template" not in df.columns


def test_hf_missing_everywhere_names_hub_id_config_split_and_attempts(tmp_path, no_hub):
    with pytest.raises(DataError) as err:
        load_dataset("mnli_dev", {**MNLI_SPEC, "mirror": str(tmp_path / "empty")})
    message = str(err.value)
    for part in ("nyu-mll/glue", "'mnli'", "'validation_matched'", str(tmp_path / "empty"), "not in the Hub cache",
                 str(tmp_path / "empty-hub-cache"), "maskbench.steps fetch"):
        assert part in message
    assert no_hub == [("nyu-mll/glue", "mnli", "validation_matched", None)]


def test_hf_spec_is_checked_before_loading(no_hub):
    spec = {k: v for k, v in MNLI_SPEC.items() if k != "split"}
    with pytest.raises(DataError, match="field 'split' has value None"):
        load_dataset("mnli_dev", spec)
    with pytest.raises(DataError, match="field 'labels'"):
        load_dataset("mnli_dev", {**MNLI_SPEC, "labels": None})
    with pytest.raises(DataError, match="maps 'x' to 'maybe', which is not in labels"):
        load_dataset("mnli_dev", {**MNLI_SPEC, "label_map": {"x": "maybe"}})
    assert no_hub == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [("s3:bucket/x", "unknown prefix 's3:'"), ("nocolon", "field 'source' has value 'nocolon'"),
     ("local:", "nothing after 'local:'")],
)
def test_bad_source(source, expected):
    with pytest.raises(DataError, match=expected):
        load_dataset("x", {"source": source, "labels": ["a"]})


# ---- local files -------------------------------------------------------------------------------

FEVER_RECORDS = [
    {"id": 75397, "claim": "Nikolaj Coster-Waldau worked with Fox.", "evidence": "He worked with Fox.",
     "gold_label": "SUPPORTS", "weight": 1.0},
    {"id": 150448, "claim": "Roman Atwood is a content creator.", "evidence": "He is a vlogger.",
     "gold_label": "SUPPORTS", "weight": 1.0},
    {"id": 214861, "claim": "History of art excludes paintings.", "evidence": "It includes paintings.",
     "gold_label": "REFUTES", "weight": 1.0},
    {"id": 156709, "claim": "Adrienne Bailon is an accountant.", "evidence": "NaN",
     "gold_label": "NOT ENOUGH INFO", "weight": 1.0},
]
FEVER_SPEC = {
    "columns": {"id": "id", "text_a": "claim", "text_b": "evidence", "label": "gold_label"},
    "labels": FEVER_LABELS,
}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_local_fever_jsonl_with_label_names(tmp_path):
    write_jsonl(tmp_path / "fever_dev.jsonl", FEVER_RECORDS)
    df, labels = load_dataset("fever_dev", {**FEVER_SPEC, "source": "local:fever_dev.jsonl"}, base_dir=tmp_path)
    assert labels == FEVER_LABELS
    assert df["id"].tolist() == ["75397", "150448", "214861", "156709"]
    assert df["label"].tolist() == [0, 0, 1, 2]
    assert df["text_b"].tolist()[3] == "NaN"  # literal text, not a missing value


def test_local_fever_jsonl_with_label_map(tmp_path):
    write_jsonl(tmp_path / "fever_dev.jsonl", FEVER_RECORDS)
    spec = {**FEVER_SPEC, "source": f"local:{tmp_path / 'fever_dev.jsonl'}",
            "label_map": {"SUPPORTS": "entailment", "REFUTES": "contradiction", "NOT ENOUGH INFO": "neutral"},
            "labels": MNLI_LABELS}
    df, _ = load_dataset("fever_dev", spec)
    assert df["label"].tolist() == [0, 0, 2, 1]


def test_local_csv_qqp_like_with_int_label_map(tmp_path):
    (tmp_path / "qqp.csv").write_text(
        'id,qid1,qid2,question1,question2,is_duplicate\n'
        '10,1,2,"What is 1, 2, 3?","NA",0\n'
        '11,3,4,"He said ""hi""",Is it?,1\n',
        encoding="utf-8",
    )
    spec = {"source": "local:qqp.csv",
            "columns": {"id": "id", "text_a": "question1", "text_b": "question2", "label": "is_duplicate"},
            "label_map": {0: "not_duplicate", 1: "duplicate"}, "labels": ["not_duplicate", "duplicate"]}
    df, _ = load_dataset("qqp_dev", spec, base_dir=tmp_path)
    assert df["id"].tolist() == ["10", "11"]
    assert df["text_a"].tolist() == ["What is 1, 2, 3?", 'He said "hi"']
    assert df["text_b"].tolist() == ["NA", "Is it?"]
    assert df["label"].tolist() == [0, 1]


def test_local_tsv_glue_style_keeps_quotes(tmp_path):
    (tmp_path / "dev_matched.tsv").write_text(
        "index\tpairID\tsentence1\tsentence2\tgold_label\n"
        '0\t63735n\tThe "new rights are nice\tEveryone likes them\tneutral\n'
        "1\t91383c\tThis site includes a list\tThe site has none\tcontradiction\n",
        encoding="utf-8",
    )
    spec = {"source": "local:dev_matched.tsv",
            "columns": {"id": "pairID", "text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"},
            "labels": MNLI_LABELS}
    df, _ = load_dataset("mnli_dev", spec, base_dir=tmp_path)
    assert df["id"].tolist() == ["63735n", "91383c"]
    assert df["text_a"].tolist() == ['The "new rights are nice', "This site includes a list"]
    assert df["label"].tolist() == [1, 2]


def test_local_parquet_single_text_and_int_labels(tmp_path):
    pd.DataFrame({"sentence": ["good", "bad", "fine"], "label": [1, 0, 1]}).to_parquet(tmp_path / "sst.parquet")
    spec = {"source": "local:sst.parquet", "columns": {"text_a": "sentence"}, "labels": ["negative", "positive"]}
    df, _ = load_dataset("sst", spec, base_dir=tmp_path, single_text=True)  # a task declared single-text
    assert df["id"].tolist() == ["sst-0", "sst-1", "sst-2"]
    assert df["text_b"].tolist() == ["", "", ""]
    assert df["label"].tolist() == [1, 0, 1]


def test_local_format_override(tmp_path):
    (tmp_path / "heuristics_evaluation_set.txt").write_text(
        "gold_label\tsentence1\tsentence2\tpairID\nentailment\tA b.\tA b.\tex0\n", encoding="utf-8")
    spec = {"source": "local:heuristics_evaluation_set.txt", "format": "tsv",
            "columns": {"id": "pairID", "text_a": "sentence1", "text_b": "sentence2", "label": "gold_label"},
            "labels": ["entailment", "non-entailment"]}
    df, _ = load_dataset("hans", spec, base_dir=tmp_path)
    assert df.to_dict("records") == [{"id": "ex0", "text_a": "A b.", "text_b": "A b.", "label": 0,
                                      "source_index": 0}]


def test_local_missing_file_names_path(tmp_path):
    with pytest.raises(DataError) as err:
        load_dataset("fever_dev", {**FEVER_SPEC, "source": "local:data/nope.jsonl"}, base_dir=tmp_path)
    assert str(tmp_path / "data/nope.jsonl") in str(err.value)


def test_missing_column_names_file_and_column(tmp_path):
    path = write_jsonl(tmp_path / "fever_dev.jsonl", FEVER_RECORDS)
    spec = {**FEVER_SPEC, "source": "local:fever_dev.jsonl",
            "columns": {**FEVER_SPEC["columns"], "text_b": "evidence_sentence"}}
    with pytest.raises(DataError) as err:
        load_dataset("fever_dev", spec, base_dir=tmp_path)
    message = str(err.value)
    assert str(path) in message and "column 'evidence_sentence' (mapped to text_b) is missing" in message
    assert "it has: id, claim, evidence, gold_label, weight" in message


def test_unknown_label_value_names_file_field_and_value(tmp_path):
    path = write_jsonl(tmp_path / "fever_dev.jsonl", FEVER_RECORDS + [
        {"id": 1, "claim": "c", "evidence": "e", "gold_label": "MAYBE", "weight": 1.0}])
    with pytest.raises(DataError) as err:
        load_dataset("fever_dev", {**FEVER_SPEC, "source": "local:fever_dev.jsonl"}, base_dir=tmp_path)
    message = str(err.value)
    assert str(path) in message and "field 'label'" in message and "'MAYBE'" in message and "line 5" in message  # the file's line


def test_int_label_outside_labels_is_unknown(tmp_path):
    pd.DataFrame({"s": ["a", "b"], "label": [0, -1]}).to_parquet(tmp_path / "x.parquet")
    spec = {"source": "local:x.parquet", "columns": {"text_a": "s"}, "labels": ["neg", "pos"]}
    with pytest.raises(DataError, match=r"x\.parquet.*field 'label'.*unknown value -1 at row 2;"):
        load_dataset("x", spec, base_dir=tmp_path, single_text=True)


def test_empty_split_names_file(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("id,claim,evidence,gold_label\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_dataset("fever_dev", {**FEVER_SPEC, "source": "local:empty.csv"}, base_dir=tmp_path)
    assert str(path) in str(err.value) and "0 values" in str(err.value)


def test_duplicated_id_names_file_field_and_value(tmp_path):
    records = [dict(r) for r in FEVER_RECORDS]
    records[2]["id"] = 75397
    path = write_jsonl(tmp_path / "fever_dev.jsonl", records)
    with pytest.raises(DataError) as err:
        load_dataset("fever_dev", {**FEVER_SPEC, "source": "local:fever_dev.jsonl"}, base_dir=tmp_path)
    assert str(err.value) == (f"{path} (dataset 'fever_dev'): field 'id' (source column 'id') has duplicated value "
                              f"'75397' at line 3 (first at line 1; 1 repeated ids in all); set `duplicate_ids: "
                              f"renumber` in the dataset's entry to make them unique as '<id>-<k>'")


def test_bad_json_line_names_file_and_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"id": 1}\n{"id": \n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad\.jsonl: field 'line 2'"):
        load_dataset("x", {**FEVER_SPEC, "source": "local:bad.jsonl"}, base_dir=tmp_path)


# ---- synthetic ---------------------------------------------------------------------------------

@pytest.fixture
def fake_synthetic(monkeypatch):
    calls = []

    def generate(generator, **params):
        calls.append((generator, params))
        n = params["n"]
        df = pd.DataFrame({"id": [f"s{i}" for i in range(n)], "text_a": ["x"] * n, "text_b": ["y"] * n,
                           "label": [i % 2 for i in range(n)], "bias_aligned": [True] * n})
        return df, ["entailment", "non-entailment"]

    monkeypatch.setitem(sys.modules, "maskbench.data.synthetic", types.SimpleNamespace(generate=generate))
    return calls


def test_synthetic_passes_spec_minus_registry_keys(fake_synthetic):
    spec = {"source": "synthetic:overlap_nli", "split": "train", "n": 4, "seed": 3, "rho": 0.9,
            "task": "synth", "labels": ["entailment", "non-entailment"]}
    df, labels = load_dataset("synth_train", spec)
    assert fake_synthetic == [("overlap_nli", {"split": "train", "n": 4, "seed": 3, "rho": 0.9})]
    assert labels == ["entailment", "non-entailment"]
    assert df["label"].tolist() == [0, 1, 0, 1]


def test_synthetic_label_mismatch(fake_synthetic):
    spec = {"source": "synthetic:overlap_nli", "n": 2, "labels": ["a", "b"]}
    with pytest.raises(DataError, match="field 'labels' has value"):
        load_dataset("synth", spec)


def test_synthetic_output_is_validated(fake_synthetic):
    with pytest.raises(DataError, match=r"dataset 'synth' \(synthetic:g\): field 'id' has 0 values"):
        load_dataset("synth", {"source": "synthetic:g", "n": 0})


def test_synthetic_generator_errors_become_data_errors(monkeypatch):
    def generate(generator, split, n):
        raise ValueError(f"no split {split!r}")

    monkeypatch.setitem(sys.modules, "maskbench.data.synthetic", types.SimpleNamespace(generate=generate))
    with pytest.raises(DataError, match=r"dataset 'synth' \(synthetic:nli\).*no split 'test'"):
        load_dataset("synth", {"source": "synthetic:nli", "split": "test", "n": 3})
    with pytest.raises(DataError, match=r"dataset 'synth' \(synthetic:nli\).*unexpected keyword"):
        load_dataset("synth", {"source": "synthetic:nli", "split": "train", "n": 3, "colour": "red"})
