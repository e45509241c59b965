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
SOURCES = config["bias"]["sources"]
SD = config["standard_debiasing"]
MD = config["masked_debiasing"]
MASK_SEARCH = config["mask_search"]
MASK_METHOD = MASK_SEARCH["method"]
# mask rows of Table 1 that this config reports (each is one mask search per task and seed)
MASK_ROWS = [r for r in ROWS if r in MD]
NEURAL_SOURCES = [s for s, spec in SOURCES.items() if spec["kind"] != "overlap_lr"]
# every configured bias source is trained, evaluated and reported (how biased is it?), used by a row or not
BIAS_ROWS = [f"bias_{s}" for s in SOURCES]
# rows whose checkpoints the evaluate_<task> rules score (the overlap bias model scores itself; mask rows are
# scored by evaluate_masks_<task>, all masks of a seed on one loaded model)
MODEL_ROWS = [r for r in ROWS if r not in MD]  # rows with a checkpoint of their own: baseline and SD rows
NEURAL_BIAS_ROWS = [f"bias_{s}" for s in NEURAL_SOURCES]
NEURAL_ROWS = MODEL_ROWS + NEURAL_BIAS_ROWS


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


def trained_models():
    """Every checkpoint and bias source of the configured rows (the `train_all` stage)."""
    rows = [row_model(t, row, s)["summary"] for row in NEURAL_ROWS for t in TASKS for s in row_seeds(row)]
    rows += mask_files()
    overlap = [f"{bias_dir(t, 'overlap', s)}/train_probs.parquet" for t in TASKS for s in bias_seeds()
               if "overlap" in SOURCES]
    return rows + overlap


