"""The planning benchmark (maskbench.benchmarks.dag_benchmark) plans a config whose user-supplied files are absent, and
snakemake's floor: a one-rule workflow of the same job count."""

from pathlib import Path

import pytest
import yaml

from maskbench.benchmarks.dag_benchmark import floor_snakefile, plan_floor, user_files

REPO = Path(__file__).resolve().parents[1]


def test_only_the_local_files_the_repository_does_not_ship_get_placeholders():
    config = {"datasets": {"shipped": {"source": "local:data/nli/mnli_dev_matched.tsv"},
                           "supplied": {"source": "local:data/fever/fever.dev.jsonl"},
                           "twice": {"source": "local:data/fever/fever.dev.jsonl"},
                           "generated": {"source": "synthetic:nli"}, "hub": {"source": "hub:glue"}}}
    assert user_files(config, REPO) == ["data/fever/fever.dev.jsonl"]


def test_the_paper_config_needs_exactly_its_four_user_files():
    config = yaml.safe_load((REPO / "configs/paper.yaml").read_text())
    assert user_files(config, REPO) == ["data/fever/fever.dev.jsonl", "data/fever/fever.train.jsonl",
                                        "data/paws_qqp/dev_and_test.tsv", "data/paws_qqp/train.tsv"]


def test_the_floor_workflow_plans_exactly_the_jobs_asked_for(tmp_path):
    seconds = plan_floor(tmp_path / "floor", 7, print_commands=True)
    assert seconds > 0
    text = (tmp_path / "floor" / "Snakefile").read_text()
    assert "range(6)" in text and text.count("rule ") == 2


def test_the_floor_workflow_refuses_fewer_than_two_jobs():
    with pytest.raises(ValueError, match="at least 2 jobs, got 1"):
        floor_snakefile(1)
