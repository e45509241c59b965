# The nlu track's names and input functions (papers A and C share them; paper C's own are in
# rules/nlu/srnets_common.smk). What the rules plan — rows, layout, settings — is maskbench.tracks.nlu.workflow_plan.
from maskbench.tracks.nlu.workflow_plan import FINETUNE_RUN_KEYS, TEACHER_LOSSES, NluPlan  # noqa: F401

P = NluPlan(config)
NLU, MODEL, TASKS, ROWS = "nlu", P.model, P.tasks, P.rows
SOURCES, SD, MD, MASK_SEARCH, MASK_METHOD = P.sources, P.sd, P.md, P.mask_search, P.mask_method
MASK_ROWS, BIAS_ROWS, NEURAL_SOURCES = P.mask_rows, P.bias_rows, P.neural_sources
MODEL_ROWS, NEURAL_BIAS_ROWS, NEURAL_ROWS = P.model_rows, P.neural_bias_rows, P.neural_rows
EARLY_STOP, LENGTH_SORTED_EVAL = P.early_stop, P.length_sorted_eval
# the path builders the rules of papers A and C share
prepared_path, checkpoint_dir, bias_dir, evaluation_json = P.prepared_path, P.checkpoint_dir, P.bias_dir, P.evaluation_json
eval_set_names, eval_set_specs, finetune_hparams, mask_file = P.eval_set_names, P.eval_set_specs, P.finetune_hparams, P.mask_file

wildcard_constraints:
    dataset=alternation(P.datasets),
    subset=alternation(P.subsets),
    task=alternation(TASKS),
    source=alternation(list(SOURCES)),
    loss=r"[a-z_]+",


def given_train_file(dataset):
    """The local file of a training set (the bias columns of a precomputed source live in it)."""
    return local_file(config["datasets"][dataset]["source"], f"dataset {dataset!r}", f"datasets.{dataset}.source")


# The user's own files (a classifier fine-tuned elsewhere, precomputed bias columns) are checked now, while planning:
# a checkpoint for other labels or a bad bias column stops the workflow with one line before any job runs.
if P.given or P.precomputed_sources:
    from maskbench.tracks.nlu.own_files import check_own_files  # noqa: E402

    try:
        check_own_files(config, given_train_file)
    except ValueError as err:
        raise WorkflowError(str(err)) from None


def table1_own_options():
    """The table1 step's options of a table that is the config's own: `--paper none` without `paper: A` (no published
    figure beside the config's numbers) and `--row-labels` where the config names its rows; none for paper A's."""
    table = (config.get("report") or {}).get("table1") or {}
    return {"paper": None if table.get("paper") else "none",
            "row_labels": Json(table["row_labels"]) if table.get("row_labels") else None}


def paper_a_columns():
    """The columns through which the trade-off report draws paper A's reported points: Table 1's, unless the table
    is the config's own (None: no points)."""
    table = (config.get("report") or {}).get("table1")
    return None if table and not table.get("paper") else (table or {}).get("columns", {})


def task_train_data(wildcards):
    spec = config["tasks"][wildcards.task]
    return {"train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"])}


def training_args(wildcards, precision_section=None, **values):
    """A training step's settings shared by every fine-tuning and mask search, with the job's own (the shell adds
    `--threads {threads}`: a params function that reads threads makes snakemake size resources while planning);
    `precision_section`: srnets for paper C's own fine-tuning (precision_args)."""
    return shell_args(seed=int(wildcards.seed), checkpoint_every=COMPUTE["checkpoint_every"],
                      deterministic=int(COMPUTE["deterministic"]),
                      **precision_options(config, precision_section), **values)


def finetune_args(wildcards, input, output, loss="ce", hparams=None, model=None, train_classifier="config",
                  precision_section=None, **values):
    """The `nlu.finetune` command line of a job (baseline, bias model, debiased model, sweep point, paper C's)."""
    return training_args(
        wildcards, precision_section, train=input.train, dev=input.dev, bias_probs=input.get("bias"),
        teacher_probs=input.get("teacher"), model_spec=model or config["model"],
        hparams=hparams or finetune_hparams(wildcards.task), loss=loss, out_dir=os.path.dirname(output.model),
        train_classifier=P.train_classifier() if train_classifier == "config" else train_classifier, **values)


def debiased_inputs(wildcards):
    """Training data, the bias source's probabilities and, for a loss that reads one, the baseline as teacher."""
    inputs = {**task_train_data(wildcards),
              "bias": f"{bias_dir(wildcards.task, wildcards.source, P.bias_seed(wildcards.seed))}/train_probs.parquet"}
    if wildcards.loss in TEACHER_LOSSES:
        inputs["teacher"] = f"{checkpoint_dir(wildcards.task, wildcards.seed)}/train_probs.parquet"
    return inputs