def debiased_dir(task, loss, source, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/models/method~finetune/loss~{loss}/bias~{source}/seed~{seed}"


def bias_seed(seed):
    """The bias model a model seed uses: its own seed (paper A), or the one shared seed of `bias.seed`."""
    shared = config["bias"]["seed"]
    return int(seed) if shared is None else int(shared)


def bias_seeds():
    return sorted({bias_seed(s) for s in SEEDS})


def bias_dir(task, source, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/bias/{source}/seed~{seed}"


def row_seeds(row):
    return bias_seeds() if row in BIAS_ROWS else SEEDS


def mask_source(row):
    """The bias folder name of a mask row (`none` for the plain cross-entropy search)."""
    return MD[row].get("bias") or "none"


def mask_stem(task, row, seed):
    folder = f"{R}/{TRACK}/{task}/{MODEL}/masks/method~{MASK_METHOD}/loss~{MD[row]['loss']}/bias~{mask_source(row)}"
    return f"{folder}/seed~{seed}"


def mask_file(task, row, seed):
    return f"{mask_stem(task, row, seed)}.mask"


def mask_files(rows=None):
    return [mask_file(t, r, s) for r in (MASK_ROWS if rows is None else rows) for t in TASKS for s in SEEDS]


def evaluation_json(task, row, seed, eval_set):
    return f"{R}/{TRACK}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.json"


def evaluation_predictions(task, row, seed, eval_set):
    return f"{R}/{TRACK}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.predictions.parquet"


def evaluation_rule_outputs(task, rows, kind):
    """The outputs of one evaluation job: every (row, evaluation set) of the task, for the job's {seed}."""
    make = evaluation_json if kind == "metrics" else evaluation_predictions
    return [make(task, r, "{seed}", e) for r in rows for e in eval_set_names(task)]


def eval_set_names(task):
    return list(config["tasks"][task]["eval_sets"])


def eval_set_specs(task):
    return [{"name": name, **scoring} for name, scoring in config["tasks"][task]["eval_sets"].items()]


def evaluation_jsons(rows=None):
    return [
        evaluation_json(t, row, s, e)
        for row in (rows or ROWS)
        for t in TASKS
        for s in row_seeds(row)
        for e in config["tasks"][t]["eval_sets"]
    ]


def final_outputs():
    return [
        f"{R}/tables/table1.csv",
        f"{R}/tables/table1.md",
        f"{R}/tables/table1.tex",
        f"{R}/figures/id_ood.png",
        f"{R}/tables/datasets.csv",
    ] + ([f"{R}/tables/bias_models.csv"] if BIAS_ROWS else []) + (
        mask_report_outputs() + [f"{R}/benchmarks/masks.json"] if MASK_ROWS else [])


def mask_report_outputs():
    return [f"{R}/tables/pruning_rates.csv", f"{R}/figures/pruning_rates.png", f"{R}/tables/mask_seed_overlap.csv",
            f"{R}/tables/mask_seed_overlap_summary.csv"]


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


def row_model(task, row, seed):
    """The checkpoint a row is evaluated with: the baseline, a debiased model, or a neural bias model."""
    if row == "baseline":
        folder = checkpoint_dir(task, seed)
    elif row in SD:
        folder = debiased_dir(task, SD[row]["loss"], SD[row]["bias"], seed)
    else:
        folder = bias_dir(task, row.removeprefix("bias_"), seed)
    return {"model": f"{folder}/model.safetensors", "summary": f"{folder}/train_summary.json"}


def eval_inputs_of(task, rows):
    """Input function of evaluate_<task> / evaluate_bias_<task>: the checkpoint of every row for the job's seed
    and every evaluation set of the task."""

    def eval_inputs(wildcards):
        models = [row_model(task, r, wildcards.seed) for r in rows]
        return {"models": [m["model"] for m in models], "summaries": [m["summary"] for m in models],
                "data": [prepared_path(e) for e in eval_set_names(task)]}

    return eval_inputs


def eval_dirs_of(task, rows):
    """A params function: the evaluation folder of each row, for the job's seed."""

    def out_dirs(wildcards):
        return " ".join(os.path.dirname(evaluation_json(task, r, wildcards.seed, "any")) for r in rows)

    return out_dirs


def model_dirs_of(wildcards, input):
    return " ".join(os.path.dirname(m) for m in input.models)


def model_dir_of(wildcards, input):
    return os.path.dirname(input.model)


def folder_of_output(name):
    """A params function: the folder of the named output (its first file when the output is a list)."""

    def folder(wildcards, output):
        value = getattr(output, name)
        return os.path.dirname(value if isinstance(value, str) else value[0])

    return folder


def training_gpus():
    return COMPUTE["gpus_per_training_job"]


# ------------------------------------------------------------------------------------------ bias sources
def weak_learner_options(wildcards):
    """Command-line options that make a fine-tuning run a bias model of the given source."""
    spec = SOURCES[wildcards.source]
    opts = []
    if spec["kind"] == "hypothesis_only":
        opts.append("--input-view text_b_only")
    subset = spec.get("train_subset", {}).get(wildcards.task)
    if subset:
        opts.append(f"--train-subset {int(subset)}")
    return " ".join(opts)


def weak_learner_model(wildcards):
    return as_json(SOURCES[wildcards.source].get("model", config["model"]))


def weak_learner_hparams(wildcards):
    spec = SOURCES[wildcards.source]
    return as_json({**config["finetune"], **({"epochs": spec["epochs"]} if "epochs" in spec else {})})


def overlap_inputs_of(task):
    """Input function of bias_overlap_<task>: training set, evaluation sets and the word-vector source."""

    def overlap_inputs(wildcards):
        inputs = {"train": prepared_path(config["tasks"][task]["train"]),
                  "data": [prepared_path(e) for e in eval_set_names(task)]}
        if not SOURCES["overlap"].get("vectors"):
            # offline stand-in for fastText: the baseline's input embeddings (the first seed's)
            inputs["embeddings"] = f"{checkpoint_dir(task, SEEDS[0])}/model.safetensors"
        return inputs

    return overlap_inputs


def overlap_options_of(task):
    spec = SOURCES.get("overlap", {})
    opts = [f"--features {spec.get('features', {}).get(task, 'overlap')}"]
    if spec.get("binary_positive", {}).get(task):
        opts.append(f"--binary-positive {shlex.quote(spec['binary_positive'][task])}")
    opts.append(f"--vectors {shlex.quote(spec['vectors'])}" if spec.get("vectors")
                else f"--embeddings-from {checkpoint_dir(task, SEEDS[0])}")
    return " ".join(opts)


# losses that also read a teacher, the CE baseline of the same seed (maskbench.losses.NEEDS; a test keeps the two
# in step without importing torch here)
TEACHER_LOSSES = {"conf_reg"}


def debiased_inputs(wildcards):
    spec = config["tasks"][wildcards.task]
    inputs = {"train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"]),
              "bias": f"{bias_dir(wildcards.task, wildcards.source, bias_seed(wildcards.seed))}/train_probs.parquet"}
    if wildcards.loss in TEACHER_LOSSES:
        inputs["teacher"] = f"{checkpoint_dir(wildcards.task, wildcards.seed)}/train_probs.parquet"
    return inputs


