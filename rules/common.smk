# Helpers shared by every .smk file (config validation, path builders and input functions).
# Module-level code only reads the config: it re-runs inside every cluster job (no clocks, no randomness).
import json
import os
import shlex
import sys

from snakemake.utils import validate

# the config checks below import from the source tree, installed or not (the rules' `python -m maskbench.*`
# need the package installed: pip install -e . , or the conda env in envs/)
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from maskbench.workflow_config import check_references  # noqa: E402

validate(config, os.path.join(workflow.basedir, "schemas", "config.schema.yaml"))
check_references(config)

R = config["results"]
TRACK = config["track"]
MODEL = config["model"]["name"]
SEEDS = [int(s) for s in config["seeds"]]
TASKS = list(config["tasks"])
DATASETS = list(config["datasets"])
SUBSETS = list(config.get("negation_subsets", {}))
ROWS = list(config["report"]["table1"]["rows"]) if config["report"].get("table1") else ["baseline"]
COMPUTE = config["compute"]


def alternation(names):
    """A wildcard regex that matches exactly these names."""
    return "|".join(sorted(names)) if names else "__none__"


def as_json(obj):
    """A shell-quoted JSON argument (config values pass to entry points as JSON, in config order)."""
    return shlex.quote(json.dumps(obj))


# ----------------------------------------------------------------------------------------------- paths
def prepared_path(name):
    if name in config.get("negation_subsets", {}):
        return f"{R}/{TRACK}/data/subsets/{name}.parquet"
    return f"{R}/{TRACK}/data/prepared/{name}.parquet"


def prepared_datasets():
    return [prepared_path(n) for n in DATASETS + SUBSETS]


def checkpoint_dir(task, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/models/method~finetune/loss~ce/seed~{seed}"


def baseline_checkpoints():
    return [f"{checkpoint_dir(t, s)}/train_summary.json" for t in TASKS for s in SEEDS]


def evaluation_json(task, row, seed, eval_set):
    return f"{R}/{TRACK}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.json"


def evaluation_predictions(task, row, seed, eval_set):
    return f"{R}/{TRACK}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.predictions.parquet"


def eval_set_names(task):
    return list(config["tasks"][task]["eval_sets"])


def eval_set_specs(task):
    return [{"name": name, **scoring} for name, scoring in config["tasks"][task]["eval_sets"].items()]


def evaluation_jsons(rows=None):
    return [
        evaluation_json(t, row, s, e)
        for row in (rows or ROWS)
        for t in TASKS
        for s in SEEDS
        for e in config["tasks"][t]["eval_sets"]
    ]


def final_outputs():
    return [
        f"{R}/tables/table1.csv",
        f"{R}/tables/table1.md",
        f"{R}/tables/table1.tex",
        f"{R}/figures/id_ood.png",
        f"{R}/tables/datasets.csv",
    ]


# ------------------------------------------------------------------------------------- input functions
def dataset_spec(wildcards):
    return as_json(config["datasets"][wildcards.dataset])


def subset_source(wildcards):
    return prepared_path(config["negation_subsets"][wildcards.subset]["from"])


def subset_options(wildcards):
    sub = config["negation_subsets"][wildcards.subset]
    opts = f"--entailment-label {shlex.quote(sub.get('entailment_label', 'entailment'))}"
    if sub.get("words"):
        opts += f" --words {as_json(sub['words'])}"
    return opts


def task_train_data(wildcards):
    spec = config["tasks"][wildcards.task]
    return {"train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"])}


def row_model(task, seed):
    """The checkpoint a Table 1 row is evaluated with (only the baseline row exists so far)."""
    return {
        "model": f"{checkpoint_dir(task, seed)}/model.safetensors",
        "summary": f"{checkpoint_dir(task, seed)}/train_summary.json",
    }


def eval_inputs_of(task):
    """Input function of evaluate_<task>, returning the row's checkpoint and every evaluation set of the task."""

    def eval_inputs(wildcards):
        return {**row_model(task, wildcards.seed), "data": [prepared_path(e) for e in eval_set_names(task)]}

    return eval_inputs


def model_dir_of(wildcards, input):
    return os.path.dirname(input.model)


def training_gpus():
    return COMPUTE["gpus_per_training_job"]
