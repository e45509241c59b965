"""The nlu track's config checks (papers A and C): names that must refer to each other, which a JSON schema
(schemas/nlu.schema.yaml) cannot express."""

from __future__ import annotations

import math
from collections.abc import Mapping

from maskbench.config_checks import ConfigError
from maskbench.objectives.needs import HYPERPARAMETERS
from maskbench.tracks.nlu.srnets.matrix import eligible_runs
from maskbench.tracks.nlu.workflow_plan import FINETUNED, GOLD_ONLY_LOSSES, NEURAL_KINDS, PRECOMPUTED

# paper A's Table 1 columns (and the breakdowns and weighted F1 beside them): the column names of a table that
# declares `paper: A`, whose published figures are looked up by these names (report/paper_a_table1.csv)
PAPER_A_COLUMNS = ("mnli_val", "hans", "hans_ent", "hans_nonent", "hans_lex", "hans_sub", "hans_const", "mnli_neg",
                   "qqp_val", "paws", "paws_wf1", "paws_neg", "fever_val", "fever_symm")


def check(config: Mapping) -> None:
    """The nlu track (papers A and C): tasks, negation subsets, bias sources, rows, paper C's section."""
    datasets = config["datasets"]
    subsets = config.get("negation_subsets", {}) or {}
    tasks = config["tasks"]
    clash = sorted(set(datasets) & set(subsets))
    if clash:
        raise ConfigError(f"config: negation_subsets.{clash[0]} has the name of a dataset; pick another name")
    for name, spec in datasets.items():
        if spec["task"] not in tasks:
            raise ConfigError(f"config: datasets.{name}.task has value {spec['task']!r}, which is not a task "
                              f"{sorted(tasks)}")
    for name, sub in subsets.items():
        if sub["from"] not in datasets:
            raise ConfigError(f"config: negation_subsets.{name}.from has value {sub['from']!r}, which is not a dataset")
    for task, spec in tasks.items():
        for role in ("train", "dev"):
            ref = spec[role]
            if ref not in datasets:
                raise ConfigError(f"config: tasks.{task}.{role} has value {ref!r}, which is not a dataset")
            if datasets[ref]["task"] != task:
                raise ConfigError(f"config: tasks.{task}.{role} names {ref!r}, a dataset of task "
                                  f"{datasets[ref]['task']!r}")
        for eval_set in spec["eval_sets"]:
            if eval_set not in datasets and eval_set not in subsets:
                raise ConfigError(f"config: tasks.{task}.eval_sets.{eval_set} is neither a dataset nor a "
                                  f"negation subset")
    check_model(config["model"], "model")
    sources = (config.get("bias") or {}).get("sources", {})
    for name, source in sources.items():
        if (source["kind"] == "overlap_lr") != (name == "overlap"):
            # the rules know the hand-crafted bias model by this one name (bias/overlap/, row bias_overlap)
            raise ConfigError(f"config: bias.sources.{name}: the overlap_lr source must be called 'overlap' "
                              f"(and only it), got kind {source['kind']!r}")
        if "model" in source:
            check_model(source["model"], f"bias.sources.{name}.model")
            if source["model"]["init"] == FINETUNED:
                raise ConfigError(f"config: bias.sources.{name}.model.init is 'finetuned'; a bias model is trained "
                                  "here, from scratch or a pre-trained model")
        if source["kind"] in NEURAL_KINDS and config["model"]["init"] == FINETUNED and "model" not in source:
            # a weak learner is the main model trained briefly: the given classifier is already fine-tuned
            raise ConfigError(f"config: bias.sources.{name}.model is required: model.init is 'finetuned', so the "
                              f"{source['kind']} bias model needs a model of its own to train (scratch or pretrained)")
        for key in ("train_subset", "features", "binary_positive", "feature_set", "solver", "C", "class_weight"):
            for task in source.get(key, {}):
                if task not in tasks:
                    raise ConfigError(f"config: bias.sources.{name}.{key}.{task} is not a task {sorted(tasks)}")
        check_precomputed(config, name, source)
    check_given_model(config)
    for row, spec in (config.get("standard_debiasing") or {}).items():
        if spec["bias"] not in sources:
            raise ConfigError(f"config: standard_debiasing.{row}.bias has value {spec['bias']!r}, which is not a "
                              f"bias source {sorted(sources)}")
    masked = config.get("masked_debiasing") or {}
    if "none" in sources:
        raise ConfigError("config: bias.sources.none: 'none' names the bias folder of a plain cross-entropy mask "
                          "search; pick another name")
    searches: dict[tuple, str] = {}
    for row, spec in masked.items():
        key = (spec["loss"], spec.get("bias"))
        if key in searches:
            # rows are stored by loss and bias source (masks/.../loss~<loss>/bias~<source>/): they would collide
            raise ConfigError(f"config: masked_debiasing.{row} has the loss and bias source of "
                              f"masked_debiasing.{searches[key]}; one mask search per (loss, bias) pair")
        searches[key] = row
        bias = spec.get("bias")
        if spec["loss"] == "ce" and bias is not None:
            raise ConfigError(f"config: masked_debiasing.{row}.bias is {bias!r}, but loss 'ce' reads no bias source")
        if spec["loss"] != "ce" and bias is None:
            raise ConfigError(f"config: masked_debiasing.{row}.bias is required for loss {spec['loss']!r}")
        if bias is not None and bias not in sources:
            raise ConfigError(f"config: masked_debiasing.{row}.bias has value {bias!r}, which is not a bias source "
                              f"{sorted(sources)}")
    for task in (config.get("finetune") or {}).get("tasks") or {}:
        if task not in tasks:
            raise ConfigError(f"config: finetune.tasks.{task} is not a task {sorted(tasks)}")
    for name, source in sources.items():
        for task in source.get("tasks") or {}:
            if task not in tasks:
                raise ConfigError(f"config: bias.sources.{name}.tasks.{task} is not a task {sorted(tasks)}")
    check_srnets(config.get("srnets") or {}, config, sources)
    table = (config.get("report") or {}).get("table1")
    if table:
        built = {"baseline", *(config.get("standard_debiasing") or {}), *masked}
        for row in table["rows"]:
            if row not in built:
                raise ConfigError(f"config: report.table1.rows has {row!r}, which no method of this config "
                                  f"builds {sorted(built)}")
        for row in table.get("row_labels") or {}:
            if row not in built:
                raise ConfigError(f"config: report.table1.row_labels.{row} names a row no method of this config "
                                  f"builds {sorted(built)}")
        if table.get("paper") == "A":
            for column in table["columns"]:
                if column not in PAPER_A_COLUMNS:
                    raise ConfigError(f"config: report.table1.columns.{column} is not a column of paper A's Table 1 "
                                      f"{list(PAPER_A_COLUMNS)}; without `paper: A` the columns are named freely")
        for column, ref in table["columns"].items():
            if ref["task"] not in tasks:
                raise ConfigError(f"config: report.table1.columns.{column}.task has value {ref['task']!r}, "
                                  f"which is not a task")
            if ref["eval_set"] not in tasks[ref["task"]]["eval_sets"]:
                raise ConfigError(f"config: report.table1.columns.{column}.eval_set has value "
                                  f"{ref['eval_set']!r}, which is not an eval set of task {ref['task']!r}")
    check_tradeoff(config)
    check_ffw(config.get("ffw"), config, sources)
    check_budget_study(config.get("budget_study") or {}, config)


