"""Paper C's subnetworks in the nlu track's matrix records (issue 31): which of the config's ``srnets:`` runs enter
(``ffw.matrix.srnets``), the files their records read, and the records' runs. Standard library only (imported
when the Snakefile is parsed).

The runs that fit are paper C's mask training and IMP runs (paradigms (a) and (c) of its figure 1) on the matrix's
task; absent ``ffw.matrix.srnets``: all of them but the OOD-informed upper bound (section 4.5: it trains on OOD
data, which no other cell of the matrix sees; named in the key, it enters as ``..._ood``). The retrained
subnetworks of paradigm (b) do not enter: their cost is another run's mask plus a retraining.

Each (run, sparsity level, seed) is one record: knob ``sparsity``, its value the level (larger = stronger); the
evaluations are those ``evaluate_srnets_<task>`` writes for paper C's curves (every eval set of the task, so the
matrix's ID, OOD, negation and ID dev sets among them). Density is 1 - ``exact_sparsity`` of the level's summary:
paper C's measure, the pruned fraction of the masked encoder matrices. Training seconds:

- mask training trains one mask per level (``--sparsities`` runs them one after another in one job): the level's
  own ``search.json`` ``seconds``, its training time alone;
- IMP reaches level s only through the rounds before it (one job prunes 10 % per round): the sum of the
  ``seconds`` of every level's ``train_summary.json`` up to s (each round's prune, training and dev evaluation;
  the checkpoint writes left out), so the 0.9 level costs the whole job's training.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maskbench.tracks.nlu.paths import level_name
from maskbench.tracks.nlu.srnets import grid as srnet_grid

MATRIX_METHODS = {"mask_train": "mask_training", "imp": "imp"}  # paper C's method -> the matrix's method name
MASK_SUMMARY = "search.json"  # what srnet_mask_train writes beside each level's mask.mask
IMP_SUMMARY = "train_summary.json"  # what srnet_imp writes in each level's checkpoint folder


def srnets_tasks(config: Mapping[str, Any]) -> list[str]:
    srn = config.get("srnets") or {}
    return [t for t in config["tasks"] if t in srn.get("tasks", list(config["tasks"]))] if srn else []


def eligible_runs(config: Mapping[str, Any], task: str) -> dict[str, dict]:
    """run -> its grid entry: every mask training or IMP run of ``srnets:`` (paradigms a and c) on ``task``."""
    srn = config.get("srnets") or {}
    runs = srnet_grid.grid(srn)
    tasks = srnets_tasks(config)
    return {run: spec for run, spec in runs.items()
            if spec["method"] in MATRIX_METHODS and spec["paradigm"]
            and task in srnet_grid.tasks_of(srn, runs, run, tasks)}


def chosen_runs(config: Mapping[str, Any], task: str) -> list[str]:
    """``ffw.matrix.srnets`` as given (``config_checks.check_ffw`` refuses a name that is not eligible), or every
    eligible run but the OOD-informed ones."""
    named = ((config.get("ffw") or {}).get("matrix") or {}).get("srnets")
    if named is not None:
        return list(named)
    return [run for run, spec in eligible_runs(config, task).items() if not spec.get("ood")]


def method_names(runs: Mapping[str, dict]) -> dict[str, str]:
    """run -> matrix method: ``mask_training`` / ``imp``, followed by what tells the runs of one method apart —
    the paradigm (a: subnetwork of the fine-tuned model, c: of the pre-trained one), a debiased start
    (``poeft``: of the PoE-fine-tuned model) and the loss (``ood``: CE with OOD data mixed in) — each only when the
    chosen runs differ in it: ``mask_training_poe`` and ``imp_ce`` beside each other, ``mask_training`` and ``imp``
    when all run one paradigm and loss."""
    parts = {run: (spec["paradigm"],
                   f"{spec['start'][len('ft_'):]}ft" if spec["start"].startswith("ft_") else "",
                   "ood" if spec.get("ood") else spec["loss"]) for run, spec in runs.items()}
    varying = [i for i in range(3) if len({p[i] for p in parts.values()}) > 1]
    return {run: "_".join([MATRIX_METHODS[spec["method"]], *(parts[run][i] for i in varying if parts[run][i])])
            for run, spec in runs.items()}


class SrnetMatrixRows:
    """Paper C's rows of the nlu track's matrix records on ``task`` (the FFW cells' task)."""

    def __init__(self, config: Mapping[str, Any], plan, task: str, eval_sets: list[str]):
        """``plan``: the track's ``NluPlan``; ``eval_sets``: the matrix's evaluation sets (``FFWPlan.eval_sets``)."""
        self.config, self.plan, self.task, self.eval_sets = config, plan, task, eval_sets
        self.srn = config.get("srnets") or {}
        eligible = eligible_runs(config, task)
        self.runs = {run: eligible[run] for run in chosen_runs(config, task) if run in eligible}
        self.names = method_names(self.runs)
        self.sparsities = [float(s) for s in self.srn.get("sparsities", [])] if self.runs else []
        self.seeds = [int(s) for s in self.srn.get("seeds", config["seeds"])] if self.runs else []

    # ------------------------------------------------------------------------------------------- layout
    # (rules/nlu/srnets_common.smk writes these: SRN_DIR, srn_items' evaluation folders)
    def run_dir(self, run: str, seed) -> str:
        return f"{self.plan.model_dir(self.task)}/srnets/{run}/seed~{seed}"

    def evaluation_json(self, run: str, seed, sparsity: float, eval_set: str) -> str:
        return f"{self.plan.model_dir(self.task)}/eval/srnets/{run}/seed~{seed}/{level_name(sparsity)}/{eval_set}.json"

    def summary(self, run: str, seed, sparsity: float) -> str:
        """The level's summary: mask training's search.json, IMP's checkpoint train_summary.json."""
        name = MASK_SUMMARY if self.runs[run]["method"] == "mask_train" else IMP_SUMMARY
        return f"{self.run_dir(run, seed)}/{level_name(sparsity)}/{name}"

    def cost_files(self, run: str, seed, sparsity: float) -> list[str]:
        """The summaries whose ``seconds`` add up to the level's training time (module docstring)."""
        if self.runs[run]["method"] == "mask_train":
            return [self.summary(run, seed, sparsity)]
        return [self.summary(run, seed, level) for level in srnet_grid.imp_levels(self.srn) if level <= sparsity + 1e-9]

    def items(self) -> list[tuple[str, int, float]]:
        return [(run, seed, s) for run in self.runs for seed in self.seeds for s in self.sparsities]

    # ------------------------------------------------------------------------------------------- matrix inputs
    def evaluations(self) -> list[str]:
        return [self.evaluation_json(run, seed, s, e) for run, seed, s in self.items() for e in self.eval_sets]

    def summaries(self) -> list[str]:
        files = [f for run, seed, s in self.items() for f in [*self.cost_files(run, seed, s), self.summary(run, seed, s)]]
        return list(dict.fromkeys(files))

    def model_label(self, run: str) -> str:
        """The model a run's subnetworks are cut from, when it is not the task's baseline."""
        model, start = self.config["model"]["name"], self.runs[run]["start"]
        if start == "init":
            return f"{model}: subnetwork of the pre-trained model (paper C's theta_pt)"
        if start.startswith("ft_"):
            return f"{model}: subnetwork of the {start[len('ft_'):]}-fine-tuned model"
        if self.srn.get("theta_ft") is not None:
            return f"{model}: subnetwork of paper C's own fine-tuned model (srnets.theta_ft), not the baseline row's"
        return model

    def records(self, roles: Mapping[str, str | None]) -> list[dict]:
        """The runs of ``nlu.matrix_cells``' records: ``roles`` maps id / ood / id_dev / negation to eval sets."""
        out = []
        for run, seed, s in self.items():
            out.append({"method": self.names[run], "paper": "C", "native_on": ["mnli_hans"],
                        "knob": "sparsity", "value": s, "seed": int(seed),
                        "evaluations": {role: self.evaluation_json(run, seed, s, name) if name else None
                                        for role, name in roles.items()},
                        "cost": self.cost_files(run, seed, s), "cost_key": "seconds",
                        "sparsity_file": self.summary(run, seed, s), "model": self.model_label(run),
                        "srnet_run": run})
        return out
