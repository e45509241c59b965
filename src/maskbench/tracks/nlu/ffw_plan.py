"""What the nlu track's FFW cells (paper D's gates on the fine-tuned encoder; config ``ffw:``) plan: one gate run per
(method, attribute, gamma, seed) on the task's baseline checkpoint, one evaluation job per seed scoring all of that
seed's FFW masks, and the matrix records (beside the native rows: the baseline, paper A's masks and, with
``srnets:``, paper C's subnetworks, ``srnets.matrix``). Standard library only (imported when the Snakefile is parsed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maskbench.tracks.nlu.srnets.matrix import SrnetMatrixRows

METHODS = ("ffw", "ffw_structured")
ATTRIBUTES = ("overlap", "negation")
RUN_LISTS = ("task", "methods", "attributes", "gamma", "seeds", "examples", "max_length", "length_grouped", "matrix")  # not FFWSettings fields


def gamma_label(value) -> str:
    """A gamma as it appears in paths and row names: 10 -> "10", 0.5 -> "0.5"."""
    return format(float(value), "g")


class FFWPlan:
    def __init__(self, config: Mapping[str, Any], plan):
        """``plan``: the track's ``NluPlan`` (layout, evaluation sets)."""
        self.spec = config["ffw"]
        self.plan = plan
        self.task = self.spec.get("task", "mnli")
        self.methods = list(self.spec["methods"])
        self.attributes = list(self.spec["attributes"])
        self.gammas = [gamma_label(g) for g in self.spec["gamma"]]
        self.seeds = [int(s) for s in self.spec.get("seeds") or plan.seeds]
        matrix = self.spec.get("matrix") or {}
        self.native_rows = list(matrix.get("rows", ["baseline"]))
        self.id_set = matrix.get("id_set") or config["tasks"][self.task]["dev"]
        self.ood_set = matrix.get("ood_set", "hans")
        self.negation_set = matrix.get("negation_set")
        self.id_dev_set = config["tasks"][self.task]["dev"]
        self.srnets = SrnetMatrixRows(config, plan, self.task, self.eval_sets())

    # ------------------------------------------------------------------------------------------- layout
    def run_stem(self, method: str, attribute: str, gamma: str, seed) -> str:
        return f"{self.plan.model_dir(self.task)}/ffw/method~{method}/attribute~{attribute}/gamma~{gamma}/seed~{seed}"

    def mask(self, method, attribute, gamma, seed) -> str:
        return f"{self.run_stem(method, attribute, gamma, seed)}.mask"

    def summary(self, method, attribute, gamma, seed) -> str:
        return f"{self.run_stem(method, attribute, gamma, seed)}.json"

    @staticmethod
    def row(method: str, attribute: str, gamma: str) -> str:
        """The evaluation row of an FFW run (eval/<row>/seed~<seed>/)."""
        return f"{method}_{attribute}_gamma~{gamma}"

    def runs(self) -> list[tuple[str, str, str]]:
        return [(m, a, g) for m in self.methods for a in self.attributes for g in self.gammas]

    def rows(self) -> list[str]:
        return [self.row(*run) for run in self.runs()]

    def masks_of_seed(self, seed) -> list[str]:
        return [self.mask(*run, seed) for run in self.runs()]

    def all_masks(self) -> list[str]:
        return [m for s in self.seeds for m in self.masks_of_seed(s)]

    def cells_file(self) -> str:
        return f"{self.plan.results}/matrix/cells/nlu.csv"

    def eval_sets(self) -> list[str]:
        """The evaluation sets the matrix reads (each an eval set of the task)."""
        sets = [self.id_set, self.ood_set, self.id_dev_set] + ([self.negation_set] if self.negation_set else [])
        return list(dict.fromkeys(sets))

    # ------------------------------------------------------------------------------------------- settings
    def settings(self, method: str, gamma: str) -> dict:
        """FFWSettings' fields: ``ffw:`` but its run lists, the method's structure and the run's gamma."""
        values = {k: v for k, v in self.spec.items() if k not in RUN_LISTS}
        return {**values, "structured": method == "ffw_structured", "gamma": float(gamma)}

    def examples(self) -> dict:
        return {"gate_train": 2000, "gate_val": 500, "readout": 500, **(self.spec.get("examples") or {})}

    # ------------------------------------------------------------------------------------------- matrix inputs
    def native_evaluations(self) -> list[str]:
        """The evaluation JSONs of the native rows (baseline, paper A's rows) the matrix reads."""
        return [self.plan.evaluation_json(self.task, row, s, e) for row in self.native_rows for s in self.seeds
                for e in self.eval_sets()]

    def ffw_evaluations(self) -> list[str]:
        return [self.plan.evaluation_json(self.task, row, s, e) for row in self.rows() for s in self.seeds
                for e in self.eval_sets()]

    def native_method(self, row: str) -> tuple[str, str]:
        """(matrix method name, paper) of a native row: the baseline, or a paper A movement-score mask row named by
        its loss — and by its bias source too where two rows share the loss (the paper config's md_undertrained and
        md_underparam both reweight: one name for both would make two records of one matrix cell)."""
        if row == "baseline":
            return "baseline", "-"
        loss = self.plan.md[row]["loss"]
        shared = [r for r in self.native_rows if r != "baseline" and self.plan.md[r]["loss"] == loss]
        if len(shared) > 1:
            return f"movement_{loss}_{self.plan.md[row]['bias']}", "A"
        return f"movement_{loss}", "A"

    def native_cost_file(self, row: str, seed) -> str | None:
        if row == "baseline":
            return None
        stem = self.plan.mask_file(self.task, row, seed).removesuffix(".mask")
        return f"{stem}.search.json"

    def cost_files(self) -> list[str]:
        """What the records read the training seconds from: the FFW summaries, the mask searches' summaries and
        paper C's level summaries (its densities too)."""
        files = [self.native_cost_file(r, s) for r in self.native_rows for s in self.seeds]
        return [f for f in files if f] + [self.summary(*run, s) for s in self.seeds for run in self.runs()] + \
            self.srnets.summaries()

    def records(self) -> dict:
        """Everything ``nlu.matrix_cells`` needs to write the records: per run its files, and the names."""
        config = self.plan.config
        train = config["tasks"][self.task]["train"]
        examples = self.examples()
        sets = {"id": self.id_set, "ood": self.ood_set, "id_dev": self.id_dev_set, "negation": self.negation_set}

        def evaluations(row, seed):
            return {role: self.plan.evaluation_json(self.task, row, seed, name) if name else None
                    for role, name in sets.items()}

        runs = []
        for row in self.native_rows:
            method, paper = self.native_method(row)
            for seed in self.seeds:
                runs.append({"method": method, "paper": paper, "native": paper == "A", "knob": "", "value": None,
                             "seed": int(seed), "evaluations": evaluations(row, seed),
                             "cost": self.native_cost_file(row, seed), "cost_key": "search_seconds"})
        for method, attribute, gamma in self.runs():
            for seed in self.seeds:
                runs.append({"method": f"{method}_{attribute}", "paper": "D", "native": False, "knob": "gamma",
                             "value": float(gamma), "seed": int(seed),
                             "evaluations": evaluations(self.row(method, attribute, gamma), seed),
                             "cost": self.summary(method, attribute, gamma, seed), "cost_key": "train_seconds",
                             "attribute": attribute})
        runs += self.srnets.records(sets)
        return {"sets": sets, "model": config["model"]["name"],
                "data_source": config["datasets"][train]["source"],
                "data": f"{self.task} training set {train} ({config['datasets'][train]['source']}); FFW slices of it: "
                        f"{examples['gate_train']} gate / {examples['gate_val']} schedule / "
                        f"{examples['readout']} readout pairs",
                "runs": runs}