def check_budget_study(study: Mapping, config: Mapping) -> None:
    """The budget study (docs/budget-study.md): its task, training sets and mask rows exist; paper C's part reaches
    its sparsities by IMP's 10 % rounds."""
    if not study:
        return
    tasks, datasets, masked = config["tasks"], config["datasets"], config.get("masked_debiasing") or {}
    if study["task"] not in tasks:
        raise ConfigError(f"config: budget_study.task has value {study['task']!r}, which is not a task {sorted(tasks)}")
    for name in (study.get("baseline") or {}).get("train_sets", []):
        if name not in datasets or datasets[name]["task"] != study["task"]:
            raise ConfigError(f"config: budget_study.baseline.train_sets has {name!r}, which is not a dataset of task "
                              f"{study['task']!r}")
    for row in study["masks"]["rows"]:
        if row not in masked:
            raise ConfigError(f"config: budget_study.masks.rows has {row!r}, which is not a masked_debiasing row "
                              f"{sorted(masked)}")
    part = study.get("srnets") or {}
    if "imp" in (part.get("epochs") or {}):
        for i, sparsity in enumerate(part["sparsities"]):
            if abs(sparsity * 10 - round(sparsity * 10)) > 1e-9:
                raise ConfigError(f"config: budget_study.srnets.sparsities[{i}] is {sparsity}; IMP prunes 10% per "
                                  "round, so every level is a multiple of 0.1")


