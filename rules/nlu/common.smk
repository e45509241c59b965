# The nlu track's helpers (papers A and C share them; paper C's own are in rules/nlu/srnets_common.smk): its
# names from the config, path builders and input functions of rules/nlu/*.smk.
# Module-level code only reads the config: it re-runs inside every cluster job (no clocks, no randomness).
import os
import shlex


from maskbench.loss_needs import needing

NLU = "nlu"  # the track's folder under results/
MODEL = config["model"]["name"]
TASKS = list(config["tasks"])
DATASETS = list(config["datasets"])
SUBSETS = list(config.get("negation_subsets", {}))
ROWS = list(config["report"]["table1"]["rows"]) if config["report"].get("table1") else ["baseline"]
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

wildcard_constraints:
    dataset=alternation(DATASETS),
    subset=alternation(SUBSETS),
    task=alternation(TASKS),
    source=alternation(list(SOURCES)),
    loss=r"[a-z_]+",


# ----------------------------------------------------------------------------------------------- paths
def prepared_path(name):
    if name in config.get("negation_subsets", {}):
        return f"{R}/{NLU}/data/subsets/{name}.parquet"
    return f"{R}/{NLU}/data/prepared/{name}.parquet"


def prepared_datasets():
    return [prepared_path(n) for n in DATASETS + SUBSETS]


