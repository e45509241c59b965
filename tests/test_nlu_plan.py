"""What the nlu rules plan (maskbench.tracks.nlu.workflow_plan, sweep_points.SweepPlan), on a hand-written config."""

import subprocess
import sys

from maskbench.objectives.needs import HYPERPARAMETERS
from maskbench.tracks.nlu.sweep_points import SweepPlan
from maskbench.tracks.nlu.workflow_plan import NluPlan

CONFIG = {
    "results": "res",
    "model": {"name": "tiny"},
    "seeds": [1, 2],
    "datasets": {"mnli_train": {"task": "mnli"}, "mnli_dev": {"task": "mnli"}, "hans": {"task": "mnli"}},
    "negation_subsets": {"neg": {"from": "mnli_dev"}},
    "tasks": {"mnli": {"train": "mnli_train", "dev": "mnli_dev",
                       "eval_sets": {"mnli_dev": {"metric": "accuracy"}, "hans": {"metric": "accuracy"}}}},
    "report": {"table1": {"rows": ["baseline", "sd_x", "md_x", "md_ce"]}},
    "bias": {"seed": 0, "sources": {"overlap": {"kind": "overlap_lr", "features": {"mnli": "overlap"},
                                                "solver": {"mnli": "liblinear"}},
                                    "hyp": {"kind": "hypothesis_only"}}},
    "standard_debiasing": {"sd_x": {"loss": "reweight", "bias": "hyp", "loss_hparams": {"strength": 0.5}}},
    "masked_debiasing": {"md_x": {"loss": "poe", "bias": "overlap"}, "md_ce": {"loss": "ce"}},
    "mask_search": {"method": "movement_sigmoid", "l1_lambda": 1.0, "score_learning_rate": 0.1,
                    "hparams": {"epochs": 2, "batch_size": 16}},
    "finetune": {"epochs": 3, "learning_rate": 1e-3, "train_classifier": False, "tasks": {"mnli": {"epochs": 4}},
                 "length_sorted_eval": True},
    "tradeoff": {"sweeps": {"md_x": {"learning_rate": [0.03, 0.1]}, "sd_x": {"strength": [0.25]}}},
}


def test_rows_seeds_and_layout():
    plan = NluPlan(CONFIG)
    assert plan.mask_rows == ["md_x", "md_ce"] and plan.model_rows == ["baseline", "sd_x"]
    assert plan.neural_bias_rows == ["bias_hyp"] and plan.bias_seeds() == [0] and plan.row_seeds("bias_hyp") == [0]
    assert plan.prepared_path("neg") == "res/nlu/data/subsets/neg.parquet"
    assert plan.checkpoint_dir("mnli", 2) == "res/nlu/mnli/tiny/models/method~finetune/loss~ce/seed~2"
    assert plan.mask_file("mnli", "md_ce", "{seed}") == \
        "res/nlu/mnli/tiny/masks/method~movement_sigmoid/loss~ce/bias~none/seed~{seed}.mask"
    assert plan.row_model("mnli", "sd_x", 1)["model"] == \
        "res/nlu/mnli/tiny/models/method~finetune/loss~reweight/bias~hyp/seed~1/model.safetensors"
    assert plan.evaluation_outputs("mnli", ["baseline"], 1, "metrics") == [
        "res/nlu/mnli/tiny/eval/baseline/seed~1/mnli_dev.json", "res/nlu/mnli/tiny/eval/baseline/seed~1/hans.json"]
    assert plan.mask_report_keys() == ["mnli/md_x/1", "mnli/md_x/2", "mnli/md_ce/1", "mnli/md_ce/2"]


def test_settings_merge_key_by_key():
    plan = NluPlan(CONFIG)
    assert plan.finetune_hparams("mnli") == {"epochs": 4, "learning_rate": 1e-3, "length_sorted_eval": True}
    source = {"epochs": 1, "hparams": {"learning_rate": 5e-3}, "tasks": {"mnli": {"hparams": {"warmup": 0}}}}
    assert plan.finetune_hparams("mnli", source) == {"epochs": 1, "learning_rate": 5e-3, "warmup": 0,
                                                     "length_sorted_eval": True}
    assert plan.train_classifier() == 0
    assert plan.mask_search_spec() == {"method": "movement_sigmoid", "l1_lambda": 1.0}
    assert plan.mask_search_hparams() == {"epochs": 2, "batch_size": 16, "learning_rate": 0.1}
    assert plan.loss_hparams(plan.sd, "reweight", "hyp") == {"strength": 0.5}
    assert plan.loss_hparams(plan.md, "ce", "none") == {} and plan.loss_hparams(plan.md, "focal", "hyp") == {}
    # only what differs from the step's defaults, and the offline word vectors
    assert plan.overlap_options("mnli", "ckpt") == {
        "features": "overlap", "binary_positive": None, "feature_set": None, "solver": "liblinear",
        "inverse_regularisation": None, "class_weight": None, "embeddings_from": "ckpt"}


