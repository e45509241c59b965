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
# Planned only when the config has `srnets:`. Every sweep is one job per (task, seed) (one process per sweep:
# start-up paid once); `evaluate_srnets` scores all subnetworks of a (task, seed) in one process.
SRN = config.get("srnets") or {}
SRN_SEEDS = [int(s) for s in SRN.get("seeds", SEEDS)] if SRN else []
SRN_TASKS = [t for t in TASKS if t in SRN.get("tasks", TASKS)] if SRN else []
SRN_SPARSITIES = [float(s) for s in SRN.get("sparsities", [])]
SRN_DEBIAS = SRN.get("debias") or {}
SRN_LOSSES = list(SRN_DEBIAS.get("losses", []))
SRN_OOD = SRN.get("ood_informed") or {}
SRN_TIMING = SRN.get("timing") or {}
SRN_T5 = (SRN.get("table5") or {}).get("variants", {})
SRN_T5_SPARSITY = float((SRN.get("table5") or {}).get("sparsity", 0.9))


def _srn_runs():
    """The runs drawn as curves: paradigm (a) subnetworks of the fine-tuned model, (b) of the initial/pre-trained
    model fine-tuned in isolation, (c) of the initial/pre-trained model without fine-tuning (paper C figure 1)."""
    if not SRN:
        return {}
    runs = {"a_mask_ce": {"paradigm": "a", "method": "mask_train", "loss": "ce", "start": "ft"},
            "a_imp_ce": {"paradigm": "a", "method": "imp", "loss": "ce", "start": "ft"},
            "c_mask_ce": {"paradigm": "c", "method": "mask_train", "loss": "ce", "start": "init"}}
    for loss in SRN_LOSSES:
        runs[f"a_mask_{loss}"] = {"paradigm": "a", "method": "mask_train", "loss": loss, "start": "ft",
                                  "bias": SRN_DEBIAS["bias"]}
    if SRN_LOSSES:
        # paradigm (b): masks of (a)'s first debiasing loss and of IMP-rewind with it, retrained on theta_pt with CE
        runs["b_mask_retrain_ce"] = {"paradigm": "b", "method": "retrain", "loss": "ce", "start": "init",
                                     "source": f"a_mask_{SRN_LOSSES[0]}"}
        runs["b_imprw_retrain_ce"] = {"paradigm": "b", "method": "retrain", "loss": "ce", "start": "init",
                                      "source": f"b_imprw_{SRN_LOSSES[0]}"}
    ood_tasks = [t for t in TASKS if t in SRN_OOD.get("train", {})]
    for paradigm in SRN_OOD.get("paradigms", []):
        # section 4.5: CE on the training set with OOD training data mixed in
        runs[f"{paradigm}_mask_ood"] = {"paradigm": paradigm, "method": "mask_train", "loss": "ce", "ood": True,
                                        "start": "ft" if paradigm == "a" else "init", "tasks": ood_tasks}
    return runs


SRN_RUNS = _srn_runs()
# runs that only feed others: IMP with rewinding to the initial weights, the source of a paradigm (b) mask
SRN_FEEDERS = ({f"b_imprw_{SRN_LOSSES[0]}": {"method": "imp_rewind", "loss": SRN_LOSSES[0], "start": "init",
                                            "bias": SRN_DEBIAS["bias"]}} if SRN_LOSSES else {})
# one job per (task, seed) each: Table 5's schedules at one sparsity, the timing study's start checkpoints
SRN_NAMED_SWEEPS = (["t5"] if SRN_T5 else []) + (["timing"] if SRN_TIMING else [])


def srn_settings(section, task):
    """`srnets.<section>` for one task: its `tasks.<task>` entry merged in, `hparams` key by key (paper C trains
    MNLI 5 epochs at 5e-5, QQP and FEVER 7 at 2e-5, FEVER evaluating every 500 steps)."""
    base = dict(SRN.get(section) or {})
    override = (base.pop("tasks", None) or {}).get(task, {})
    merged = {**base, **{k: v for k, v in override.items() if k != "hparams"}}
    merged["hparams"] = {**base.get("hparams", {}), **override.get("hparams", {})}
    return merged


def srn_spec(run):
    return SRN_RUNS.get(run) or SRN_FEEDERS[run]


def srn_tasks(run):
    if run == "t5":
        chosen = TASKS
    elif run == "timing":
        chosen = SRN_TIMING.get("tasks", TASKS)
    else:
        chosen = srn_spec(run).get("tasks", TASKS)
    return [t for t in SRN_TASKS if t in chosen]


