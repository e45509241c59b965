"""What the nlu track's rules plan, as a function of the config: the rows of Table 1, the output layout, the merged
fine-tuning settings and each job's files. Standard library only: the Snakefile imports it when it is parsed, in
every cluster job too (no clocks, no randomness).

rules/nlu/*.smk hold the rules; every path they declare or read comes from here, so the layout is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maskbench.objectives.needs import needing
from maskbench.tracks.nlu.search_section import split_search_section

TRACK = "nlu"  # the track's folder under results/
# keys of `finetune:` that are not TrainHParams fields: they select how the run is made, not its optimiser
FINETUNE_RUN_KEYS = ("train_classifier", "tasks")
# losses that also read a teacher, the CE baseline of the same seed
TEACHER_LOSSES = needing("teacher")
# bias sources that are models maskbench trains on the task (rules/nlu/bias.smk's train_bias_model)
NEURAL_KINDS = ("weak_learner", "hypothesis_only")
# a bias source the user computed: columns of the task's training file (maskbench.tracks.nlu.bias.precomputed)
PRECOMPUTED = "precomputed"
# the losses that read only the bias model's probability of the gold label, p_b(y) (maskbench.objectives.losses):
# those a precomputed source's `gold_column` can feed
GOLD_ONLY_LOSSES = ("reweight", "reweight_beta", "focal", "conf_reg")
# `model.init` of a classifier the user fine-tuned elsewhere: every seed's frozen baseline, taken in as it is
FINETUNED = "finetuned"


class NluPlan:
    """The nlu track of one config. Paths take wildcard patterns as well as values (`plan.mask_file("{task}",
    row, "{seed}")`), so that a rule's outputs and the input functions that read them share one definition."""

    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.results = config["results"]
        self.model = config["model"]["name"]
        self.seeds = [int(s) for s in config["seeds"]]
        self.tasks = list(config["tasks"])
        self.datasets = list(config["datasets"])
        self.subsets = list(config.get("negation_subsets") or {})
        table1 = (config.get("report") or {}).get("table1")
        self.rows = list(table1["rows"]) if table1 else ["baseline"]
        self.sources = config["bias"]["sources"]
        self.sd = config["standard_debiasing"] or {}
        self.md = config["masked_debiasing"] or {}
        self.mask_search = config["mask_search"]
        self.mask_method = self.mask_search["method"]
        # `model: {init: finetuned}`: the user's fine-tuned classifier is every seed's baseline, taken in as it is
        self.given = config["model"].get("init") == FINETUNED
        # mask rows of Table 1 that this config reports (each is one mask search per task and seed)
        self.mask_rows = [r for r in self.rows if r in self.md]
        # the mask-file benchmark belongs to paper A's setting (its Table 1 reports it); a table of no paper's setting
        # does not plan it — it runs when asked for by its file (<results>/benchmarks/masks.json)
        self.mask_benchmark = (bool(self.mask_rows) and (table1 or {}).get("paper") == "A"
                               and (config.get("mask_benchmark") or {}).get("plan", True))
        self.neural_sources = [s for s, spec in self.sources.items() if spec["kind"] in NEURAL_KINDS]
        # probabilities the user computed: columns of the task's training file (rules/nlu/bias.smk)
        self.precomputed_sources = [s for s, spec in self.sources.items() if spec["kind"] == PRECOMPUTED]
        # every bias model of the config is trained, evaluated and reported, used by a row or not (a precomputed
        # source has no model to score on the evaluation sets)
        self.bias_rows = [f"bias_{s}" for s in self.sources if s not in self.precomputed_sources]
        # rows with a checkpoint of their own (baseline and SD rows), scored by evaluate_<task>
        self.model_rows = [r for r in self.rows if r not in self.md]
        self.neural_bias_rows = [f"bias_{s}" for s in self.neural_sources]
        self.neural_rows = self.model_rows + self.neural_bias_rows
        finetune = config["finetune"]
        self.early_stop = bool(finetune.get("early_stop_patience")) and not self.given
        self.length_sorted_eval = bool(finetune.get("length_sorted_eval"))

    # ------------------------------------------------------------------------------------------- layout
    def track_dir(self) -> str:
        return f"{self.results}/{TRACK}"

    def prepared_path(self, name: str) -> str:
        kind = "subsets" if name in self.subsets else "prepared"
        return f"{self.track_dir()}/data/{kind}/{name}.parquet"

    def prepared_datasets(self) -> list[str]:
        return [self.prepared_path(n) for n in self.datasets + self.subsets]

    def model_dir(self, task: str) -> str:
        return f"{self.track_dir()}/{task}/{self.model}"

    def checkpoint_dir(self, task: str, seed) -> str:
        """The baseline of a seed: its fine-tuning, or the one given model of every seed (``given_dir``)."""
        return self.given_dir(task) if self.given else self.finetune_dir(task, seed)

    def finetune_dir(self, task: str, seed) -> str:
        """The baseline fine-tuning of a seed (rule finetune_baseline)."""
        return f"{self.model_dir(task)}/models/method~finetune/loss~ce/seed~{seed}"

    def given_dir(self, task: str) -> str:
        """The user's fine-tuned classifier as maskbench took it in (rule import_given_model)."""
        return f"{self.model_dir(task)}/models/method~given"

    def given_teacher(self) -> bool:
        """Whether a mask search reads the baseline's training-set probabilities (a teacher loss): then the import
        of a given model scores the training set too."""
        return any(spec["loss"] in TEACHER_LOSSES for spec in self.md.values())

    def debiased_dir(self, task: str, loss: str, source: str, seed) -> str:
        return f"{self.model_dir(task)}/models/method~finetune/loss~{loss}/bias~{source}/seed~{seed}"

    def bias_dir(self, task: str, source: str, seed) -> str:
        return f"{self.model_dir(task)}/bias/{source}/seed~{seed}"

    def mask_stem(self, task: str, method: str, loss: str, source: str, seed) -> str:
        return f"{self.model_dir(task)}/masks/method~{method}/loss~{loss}/bias~{source}/seed~{seed}"

    def sweep_stem(self, task: str, row: str, knob: str, value: str, seed) -> str:
        return f"{self.model_dir(task)}/sweeps/{row}/{knob}~{value}/seed~{seed}"

    def evaluation_dir(self, task: str, row: str, seed) -> str:
        return f"{self.model_dir(task)}/eval/{row}/seed~{seed}"

    def evaluation_json(self, task: str, row: str, seed, eval_set: str) -> str:
        return f"{self.evaluation_dir(task, row, seed)}/{eval_set}.json"

    def evaluation_predictions(self, task: str, row: str, seed, eval_set: str) -> str:
        return f"{self.evaluation_dir(task, row, seed)}/{eval_set}.predictions.parquet"

    def table(self, name: str) -> str:
        return f"{self.results}/tables/{name}"

    def figure(self, name: str) -> str:
        return f"{self.results}/figures/{name}"

    # ------------------------------------------------------------------------------------------- rows and seeds
    def bias_seed(self, seed) -> int:
        """The bias model a model seed uses: its own seed (paper A), or the one shared seed of `bias.seed`."""
        shared = self.config["bias"]["seed"]
        return int(seed) if shared is None else int(shared)

    def bias_seeds(self) -> list[int]:
        return sorted({self.bias_seed(s) for s in self.seeds})

    def row_seeds(self, row: str) -> list[int]:
        """The seeds a row is evaluated for: a bias model's, every model seed's, and the first seed's alone for the
        given model (one model: the same numbers for every seed, reported once)."""
        if row in self.bias_rows:
            return self.bias_seeds()
        return self.seeds[:1] if self.given and row == "baseline" else self.seeds

    def mask_source(self, row: str) -> str:
        """The bias folder name of a mask row (`none` for the plain cross-entropy search)."""
        return self.md[row].get("bias") or "none"

    def mask_file(self, task: str, row: str, seed) -> str:
        return f"{self.mask_stem(task, self.mask_method, self.md[row]['loss'], self.mask_source(row), seed)}.mask"

    def mask_files(self, rows: list[str] | None = None) -> list[str]:
        return [self.mask_file(t, r, s) for r in (self.mask_rows if rows is None else rows)
                for t in self.tasks for s in self.seeds]

    def mask_report_keys(self) -> list[str]:
        """task/row/seed of every mask file, in the order of mask_files()."""
        return [f"{t}/{r}/{s}" for r in self.mask_rows for t in self.tasks for s in self.seeds]

    def row_model(self, task: str, row: str, seed) -> dict[str, str]:
        """The checkpoint a row is evaluated with: the baseline, a debiased model, or a neural bias model."""
        if row == "baseline":
            folder = self.checkpoint_dir(task, seed)
        elif row in self.sd:
            folder = self.debiased_dir(task, self.sd[row]["loss"], self.sd[row]["bias"], seed)
        else:
            folder = self.bias_dir(task, row.removeprefix("bias_"), seed)
        return {"model": f"{folder}/model.safetensors", "summary": f"{folder}/train_summary.json"}

    def eval_set_names(self, task: str) -> list[str]:
        return list(self.config["tasks"][task]["eval_sets"])

    def eval_set_specs(self, task: str) -> list[dict]:
        return [{"name": name, **scoring} for name, scoring in self.config["tasks"][task]["eval_sets"].items()]

    def evaluation_jsons(self, rows: list[str] | None = None) -> list[str]:
        return [self.evaluation_json(t, row, s, e) for row in (rows or self.rows) for t in self.tasks
                for s in self.row_seeds(row) for e in self.eval_set_names(t)]

    def evaluation_outputs(self, task: str, rows: list[str], seed, kind: str) -> list[str]:
        """The outputs of one evaluation job: every (row, evaluation set) of the task."""
        make = self.evaluation_json if kind == "metrics" else self.evaluation_predictions
        return [make(task, r, seed, e) for r in rows for e in self.eval_set_names(task)]

    # ------------------------------------------------------------------------------------------- settings
    def finetune_hparams(self, task: str, source: Mapping | None = None) -> dict:
        """The TrainHParams of a fine-tuning run of `task`: `finetune`, its `tasks.<task>` overrides, then for a bias
        source its `epochs`, `hparams` and `tasks.<task>.hparams`, key by key."""
        finetune = self.config["finetune"]
        merged = {k: v for k, v in finetune.items() if k not in FINETUNE_RUN_KEYS}
        merged.update((finetune.get("tasks") or {}).get(task, {}))
        if source is not None:
            merged.update({"epochs": source["epochs"]} if "epochs" in source else {})
            merged.update(source.get("hparams") or {})
            merged.update(((source.get("tasks") or {}).get(task) or {}).get("hparams") or {})
        return merged

    def train_classifier(self) -> int | None:
        """`0` when `finetune.train_classifier` is false (paper A's code never trains the head), else None."""
        return None if self.config["finetune"].get("train_classifier", True) else 0

    def mask_search_spec(self) -> dict:
        return split_search_section(self.mask_search)[0]

    def mask_search_hparams(self) -> dict:
        """The scores' optimiser: `mask_search.hparams`, at the rate `mask_search.score_learning_rate`."""
        return split_search_section(self.mask_search)[1]

    def loss_hparams(self, rows: Mapping, loss: str, source: str) -> dict:
        """The loss settings of the first row of `rows` with this loss and bias source ({} when none)."""
        found = [spec for spec in rows.values() if spec["loss"] == loss and (spec.get("bias") or "none") == source]
        return found[0].get("loss_hparams", {}) if found else {}

    def overlap_options(self, task: str, seed0_checkpoint: str) -> dict:
        """The overlap bias model's settings for `task` (chrisc36's model on MNLI: feature set, solver, C and class
        weights), only those that differ from the step's defaults, and where its word vectors come from."""
        spec = self.sources.get("overlap", {})
        options: dict[str, Any] = {"features": spec.get("features", {}).get(task, "overlap"),
                                   "binary_positive": spec.get("binary_positive", {}).get(task) or None}
        for key, flag, default in (("feature_set", "feature_set", "project"), ("solver", "solver", "lbfgs"),
                                   ("C", "inverse_regularisation", None), ("class_weight", "class_weight", "none")):
            value = spec.get(key, {}).get(task, default)
            options[flag] = value if value != default else None
        if spec.get("vectors"):
            options["vectors"] = spec["vectors"]
        else:
            options["embeddings_from"] = seed0_checkpoint
        return options

    def engagement_runs(self) -> list[dict]:
        """Every run whose mechanism Table 1 reads, as {row, task, seed, kind, path} for the engagement table
        (maskbench.report.engagement): the fine-tunings (the baseline, each standard-debiasing row) by their
        train_summary.json, the mask rows by their search's summary. A given model was not trained here: none."""
        runs = []
        for task in self.tasks:
            for seed in self.seeds:
                if not self.given:
                    runs.append({"row": "baseline", "task": task, "seed": int(seed), "kind": "fine_tuning",
                                 "path": f"{self.checkpoint_dir(task, seed)}/train_summary.json"})
                for row in (r for r in self.rows if r in self.sd):
                    spec = self.sd[row]
                    runs.append({"row": row, "task": task, "seed": int(seed), "kind": "fine_tuning",
                                 "path": f"{self.debiased_dir(task, spec['loss'], spec['bias'], seed)}"
                                         "/train_summary.json"})
                for row in self.mask_rows:
                    runs.append({"row": row, "task": task, "seed": int(seed), "kind": "mask_search",
                                 "path": self.mask_file(task, row, seed).removesuffix(".mask") + ".search.json"})
        return runs

    def final_outputs(self) -> list[str]:
        outputs = [self.table("table1.csv"), self.table("table1.md"), self.table("table1.tex"),
                   self.table("engagement.csv"), self.table("engagement.md"),
                   self.figure("id_ood.png"), self.table("datasets.csv")]
        outputs += [self.table("bias_models.csv")] if self.bias_rows else []
        if self.mask_rows:
            outputs += self.mask_report_outputs()
        if self.mask_benchmark:
            outputs += [f"{self.results}/benchmarks/masks.json"]
        return outputs + ([self.table("baseline_curve.csv")] if self.early_stop else [])

    def mask_report_outputs(self) -> list[str]:
        return [self.table("pruning_rates.csv"), self.figure("pruning_rates.png"), self.table("mask_seed_overlap.csv"),
                self.table("mask_seed_overlap_summary.csv")]