def sweep_knobs(config: Mapping, row: str) -> tuple[str, ...]:
    """The strength knobs a Table 1 row may sweep (docs/paper-a.md, "Trade-off curves"): the run's learning rate and epochs,
    the mask search's l1_lambda, and its loss's hyper-parameters (``objectives.needs.HYPERPARAMETERS``)."""
    masked, standard = config.get("masked_debiasing") or {}, config.get("standard_debiasing") or {}
    spec = masked.get(row) or standard.get(row)
    if spec is None:
        return ()
    own = ("learning_rate", "epochs", "l1_lambda") if row in masked else ("learning_rate", "epochs")
    return own + tuple(HYPERPARAMETERS[spec["loss"]])


def check_tradeoff(config: Mapping) -> None:
    tradeoff = config.get("tradeoff")
    if not tradeoff:
        return
    rows = {*(config.get("masked_debiasing") or {}), *(config.get("standard_debiasing") or {})}
    table_rows = ((config.get("report") or {}).get("table1") or {}).get("rows", [])
    for row, knobs in tradeoff["sweeps"].items():
        where = f"config: tradeoff.sweeps.{row}"
        if row not in rows:
            raise ConfigError(f"{where} is not a masked_debiasing or standard_debiasing row {sorted(rows)}")
        if table_rows and row not in table_rows:
            raise ConfigError(f"{where}: the row is not in report.table1.rows, so its curve has no Table 1 point")
        allowed = sweep_knobs(config, row)
        for knob, values in knobs.items():
            if knob not in allowed:
                raise ConfigError(f"{where}.{knob} is not a strength knob of this row; choose one of {list(allowed)}")
            if not values:
                raise ConfigError(f"{where}.{knob} has no values")
            if knob in ("strength", "beta") and any(v > 1 for v in values):
                raise ConfigError(f"{where}.{knob} has {max(values)}; a {knob} lies in (0, 1]")
            if knob == "epochs" and any(float(v) != int(v) for v in values):
                raise ConfigError(f"{where}.epochs has {next(v for v in values if float(v) != int(v))}; give "
                                  f"whole epochs")


def check_model(model: Mapping, where: str) -> None:
    if model["init"] in ("pretrained", FINETUNED) and not model.get("path"):
        raise ConfigError(f"config: {where}.path is required when {where}.init is {model['init']!r}")
    if model["init"] == FINETUNED and "bert_config" in model:
        raise ConfigError(f"config: {where}.bert_config is set, but {where}.init 'finetuned' takes the model as it is")
    if model["init"] == "scratch" and "bert_config" not in model:
        raise ConfigError(f"config: {where}.bert_config is required when {where}.init is 'scratch'")


def check_given_model(config: Mapping) -> None:
    """A classifier fine-tuned elsewhere (`model.init: finetuned`) is the frozen start of the mask searches: what
    needs the pre-trained model it came from (standard debiasing, paper C's subnetworks) cannot be planned."""
    if config["model"]["init"] != FINETUNED:
        return
    for row in config.get("standard_debiasing") or {}:
        raise ConfigError(f"config: standard_debiasing.{row}: model.init is 'finetuned', but standard debiasing "
                          "fine-tunes the pre-trained model with a debiasing loss; drop the row (mask rows search "
                          "the given model) or name a pre-trained model")
    if config.get("srnets"):
        raise ConfigError("config: srnets: model.init is 'finetuned', but paper C's subnetworks start from the "
                          "pre-trained weights; drop the section or name a pre-trained model")