def checkpoint_dir(task, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/models/method~finetune/loss~ce/seed~{seed}"


def trained_models():
    """Every checkpoint and bias source of the configured rows (the `train_all` stage)."""
    rows = [row_model(t, row, s)["summary"] for row in NEURAL_ROWS for t in TASKS for s in row_seeds(row)]
    rows += mask_files()
    overlap = [f"{bias_dir(t, 'overlap', s)}/train_probs.parquet" for t in TASKS for s in bias_seeds()
               if "overlap" in SOURCES]
    return rows + overlap


def debiased_dir(task, loss, source, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/models/method~finetune/loss~{loss}/bias~{source}/seed~{seed}"


def bias_seed(seed):
    """The bias model a model seed uses: its own seed (paper A), or the one shared seed of `bias.seed`."""
    shared = config["bias"]["seed"]
    return int(seed) if shared is None else int(shared)


def bias_seeds():
    return sorted({bias_seed(s) for s in SEEDS})


def bias_dir(task, source, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/bias/{source}/seed~{seed}"


def row_seeds(row):
    return bias_seeds() if row in BIAS_ROWS else SEEDS


def mask_source(row):
    """The bias folder name of a mask row (`none` for the plain cross-entropy search)."""
    return MD[row].get("bias") or "none"


def mask_stem(task, row, seed):
    folder = f"{R}/{NLU}/{task}/{MODEL}/masks/method~{MASK_METHOD}/loss~{MD[row]['loss']}/bias~{mask_source(row)}"
    return f"{folder}/seed~{seed}"


def mask_file(task, row, seed):
    return f"{mask_stem(task, row, seed)}.mask"


def mask_files(rows=None):
    return [mask_file(t, r, s) for r in (MASK_ROWS if rows is None else rows) for t in TASKS for s in SEEDS]


def evaluation_json(task, row, seed, eval_set):
    return f"{R}/{NLU}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.json"


def evaluation_predictions(task, row, seed, eval_set):
    return f"{R}/{NLU}/{task}/{MODEL}/eval/{row}/seed~{seed}/{eval_set}.predictions.parquet"


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
        mask_report_outputs() + [f"{R}/benchmarks/masks.json"] if MASK_ROWS else []) + (
        [f"{R}/tables/baseline_curve.csv"] if EARLY_STOP else [])


# a baseline trained until its dev accuracy stops rising: its curve is a table of its own (rule baseline_curve)
EARLY_STOP = bool(config["finetune"].get("early_stop_patience"))
# evaluation steps score their sets in batches of similar length (finetune.length_sorted_eval)
LENGTH_SORTED_EVAL = bool(config["finetune"].get("length_sorted_eval"))


def mask_report_outputs():
    return [f"{R}/tables/pruning_rates.csv", f"{R}/figures/pruning_rates.png", f"{R}/tables/mask_seed_overlap.csv",
            f"{R}/tables/mask_seed_overlap_summary.csv"]


# ------------------------------------------------------------------------------------- input functions
def dataset_spec(wildcards):
    return as_json(config["datasets"][wildcards.dataset])


def local_source_file(wildcards):
    """Input function of prepare_dataset: the file of a `local:` source (rules/common.smk's local_file)."""
    name = wildcards.dataset
    return local_file(config["datasets"][name]["source"], f"dataset {name!r}", f"datasets.{name}.source")


def prepare_options(wildcards, input):
    """The prepare step's options beyond the spec: the resolved local file, and a single-text task's flag."""
    task = config["tasks"].get(config["datasets"][wildcards.dataset]["task"], {})
    options = f" --local-file {quoted(input.local)}" if input.local else ""
    return options + (" --single-text" if task.get("single_text") else "")


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
        return quoted([os.path.dirname(evaluation_json(task, r, wildcards.seed, "any")) for r in rows])

    return out_dirs


def model_dirs_of(wildcards, input):
    return quoted([os.path.dirname(m) for m in input.models])


def model_dir_of(wildcards, input):
    return os.path.dirname(input.model)


# ------------------------------------------------------------------------------------------- fine-tuning
# keys of `finetune:` that are not TrainHParams fields: they select how the run is made, not its optimiser
FINETUNE_RUN_KEYS = ("train_classifier", "tasks")


def finetune_hparams(task, source=None):
    """The TrainHParams of a fine-tuning run of `task`: `finetune`, its `tasks.<task>` overrides, then for a bias
    source its `epochs`, `hparams` and `tasks.<task>.hparams` (paper A's code: BERT-tiny warm-up 0, lr 2e-5 on
    FEVER; the undertrained learner's 2,000 warm-up steps), key by key."""
    merged = {k: v for k, v in config["finetune"].items() if k not in FINETUNE_RUN_KEYS}
    merged.update((config["finetune"].get("tasks") or {}).get(task, {}))
    if source is not None:
        merged.update({"epochs": source["epochs"]} if "epochs" in source else {})
        merged.update(source.get("hparams") or {})
        merged.update(((source.get("tasks") or {}).get(task) or {}).get("hparams") or {})
    return merged


def finetune_hparams_of(wildcards):
    return as_json(finetune_hparams(wildcards.task))


def classifier_option(wildcards=None):
    """`--train-classifier 0` when `finetune.train_classifier` is false (paper A's code never trains the head)."""
    return "" if config["finetune"].get("train_classifier", True) else "--train-classifier 0"


# ------------------------------------------------------------------------------------------ bias sources
def weak_learner_options(wildcards):
    """Command-line options that make a fine-tuning run a bias model of the given source."""
    spec = SOURCES[wildcards.source]
    opts = []
    if spec["kind"] == "hypothesis_only":
        opts.append("--input-view text_b_only")
    if classifier_option():
        opts.append(classifier_option())
    subset = spec.get("train_subset", {}).get(wildcards.task)
    if subset:
        opts.append(f"--train-subset {int(subset)}")
    return " ".join(opts)


def weak_learner_model(wildcards):
    return as_json(SOURCES[wildcards.source].get("model", config["model"]))


def weak_learner_hparams(wildcards):
    return as_json(finetune_hparams(wildcards.task, SOURCES[wildcards.source]))


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
    # chrisc36's model (papers A and C on MNLI): its feature set, solver, C and class weights, per task
    for key, flag, default in (("feature_set", "--feature-set", "project"), ("solver", "--solver", "lbfgs"),
                               ("C", "--inverse-regularisation", None), ("class_weight", "--class-weight", "none")):
        value = spec.get(key, {}).get(task, default)
        if value != default:
            opts.append(f"{flag} {value}")
    opts.append(f"--vectors {shlex.quote(spec['vectors'])}" if spec.get("vectors")
                else f"--embeddings-from {quoted(checkpoint_dir(task, SEEDS[0]))}")
    return " ".join(opts)


# losses that also read a teacher, the CE baseline of the same seed (maskbench.loss_needs: the table the losses
# check their keywords against, torch-free so that planning stays fast)
TEACHER_LOSSES = needing("teacher")


def debiased_inputs(wildcards):
    spec = config["tasks"][wildcards.task]
    inputs = {"train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"]),
              "bias": f"{bias_dir(wildcards.task, wildcards.source, bias_seed(wildcards.seed))}/train_probs.parquet"}
    if wildcards.loss in TEACHER_LOSSES:
        inputs["teacher"] = f"{checkpoint_dir(wildcards.task, wildcards.seed)}/train_probs.parquet"
    return inputs


def teacher_option(wildcards, input):
    return f"--teacher-probs {quoted(input.teacher)}" if "teacher" in input.keys() else ""


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
    return f"--bias-probs {quoted(input.bias)}" if "bias" in input.keys() else ""


def mask_loss_hparams(wildcards):
    rows = mask_rows_of(wildcards.loss, wildcards.source)
    return as_json(MD[rows[0]].get("loss_hparams", {}) if rows else {})


def mask_search_spec():
    return as_json({k: v for k, v in MASK_SEARCH.items() if k not in ("hparams", "score_learning_rate")})


def mask_search_hparams():
    """The scores' optimiser: `mask_search.hparams`, at the rate `mask_search.score_learning_rate`."""
    return {**MASK_SEARCH["hparams"], "learning_rate": MASK_SEARCH["score_learning_rate"]}


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


# what the Snakefile's targets build for this track (paper C adds its report in rules/nlu/srnets_common.smk)
TARGETS["all"] += final_outputs()
TARGETS["prepare"] += prepared_datasets()
TARGETS["train"] += trained_models()
TARGETS["masks"] += mask_files()
TARGETS["evaluate"] += evaluation_jsons()
