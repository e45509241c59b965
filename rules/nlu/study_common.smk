# The budget study's names and input functions (config `budget_study:`, configs/budget.yaml,
# docs/budget-study.md): where the suite's sizes come from. The baseline fine-tuned on each training set for `baseline.epochs` (dev accuracy after each), and paper A's
# mask search per row at each (score learning rate, search epochs) point, from the config's own baselines; the mask
# points scored on the task's evaluation sets; one table, selection and figure (target budget_study). The study's
# selection rule reads dev accuracy and engagement only (maskbench.tracks.nlu.report.budget_study).
from types import SimpleNamespace

from maskbench.tracks.nlu.sweep_points import value_text

STUDY = config["budget_study"]
STUDY_TASK = STUDY["task"]
STUDY_DIR = f"{P.model_dir(STUDY_TASK)}/study"
STUDY_POINTS = [(value_text(p["learning_rate"]), int(p["epochs"])) for p in STUDY["masks"]["points"]]
STUDY_ROWS = list(STUDY["masks"]["rows"])
# the study's own fine-tunings (none: the curve is the config's own baseline, the masks' start)
STUDY_TRAIN_SETS = list((STUDY.get("baseline") or {}).get("train_sets", []))


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
    return runs


def study_inputs():
    files = []
    for run in study_runs():
        files.append(run["summary"])
        files += list(run.get("evals", {}).values())
    return files


STUDY_EVAL_ROWS = [study_point_row(r, lr, ep) for r in STUDY_ROWS for lr, ep in STUDY_POINTS]