def sparsity_name(sparsity):
    """The folder name srnet writes for a sparsity level (`sparsity~0.3`)."""
    s = float(sparsity)
    return f"sparsity~{s:.1f}" if abs(s * 10 - round(s * 10)) < 1e-9 else f"sparsity~{s:g}"


def initial_dir(task, seed):
    """theta_pt: the model the seed's fine-tuning started from (finetune_baseline writes it with `srnets:`)."""
    return f"{R}/{TRACK}/{task}/{MODEL}/models/init/seed~{seed}"


def snapshot_dir(task, seed, step):
    return f"{R}/{TRACK}/{task}/{MODEL}/models/snapshots/seed~{seed}/step~{step}"


def srn_dir(task, run, seed):
    return f"{R}/{TRACK}/{task}/{MODEL}/srnets/{run}/seed~{seed}"


def start_dir_of(task, start, seed):
    return checkpoint_dir(task, seed) if start == "ft" else initial_dir(task, seed)


def imp_levels():
    """IMP writes every 10% level up to the largest swept sparsity."""
    top = max(SRN_SPARSITIES) if SRN_SPARSITIES else 0.9
    return [round(0.1 * k, 1) for k in range(1, int(round(top * 10)) + 1)]


def finetune_extra_outputs():
    """With `srnets:` the baseline's fine-tuning also writes theta_pt and the timing study's snapshots."""
    if not SRN:
        return {}
    outputs = {"init": f"{R}/{TRACK}/{{task}}/{MODEL}/models/init/seed~{{seed}}/train_summary.json"}
    if SRN_TIMING:
        outputs["snapshots"] = [f"{snapshot_dir('{task}', '{seed}', n)}/train_summary.json"
                                for n in SRN_TIMING["steps"]]
    return outputs


def finetune_extra_options(wildcards, output):
    if not SRN:
        return ""
    opts = f"--init-out {os.path.dirname(output.init)}"
    if SRN_TIMING:
        opts += (f" --snapshot-steps {' '.join(str(n) for n in SRN_TIMING['steps'])}"
                 f" --snapshot-dir {os.path.dirname(os.path.dirname(output.snapshots[0]))}")
    return opts


def timing_sparsity(task):
    value = SRN_TIMING.get("sparsity", 0.7)
    return float(value[task] if isinstance(value, dict) else value)


def timing_starts(task, seed):
    """name -> start folder of the timing study: theta_pt (step 0), the snapshots, the fine-tuned model (end)."""
    starts = {"step~0": initial_dir(task, seed)}
    starts.update({f"step~{n}": snapshot_dir(task, seed, n) for n in SRN_TIMING.get("steps", [])})
    starts["step~end"] = checkpoint_dir(task, seed)
    return starts


def named_sweep_entries(run, task, seed):
    """name -> (start folder, `--runs` entry) of the t5 or timing sweep of (task, seed)."""
    if run == "t5":
        entries = {}
        for name, variant in SRN_T5.items():
            entry = {"name": name, "init": variant["init"], "schedule": "fixed"}
            if variant.get("initial_sparsity") is not None:
                entry.update(schedule="gradual", initial_sparsity=variant["initial_sparsity"])
            entries[name] = (checkpoint_dir(task, seed), entry)
        return entries
    return {name: (start, {"name": name, "start_dir": start}) for name, start in timing_starts(task, seed).items()}


def srn_outputs(run):
    """The files of a sweep job (for its {task} and {seed}): masks of mask training, checkpoints of IMP/retrain."""
    folder = srn_dir("{task}", run, "{seed}")
    if run in SRN_NAMED_SWEEPS:
        names = list(SRN_T5) if run == "t5" else ["step~0", *[f"step~{n}" for n in SRN_TIMING["steps"]], "step~end"]
        return [f"{folder}/{name}/mask.mask" for name in names]
    spec = srn_spec(run)
    if spec["method"] == "mask_train":
        return [f"{folder}/{sparsity_name(s)}/mask.mask" for s in SRN_SPARSITIES]
    levels = SRN_SPARSITIES if spec["method"] == "retrain" else imp_levels()
    return [f"{folder}/{sparsity_name(s)}/{name}" for s in levels
            for name in ("model.safetensors", "mask.mask", "train_summary.json")]


