"""The planning benchmark (maskbench.tools.dag_benchmark) plans a config whose user-supplied files are absent."""

from pathlib import Path

import yaml

from maskbench.tools.dag_benchmark import user_files

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