def teacher_option(wildcards, input):
    return f"--teacher-probs {input.teacher}" if "teacher" in input.keys() else ""


def debiased_loss_hparams(wildcards):
    rows = [r for r, s in SD.items() if s["loss"] == wildcards.loss and s["bias"] == wildcards.source]
    return as_json(SD[rows[0]].get("loss_hparams", {}) if rows else {})


# ------------------------------------------------------------------------------------------- mask search
def mask_rows_of(loss, source):
    return [r for r, spec in MD.items() if spec["loss"] == loss and (spec.get("bias") or "none") == source]


def mask_search_inputs(wildcards):
    """The frozen baseline of the same seed, the task's data and what the row's loss reads."""
    spec = config["tasks"][wildcards.task]
    base = checkpoint_dir(wildcards.task, wildcards.seed)
    inputs = {"model": f"{base}/model.safetensors", "model_summary": f"{base}/train_summary.json",
              "train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"])}
    if wildcards.source != "none":
        inputs["bias"] = f"{bias_dir(wildcards.task, wildcards.source, bias_seed(wildcards.seed))}/train_probs.parquet"
    if wildcards.loss in TEACHER_LOSSES:
        inputs["teacher"] = f"{base}/train_probs.parquet"
    return inputs


def bias_option(wildcards, input):
    return f"--bias-probs {input.bias}" if "bias" in input.keys() else ""


def mask_loss_hparams(wildcards):
    rows = mask_rows_of(wildcards.loss, wildcards.source)
    return as_json(MD[rows[0]].get("loss_hparams", {}) if rows else {})


def mask_search_spec():
    return as_json({k: v for k, v in MASK_SEARCH.items() if k != "hparams"})


def evaluate_masks_inputs_of(task):
    def inputs(wildcards):
        base = checkpoint_dir(task, wildcards.seed)
        return {"model": f"{base}/model.safetensors",
                "masks": [mask_file(task, r, wildcards.seed) for r in MASK_ROWS],
                "data": [prepared_path(e) for e in eval_set_names(task)]}

    return inputs


def mask_report_keys():
    """task/row/seed of every mask file, in the order of mask_files()."""
    return [f"{t}/{r}/{s}" for r in MASK_ROWS for t in TASKS for s in SEEDS]


# ------------------------------------------------------------------------------- paper C (rules/srnets.smk)
SRN = config.get("srnets") or {}
SRN_SEEDS = [int(s) for s in SRN.get("seeds", SEEDS)] if SRN else []
SRN_SPARSITIES = [float(s) for s in SRN.get("sparsities", [])]
SRN_DEBIAS = SRN.get("debias")
# the curves: paradigm (a) subnetworks of the fine-tuned model, (b) of the initial/pre-trained model fine-tuned in
# isolation, (c) of the initial/pre-trained model without fine-tuning (paper C figure 1)
SRN_RUNS = {}
if SRN:
    SRN_RUNS["a_mask_ce"] = {"paradigm": "a", "method": "mask_train", "loss": "ce", "start": "ft"}
    SRN_RUNS["a_imp_ce"] = {"paradigm": "a", "method": "imp", "loss": "ce", "start": "ft"}
    SRN_RUNS["c_mask_ce"] = {"paradigm": "c", "method": "mask_train", "loss": "ce", "start": "init"}
    if SRN_DEBIAS:
        SRN_RUNS["a_mask_debias"] = {"paradigm": "a", "method": "mask_train", "loss": SRN_DEBIAS["loss"],
                                     "bias": SRN_DEBIAS["bias"], "start": "ft"}
        SRN_RUNS["b_mask_retrain_ce"] = {"paradigm": "b", "method": "retrain", "loss": "ce", "start": "init",
                                         "from": "a_mask_debias"}
        SRN_RUNS["b_imprw_retrain_ce"] = {"paradigm": "b", "method": "retrain", "loss": "ce", "start": "init",
                                          "from": "b_imprw_debias"}
