import json
import re
from pathlib import Path

import pandas as pd
import pytest

from maskbench.data.negation import NEGATION_WORDS, has_negation, negation_subset
from maskbench.data.schema import DataError, read_prepared, write_prepared
from maskbench.steps.nlu import negation_subset as negation_cli

LABELS = ["entailment", "neutral", "contradiction"]


PAPER_A = Path(__file__).resolve().parents[1].parent / "shared/papers/A_debiasing_masks.txt"


@pytest.mark.skipif(not PAPER_A.exists(), reason="paper A's text is in ../shared (beside the repository in CI)")
def test_word_list_is_paper_a_appendix_a():
    """Appendix A as printed: the words after "present in the hypothesis:", in order, each once ("don't" is printed
    twice, and "hasn't won't" without its comma), typographic apostrophes as ASCII."""
    text = PAPER_A.read_text()
    start = text.index("A Negation Words")
    printed = text[text.index("present in the hypothesis:", start) + len("present in the hypothesis:"):
                   text.index("B Hyperparameters", start)]
    words = [w.replace("\u2019", "'") for w in re.findall(r"[a-z\u2019']+", printed)]
    assert len(words) == 16
    assert NEGATION_WORDS == tuple(dict.fromkeys(words))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The man is not here", True),
        ("Nothing happened", True),
        ("He didn\u2019t go", True),
        ("He did n't go", True),
        ("She does n't care.", True),
        ("It is n't raining", True),
        ("They wo n't stay", True),
        ("We won't stay", True),
        ("NEVER again!", True),
        ("No.", True),
        ("There was no-one there", True),
        ("I cannot swim", True),
        ("Notable people", False),
        ("a knotted rope", False),
        ("snowy", False),
        ("The casino is open", False),
        ("I ca n't swim", False),   # can't is not in the list
        ("He couldn't go", False),  # neither is couldn't
        ("nonetheless", False),
        ("", False),
    ],
)
def test_has_negation(text, expected):
    assert has_negation(text) is expected


def test_has_negation_custom_words():
    assert has_negation("I can\u2019t swim", words=["can't"])
    assert has_negation("I ca n't swim", words=["can't"])
    assert not has_negation("The man is not here", words=["never"])
    assert not has_negation(None)


def frame():
    return pd.DataFrame({
        "id": ["m0", "m1", "m2", "m3", "m4", "m5"],
        "text_a": ["p"] * 6,
        "text_b": ["He is not tall", "He is tall", "Nobody came", "Nothing is left", "He didn\u2019t go",
                   "None of them"],
        "label": [0, 0, 0, 2, 0, 1],
        "genre": ["fiction", "travel", "slate", "fiction", "government", "travel"],
    })


def test_negation_subset_exact_ids_and_columns():
    subset = negation_subset(frame(), LABELS)
    assert subset["id"].tolist() == ["m0", "m4"]
    assert subset["genre"].tolist() == ["fiction", "government"]
    assert list(subset.columns) == ["id", "text_a", "text_b", "label", "genre"]
    assert subset.index.tolist() == [0, 1]


def test_negation_subset_other_entailment_label():
    labels = ["contradiction", "entailment", "neutral"]  # GLUE-TSV order: entailment is index 1
    df = frame().assign(label=[1, 1, 1, 0, 0, 1])
    assert negation_subset(df, labels)["id"].tolist() == ["m0", "m5"]
    with pytest.raises(DataError, match="'entails'"):
        negation_subset(df, labels, entailment_label="entails")


def test_cli_writes_subset_and_summary(tmp_path):
    source = tmp_path / "mnli_dev.parquet"
    write_prepared(frame(), LABELS, source, {"dataset": "mnli_dev", "task": "mnli", "source": "hf:nyu-mll/glue"})
    out, summary = tmp_path / "neg/mnli_neg.parquet", tmp_path / "neg/mnli_neg.json"
    assert negation_cli.main(["--input", str(source), "--out", str(out), "--summary", str(summary)]) == 0
    df, labels, meta = read_prepared(out)
    assert df["id"].tolist() == ["m0", "m4"]
    assert labels == LABELS
    assert meta["dataset"] == "mnli_dev" and meta["subset"] == "negation" and meta["parent"] == str(source)
    record = json.loads(summary.read_text())
    assert record["n_examples"] == 2
    assert record["n_input"] == 6
    assert record["words"] == list(NEGATION_WORDS)


def test_cli_custom_words(tmp_path):
    source = tmp_path / "dev.parquet"
    write_prepared(frame(), LABELS, source, {})
    out, summary = tmp_path / "o.parquet", tmp_path / "o.json"
    argv = ["--input", str(source), "--out", str(out), "--summary", str(summary), "--words", '["nobody"]']
    assert negation_cli.main(argv) == 0
    assert read_prepared(out)[0]["id"].tolist() == ["m2"]
    assert json.loads(summary.read_text())["words"] == ["nobody"]


def test_cli_empty_subset_fails_and_writes_nothing(tmp_path):
    source = tmp_path / "dev.parquet"
    write_prepared(frame().assign(label=[1, 1, 1, 1, 1, 1]), LABELS, source, {})
    out, summary = tmp_path / "o.parquet", tmp_path / "o.json"
    with pytest.raises(DataError) as refused:
        negation_cli.main(["--input", str(source), "--out", str(out), "--summary", str(summary)])
    assert not out.exists() and not summary.exists()
    err = str(refused.value)
    assert str(source) in err and "empty" in err
