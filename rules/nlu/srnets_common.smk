# Paper C's helpers (rules/nlu/srnets.smk, and the baseline's extra outputs in rules/nlu/train.smk), apart from
# paper A's (rules/nlu/common.smk, which this file builds on).
# Planned only when the config has `srnets:`. Every sweep is one job per (task, seed) (one process per sweep:
# start-up paid once); `evaluate_srnets` scores all subnetworks of a (task, seed) in one process.
import os

from maskbench.tracks.nlu.paths import level_name

SRN = config.get("srnets") or {}
SRN_SEEDS = [int(s) for s in SRN.get("seeds", SEEDS)] if SRN else []
SRN_TASKS = [t for t in TASKS if t in SRN.get("tasks", TASKS)] if SRN else []
SRN_SPARSITIES = [float(s) for s in SRN.get("sparsities", [])]
SRN_DEBIAS = SRN.get("debias") or {}
SRN_LOSSES = list(SRN_DEBIAS.get("losses", []))
# paradigm (b)'s masks: mask training's (the first debiasing loss) and IMP-rewind's (figure 4)
SRN_RETRAIN_FROM = list(SRN_DEBIAS.get("retrain_from", ["mask_train", "imp_rewind"]))
SRN_OOD = SRN.get("ood_informed") or {}
SRN_TIMING = SRN.get("timing") or {}
SRN_T5 = (SRN.get("table5") or {}).get("variants", {})
SRN_T5_SPARSITY = float((SRN.get("table5") or {}).get("sparsity", 0.9))
# paper C's own fine-tuned model theta_ft (its recipe per task); absent: the subnetworks start from the shared
# baseline, fine-tuned with `finetune:` (paper A's recipe)
SRN_THETA_FT = SRN.get("theta_ft")


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
    # paradigm (b): masks of (a)'s first debiasing loss and of IMP-rewind with it, retrained on theta_pt with CE
    sources = {"mask_train": ("b_mask_retrain", f"a_mask_{SRN_LOSSES[0]}"),
               "imp_rewind": ("b_imprw_retrain", f"b_imprw_{SRN_LOSSES[0]}")} if SRN_LOSSES else {}
    retrained = [sources[m] for m in SRN_RETRAIN_FROM if m in sources]
    for name, source in retrained:
        runs[f"{name}_ce"] = {"paradigm": "b", "method": "retrain", "loss": "ce", "start": "init", "source": source}
    bias = SRN_DEBIAS.get("bias")
    for loss in SRN_DEBIAS.get("imp_losses", []):
        runs[f"a_imp_{loss}"] = {"paradigm": "a", "method": "imp", "loss": loss, "start": "ft", "bias": bias}
    for loss in SRN_DEBIAS.get("retrain_losses", []):
        # figure 4's "poe ft": the same transferred masks, fine-tuned in isolation with the debiasing loss
        for name, _ in retrained:
            runs[f"{name}_{loss}"] = {**runs[f"{name}_ce"], "loss": loss, "bias": bias}
    for loss in SRN_DEBIAS.get("init_mask_losses", []):
        runs[f"c_mask_{loss}"] = {"paradigm": "c", "method": "mask_train", "loss": loss, "start": "init",
                                  "bias": bias}
    if SRN_DEBIAS.get("debiased_start"):
        # figure 3: subnetworks of the model fine-tuned with the debiasing loss, pruned with the same loss
        loss = SRN_DEBIAS["debiased_start"]
        for method in ("mask_train", "imp"):
            short = "mask" if method == "mask_train" else "imp"
            runs[f"a_{loss}ft_{short}_{loss}"] = {"paradigm": "a", "method": method, "loss": loss,
                                                  "start": f"ft_{loss}", "bias": bias}
    ood_tasks = [t for t in TASKS if t in SRN_OOD.get("train", {})]
    for paradigm in SRN_OOD.get("paradigms", []):
        # section 4.5: CE on the training set with OOD training data mixed in
        runs[f"{paradigm}_mask_ood"] = {"paradigm": paradigm, "method": "mask_train", "loss": "ce", "ood": True,
                                        "start": "ft" if paradigm == "a" else "init", "tasks": ood_tasks}
    return runs