def mask_search_inputs(wildcards):
    """The frozen baseline of the same seed, the task's data and what the row's loss reads."""
    base = checkpoint_dir(wildcards.task, wildcards.seed)
    inputs = {**task_train_data(wildcards), "model": f"{base}/model.safetensors",
              "model_summary": f"{base}/train_summary.json"}
    if wildcards.source != "none":
        inputs["bias"] = f"{bias_dir(wildcards.task, wildcards.source, P.bias_seed(wildcards.seed))}/train_probs.parquet"
    if wildcards.loss in TEACHER_LOSSES:
        inputs["teacher"] = f"{base}/train_probs.parquet"
    return inputs


def mask_search_args(wildcards, input, output, spec, hparams, loss, loss_hparams):
    """The `nlu.mask_search` command line of a job (a Table 1 mask row or a sweep point)."""
    return training_args(
        wildcards, model_dir=os.path.dirname(input.model), train=input.train, dev=input.dev, spec=spec,
        hparams=hparams, loss=loss, loss_hparams=loss_hparams, bias_probs=input.get("bias"),
        teacher_probs=input.get("teacher"), out=output.mask, summary=output.summary)


def eval_inputs_of(task, rows):
    """Input function of evaluate_<task> / evaluate_bias_<task>: the checkpoint of every row for the job's seed
    and every evaluation set of the task."""

    def eval_inputs(wildcards):
        models = [P.row_model(task, r, wildcards.seed) for r in rows]
        return {"models": [m["model"] for m in models], "summaries": [m["summary"] for m in models],
                "data": [prepared_path(e) for e in eval_set_names(task)]}

    return eval_inputs


def evaluate_args(task, rows, loaded):
    """A params function: the command line of a job scoring `rows` of `task` on its evaluation sets; `loaded(input)`
    names what it loads: checkpoints (`--model-dirs`, nlu.evaluate) or masks on one model (nlu.evaluate_masks)."""

    def args(wildcards, input):
        return shell_args(**loaded(input), rows=rows, out_dirs=[P.evaluation_dir(task, r, wildcards.seed) for r in rows],
                          data=input.data, eval_sets=Json(eval_set_specs(task)), task=task, seed=int(wildcards.seed),
                          max_length=config["finetune"]["max_length"], batch_size=config["finetune"]["eval_batch_size"],
                          length_sorted=LENGTH_SORTED_EVAL, **precision_options(config))

    return args


def checkpoints_of(files):
    return lambda input: {"model_dirs": [os.path.dirname(m) for m in getattr(input, files)]}


def masks_of(files):
    return lambda input: {"model_dir": os.path.dirname(input.model), "masks": list(getattr(input, files))}


# what the Snakefile's targets build for this track (paper C adds its report in rules/nlu/srnets_common.smk)
TARGETS["all"] += P.final_outputs()
TARGETS["prepare"] += P.prepared_datasets()
TARGETS["train"] += [P.row_model(t, r, s)["summary"] for r in NEURAL_ROWS for t in TASKS for s in P.row_seeds(r)]
TARGETS["train"] += P.mask_files() + [f"{bias_dir(t, 'overlap', s)}/train_probs.parquet" for t in TASKS
                                      for s in P.bias_seeds() if "overlap" in SOURCES]
TARGETS["masks"] += P.mask_files()
TARGETS["evaluate"] += P.evaluation_jsons()

# paper D's FFW on the task's baseline (config `ffw:`, rules/nlu/ffw.smk) and its records of the cross-paper matrix
from maskbench.tracks.nlu.ffw_plan import ATTRIBUTES as FFW_ATTRIBUTES, METHODS as FFW_METHODS, FFWPlan  # noqa: E402

FFW = FFWPlan(config, P) if config.get("ffw") else None
if FFW:
    MATRIX_CELLS.append(FFW.cells_file())
    TARGETS["masks"] += FFW.all_masks()
    TARGETS["all"] += [FFW.cells_file()]


def ffw_inputs(wildcards):
    """An FFW run's inputs: the baseline of its seed, the training part and, for the overlap attribute, the overlap
    bias model's probabilities."""
    base = checkpoint_dir(FFW.task, wildcards.seed)
    inputs = {"model": f"{base}/model.safetensors", "model_summary": f"{base}/train_summary.json",
              "train": prepared_path(config["tasks"][FFW.task]["train"])}
    if wildcards.attribute == "overlap":
        inputs["bias"] = f"{bias_dir(FFW.task, 'overlap', P.bias_seed(wildcards.seed))}/train_probs.parquet"
    return inputs
