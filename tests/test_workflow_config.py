"""Cross-reference checks of the workflow config (what the JSON schema cannot say)."""

import copy
import re
from pathlib import Path

import pytest
import yaml

from maskbench.workflow.workflow_config import (
    TRACK_CHECKS,
    ConfigError,
    check_references,
    check_renamed_keys,
    tracks_of,
)

REPO = Path(__file__).resolve().parents[1]
BASE = yaml.safe_load((REPO / "tests/configs/synthetic.yaml").read_text())
SHIPPED = ["config.yaml", "tests/configs/synthetic.yaml", "configs/smoke.yaml", "configs/minilm.yaml", "configs/paper.yaml", "configs/srnets.yaml",
           "configs/your-model.yaml"]


@pytest.mark.parametrize("path", SHIPPED)
def test_shipped_configs_pass(path):
    config = yaml.safe_load((REPO / path).read_text())
    check_renamed_keys(config)
    check_references(validated(config))  # in the workflow's order: the checks see the schemas' defaults


def validated(config):
    """What rules/setup.smk does: the shared schema (which applies each named track's), then each track's schema
    on its own for its defaults; a refusal as the workflow words it."""
    from snakemake.exceptions import WorkflowError

    from maskbench.workflow.config_schema import ValidationError, validate_config

    try:
        return validate_config(config, REPO / "schemas")
    except ValidationError as err:
        raise WorkflowError("Error validating config file.", err) from None


@pytest.mark.parametrize("path", SHIPPED)
def test_shipped_configs_match_the_schemas_and_get_the_track_defaults(path):
    config = validated(yaml.safe_load((REPO / path).read_text()))
    assert config["compute"]["eval_runtime_min"] > 0  # a shared key's default
    assert config["mask_search"]["hparams"]["adam_eps"] == 1.0e-6  # an nlu key's default, two levels down


def test_every_track_of_the_schema_has_its_schema_and_checks():
    shared = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    names = shared["definitions"]["track_name"]["enum"]
    assert set(names) == set(TRACK_CHECKS)
    applied = [entry["then"]["$ref"] for entry in shared["allOf"]]
    assert applied == [f"{name}.schema.yaml" for name in names]
    assert all((REPO / "schemas" / ref).is_file() for ref in applied)


@pytest.mark.parametrize("track", ["nlu", ["nlu"]])
def test_track_is_a_name_or_a_list_of_names(track):
    config = copy.deepcopy(BASE)
    config["track"] = track
    assert tracks_of(validated(config)) == ["nlu"]
    check_references(config)


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(finetun={"epochs": 1}), "'finetun' was unexpected"),  # neither shared nor of a track
    (lambda c: c["finetune"].update(epochz=3), "'epochz' was unexpected"),  # inside an nlu key
    (lambda c: c["compute"].update(gpus=1), "'gpus' was unexpected"),  # inside a shared key
    (lambda c: c.update(track="audio"), "'audio' is not valid"),
    (lambda c: c.update(track=[]), "[] is not valid"),
    (lambda c: c.pop("model"), "'model' is a required property"),  # nlu requires it
])
def test_the_schemas_refuse_unknown_keys_and_values_naming_them(edit, message):
    from snakemake.exceptions import WorkflowError

    config = copy.deepcopy(BASE)
    edit(config)
    with pytest.raises(WorkflowError) as err:
        validated(config)
    assert message in str(err.value)