SRN_RUNS = _srn_runs()
# runs that only feed others: IMP with rewinding to the initial weights, the source of a paradigm (b) mask
SRN_FEEDERS = ({f"b_imprw_{SRN_LOSSES[0]}": {"method": "imp_rewind", "loss": SRN_LOSSES[0], "start": "init",
                                            "bias": SRN_DEBIAS["bias"]}}
               if SRN_LOSSES and "imp_rewind" in SRN_RETRAIN_FROM else {})
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


def theta_ft_dir(task, seed, loss="ce"):
    """theta_ft, the fine-tuned model paradigm (a) prunes (`loss` other than ce: figure 3's debiased start, with
    the sweep's bias source): `srnets.theta_ft`'s own runs, or the shared baseline and finetune_debiased."""
    if SRN_THETA_FT is None:
        return checkpoint_dir(task, seed) if loss == "ce" else debiased_dir(task, loss, SRN_DEBIAS["bias"], seed)
    if loss == "ce":
        return f"{R}/{NLU}/{task}/{MODEL}/models/method~finetune/loss~ce/recipe~srnets/seed~{seed}"
    bias = SRN_DEBIAS["bias"]
    return f"{R}/{NLU}/{task}/{MODEL}/models/method~finetune/loss~{loss}/bias~{bias}/recipe~srnets/seed~{seed}"


def theta_ft_hparams(task, loss="ce"):
    """`finetune` with `srnets.theta_ft.hparams` and its `tasks.<task>.hparams` merged in, key by key; a debiased
    start also takes `debiased_epochs.<task>` (paper C: PoE and conf-reg fine-tune MNLI for 5 epochs, not 3)."""
    merged = {**{k: v for k, v in config["finetune"].items() if k not in FINETUNE_RUN_KEYS},
              **srn_settings("theta_ft", task)["hparams"]}
    epochs = (SRN_THETA_FT.get("debiased_epochs") or {}).get(task)
    return {**merged, "epochs": epochs} if loss != "ce" and epochs else merged


def theta_ft_hparams_of(loss):
    return lambda wildcards: as_json(theta_ft_hparams(wildcards.task, loss))


def theta_ft_head(wildcards):
    return "" if SRN_THETA_FT.get("train_classifier", True) else "--train-classifier 0"


def theta_ft_inputs(loss):
    """Inputs of finetune_theta_ft[_<loss>]: the task's data and what the loss reads (conf-reg's teacher: theta_ft)."""

    def inputs(wildcards):
        found = task_train_data(wildcards)
        if loss != "ce":
            found["bias"] = f"{bias_dir(wildcards.task, SRN_DEBIAS['bias'], bias_seed(wildcards.seed))}/train_probs.parquet"
        if loss in TEACHER_LOSSES:
            found["teacher"] = f"{theta_ft_dir(wildcards.task, wildcards.seed)}/train_probs.parquet"
        return found

    return inputs


def theta_ft_loss_options(wildcards, input):
    extra = f" --bias-probs {quoted(input.bias)}" if "bias" in input.keys() else ""
    return extra + (f" --teacher-probs {quoted(input.teacher)}" if "teacher" in input.keys() else "")


def srn_reference_jsons():
    """The full fine-tuned model's evaluations: the dashed reference line of the curves."""
    if SRN_THETA_FT is None:
        return [evaluation_json(t, "baseline", s, e) for t in SRN_TASKS for s in SRN_SEEDS for e in eval_set_names(t)]
    return [f"{theta_ft_eval_dir(t, s)}/{e}.json" for t in SRN_TASKS for s in SRN_SEEDS for e in eval_set_names(t)]


