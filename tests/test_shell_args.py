"""The one renderer of a rule's typed settings into a step's command line (maskbench.cli.shell_args)."""

import shlex

from maskbench.cli import Json, shell_args


def test_each_kind_of_value_becomes_the_words_argparse_reads():
    line = shell_args(train="res spaced/a.parquet", max_length=64, learning_rate=0.1, hparams={"epochs": 1},
                      words=Json(["no", "not"]), model_dirs=["a", "b c"], single_text=True, teacher_probs=None,
                      length_sorted=False)
    assert shlex.split(line) == ["--train", "res spaced/a.parquet", "--max-length", "64", "--learning-rate", "0.1",
                                 "--hparams", '{"epochs": 1}', "--words", '["no", "not"]', "--model-dirs", "a",
                                 "b c", "--single-text"]


def test_nothing_gives_an_empty_line_and_zero_is_kept():
    assert shell_args() == "" and shell_args(masks=[], words=None, flag=False) == ""
    assert shell_args(words=Json([])) == "--words '[]'"  # an empty JSON list is a value
    assert shell_args(seed=0, threshold=0.0) == "--seed 0 --threshold 0.0"