def srn_loss(run):
    if run == "t5":
        return (SRN.get("table5") or {}).get("loss", "ce")
    return "ce" if run == "timing" else srn_spec(run)["loss"]


def srn_inputs_of(run):
    """Input function of srnet_<run>: start checkpoint(s), data, what the loss reads, a retrain's masks, the
    OOD-informed run's mixed-in sets and excluded test sets."""

    def inputs(wildcards):
        task, seed = wildcards.task, wildcards.seed
        spec = config["tasks"][task]
        found = {"train": prepared_path(spec["train"]), "dev": prepared_path(spec["dev"])}
        if run in SRN_NAMED_SWEEPS:
            found["starts"] = sorted({f"{start}/train_summary.json" for start, _ in
                                      named_sweep_entries(run, task, seed).values()})
        else:
            found["start"] = f"{start_dir_of(task, srn_spec(run)['start'], seed)}/train_summary.json"
        loss = srn_loss(run)
        bias = SRN_DEBIAS.get("bias") if run in SRN_NAMED_SWEEPS else srn_spec(run).get("bias")
        if loss != "ce":
            found["bias"] = f"{bias_dir(task, bias, bias_seed(seed))}/train_probs.parquet"
        if loss in TEACHER_LOSSES:
            found["teacher"] = f"{checkpoint_dir(task, seed)}/train_probs.parquet"
        if run not in SRN_NAMED_SWEEPS and srn_spec(run)["method"] == "retrain":
            source = srn_dir(task, srn_spec(run)["source"], seed)
            found["masks"] = [f"{source}/{sparsity_name(s)}/mask.mask" for s in SRN_SPARSITIES]
        if run not in SRN_NAMED_SWEEPS and srn_spec(run).get("ood"):
            found["mix"] = [prepared_path(m["dataset"]) for m in SRN_OOD["train"][task]]
            found["exclude"] = [prepared_path(e) for e in eval_set_names(task)]
        return found

    return inputs


def srn_options_of(run):
    """A params function: the `python -m maskbench.srnet` options of a run for the job's task and seed."""

    def options(wildcards, input):
        task, seed = wildcards.task, wildcards.seed
        folder = srn_dir(task, run, seed)
        loss = srn_loss(run)
        common = f"--train {input.train} --dev {input.dev} --seed {seed} --tag {run} --loss {loss}"
        if "bias" in input.keys():
            common += f" --bias-probs {input.bias}"
        if "teacher" in input.keys():
            common += f" --teacher-probs {input.teacher}"
        training = srn_settings("mask_training", task)
        select_after = SRN.get("select_after", 0.7)
        ood = run not in SRN_NAMED_SWEEPS and srn_spec(run).get("ood")
        hparams = {**training["hparams"], **(srn_settings("ood_informed", task)["hparams"] if ood else {}),
                   **(srn_settings("table5", task)["hparams"] if run == "t5" else {})}
        mask_opts = (f"--alpha {training.get('alpha', 2.0)} --phi {training.get('phi', 0.01)}"
                     f" --reset-every {training.get('reset_every', 1000)} --eval-every {training.get('eval_every', 1000)}"
                     f" --hparams {as_json(hparams)}")
        if run in SRN_NAMED_SWEEPS:
            entries = [entry for _, entry in named_sweep_entries(run, task, seed).values()]
            sparsity = SRN_T5_SPARSITY if run == "t5" else timing_sparsity(task)
            first_start = checkpoint_dir(task, seed) if run == "t5" else initial_dir(task, seed)
            return (f"--method mask_train --start-dir {first_start} {common} {mask_opts}"
                    f" --init {training.get('init', 'hard')} --select-after {select_after}"
                    f" --sparsity {sparsity} --runs {as_json(entries)} --sweep-dir {folder}")
        spec = srn_spec(run)
        common = f"--start-dir {os.path.dirname(input.start)} {common}"
        if spec["method"] == "mask_train":
            if ood:
                mix = [{"path": path, "repeat": m.get("repeat", 1), "label_map": m.get("label_map", {})}
                       for path, m in zip(input.mix, SRN_OOD["train"][task])]
                common += f" --mix-train {as_json(mix)} --mix-exclude {' '.join(input.exclude)}"
            return (f"--method mask_train {common} {mask_opts} --init {training.get('init', 'hard')}"
                    f" --select-after {select_after if spec['start'] == 'ft' else 0.0}"
                    f" --sparsities {' '.join(map(str, SRN_SPARSITIES))} --sweep-dir {folder}")
        if spec["method"] in ("imp", "imp_rewind"):
            return (f"--method {spec['method']} {common} --hparams {as_json(srn_settings('imp', task)['hparams'])}"
                    f" --final-sparsity {imp_levels()[-1]} --out-dir {folder}")
        return (f"--method retrain {common} --hparams {as_json(srn_settings('retrain', task)['hparams'])}"
                f" --masks {' '.join(input.masks)} --sweep-dir {folder}")

    return options


