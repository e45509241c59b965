# Paper C's helpers (rules/nlu/srnets.smk, and the baseline's extra outputs in rules/nlu/train.smk), apart from
# paper A's (rules/nlu/common.smk, which this file builds on). Planned only when the config has `srnets:`. The run
# grid and every run's settings are src/maskbench/tracks/nlu/srnets/grid.py's; they reach the steps as typed JSON
# (`--spec`: tracks.nlu.srnets.spec, where the methods' defaults are written). This file adds the paths.
import os

from maskbench.tracks.nlu.srnets import grid as srnet_grid
from maskbench.tracks.nlu.paths import level_name

SRN = config.get("srnets") or {}
SRN_SEEDS = [int(s) for s in SRN.get("seeds", SEEDS)] if SRN else []
SRN_TASKS = [t for t in TASKS if t in SRN.get("tasks", TASKS)] if SRN else []
SRN_SPARSITIES = [float(s) for s in SRN.get("sparsities", [])]
SRN_DEBIAS = SRN.get("debias") or {}
SRN_TIMING = SRN.get("timing") or {}
# paper C's own fine-tuned model theta_ft (its recipe per task); absent: the subnetworks start from the shared
# baseline, fine-tuned with `finetune:` (paper A's recipe)
SRN_THETA_FT = SRN.get("theta_ft")
SRN_ALL = srnet_grid.grid(SRN)  # run -> paradigm, method, loss, start, ...
SRN_RUNS = {run: spec for run, spec in SRN_ALL.items() if spec["paradigm"]}  # the runs drawn as curves
SRN_NAMED_SWEEPS = srnet_grid.named_sweeps(SRN)  # t5, timing: one job per (task, seed) each
SRN_DIR = f"{R}/{NLU}/{{task}}/{MODEL}/srnets/{{run}}/seed~{{seed}}"


srn_runs_of = lambda *methods: [run for run, spec in SRN_ALL.items() if spec["method"] in methods]
srn_dir = lambda task, run, seed: SRN_DIR.format(task=task, run=run, seed=seed)
srn_level_outputs = lambda levels, names=("model.safetensors", "mask.mask", "train_summary.json"): [
    (scored_checkpoint if name == "model.safetensors" else str)(f"{SRN_DIR}/{level_name(s)}/{name}")
    for s in levels for name in names]
theta_ft_eval_dir = lambda task, seed: f"{R}/{NLU}/{task}/{MODEL}/eval/srnets/theta_ft/seed~{seed}"


def theta_ft_dir(task, seed, loss="ce"):
    """theta_ft, the fine-tuned model paradigm (a) prunes (`loss` other than ce: figure 3's debiased start, with
    the sweep's bias source): `srnets.theta_ft`'s own runs, or the shared baseline and finetune_debiased."""
    if SRN_THETA_FT is None:
        return checkpoint_dir(task, seed) if loss == "ce" else P.debiased_dir(task, loss, SRN_DEBIAS["bias"], seed)
    bias = "" if loss == "ce" else f"bias~{SRN_DEBIAS['bias']}/"
    return f"{R}/{NLU}/{task}/{MODEL}/models/method~finetune/loss~{loss}/{bias}recipe~srnets/seed~{seed}"


def start_dir_of(task, start, seed, step=None):
    """`ft`: theta_ft; `ft_<loss>`: the model fine-tuned with that loss; `init`: theta_pt, the model theta_ft's
    fine-tuning started from; `snapshot`: theta_ft's fine-tuning after `step` steps (the timing study)."""
    if start.startswith("ft"):
        return theta_ft_dir(task, seed, start[len("ft_"):] or "ce")
    models = f"{R}/{NLU}/{task}/{MODEL}/models"
    return f"{models}/init/seed~{seed}" if start == "init" else f"{models}/snapshots/seed~{seed}/step~{step}"


def theta_ft_hparams(task, loss):
    finetune = {k: v for k, v in config["finetune"].items() if k not in FINETUNE_RUN_KEYS}
    return srnet_grid.theta_ft_hparams(SRN, finetune, task, loss)


def srn_loss_inputs(task, seed, loss, found):
    """What a loss reads, added to a job's inputs: the bias model's probabilities, conf-reg's teacher (theta_ft)."""
    if loss != "ce":
        found["bias"] = f"{bias_dir(task, SRN_DEBIAS['bias'], P.bias_seed(seed))}/train_probs.parquet"
    if loss in TEACHER_LOSSES:
        found["teacher"] = f"{theta_ft_dir(task, seed)}/train_probs.parquet"
    return found


