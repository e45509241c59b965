# The budget study's names and input functions (config `budget_study:`, configs/budget.yaml,
# docs/budget-study.md): where the suite's sizes come from. The baseline fine-tuned on each training set for `baseline.epochs` (dev accuracy after each), and paper A's
# mask search per row at each (score learning rate, search epochs) point, from the config's own baselines; the mask
# points scored on the task's evaluation sets; one table, selection and figure (target budget_study). The study's
# selection rule reads dev accuracy and engagement only (maskbench.tracks.nlu.report.budget_study).
from types import SimpleNamespace

from maskbench.tracks.nlu.srnets import grid as srnet_grid
from maskbench.tracks.nlu.paths import level_name
from maskbench.tracks.nlu.sweep_points import value_text

STUDY = config["budget_study"]
STUDY_TASK = STUDY["task"]
STUDY_DIR = f"{P.model_dir(STUDY_TASK)}/study"
STUDY_POINTS = [(value_text(p["learning_rate"]), int(p["epochs"])) for p in STUDY["masks"]["points"]]
STUDY_ROWS = list(STUDY["masks"]["rows"])
# the study's own fine-tunings (none: the curve is the config's own baseline, the masks' start)
STUDY_TRAIN_SETS = list((STUDY.get("baseline") or {}).get("train_sets", []))


# paper C's part (`budget_study.srnets`): mask training and IMP of the masks' start at each budget. Its settings
# are read as a paper C section of their own (srnet_grid's functions take the section), so the config needs no
# `srnets:` and its baselines keep their outputs.
STUDY_SRN_PART = STUDY.get("srnets") or {}
STUDY_SRN = {"sparsities": [float(s) for s in STUDY_SRN_PART.get("sparsities", [])],
             **{k: STUDY_SRN_PART[k] for k in ("select_after", "mask_training", "imp") if k in STUDY_SRN_PART}}
STUDY_SRN_GRID = srnet_grid.grid(STUDY_SRN) if STUDY_SRN_PART else {}
# method -> paper C's paradigm (a) run of it with cross-entropy, whose spec and hparams the study's jobs take
STUDY_SRN_RUNS = {"mask_train": "a_mask_ce", "imp": "a_imp_ce"}
# method -> its budgets (epochs) as they appear in paths
STUDY_SRN_EPOCHS = {m: [value_text(e) for e in budgets] for m, budgets in (STUDY_SRN_PART.get("epochs") or {}).items()}
STUDY_SRN_METHODS = list(STUDY_SRN_EPOCHS)


def study_srnet_dir(method, epochs, seed):
    return f"{STUDY_DIR}/srnets/{method}/epochs~{epochs}/seed~{seed}"


def study_srnet_levels(method):
    """The levels a job writes: mask training's sparsities; IMP's every 10 % round up to the largest."""
    return STUDY_SRN["sparsities"] if method == "mask_train" else srnet_grid.imp_levels(STUDY_SRN)


def study_srnet_row(method, epochs, sparsity):
    """The name a study subnetwork's evaluation JSONs carry."""
    return f"study_{method}@epochs~{epochs}@{level_name(sparsity)}"


def study_srnet_eval_dir(method, epochs, seed, sparsity):
    return f"{R}/{NLU}/{STUDY_TASK}/{MODEL}/eval/study/srnets/{method}/epochs~{epochs}/seed~{seed}/{level_name(sparsity)}"


def study_srnet_settings(method, epochs):
    """The job's `--spec` and `--hparams`: paper C's run of the method, its epochs set to the point's."""
    run = STUDY_SRN_RUNS[method]
    hparams = {**srnet_grid.hparams(STUDY_SRN, STUDY_SRN_GRID, run, STUDY_TASK), "epochs": float(epochs)}
    return srnet_grid.spec(STUDY_SRN, STUDY_SRN_GRID, run, STUDY_TASK), hparams