def check_precomputed(config: Mapping, name: str, source: Mapping) -> None:
    """A precomputed bias source: one form (`columns` or `gold_column`) for every task, from a local training file,
    and a gold column only under losses that read p_b(y) alone."""
    has = [key for key in ("columns", "gold_column") if key in source]
    if source["kind"] != PRECOMPUTED:
        if has:
            raise ConfigError(f"config: bias.sources.{name}.{has[0]} is for kind 'precomputed', got kind "
                              f"{source['kind']!r}")
        return
    if len(has) != 1:
        raise ConfigError(f"config: bias.sources.{name}: a precomputed source gives `columns` (a distribution) or "
                          f"`gold_column` (p_b of the gold label), exactly one; got {has or 'neither'}")
    given = source[has[0]]
    for task, spec in config["tasks"].items():
        if task not in given:
            raise ConfigError(f"config: bias.sources.{name}.{has[0]} has no entry for task {task!r} (every task's "
                              "rows read the source)")
        dataset = config["datasets"][spec["train"]]
        if not dataset["source"].startswith("local:"):
            raise ConfigError(f"config: bias.sources.{name}: the training set of task {task!r}, datasets."
                              f"{spec['train']}, has source {dataset['source']!r}; precomputed columns are read "
                              "from a local file (local:<path>)")
    for task in given:
        if task not in config["tasks"]:
            raise ConfigError(f"config: bias.sources.{name}.{has[0]}.{task} is not a task {sorted(config['tasks'])}")
    if has[0] == "gold_column":
        uses = [(f"masked_debiasing.{row}", spec["loss"]) for row, spec in (config.get("masked_debiasing") or {}).items()
                if spec.get("bias") == name]
        uses += [(f"standard_debiasing.{row}", spec["loss"])
                 for row, spec in (config.get("standard_debiasing") or {}).items() if spec["bias"] == name]
        debias = (config.get("srnets") or {}).get("debias") or {}
        uses += [("srnets.debias.losses", loss) for loss in debias.get("losses", []) if debias.get("bias") == name]
        for where, loss in uses:
            if loss not in GOLD_ONLY_LOSSES:
                raise ConfigError(f"config: {where} has loss {loss!r}, which reads the bias model's whole "
                                  f"distribution, but bias.sources.{name} gives only gold_column; give `columns` "
                                  f"(one per label) or use one of {list(GOLD_ONLY_LOSSES)}")