def theta_ft_inputs(loss):  # finetune_theta_ft[_<loss>]: the task's data and what the loss reads
    return lambda wildcards: srn_loss_inputs(wildcards.task, wildcards.seed, loss, task_train_data(wildcards))


def loss_input_options(wildcards, input):
    """`--bias-probs` / `--teacher-probs` of the inputs a job has (srn_loss_inputs)."""
    return "".join(f" --{option} {quoted(getattr(input, key))}" for key, option in
                   (("bias", "bias-probs"), ("teacher", "teacher-probs")) if key in input.keys())


def finetune_extra_outputs(rule_name="finetune_baseline"):
    """With `srnets:` theta_ft's fine-tuning (the baseline's, or finetune_theta_ft's with `srnets.theta_ft`) also
    writes theta_pt and the timing study's snapshots."""
    if not SRN or rule_name != ("finetune_baseline" if SRN_THETA_FT is None else "finetune_theta_ft"):
        return {}
    snapshots = [f"{start_dir_of('{task}', 'snapshot', '{seed}', n)}/train_summary.json"
                 for n in SRN_TIMING.get("steps", [])]
    return {"init": f"{start_dir_of('{task}', 'init', '{seed}')}/train_summary.json",
            **({"snapshots": snapshots} if snapshots else {})}


def finetune_extra_options(wildcards, output):
    if "init" not in output.keys():
        return ""
    opts = f"--init-out {quoted(os.path.dirname(output.init))}"
    if SRN_TIMING:
        opts += (f" --snapshot-steps {' '.join(str(n) for n in SRN_TIMING['steps'])}"
                 f" --snapshot-dir {quoted(os.path.dirname(os.path.dirname(output.snapshots[0])))}")
    return opts


def named_sweep_runs(run, task, seed):  # name -> (start folder, spec overrides) of a t5 or timing sweep
    return {name: (start_dir_of(task, start, seed, step), overrides)
            for name, (start, step, overrides) in srnet_grid.named_runs(SRN, run).items()}


def srn_inputs(wildcards):
    """Inputs of a sweep job: data, start checkpoint(s), what the loss reads, a retrain's masks, the OOD-informed
    run's mixed-in sets and excluded test sets."""
    task, seed, run = wildcards.task, wildcards.seed, wildcards.run
    found = {"train": prepared_path(config["tasks"][task]["train"]), "dev": prepared_path(config["tasks"][task]["dev"])}
    spec = SRN_ALL.get(run, {})
    if run in SRN_NAMED_SWEEPS:
        found["starts"] = sorted({f"{start}/train_summary.json" for start, _ in named_sweep_runs(run, task, seed).values()})
    else:
        found["start"] = f"{start_dir_of(task, spec['start'], seed)}/train_summary.json"
    if spec.get("source"):
        found["masks"] = [f"{srn_dir(task, spec['source'], seed)}/{level_name(s)}/mask.mask" for s in SRN_SPARSITIES]
    if spec.get("ood"):
        found["mix"] = [prepared_path(m["dataset"]) for m in SRN["ood_informed"]["train"][task]]
        found["exclude"] = [prepared_path(e) for e in eval_set_names(task)]
    return srn_loss_inputs(task, seed, srnet_grid.loss_of(SRN, SRN_ALL, run), found)


def srn_sweep_options(wildcards, input):
    """A job's start and runs: `--start-dir` (a named sweep's: its first run's), mask training's `--sparsities` (the
    OOD-informed runs' `--mix-train` and `--mix-exclude` too), a retraining's `--masks`, a named sweep's `--runs`."""
    run, task = wildcards.run, wildcards.task
    if run in SRN_NAMED_SWEEPS:
        runs = named_sweep_runs(run, task, wildcards.seed)
        entries = [{"name": name, **({"start_dir": start} if run == "timing" else {}), **overrides}
                   for name, (start, overrides) in runs.items()]
        return f"--start-dir {quoted(next(iter(runs.values()))[0])} --runs {as_json(entries)}"
    options = f"--start-dir {quoted(os.path.dirname(input.start))}"
    if "mix" in input.keys():
        options += (f" --mix-train {as_json(srnet_grid.mix_train(SRN, task, list(input.mix)))}"
                    f" --mix-exclude {quoted(input.exclude)}")
    method = SRN_ALL[run]["method"]
    return options + (f" --masks {quoted(input.masks)}" if method == "retrain" else
                      f" --sparsities {' '.join(map(str, SRN_SPARSITIES))}" if method == "mask_train" else "")