def study_srnet_items(seed):
    """Every study subnetwork of a seed to score: (model folder, mask file or `none`, row, evaluation folder); a
    trained mask is switched in on the start, an IMP level's checkpoint carries its mask."""
    items = []
    for method in STUDY_SRN_METHODS:
        for epochs in STUDY_SRN_EPOCHS[method]:
            for s in STUDY_SRN["sparsities"]:
                folder = f"{study_srnet_dir(method, epochs, seed)}/{level_name(s)}"
                masked = method == "mask_train"
                items.append((checkpoint_dir(STUDY_TASK, seed) if masked else folder,
                              f"{folder}/mask.mask" if masked else "none", study_srnet_row(method, epochs, s),
                              study_srnet_eval_dir(method, epochs, seed, s)))
    return items


def study_srnet_options(seed):
    """evaluate_srnets' options for a seed's study subnetworks (study_srnet_items), one list per option."""
    model, mask, row, where = zip(*study_srnet_items(seed))
    return quoted(["--model-dirs", *model, "--masks", *mask, "--rows", *row, "--out-dirs", *where])


def study_baseline_dir(train_set, seed):
    return f"{STUDY_DIR}/baseline/train~{train_set}/seed~{seed}"


def study_mask_stem(row, lr, epochs, seed):
    return f"{STUDY_DIR}/masks/{row}/lr~{lr}/epochs~{epochs}/seed~{seed}"


def study_point_row(row, lr, epochs):
    """The name a study mask's evaluation JSONs carry (its folder under eval/)."""
    return f"study_{row}@lr~{lr}@epochs~{epochs}"


def study_mask_wildcards(wildcards):
    loss = MD[wildcards.row]["loss"]
    return SimpleNamespace(task=STUDY_TASK, seed=wildcards.seed, loss=loss, source=P.mask_source(wildcards.row))


def study_runs():
    """Every run the study's table reads: the baselines by training set and the mask points by row."""
    runs = [{"kind": "baseline", "train_set": t, "seed": int(s), "summary": f"{study_baseline_dir(t, s)}/train_summary.json"}
            for t in STUDY_TRAIN_SETS for s in SEEDS]
    runs += [{"kind": "start", "train_set": config["tasks"][STUDY_TASK]["train"], "seed": int(s),
              "summary": f"{checkpoint_dir(STUDY_TASK, s)}/train_summary.json",
              "evals": {e: evaluation_json(STUDY_TASK, "baseline", s, e) for e in eval_set_names(STUDY_TASK)}}
             for s in SEEDS]
    runs += [{"kind": "mask", "row": r, "learning_rate": float(lr), "epochs": ep, "seed": int(s),
              "summary": f"{study_mask_stem(r, lr, ep, s)}.search.json",
              "evals": {e: evaluation_json(STUDY_TASK, study_point_row(r, lr, ep), s, e)
                        for e in eval_set_names(STUDY_TASK)}}
             for r in STUDY_ROWS for lr, ep in STUDY_POINTS for s in SEEDS]
    runs += [{"kind": "srnet", "method": m, "epochs": float(ep), "sparsity": sp, "seed": int(s),
              "summary": f"{study_srnet_dir(m, ep, s)}/{level_name(sp)}/{'search' if m == 'mask_train' else 'train_summary'}.json",
              "evals": {e: f"{study_srnet_eval_dir(m, ep, s, sp)}/{e}.json" for e in eval_set_names(STUDY_TASK)}}
             for m in STUDY_SRN_METHODS for ep in STUDY_SRN_EPOCHS[m] for sp in STUDY_SRN["sparsities"] for s in SEEDS]
    return runs


def study_inputs():
    files = []
    for run in study_runs():
        files.append(run["summary"])
        files += list(run.get("evals", {}).values())
    return files


STUDY_EVAL_ROWS = [study_point_row(r, lr, ep) for r in STUDY_ROWS for lr, ep in STUDY_POINTS]