def check_srnets(srn: Mapping, config: Mapping, sources: Mapping) -> None:
    """Paper C's section: names that must exist, sparsities IMP can reach, a timing study inside the baseline."""
    if not srn:
        return
    tasks, datasets = config["tasks"], config["datasets"]
    for seed in srn.get("seeds", []):
        if seed not in config["seeds"]:
            # the subnetworks start from the baseline of the same seed
            raise ConfigError(f"config: srnets.seeds has {seed}, which is not one of seeds {config['seeds']}")
    for task in srn.get("tasks", []):
        if task not in tasks:
            raise ConfigError(f"config: srnets.tasks has {task!r}, which is not a task {sorted(tasks)}")
    for section in ("mask_training", "imp", "retrain", "ood_informed", "table5", "theta_ft"):
        for task in (srn.get(section) or {}).get("tasks", {}):
            if task not in tasks:
                raise ConfigError(f"config: srnets.{section}.tasks.{task} is not a task {sorted(tasks)}")
    for task in ((srn.get("theta_ft") or {}).get("debiased_epochs") or {}):
        if task not in tasks:
            raise ConfigError(f"config: srnets.theta_ft.debiased_epochs.{task} is not a task {sorted(tasks)}")
    for i, sparsity in enumerate(srn["sparsities"]):
        if abs(sparsity * 10 - round(sparsity * 10)) > 1e-9:
            raise ConfigError(f"config: srnets.sparsities[{i}] is {sparsity}; IMP prunes 10% per round, so every "
                              f"level is a multiple of 0.1")
    if len(set(srn["sparsities"])) != len(srn["sparsities"]):
        raise ConfigError(f"config: srnets.sparsities has a level twice: {srn['sparsities']}")
    debias = srn.get("debias")
    if debias and debias["bias"] not in sources:
        raise ConfigError(f"config: srnets.debias.bias has value {debias['bias']!r}, which is not a bias source "
                          f"{sorted(sources)}")
    t5 = srn.get("table5") or {}  # the schema has filled its defaults (sparsity 0.9, loss ce) when it is there
    if t5 and t5["loss"] != "ce" and not debias:
        raise ConfigError(f"config: srnets.table5.loss is {t5['loss']!r}, which needs srnets.debias.bias")
    for name, variant in (t5.get("variants") or {}).items():
        start = variant.get("initial_sparsity")
        if start is not None and not 0 <= start < t5["sparsity"]:
            raise ConfigError(f"config: srnets.table5.variants.{name}.initial_sparsity is {start}; a gradual "
                              f"schedule starts in [0, srnets.table5.sparsity = {t5['sparsity']})")
    for column, ref in (t5.get("columns") or {}).items():
        task, eval_set = ref
        if task not in tasks or eval_set not in tasks[task]["eval_sets"]:
            raise ConfigError(f"config: srnets.table5.columns.{column} is {ref}, not [task, one of its eval sets]")
    ood = srn.get("ood_informed") or {}
    for task, mixed in (ood.get("train") or {}).items():
        if task not in tasks:
            raise ConfigError(f"config: srnets.ood_informed.train.{task} is not a task {sorted(tasks)}")
        for i, item in enumerate(mixed):
            name = item["dataset"]
            if name not in datasets:
                raise ConfigError(f"config: srnets.ood_informed.train.{task}[{i}].dataset has value {name!r}, which "
                                  f"is not a dataset")
            if name in tasks[task]["eval_sets"]:
                raise ConfigError(f"config: srnets.ood_informed.train.{task}[{i}].dataset is {name!r}, an evaluation "
                                  f"set of {task}: the upper bound trains on OOD training data, never on test data")
    timing = srn.get("timing") or {}
    for task in timing.get("tasks", []):
        if task not in tasks:
            raise ConfigError(f"config: srnets.timing.tasks has {task!r}, which is not a task {sorted(tasks)}")
    if isinstance(timing.get("sparsity"), Mapping):
        for task in tasks:
            if task not in timing["sparsity"]:
                raise ConfigError(f"config: srnets.timing.sparsity has no value for task {task!r}")
    if timing:
        steps = timing["steps"]
        if sorted(set(steps)) != list(steps):
            raise ConfigError(f"config: srnets.timing.steps must increase strictly, got {steps}")
        theta_ft = srn.get("theta_ft")
        for task, spec in tasks.items():
            n = datasets[spec["train"]].get("n")
            if n is None:
                continue  # a real dataset: finetune checks the steps against the run's length before training
            hp = {**config["finetune"], **(config["finetune"].get("tasks") or {}).get(task, {})}
            if theta_ft is not None:
                hp = {**config["finetune"], **theta_ft.get("hparams", {}),
                      **((theta_ft.get("tasks") or {}).get(task) or {}).get("hparams", {})}
            total = math.ceil(hp["epochs"] * -(-n // hp["batch_size"]))
            if steps[-1] >= total:
                model = "srnets.theta_ft" if theta_ft is not None else "the baseline"
                raise ConfigError(f"config: srnets.timing.steps has {steps[-1]}, but {model} of {task} runs "
                                  f"{total} steps (epochs x ceil(datasets.{spec['train']}.n / batch_size))")


def check_ffw(ffw: Mapping | None, config: Mapping, sources: Mapping) -> None:
    """Paper D's FFW cells (``ffw:``): the task, the overlap bias source, the evaluation sets and native rows the
    matrix records read, paper C's runs among them (``ffw.matrix.srnets``)."""
    if not ffw:
        return
    tasks = config["tasks"]
    task = ffw.get("task", "mnli")
    if task not in tasks:
        raise ConfigError(f"config: ffw.task has value {task!r}, which is not a task {sorted(tasks)}")
    if "overlap" in ffw["attributes"] and "overlap" not in sources:
        raise ConfigError("config: ffw.attributes has 'overlap', which reads the lexical-overlap bias model, but "
                          f"bias.sources has no 'overlap' source {sorted(sources)}")
    for seed in ffw.get("seeds") or []:
        if seed not in config["seeds"]:
            raise ConfigError(f"config: ffw.seeds has {seed}, which is not one of seeds {config['seeds']} (the FFW "
                              "runs gate that seed's baseline)")
    matrix = ffw.get("matrix") or {}
    eval_sets = tasks[task]["eval_sets"]
    for key in ("id_set", "ood_set", "negation_set"):
        name = matrix.get(key, "hans" if key == "ood_set" else None)
        if name is not None and name not in eval_sets:
            raise ConfigError(f"config: ffw.matrix.{key} has value {name!r}, which is not an eval set of task "
                              f"{task!r} {sorted(eval_sets)}")
    table = (config.get("report") or {}).get("table1")
    reported = list(table["rows"]) if table else ["baseline"]
    masked = config.get("masked_debiasing") or {}
    for row in matrix.get("rows", ["baseline"]):
        if row != "baseline" and row not in masked:
            raise ConfigError(f"config: ffw.matrix.rows has {row!r}; a native row is 'baseline' or a "
                              f"masked_debiasing row {sorted(masked)}")
        if row not in reported:
            raise ConfigError(f"config: ffw.matrix.rows has {row!r}, which report.table1.rows does not build "
                              f"{reported}")
    named = matrix.get("srnets")
    if named is not None:
        eligible = eligible_runs(config, task)
        if named and not config.get("srnets"):
            raise ConfigError(f"config: ffw.matrix.srnets has {named[0]!r}, but the config has no `srnets:` "
                              "section (paper C's runs)")
        for run in named:
            if run not in eligible:
                raise ConfigError(f"config: ffw.matrix.srnets has {run!r}, which is not a mask training or IMP run "
                                  f"of srnets on task {task!r}; choose from {sorted(eligible)}")