def srn_items(task, seed):
    """Every subnetwork of (task, seed) to score: (model folder, mask file or `none`, row, evaluation folder).
    Masks are switched in on the model they were trained on; IMP and retrained checkpoints carry their mask."""
    items, base = [], f"{R}/{NLU}/{task}/{MODEL}/eval/srnets"
    for run, spec in SRN_RUNS.items():
        for s in SRN_SPARSITIES if task in srnet_grid.tasks_of(SRN, SRN_ALL, run, SRN_TASKS) else []:
            folder, where = f"{srn_dir(task, run, seed)}/{level_name(s)}", f"{base}/{run}/seed~{seed}/{level_name(s)}"
            masked = spec["method"] == "mask_train"
            items.append((start_dir_of(task, spec["start"], seed) if masked else folder,
                          f"{folder}/mask.mask" if masked else "none", f"srnets/{run}/{s}", where))
    for run in SRN_NAMED_SWEEPS:
        for name, (start, _) in (named_sweep_runs(run, task, seed).items()
                                 if task in srnet_grid.tasks_of(SRN, SRN_ALL, run, SRN_TASKS) else []):
            items.append((start, f"{srn_dir(task, run, seed)}/{name}/mask.mask", f"srnets/{run}/{name}",
                          f"{base}/{run}/seed~{seed}/{name}"))
    if SRN_THETA_FT is not None:
        # paper C's own full model, the curves' reference (the baseline is scored by evaluate_<task>)
        items.append((theta_ft_dir(task, seed), "none", "srnets/theta_ft", theta_ft_eval_dir(task, seed)))
    return items


srn_eval_outputs = lambda task, seed: [f"{where}/{e}.json" for *_, where in srn_items(task, seed)
                                        for e in eval_set_names(task)]


def srn_eval_inputs_of(task):
    def inputs(wildcards):
        items = srn_items(task, wildcards.seed)
        return {"data": [prepared_path(e) for e in eval_set_names(task)],
                "starts": sorted({f"{model}/train_summary.json" for model, mask, _, _ in items if mask != "none"}),
                "checkpoints": [f"{model}/model.safetensors" for model, mask, _, _ in items if mask == "none"],
                "masks": [mask for _, mask, _, _ in items if mask != "none"]}

    return inputs


def srn_eval_options_of(task):
    def options(wildcards):
        model, mask, row, where = zip(*srn_items(task, wildcards.seed))
        return quoted(["--model-dirs", *model, "--masks", *mask, "--rows", *row, "--out-dirs", *where])

    return options


def srn_reference_jsons():
    """The full fine-tuned model's evaluations: the dashed reference line of the curves."""
    if SRN_THETA_FT is None:
        return [evaluation_json(t, "baseline", s, e) for t in SRN_TASKS for s in SRN_SEEDS for e in eval_set_names(t)]
    return [f"{theta_ft_eval_dir(t, s)}/{e}.json" for t in SRN_TASKS for s in SRN_SEEDS for e in eval_set_names(t)]


def srn_all_evals():
    """Every subnetwork's evaluations (the full model's, `srn_reference_jsons`, apart)."""
    return [p for t in SRN_TASKS for s in SRN_SEEDS for p in srn_eval_outputs(t, s)
            if not p.startswith(theta_ft_eval_dir(t, s) + "/")]


def srn_report_outputs(captioned=False):
    """srnet_report's files; `captioned` wraps the tables and figures for `snakemake --report`."""
    shown = lambda path, caption: report(path, caption=f"captions/{caption}.rst", category="Paper C") if captioned else path
    tables = [("sparsity_curves", "csv"), ("sparsity_curves", "png")] + (
        [("table5", "csv"), ("table5", "md")] if "t5" in SRN_NAMED_SWEEPS else []) + (
        [("timing_curves", "csv"), ("timing_curves", "png")] if SRN_TIMING else [])
    return [shown(f"{R}/{'figures' if ext == 'png' else 'tables'}/{name}.{ext}", name) if ext != "md"
            else f"{R}/tables/{name}.{ext}" for name, ext in tables] + svg_beside(
        [f"{R}/figures/{name}.png" for name, ext in tables if ext == "png"])


# paper C's report joins the default target
TARGETS["all"] += srn_report_outputs() if SRN else []