def srn_items(task, seed):
    """Every subnetwork of (task, seed) to score: (model folder, mask file or `none`, row, evaluation folder).
    Masks are switched in on the model they were trained on; IMP and retrained checkpoints carry their mask."""
    items = []
    base = f"{R}/{TRACK}/{task}/{MODEL}/eval/srnets"
    for run, spec in SRN_RUNS.items():
        if task not in srn_tasks(run):
            continue
        folder = srn_dir(task, run, seed)
        for s in SRN_SPARSITIES:
            name = sparsity_name(s)
            where = f"{base}/{run}/seed~{seed}/{name}"
            if spec["method"] == "mask_train":
                items.append((start_dir_of(task, spec["start"], seed), f"{folder}/{name}/mask.mask",
                              f"srnets/{run}/{s}", where))
            else:
                items.append((f"{folder}/{name}", "none", f"srnets/{run}/{s}", where))
    for run in SRN_NAMED_SWEEPS:
        if task not in srn_tasks(run):
            continue
        for name, (start, _) in named_sweep_entries(run, task, seed).items():
            items.append((start, f"{srn_dir(task, run, seed)}/{name}/mask.mask", f"srnets/{run}/{name}",
                          f"{base}/{run}/seed~{seed}/{name}"))
    return items


def srn_eval_outputs(task, seed):
    return [f"{where}/{e}.json" for _, _, _, where in srn_items(task, seed) for e in eval_set_names(task)]


def srn_eval_inputs_of(task):
    def inputs(wildcards):
        items = srn_items(task, wildcards.seed)
        weights = [f"{model}/model.safetensors" for model, mask, _, _ in items if mask == "none"]
        starts = sorted({f"{model}/train_summary.json" for model, mask, _, _ in items if mask != "none"})
        return {"data": [prepared_path(e) for e in eval_set_names(task)], "starts": starts, "checkpoints": weights,
                "masks": [mask for _, mask, _, _ in items if mask != "none"]}

    return inputs


def srn_eval_options_of(task):
    return lambda wildcards: srn_item_options(task, wildcards.seed)


def srn_item_options(task, seed):
    items = srn_items(task, seed)
    return " ".join([
        "--model-dirs", *[model for model, _, _, _ in items], "--masks", *[mask for _, mask, _, _ in items],
        "--rows", *[row for _, _, row, _ in items], "--out-dirs", *[where for _, _, _, where in items]])


def srn_all_evals():
    return [p for t in SRN_TASKS for s in SRN_SEEDS for p in srn_eval_outputs(t, s)]


def srn_report_outputs(captioned=False):
    """srnet_report's files; `captioned` wraps the tables and figures for `snakemake --report`."""

    def shown(path, caption):
        return report(path, caption=f"captions/{caption}.rst", category="Paper C") if captioned else path

    outputs = [shown(f"{R}/tables/sparsity_curves.csv", "sparsity_curves"),
               shown(f"{R}/figures/sparsity_curves.png", "sparsity_curves")]
    if SRN_T5:
        outputs += [shown(f"{R}/tables/table5.csv", "table5"), f"{R}/tables/table5.md"]
    if SRN_TIMING:
        outputs += [shown(f"{R}/tables/timing_curves.csv", "timing_curves"),
                    shown(f"{R}/figures/timing_curves.png", "timing_curves")]
    return outputs


def srn_report_runs():
    """run -> what the report labels it with (paradigm, method, loss); retrain runs name their mask's method."""
    names = {"mask_train": "mask train", "imp": "IMP", "imp_rewind": "IMP-rewind"}
    labels = {}
    for run, spec in SRN_RUNS.items():
        method = names.get(spec["method"], spec["method"])
        if method == "retrain":
            method = f"{names[srn_spec(spec['source'])['method']]} mask → retrain"
        loss = f"{spec['loss']} + OOD data" if spec.get("ood") else spec["loss"]
        labels[run] = {"paradigm": spec["paradigm"], "method": method, "loss": loss}
    return labels