def test_sweep_points_and_their_settings():
    sweeps = SweepPlan(NluPlan(CONFIG), HYPERPARAMETERS)
    points = sweeps.points()
    # md_x's own learning rate (0.1) is its Table 1 run; sd_x's own strength (0.5) likewise
    assert [(p["point"], p["value"], p["run"]) for p in points] == [
        ("md_x@learning_rate~0.03", 0.03, True), ("md_x", 0.1, False),
        ("sd_x@strength~0.25", 0.25, True), ("sd_x", 0.5, False)]
    assert [p["point"] for p in sweeps.run_points("mnli", "model")] == ["sd_x@strength~0.25"]
    assert sweeps.point_file(points[0], 1, "mask") == \
        "res/nlu/mnli/tiny/sweeps/md_x/learning_rate~0.03/seed~1.mask"
    assert sweeps.with_knob({"learning_rate": 0.1, "epochs": 2}, "md_x", "learning_rate", "0.03",
                            ("learning_rate", "epochs")) == {"learning_rate": 0.03, "epochs": 2}
    assert sweeps.with_knob({"a": 1}, "md_x", "learning_rate", "0.03", ("l1_lambda",)) == {"a": 1}
    assert sweeps.row_settings("md_x") == ("poe", "overlap") and sweeps.row_settings("sd_x") == ("reweight", "hyp")
    assert sweeps.figures() == {"mnli:hans": "res/figures/tradeoff/mnli_hans.png"}
    # the engagement table reads each point that is a run of its own, under its point name, on every seed
    assert [(r["row"], r["seed"], r["kind"], r["path"]) for r in sweeps.engagement_runs()] == [
        ("md_x@learning_rate~0.03", 1, "mask_search", "res/nlu/mnli/tiny/sweeps/md_x/learning_rate~0.03/seed~1.search.json"),
        ("md_x@learning_rate~0.03", 2, "mask_search", "res/nlu/mnli/tiny/sweeps/md_x/learning_rate~0.03/seed~2.search.json"),
        ("sd_x@strength~0.25", 1, "fine_tuning", "res/nlu/mnli/tiny/sweeps/sd_x/strength~0.25/seed~1/train_summary.json"),
        ("sd_x@strength~0.25", 2, "fine_tuning", "res/nlu/mnli/tiny/sweeps/sd_x/strength~0.25/seed~2/train_summary.json")]
    assert SweepPlan(NluPlan({**CONFIG, "tradeoff": {}}), HYPERPARAMETERS).engagement_runs() == []


def test_the_plan_imports_nothing_heavy():
    code = ("import sys, maskbench.tracks.nlu.workflow_plan, maskbench.tracks.nlu.sweep_points; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pandas', 'numpy')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "[]"


def test_one_reading_of_a_mask_search_section_for_the_plan_paper_cs_grid_and_the_console():
    from maskbench.tracks.nlu.mask_search_run import SEARCH_HPARAMS, search_settings
    from maskbench.tracks.nlu.search_section import split_search_section
    from maskbench.tracks.nlu.srnets import grid as srnet_grid

    section = {"method": "movement", "hparams": {"epochs": 2, "learning_rate": 1.0, "batch_size": 8},
               "score_learning_rate": 0.03, "l1_lambda": 0.5}
    spec, optimiser = split_search_section(section)
    assert spec == {"method": "movement", "l1_lambda": 0.5}
    # the rate replaces hparams' own in place: the key keeps its position, so a planned --hparams JSON keeps its bytes
    assert list(optimiser.items()) == [("epochs", 2), ("learning_rate", 0.03), ("batch_size", 8)]
    assert split_search_section({"hparams": {"epochs": 1}}) == ({}, {"epochs": 1})  # no rate: hparams' own
    assert section["hparams"]["learning_rate"] == 1.0  # the config is not changed
    # the three readers agree: the workflow's plan, paper C's grid (its mask training), the console and the API
    plan = NluPlan({**CONFIG, "mask_search": section})
    assert (plan.mask_search_spec(), plan.mask_search_hparams()) == (spec, optimiser)
    srn = {"mask_training": section}
    assert srnet_grid.spec(srn, {"mt": {"method": "mask_train"}}, "mt", "mnli") == spec
    assert srnet_grid.hparams(srn, {"mt": {"method": "mask_train"}}, "mt", "mnli") == optimiser
    assert search_settings(section) == (spec, {**SEARCH_HPARAMS, **optimiser})