def test_an_unknown_track_is_refused_by_the_checks_too():
    with pytest.raises(ConfigError, match="track has 'audio'"):
        check_references({**BASE, "track": ["nlu", "audio"]})


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
    (lambda c: c["bias"]["sources"]["overlap"].update(solver={"snli": "liblinear"}),
     "bias.sources.overlap.solver.snli is not a task"),
    (lambda c: c["bias"]["sources"]["overlap"].update(C={"mnli_dev": 100}), "bias.sources.overlap.C.mnli_dev is not a task"),
    (lambda c: c["bias"]["sources"].update(lexical=c["bias"]["sources"].pop("overlap")), "must be called 'overlap'"),
    (lambda c: c["report"]["table1"]["columns"]["hans"].update(eval_set="paws"), "columns.hans.eval_set"),
])
def test_dangling_names_are_refused_with_their_key(edit, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.").replace("(", r"\(")):
        check_references(edited(edit))


SMOKE = validated(yaml.safe_load((REPO / "configs/smoke.yaml").read_text()))  # as the workflow checks it


@pytest.mark.parametrize("edit,message", [
    (lambda s: s.update(sparsities=[0.5, 0.35]), "srnets.sparsities[1] is 0.35; IMP prunes 10% per round"),
    (lambda s: s.update(sparsities=[0.5, 0.5]), "srnets.sparsities has a level twice"),
    (lambda s: s.update(seeds=[7]), "srnets.seeds has 7, which is not one of seeds"),
    (lambda s: s.update(tasks=["snli"]), "srnets.tasks has 'snli'"),
    (lambda s: s["imp"].update(tasks={"snli": {"hparams": {"epochs": 7}}}), "srnets.imp.tasks.snli is not a task"),
    (lambda s: s["debias"].update(bias="lexical"), "srnets.debias.bias has value 'lexical'"),
    (lambda s: s["table5"]["variants"]["gradual_0.7"].update(initial_sparsity=0.95),
     "srnets.table5.variants.gradual_0.7.initial_sparsity is 0.95"),
    (lambda s: s["table5"]["columns"].update(hans=["mnli", "paws"]), "srnets.table5.columns.hans"),
    (lambda s: s["ood_informed"]["train"]["mnli"][0].update(dataset="hans"),
     "srnets.ood_informed.train.mnli[0].dataset is 'hans', an evaluation set of mnli"),
    (lambda s: s["ood_informed"]["train"]["mnli"][0].update(dataset="hans_trian"),
     "srnets.ood_informed.train.mnli[0].dataset has value 'hans_trian'"),
    (lambda s: s["timing"].update(steps=[6, 3]), "srnets.timing.steps must increase strictly"),
    (lambda s: s["timing"].update(steps=[3, 10]), "srnets.timing.steps has 10, but srnets.theta_ft of qqp runs 10 steps"),
    (lambda s: s["timing"].update(sparsity={"mnli": 0.7}), "srnets.timing.sparsity has no value for task 'qqp'"),
])
def test_paper_c_names_and_levels_are_checked(edit, message):
    config = copy.deepcopy(SMOKE)
    edit(config["srnets"])
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_references(config)


BUDGET = validated(yaml.safe_load((REPO / "configs/budget-masks.yaml").read_text()))


@pytest.mark.parametrize("edit,message", [
    (lambda b: b.update(task="qqp"), "budget_study.task has value 'qqp', which is not a task"),
    (lambda b: b["masks"].update(rows=["md_overlap", "md_hyp"]), "budget_study.masks.rows has 'md_hyp'"),
    (lambda b: b.update(baseline={"train_sets": ["mnli_trian"], "epochs": 3}),
     "budget_study.baseline.train_sets has 'mnli_trian', which is not a dataset of task 'mnli'"),
    (lambda b: b["srnets"].update(sparsities=[0.2, 0.45]), "budget_study.srnets.sparsities[1] is 0.45; IMP prunes 10%"),
])
def test_the_budget_study_names_and_levels_are_checked(edit, message):
    config = copy.deepcopy(BUDGET)
    check_references(config)
    edit(config["budget_study"])
    with pytest.raises(ConfigError, match=re.escape(f"config: {message}")):
        check_references(config)


@pytest.mark.parametrize("edit,message", [
    (lambda train: train.update(lr_schedule="constant", plateau={"patience": 10, "min_lr": 0.001}),
     "train.plateau goes with lr_schedule plateau and only with it (lr_schedule is 'constant', plateau is set)"),
    (lambda train: train.update(lr_schedule="plateau"),
     "train.plateau goes with lr_schedule plateau and only with it (lr_schedule is 'plateau', plateau is missing)"),
])
def test_the_plateau_schedule_and_its_settings_come_together(edit, message):
    config = copy.deepcopy(SMOKE)
    name, model = next(iter(config["vision"]["models"].items()))
    edit(model["train"])
    with pytest.raises(ConfigError, match=re.escape(f"config: vision.models.{name}.{message}")):
        check_references(config)


GENDER = yaml.safe_load((REPO / "configs/gender.yaml").read_text())


def test_the_gender_config_passes_and_gets_its_defaults():
    config = validated(copy.deepcopy(GENDER))
    check_references(config)
    assert config["gender"]["words"]["male"] == "data/gender/male.txt"     # the shipped lists by default
    assert config["gender"]["seat"]["folder"] == "data/gender/seat"
    assert config["gender"]["pruning"]["hparams"]["adam_eps"] == 1.0e-8


@pytest.mark.parametrize("edit,message", [
    (lambda g: g["model"].pop("path"), "gender.model.path is required for a pretrained model"),
    (lambda g: g["model"].update(init="scratch"), "gender.model.bert_config is required when gender.model.init is "
                                                  "scratch"),
    (lambda g: g.pop("debias_only"), "gender.runs.debias_only needs gender.debias_only.hparams"),
    (lambda g: g.update(runs={}), "gender.runs plans no run"),
    (lambda g: g["runs"]["frozen"].update(granularities=["block0"]), "gender.runs.frozen.granularities has 'block0'; a block is at least 1"),
    (lambda g: g["lm_bias"].pop("crows_pairs"), "gender.lm_bias measures nothing; name crows_pairs, stereoset or both"),
    (lambda g: g["performance"]["tasks"]["mnli"]["dev"].update(source="synthetic"),
     "dataset 'gender.performance.tasks.mnli.dev': field 'source' has value 'synthetic'"),
    (lambda g: g["performance"]["tasks"]["mnli"]["train"].update(source="ftp:x"),
     "dataset 'gender.performance.tasks.mnli.train': field 'source' has unknown prefix 'ftp:'"),
])
def test_gender_settings_are_checked_with_their_key(edit, message):
    config = copy.deepcopy(GENDER)
    edit(config["gender"])
    with pytest.raises(ConfigError, match=re.escape(f"config: {message}")):
        check_references(config)


@pytest.mark.parametrize("edit,message", [
    (lambda g: g["runs"]["frozen"].update(granularities=["block"]), "'block' does not match"),
    (lambda g: g["runs"]["frozen"].update(layers=["middle"]), "'middle' is not one of"),
    (lambda g: g["corpus"].update(source="ftp://x"), "'ftp://x' does not match"),
    (lambda g: g["objective"].update(variant="kb"), "'kb' is not one of"),
    (lambda g: g["lm_bias"].update(head="trained"), "'trained' is not one of"),
    (lambda g: g["lm_bias"]["crows_pairs"].update(max_pairs=-1), "-1 is less than the minimum of 0"),
    (lambda g: g["performance"]["tasks"]["mnli"].pop("dev"), "'dev' is a required property"),
])
def test_the_gender_schema_refuses_bad_values(edit, message):
    from snakemake.exceptions import WorkflowError

    config = copy.deepcopy(GENDER)
    edit(config["gender"])
    with pytest.raises(WorkflowError) as err:
        validated(config)
    assert message in str(err.value)


@pytest.mark.parametrize("config,old,new", [
    ({"mask_search": {"hparams": {"learning_rate": 0.1}}}, "mask_search.hparams.learning_rate",
     "mask_search.score_learning_rate"),
    ({"srnets": {"mask_training": {"hparams": {"learning_rate": 0.1}}}}, "srnets.mask_training.hparams.learning_rate",
     "srnets.mask_training.score_learning_rate"),
    ({"srnets": {"mask_training": {"tasks": {"qqp": {"hparams": {"learning_rate": 0.1}}}}}},
     "srnets.mask_training.tasks.qqp.hparams.learning_rate", "srnets.mask_training.tasks.qqp.score_learning_rate"),
    ({"gender": {"pruning": {"score_lr": 0.01}}}, "gender.pruning.score_lr", "gender.pruning.score_learning_rate"),
])
def test_an_old_name_of_the_score_learning_rate_is_refused_naming_the_new_one(config, old, new):
    with pytest.raises(ConfigError) as err:
        check_renamed_keys(config)
    assert str(err.value).startswith(f"config: {old} was renamed; write it as {new} ")


def test_the_new_names_and_other_learning_rates_pass():
    check_renamed_keys({"mask_search": {"score_learning_rate": 0.1, "hparams": {"epochs": 1}},
                        "finetune": {"learning_rate": 1e-3}, "gender": {"pruning": {"score_learning_rate": 0.5}},
                        "srnets": {"mask_training": {"tasks": {"qqp": {"hparams": {"epochs": 2}}}}}})


def first_model(config):
    return next(iter(config["vision"]["models"].values()))


@pytest.mark.parametrize("edit,key", [
    (lambda c: c["srnets"].update(seeds=[]), "['srnets']['seeds']"),  # failed last, in srnet_report, before
    (lambda c: c["srnets"].update(tasks=[]), "['srnets']['tasks']"),
    (lambda c: c["srnets"]["timing"].update(tasks=[]), "['srnets']['timing']['tasks']"),
    (lambda c: c["srnets"].update(sparsities=[]), "['srnets']['sparsities']"),
    (lambda c: c["srnets"]["debias"].update(losses=[]), "['srnets']['debias']['losses']"),
    (lambda c: c["srnets"]["ood_informed"].update(train={}), "['srnets']['ood_informed']['train']"),
    (lambda c: c["report"]["table1"].update(rows=[]), "['report']['table1']['rows']"),
    (lambda c: c["report"]["table1"].update(columns={}), "['report']['table1']['columns']"),
    (lambda c: c["negation_subsets"]["mnli_negation"].update(words=[]),
     "['negation_subsets']['mnli_negation']['words']"),
    (lambda c: c["tasks"]["mnli"].update(eval_sets={}), "['tasks']['mnli']['eval_sets']"),
    (lambda c: c["mask_search"].update(modules=[]), "['mask_search']['modules']"),
    (lambda c: c["vision"]["ffw"].update(methods=[]), "['vision']['ffw']['methods']"),
    (lambda c: first_model(c).update(normalize={"mean": [], "std": 0.5}), "['normalize']['mean']"),
    (lambda c: c.update(seeds=[]), "['seeds']"),
])
def test_a_list_that_must_not_be_empty_is_refused_at_config_load_naming_its_key(edit, key):
    """Every list (and name -> value table) that must hold something says so in the schema: an empty one stops the
    workflow when the config loads, the message naming the key — not a job at the end with an argparse error."""
    from snakemake.exceptions import WorkflowError

    config = copy.deepcopy(SMOKE)
    edit(config)
    with pytest.raises(WorkflowError) as err:
        validated(config)
    message = str(err.value)
    assert key in message and re.search(r"should be non-empty|does not have enough properties|is not valid under",
                                        message), message
