"""Cross-reference checks of the workflow config (what the JSON schema cannot say)."""

import copy
from pathlib import Path

import pytest
import yaml

from maskbench.workflow_config import ConfigError, check_references

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "config.yaml").read_text())


@pytest.mark.parametrize("path", ["config.yaml", "configs/smoke.yaml", "configs/minilm.yaml", "configs/paper.yaml"])
def test_shipped_configs_pass(path):
    check_references(yaml.safe_load((REPO / path).read_text()))


def edited(edit):
    config = copy.deepcopy(BASE)
    edit(config)
    return config


@pytest.mark.parametrize("edit,message", [
    (lambda c: c["datasets"]["hans"].update(task="snli"), "datasets.hans.task has value 'snli'"),
    (lambda c: c["tasks"]["qqp"].update(dev="mnli_dev"), "tasks.qqp.dev names 'mnli_dev', a dataset of task 'mnli'"),
    (lambda c: c["tasks"]["mnli"]["eval_sets"].update(snli={"metric": "accuracy"}), "tasks.mnli.eval_sets.snli"),
    (lambda c: c["negation_subsets"]["mnli_negation"].update({"from": "nope"}), "negation_subsets.mnli_negation.from"),
    (lambda c: c["model"].update(init="pretrained"), "model.path is required"),
    (lambda c: c["standard_debiasing"]["sd_undertrained"].update(bias="tiny"), "standard_debiasing.sd_undertrained.bias"),
    (lambda c: c["report"]["table1"].update(rows=["baseline", "md_typo"]), "report.table1.rows has 'md_typo'"),
    (lambda c: c["masked_debiasing"]["md_hyponly"].update(bias="hyp"), "masked_debiasing.md_hyponly.bias has value 'hyp'"),
    (lambda c: c["masked_debiasing"]["md_hyponly"].pop("bias"), "masked_debiasing.md_hyponly.bias is required"),
    (lambda c: c["masked_debiasing"]["mask_no_debias"].update(bias="hyponly"), "loss 'ce' reads no bias source"),
    (lambda c: c["masked_debiasing"].update(md_again={"loss": "poe", "bias": "hyponly"}),
     "masked_debiasing.md_again has the loss and bias source of masked_debiasing.md_hyponly"),
    (lambda c: c["bias"]["sources"].update(none={"kind": "hypothesis_only"}), "bias.sources.none"),
    (lambda c: c["bias"]["sources"].update(lexical=c["bias"]["sources"].pop("overlap")), "must be called 'overlap'"),
    (lambda c: c["report"]["table1"]["columns"]["hans"].update(eval_set="paws"), "columns.hans.eval_set"),
])
def test_dangling_names_are_refused_with_their_key(edit, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        check_references(edited(edit))