def theta_ft_eval_dir(task, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/eval/srnets/theta_ft/seed~{seed}"


def initial_dir(task, seed):
    """theta_pt: the model theta_ft's fine-tuning started from (written by finetune_baseline, or by
    finetune_theta_ft with `srnets.theta_ft`)."""
    return f"{R}/{NLU}/{task}/{MODEL}/models/init/seed~{seed}"


def snapshot_dir(task, seed, step):
    return f"{R}/{NLU}/{task}/{MODEL}/models/snapshots/seed~{seed}/step~{step}"


def srn_dir(task, run, seed):
    return f"{R}/{NLU}/{task}/{MODEL}/srnets/{run}/seed~{seed}"


def start_dir_of(task, start, seed):
    """`ft`: the baseline; `ft_<loss>`: the model fine-tuned with that loss and the sweep's bias; `init`: theta_pt."""
    if start == "ft":
        return theta_ft_dir(task, seed)
    if start.startswith("ft_"):
        return theta_ft_dir(task, seed, start[len("ft_"):])
    return initial_dir(task, seed)


def imp_levels():
    """IMP writes every 10% level up to the largest swept sparsity."""
    top = max(SRN_SPARSITIES) if SRN_SPARSITIES else 0.9
    return [round(0.1 * k, 1) for k in range(1, int(round(top * 10)) + 1)]


def finetune_extra_outputs(rule_name="finetune_baseline"):
    """With `srnets:` theta_ft's fine-tuning (the baseline's, or finetune_theta_ft's with `srnets.theta_ft`) also
    writes theta_pt and the timing study's snapshots."""
    if not SRN or rule_name != ("finetune_baseline" if SRN_THETA_FT is None else "finetune_theta_ft"):
        return {}
    outputs = {"init": f"{R}/{NLU}/{{task}}/{MODEL}/models/init/seed~{{seed}}/train_summary.json"}
    if SRN_TIMING:
        outputs["snapshots"] = [f"{snapshot_dir('{task}', '{seed}', n)}/train_summary.json"
                                for n in SRN_TIMING["steps"]]
    return outputs


def finetune_extra_options(wildcards, output):
    if "init" not in output.keys():
        return ""
    opts = f"--init-out {quoted(os.path.dirname(output.init))}"
    if SRN_TIMING:
        opts += (f" --snapshot-steps {' '.join(str(n) for n in SRN_TIMING['steps'])}"
                 f" --snapshot-dir {quoted(os.path.dirname(os.path.dirname(output.snapshots[0])))}")
    return opts


def timing_sparsity(task):
    value = SRN_TIMING.get("sparsity", 0.7)
    return float(value[task] if isinstance(value, dict) else value)


def timing_starts(task, seed):
    """name -> start folder of the timing study: theta_pt (step 0), the snapshots, the fine-tuned model (end)."""
    starts = {"step~0": initial_dir(task, seed)}
    starts.update({f"step~{n}": snapshot_dir(task, seed, n) for n in SRN_TIMING.get("steps", [])})
    starts["step~end"] = theta_ft_dir(task, seed)
    return starts


def named_sweep_entries(run, task, seed):
    """name -> (start folder, `--runs` entry) of the t5 or timing sweep of (task, seed)."""
    if run == "t5":
        entries = {}
        for name, variant in SRN_T5.items():
            entry = {"name": name, "init": variant["init"], "schedule": "fixed"}
            if variant.get("initial_sparsity") is not None:
                entry.update(schedule="gradual", initial_sparsity=variant["initial_sparsity"])
            entries[name] = (theta_ft_dir(task, seed), entry)
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
        return [f"{folder}/{level_name(s)}/mask.mask" for s in SRN_SPARSITIES]
    levels = SRN_SPARSITIES if spec["method"] == "retrain" else imp_levels()
    return [f"{folder}/{level_name(s)}/{name}" for s in levels
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
            found["teacher"] = f"{theta_ft_dir(task, seed)}/train_probs.parquet"
        if run not in SRN_NAMED_SWEEPS and srn_spec(run)["method"] == "retrain":
            source = srn_dir(task, srn_spec(run)["source"], seed)
            found["masks"] = [f"{source}/{level_name(s)}/mask.mask" for s in SRN_SPARSITIES]
        if run not in SRN_NAMED_SWEEPS and srn_spec(run).get("ood"):
            found["mix"] = [prepared_path(m["dataset"]) for m in SRN_OOD["train"][task]]
            found["exclude"] = [prepared_path(e) for e in eval_set_names(task)]
        return found

    return inputs


def srn_options_of(run):
    """A params function: the `python -m maskbench.steps nlu.srnet` options of a run for the job's task and seed."""

    def options(wildcards, input):
        task, seed = wildcards.task, wildcards.seed
        folder = srn_dir(task, run, seed)
        loss = srn_loss(run)
        common = f"--train {quoted(input.train)} --dev {quoted(input.dev)} --seed {seed} --tag {run} --loss {loss}"
        if "bias" in input.keys():
            common += f" --bias-probs {quoted(input.bias)}"
        if "teacher" in input.keys():
            common += f" --teacher-probs {quoted(input.teacher)}"
        training = srn_settings("mask_training", task)
        select_after = SRN.get("select_after", 0.7)
        ood = run not in SRN_NAMED_SWEEPS and srn_spec(run).get("ood")
        hparams = {**training["hparams"], **(srn_settings("ood_informed", task)["hparams"] if ood else {}),
                   **(srn_settings("table5", task)["hparams"] if run == "t5" else {})}
        mask_opts = (f"--alpha {training.get('alpha', 2.0)} --phi {training.get('phi', 0.01)}"
                     f" --reset-every {training.get('reset_every', 1000)} --eval-every {training.get('eval_every', 1000)}"
                     f" --saved-mask-sparsity {training.get('saved_mask_sparsity', 'final')}"
                     f" --score-first-and-last {int(training.get('score_first_and_last', True))}"
                     f" --keep-threshold-when-saturated {int(training.get('keep_threshold_when_saturated', False))}"
                     f" --hparams {as_json(hparams)}")
        if run in SRN_NAMED_SWEEPS:
            entries = [entry for _, entry in named_sweep_entries(run, task, seed).values()]
            sparsity = SRN_T5_SPARSITY if run == "t5" else timing_sparsity(task)
            first_start = theta_ft_dir(task, seed) if run == "t5" else initial_dir(task, seed)
            return (f"--method mask_train --start-dir {quoted(first_start)} {common} {mask_opts}"
                    f" --init {training.get('init', 'hard')} --select-after {select_after}"
                    f" --sparsity {sparsity} --runs {as_json(entries)} --sweep-dir {quoted(folder)}")
        spec = srn_spec(run)
        common = f"--start-dir {quoted(os.path.dirname(input.start))} {common}"
        if spec["method"] == "mask_train":
            if ood:
                mix = [{"path": path, "repeat": m.get("repeat", 1), "label_map": m.get("label_map", {})}
                       for path, m in zip(input.mix, SRN_OOD["train"][task])]
                common += f" --mix-train {as_json(mix)} --mix-exclude {quoted(input.exclude)}"
            return (f"--method mask_train {common} {mask_opts} --init {training.get('init', 'hard')}"
                    f" --select-after {select_after if spec['start'] != 'init' else 0.0}"
                    f" --sparsities {' '.join(map(str, SRN_SPARSITIES))} --sweep-dir {quoted(folder)}")
        if spec["method"] in ("imp", "imp_rewind"):
            return (f"--method {spec['method']} {common} --hparams {as_json(srn_settings('imp', task)['hparams'])}"
                    f" --final-sparsity {imp_levels()[-1]} --out-dir {quoted(folder)}")
        return (f"--method retrain {common} --hparams {as_json(srn_settings('retrain', task)['hparams'])}"
                f" --masks {quoted(input.masks)} --sweep-dir {quoted(folder)}")

    return options


def srn_items(task, seed):
    """Every subnetwork of (task, seed) to score: (model folder, mask file or `none`, row, evaluation folder).
    Masks are switched in on the model they were trained on; IMP and retrained checkpoints carry their mask."""
    items = []
    base = f"{R}/{NLU}/{task}/{MODEL}/eval/srnets"
    for run, spec in SRN_RUNS.items():
        if task not in srn_tasks(run):
            continue
        folder = srn_dir(task, run, seed)
        for s in SRN_SPARSITIES:
            name = level_name(s)
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
    if SRN_THETA_FT is not None:
        # paper C's own full model, the curves' reference (the baseline is scored by evaluate_<task>)
        items.append((theta_ft_dir(task, seed), "none", "srnets/theta_ft", theta_ft_eval_dir(task, seed)))
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
    return quoted([
        "--model-dirs", *[model for model, _, _, _ in items], "--masks", *[mask for _, mask, _, _ in items],
        "--rows", *[row for _, _, row, _ in items], "--out-dirs", *[where for _, _, _, where in items]])


def srn_all_evals():
    """Every subnetwork's evaluations (the full model's, `srn_reference_jsons`, apart)."""
    return [p for t in SRN_TASKS for s in SRN_SEEDS for p in srn_eval_outputs(t, s)
            if not p.startswith(theta_ft_eval_dir(t, s) + "/")]


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
        if spec["start"].startswith("ft_"):
            method = f"{method} of the {spec['start'][len('ft_'):]}-fine-tuned model"
        loss = f"{spec['loss']} + OOD data" if spec.get("ood") else spec["loss"]
        labels[run] = {"paradigm": spec["paradigm"], "method": method, "loss": loss}
    return labels


# paper C's report joins the default target
TARGETS["all"] += srn_report_outputs() if SRN else []
