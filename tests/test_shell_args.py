"""The one renderer of a rule's typed settings into a step's command line (maskbench.cli.shell_args)."""

from __future__ import annotations

import dataclasses
import shlex

import pytest

from maskbench.cli import Json, parse_dataclass, shell_args


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


@dataclasses.dataclass
class Options:
    length_sorted: bool = False
    single_text: bool = True
    batch_size: int = 8


@pytest.mark.parametrize("argv,expected", [
    ([], (False, True)),
    (["--length-sorted", "False"], (False, True)),   # the word False is false (it was a non-empty string once)
    (["--length-sorted", "true", "--single-text", "FALSE"], (True, False)),
    (["--length-sorted"], (True, True)),              # the bare flag shell_args writes for True
])
def test_a_bool_option_reads_true_false_and_the_bare_flag(argv, expected):
    options = parse_dataclass(Options, argv, "test")
    assert (options.length_sorted, options.single_text) == expected and options.batch_size == 8


def test_a_bool_option_refuses_any_other_word(capsys):
    with pytest.raises(SystemExit):
        parse_dataclass(Options, ["--length-sorted", "no"], "test")
    assert "--length-sorted: expected true or false, got 'no'" in capsys.readouterr().err


def test_what_shell_args_writes_for_a_bool_parses_back_to_it():
    for value in (True, False):
        options = parse_dataclass(Options, shlex.split(shell_args(length_sorted=value)), "test")
        assert options.length_sorted is value


def test_a_field_parsed_by_its_own_function_gets_its_value_and_its_errors_one_usage_line(capsys, tmp_path):
    """``metadata["parse"]``: a JSON argument becomes the dict a step reads (inline, or a file's), per item for a list
    field; the parser's ValueError is the usage error, its message kept (argparse would say "invalid value")."""
    from maskbench.report import json_object_arg

    @dataclasses.dataclass
    class Report:
        columns: dict = dataclasses.field(metadata={"parse": json_object_arg})
        figures: list[str] = dataclasses.field(default_factory=list, metadata={"parse": str.upper})

    (tmp_path / "columns.json").write_text('{"b": {"task": "qqp"}}')
    parsed = parse_dataclass(Report, ["--columns", '{"a": {"task": "mnli"}}', "--figures", "x:y", "z"], "test")
    assert parsed == Report(columns={"a": {"task": "mnli"}}, figures=["X:Y", "Z"])
    assert parse_dataclass(Report, ["--columns", str(tmp_path / "columns.json")], "test").columns == {
        "b": {"task": "qqp"}}
    with pytest.raises(SystemExit) as refused:
        parse_dataclass(Report, ["--columns", "[]"], "test")
    assert refused.value.code == 2
    assert "test: error: argument --columns: not a non-empty JSON object: '[]'" in capsys.readouterr().err