# runs that only feed others: IMP with rewinding to the initial weights, the source of a paradigm (b) mask
SRN_FEEDERS = ({"b_imprw_debias": {"method": "imp_rewind", "loss": SRN_DEBIAS["loss"], "bias": SRN_DEBIAS["bias"],
                                   "start": "init"}} if SRN and SRN_DEBIAS else {})
SRN_T5 = (SRN.get("table5") or {}).get("variants", {}) if SRN else {}
SRN_T5_SPARSITY = float((SRN.get("table5") or {}).get("sparsity", 0.9)) if SRN else 0.9


def srn_spec(run):
    return SRN_RUNS.get(run) or SRN_FEEDERS[run]


def sparsity_name(sparsity):
    """The folder name srnet writes for a sparsity level (`sparsity~0.3`)."""
    s = float(sparsity)
    return f"sparsity~{s:.1f}" if abs(s * 10 - round(s * 10)) < 1e-9 else f"sparsity~{s:g}"


def initial_dir(task, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/models/init/seed~{seed}"


def srn_dir(task, run, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/srnets/{run}/seed~{seed}"


def srn_start(task, run, seed):
    start = srn_spec(run)["start"] if not run.startswith("t5_") else "ft"
    return checkpoint_dir(task, seed) if start == "ft" else initial_dir(task, seed)


def imp_levels():
    """IMP writes every 10% level up to the largest swept sparsity."""
    top = max(SRN_SPARSITIES + [SRN_T5_SPARSITY]) if SRN else 0.9
    return [round(0.1 * k, 1) for k in range(1, int(round(top * 10)) + 1)]


def srn_outputs(task, run, seed):
    """The per-sparsity files a run's evaluation reads: masks (mask training) or checkpoints (IMP, retrain)."""
    spec = srn_spec(run)
    folder = srn_dir(task, run, seed)
    if spec["method"] == "mask_train":
        return [f"{folder}/{sparsity_name(s)}/mask.mask" for s in SRN_SPARSITIES]
    levels = SRN_SPARSITIES if spec["method"] == "retrain" else imp_levels()
    return [f"{folder}/{sparsity_name(s)}/{name}" for s in levels for name in ("model.safetensors", "mask.mask",
                                                                              "train_summary.json")]


def srn_loss_options(spec, task, seed):
    opts = f"--loss {spec['loss']}"
    if spec.get("bias"):
        opts += f" --bias-probs {bias_dir(task, spec['bias'], bias_seed(seed))}/train_probs.parquet"
    return opts


def srn_common_inputs(task, run, seed):
    spec = config["tasks"][task]
    start = srn_start(task, run, seed)
    inputs = {"start": f"{start}/train_summary.json", "train": prepared_path(spec["train"]),
              "dev": prepared_path(spec["dev"])}
    bias = srn_spec(run).get("bias") if not run.startswith("t5_") else (SRN_DEBIAS or {}).get("bias")
    if bias:
        inputs["bias"] = f"{bias_dir(task, bias, bias_seed(seed))}/train_probs.parquet"
    return inputs


def srn_eval_dir(task, run, seed, sparsity):
    return f"{R}/{TRACK}/{task}/{MODEL}/eval/srnets/{run}/seed~{seed}/{sparsity_name(sparsity)}"


def srn_eval_outputs(task, run, seed):
    sparsities = [SRN_T5_SPARSITY] if run.startswith("t5_") else SRN_SPARSITIES
    return [f"{srn_eval_dir(task, run, seed, s)}/{e}.json" for s in sparsities for e in eval_set_names(task)]


def srn_all_evals():
    runs = list(SRN_RUNS) + [f"t5_{v}" for v in SRN_T5]
    return [p for t in TASKS for r in runs for s in SRN_SEEDS for p in srn_eval_outputs(t, r, s)]


def srn_report_outputs():
    outputs = [f"{R}/tables/sparsity_curves.csv", f"{R}/figures/sparsity_curves.png"]
    if SRN_T5:
        outputs.extend([f"{R}/tables/table5.csv", f"{R}/tables/table5.md"])
    return outputs


def srn_inputs_of(run):
    def inputs(wildcards):
        found = srn_common_inputs(wildcards.task, run, wildcards.seed)
        spec = srn_spec(run) if not run.startswith("t5_") else {"method": "mask_train"}
        if spec["method"] == "retrain":
            found["masks"] = [f"{srn_dir(wildcards.task, spec['from'], wildcards.seed)}/{sparsity_name(s)}/mask.mask"
                              for s in SRN_SPARSITIES]
        return found

    return inputs


def srn_options_of(run):
    """A params function: the `python -m maskbench.srnet` options of a run for the job's task and seed."""

    def options(wildcards, input):
        task, seed = wildcards.task, wildcards.seed
        folder = srn_dir(task, run, seed)
        start = os.path.dirname(input.start)
        bias = f"--bias-probs {input.bias}" if "bias" in input.keys() else ""
        common = f"--start-dir {start} --train {input.train} --dev {input.dev} --seed {seed} --tag {run} {bias}"
        training = SRN.get("mask_training", {})
        mask_opts = (f" --init @INIT@ --alpha {training.get('alpha', 2.0)} --phi {training.get('phi', 0.01)}"
                     f" --reset-every {training.get('reset_every', 1000)} --eval-every {training.get('eval_every', 1000)}"
                     f" --hparams {as_json(training.get('hparams', {}))}")
        if run.startswith("t5_"):
            variant = SRN_T5[run.removeprefix("t5_")]
            loss = (SRN_DEBIAS or {}).get("loss", "ce")
            gradual = (f" --schedule gradual --initial-sparsity {variant['initial_sparsity']}"
                       if variant.get("initial_sparsity") is not None else "")
            mask = mask_opts.replace("@INIT@", variant["init"])
            return (f"--method mask_train {common} --loss {loss} {mask} {gradual}"
                    f" --select-after {SRN.get('select_after', 0.7)} --sparsities {SRN_T5_SPARSITY}"
                    f" --sweep-dir {folder}")
        spec = srn_spec(run)
        if spec["method"] == "mask_train":
            select_after = SRN.get("select_after", 0.7) if spec["start"] == "ft" else 0.0
            mask = mask_opts.replace("@INIT@", training.get("init", "hard"))
            return (f"--method mask_train {common} --loss {spec['loss']} {mask}"
                    f" --select-after {select_after} --sparsities {' '.join(map(str, SRN_SPARSITIES))}"
                    f" --sweep-dir {folder}")
        if spec["method"] in ("imp", "imp_rewind"):
            return (f"--method {spec['method']} {common} --loss {spec['loss']}"
                    f" --hparams {as_json(SRN.get('imp', {}).get('hparams', {}))}"
                    f" --final-sparsity {imp_levels()[-1]} --out-dir {folder}")
        return (f"--method retrain {common} --loss {spec['loss']}"
                f" --hparams {as_json(SRN.get('retrain', {}).get('hparams', {}))}"
                f" --masks {' '.join(input.masks)} --sweep-dir {folder}")

    return options


def srn_is_mask_run(run):
    return run.startswith("t5_") or srn_spec(run)["method"] == "mask_train"


def srn_eval_inputs_of(task, run):
    sparsities = [SRN_T5_SPARSITY] if run.startswith("t5_") else SRN_SPARSITIES

    def inputs(wildcards):
        folder = srn_dir(task, run, wildcards.seed)
        found = {"data": [prepared_path(e) for e in eval_set_names(task)]}
        if srn_is_mask_run(run):
            found["start"] = f"{srn_start(task, run, wildcards.seed)}/model.safetensors"
            found["masks"] = [f"{folder}/{sparsity_name(s)}/mask.mask" for s in sparsities]
        else:
            found["models"] = [f"{folder}/{sparsity_name(s)}/model.safetensors" for s in sparsities]
        return found

    return inputs


def srn_eval_options_of(task, run):
    sparsities = [SRN_T5_SPARSITY] if run.startswith("t5_") else SRN_SPARSITIES

    def options(wildcards, input):
        rows = " ".join(f"srnets/{run}/{s}" for s in sparsities)
        dirs = " ".join(srn_eval_dir(task, run, wildcards.seed, s) for s in sparsities)
        if srn_is_mask_run(run):
            return (f"evaluate_masks --model-dir {os.path.dirname(input.start)} --masks {' '.join(input.masks)}"
                    f" --rows {rows} --out-dirs {dirs}")
        return (f"evaluate --model-dirs {' '.join(os.path.dirname(m) for m in input.models)} --rows {rows}"
                f" --out-dirs {dirs}")

    return options
