"""Paper B's workflow plan: the runs the gender track's rules (rules/gender/) build, the files of each, and the
settings each step is given, as pure functions of the config and the results folder.

The Snakefile imports this module when it parses the rules (and again in every cluster job), so it imports nothing
heavy: no torch, pandas or numpy. A rule asks the plan for a run by its folder and seed (`run`) or by the summary it
writes (`run_writing`) instead of parsing the path back into settings; its settings reach the step as typed values
that `maskbench.cli.shell_args` renders.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

TRACK = "gender"  # the track's folder under the results folder
KINDS = ("frozen", "unfrozen", "debias_only")  # in the order the grids expand
KIND_TABLE = {"frozen": "table1", "unfrozen": "table2", "debias_only": "table4"}  # paper B's table of each kind
WORDS = {"male": "data/gender/male.txt", "female": "data/gender/female.txt",
         "stereotype": "data/gender/stereotype.txt"}
SEAT_FOLDER = "data/gender/seat"


class ScoredFiles:
    """The files a run is scored in, beside its ``stem`` (a run's folder and seed): the run's summary, SEAT, each
    of its ``task_names``, and the masked-LM bias when ``with_lm``."""

    stem: str
    task_names: tuple[str, ...]
    with_lm: bool

    @property
    def summary(self) -> str:
        return f"{self.stem}.json"

    @property
    def seat(self) -> str:
        return f"{self.stem}.seat.json"

    @property
    def tasks(self) -> dict[str, str]:
        return {task: f"{self.stem}.task~{task}.json" for task in self.task_names}

    @property
    def lm(self) -> str | None:
        return f"{self.stem}.lm.json" if self.with_lm else None

    @property
    def evaluations(self) -> list[str]:
        """Every file a run is scored in: SEAT, each task, the masked-LM bias."""
        return [self.seat, *self.tasks.values(), *([self.lm] if self.lm else [])]


@dataclass(frozen=True)
class GenderRun(ScoredFiles):
    """One planned run: its grid point (granularity None for debias only), the model's folder it lives in, and the
    tasks and masked-LM measure it is scored on; its files follow from these."""

    kind: str
    granularity: str | None
    layers: str
    mode: str
    seed: int
    base: str
    objective: str | None = None  # a gender.runs.objectives row's name
    task_names: tuple[str, ...] = ()
    with_lm: bool = False

    @property
    def folder(self) -> str:
        """The run's folder below the model's, without the seed (the rules' `grun`): frozen/<g>/layers~/mode~,
        unfrozen/<g>/layers~/mode~ or debias_only/layers~/mode~[/objective~<row>]."""
        grain = "" if self.kind == "debias_only" else f"{self.granularity}/"
        row = f"/objective~{self.objective}" if self.objective else ""
        return f"{self.kind}/{grain}layers~{self.layers}/mode~{self.mode}{row}"

    @property
    def stem(self) -> str:
        return f"{self.base}/{self.folder}/seed~{self.seed}"

    @property
    def out(self) -> str:
        """What the run writes: a mask file (frozen weights) or a checkpoint folder (the weights train)."""
        return f"{self.stem}.mask" if self.kind == "frozen" else self.stem

    @property
    def marker(self) -> str:
        """The file that says the run finished: the mask, or the checkpoint's training summary."""
        return self.out if self.kind == "frozen" else f"{self.out}/train_summary.json"

    def record(self) -> dict:
        """The run as the report step reads it (its --runs list): the grid point and the files."""
        record = {"kind": self.kind, "granularity": self.granularity, "layers": self.layers, "mode": self.mode,
                  "seed": self.seed, "summary": self.summary, "seat": self.seat, "tasks": self.tasks, "lm": self.lm}
        return record | ({"objective": self.objective} if self.objective else {})


@dataclass(frozen=True)
class FFWRun(ScoredFiles):
    """One planned run of paper D's FFW on the encoder (gender.ffw): its method, gamma and seed; a mask file,
    scored like a frozen run of paper B (SEAT, tasks, masked-LM bias)."""

    method: str  # ffw | ffw_structured
    gamma: float
    seed: int
    base: str
    task_names: tuple[str, ...] = ()
    with_lm: bool = False
    kind = "ffw"

    @property
    def folder(self) -> str:
        return f"ffw/{self.method}/gamma~{self.gamma:g}"

    @property
    def stem(self) -> str:
        return f"{self.base}/{self.folder}/seed~{self.seed}"

    @property
    def out(self) -> str:
        return f"{self.stem}.mask"

    @property
    def marker(self) -> str:
        return self.out


FFW_PLAN_KEYS = ("methods", "gammas", "task_column")  # gender.ffw keys the plan reads; the rest are run settings


def ffw_runs(gender: Mapping, seeds: Sequence[int], base: str, tasks: Sequence[str] = (),
             with_lm: bool = False) -> list[FFWRun]:
    """gender.ffw's runs: methods x gammas x seeds; scored on the task column unless ``task_column`` is false."""
    ffw = gender.get("ffw")
    if not ffw:
        return []
    tasks = tuple(tasks) if ffw.get("task_column", True) else ()
    return [FFWRun(method, float(gamma), seed, base, tasks, with_lm)
            for method, gamma, seed in itertools.product(ffw["methods"], ffw["gammas"], seeds)]


def grid_runs(gender: Mapping, seeds: Sequence[int], base: str, tasks: Sequence[str] = (),
              with_lm: bool = False) -> list[GenderRun]:
    """The gender.runs grids, one expansion: each kind's granularities x layers x modes x seeds (debias only has no
    granularity), frozen, then unfrozen, then debias only."""
    runs = []
    for kind in KINDS:
        grid = gender["runs"].get(kind)
        if grid:
            grains = [None] if kind == "debias_only" else grid["granularities"]
            runs += [GenderRun(kind, grain, layers, mode, seed, base, None, tuple(tasks), with_lm)
                     for grain, layers, mode, seed in itertools.product(grains, grid["layers"], grid["modes"], seeds)]
    return runs


def objective_runs(gender: Mapping, seeds: Sequence[int], base: str, tasks: Sequence[str] = (),
                   with_lm: bool = False) -> list[GenderRun]:
    """The gender.runs.objectives rows, each of every seed, named by the row (evaluated like the grids' runs)."""
    return [GenderRun(row["kind"], None, row["layers"], row["mode"], seed, base, name, tuple(tasks), with_lm)
            for name, row in gender["runs"].get("objectives", {}).items() for seed in seeds]


def debias_spec(gender: Mapping, run: GenderRun) -> dict:
    """The DebiasSpec of a run (maskbench.tracks.gender.training): the objective (a gender.runs.objectives row's
    own settings over gender.objective), the pruning settings, and the run's own grid point."""
    own = gender["runs"]["objectives"][run.objective]["objective"] if run.objective else {}
    spec = {"layers": run.layers, "mode": run.mode, **gender.get("objective", {}), **own}
    if run.kind == "debias_only":
        return {**spec, "granularity": "none", "freeze_weights": False}
    pruning = {key: value for key, value in gender["pruning"].items() if key != "hparams"}
    grain = ({"granularity": "head"} if run.granularity == "head"
             else {"granularity": "block", "block": int(run.granularity.removeprefix("block"))})
    return {**spec, **pruning, **grain, "freeze_weights": run.kind == "frozen"}


URL_PREFIXES = ("http://", "https://", "file://")


def corpus_download_path(data: str, url: str) -> str:
    """Where a corpus URL is downloaded (by ``python -m maskbench.steps fetch`` or the ``gender_corpus_download``
    localrule, both on the login node) for the ``gender_corpus`` job to read: ``<data>/downloads/<file name>``."""
    name = url.rstrip("/").rsplit("/", 1)[-1] or "corpus.txt"
    return f"{data}/downloads/{name}"


def corpus_target(config: dict, url: str) -> str:
    """The file a config's corpus URL is downloaded to (relative to the working directory)."""
    return corpus_download_path(f"{config.get('results', 'results')}/gender/data", url)


class GenderPlan:
    """Everything the gender rules plan, from the (validated) config, the results folder and the project folder
    (where the word lists, SEAT files and CrowS-Pairs ship)."""

    def __init__(self, config: Mapping, results: str, basedir: str = "."):
        self.config = config
        gender = self.gender = config["gender"]
        self.seeds = [int(seed) for seed in config["seeds"]]
        self.model_name = gender["model"]["name"]
        self.base = f"{results}/{TRACK}/{self.model_name}"
        self.data = f"{results}/{TRACK}/data"
        # the encoder every run starts from: a pre-trained model as named, or one the workflow initialises (smoke)
        self.scratch = gender["model"].get("init", "pretrained") == "scratch"
        self.encoder_input = [f"{self.base}/encoder/train_summary.json"] if self.scratch else []
        self.model = f"{self.base}/encoder" if self.scratch else gender["model"]["path"]
        self.words = {key: os.path.join(basedir, path) for key, path in {**WORDS, **gender.get("words", {})}.items()}
        self.seat_tests = list(gender["seat"]["tests"])
        folder = os.path.join(basedir, gender["seat"].get("folder", SEAT_FOLDER))
        self.seat_files = [os.path.join(folder, f"{test}.jsonl") for test in self.seat_tests]
        self.corpus = f"{self.data}/corpus.parquet"
        # paper B's GLUE column (gender.performance) and the masked-LM bias measures (gender.lm_bias)
        self.performance = gender.get("performance") or {}
        self.tasks = list(self.performance.get("tasks", {}))
        self.lm = gender.get("lm_bias") or {}
        self.lm_head = f"{self.base}/mlm_head.safetensors"
        crows = self.lm.get("crows_pairs")
        self.crows = [os.path.join(basedir, crows["file"])] if crows else []
        runs = grid_runs(gender, self.seeds, self.base, self.tasks, bool(self.lm))
        self.runs = runs + objective_runs(gender, self.seeds, self.base, self.tasks, bool(self.lm))
        # paper D's FFW on the encoder (gender.ffw), scored like the runs above but outside paper B's report
        self.ffw = gender.get("ffw") or {}
        self.ffw_runs = ffw_runs(gender, self.seeds, self.base, self.tasks, bool(self.lm))
        self._by_folder = {(run.folder, run.seed): run for run in [*self.runs, *self.ffw_runs]}
        self._by_summary = {run.summary: run for run in [*self.runs, *self.ffw_runs]}
        self.original_seat = f"{self.base}/original.seat.json"
        self.original_lm = [f"{self.base}/original.lm.json"] if self.lm else []
        self.original_tasks = [f"{self.base}/original/seed~{seed}.task~{task}.json"
                               for task in self.tasks for seed in self.seeds]
        # structured masks shrunk into smaller dense encoders (gender.shrink): the first seed's frozen masks of the
        # named granularities
        self.shrink = gender.get("shrink") or {}
        self.shrink_masks = [run.out for run in runs if run.kind == "frozen" and run.seed == self.seeds[0]
                             and run.granularity in self.shrink.get("granularities", [])]
        self.structured = f"{results}/benchmarks/structured.json"
        self.tables_dir, self.figures_dir = f"{results}/tables/{TRACK}", f"{results}/figures/{TRACK}"
        self.performance_figure = [f"{self.figures_dir}/performance_bias.png"] if self.tasks else []
        # the cross-paper matrix (config matrix:): the FFW runs beside paper B's pruning runs and the original
        self.matrix_cells = f"{results}/matrix/cells/{TRACK}.csv" if "matrix" in config and self.ffw_runs else None

    # ------------------------------------------------------------------------------ the runs, found by their files

    def folders(self, *kinds: str) -> list[str]:
        """The planned runs' folders (of these kinds; FFW's kind is ``ffw``), each once: the values a rule's `grun`
        wildcard may take."""
        return list(dict.fromkeys(run.folder for run in [*self.runs, *self.ffw_runs] if not kinds or run.kind in kinds))

    def run(self, folder: str, seed: int | str) -> GenderRun:
        """The planned run of a folder (below the model's) and seed."""
        try:
            return self._by_folder[folder, int(seed)]
        except KeyError:
            raise KeyError(f"gender: no planned run {folder}/seed~{seed} (gender.runs, seeds)") from None

    def run_writing(self, summary: str) -> GenderRun:
        """The planned run whose summary this is."""
        try:
            return self._by_summary[summary]
        except KeyError:
            raise KeyError(f"gender: no planned run writes {summary} (gender.runs, seeds)") from None

    # ------------------------------------------------------------------------------ what the targets build

    def report_tables(self) -> list[str]:
        """The CSV tables the report step writes beyond runs.csv and seat_long.csv: the figures' data, one table
        per kind of run planned (KIND_TABLE), and the performance-against-bias points when tasks are scored."""
        kinds = {run.kind for run in self.runs}
        names = ["layer_density", "heads"] + [table for kind, table in KIND_TABLE.items() if kind in kinds] + (
            ["performance_bias"] if self.tasks else [])
        return [f"{self.tables_dir}/{name}.csv" for name in names]

    def report_files(self) -> list[str]:
        tables = [f"{self.tables_dir}/{name}" for name in ("runs.csv", "seat_long.csv", "tables.md")] + \
            self.report_tables()
        figures = [f"{self.figures_dir}/{name}.png" for name in ("layer_density", "heads")]
        return tables + figures + self.performance_figure

    def task_data(self, task: str, split: str) -> str:
        return f"{self.data}/tasks/{task}/{split}.parquet"

    def targets(self) -> dict[str, list[str]]:
        """What each of the Snakefile's targets gets from this track."""
        runs = [*self.runs, *self.ffw_runs]
        return {
            "prepare": [self.corpus] + [self.task_data(task, split) for task in self.tasks for split in ("train", "dev")],
            "masks": [run.marker for run in runs],
            "evaluate": [run.seat for run in runs] + [self.original_seat]
            + [path for run in runs for path in run.tasks.values()] + self.original_tasks
            + [run.lm for run in runs if run.lm] + self.original_lm,
            "all": ([self.structured] if self.shrink_masks else []) + self.report_files()
            + [path for run in self.ffw_runs for path in run.evaluations],
        }

    # ------------------------------------------------------------------------------ each step's settings

    def spec(self, run: GenderRun) -> dict:
        return debias_spec(self.gender, run)

    def hparams(self, kind: str) -> dict:
        return self.gender["debias_only" if kind == "debias_only" else "pruning"]["hparams"]

    @property
    def checkpoint_every(self) -> int:
        """Training steps between a run's saved states (compute.checkpoint_every; 0: never)."""
        return self.config["compute"].get("checkpoint_every", 0)

    def corpus_source(self) -> tuple[str, str, str]:
        """(source, owner, config key) of the corpus's file: gender.corpus.source, or the dataset's source."""
        corpus = self.gender["corpus"]
        if corpus["source"] == "dataset":
            return corpus["dataset"]["source"], "gender corpus", "gender.corpus.dataset.source"
        return corpus["source"], "gender corpus", "gender.corpus.source"

    @property
    def corpus_download(self) -> str | None:
        """The file a corpus URL is downloaded to on the login node (None for any other source): the compute job
        reads that file and never the network."""
        source = self.gender["corpus"]["source"]
        return corpus_download_path(self.data, source) if source.startswith(URL_PREFIXES) else None

    def corpus_source_arg(self, local: str | None) -> str:
        """gender.corpus's --source, given the corpus's local file (or None): a local: source's file or a URL's
        download, or the source as named (generate:<n>, dataset)."""
        source = self.gender["corpus"]["source"]
        return local if source.startswith(("local:", *URL_PREFIXES)) else source

    def corpus_settings(self, local: str | None) -> dict:
        """gender.corpus's other settings: the held-out cut, and for a dataset its registry entry and local file."""
        corpus = self.gender["corpus"]
        dataset = corpus["source"] == "dataset"
        return {"heldout": corpus.get("heldout", 1000), "seed": corpus.get("seed", 0), "mixed": corpus.get("mixed", 0),
                "dataset_spec": corpus["dataset"] if dataset else None, "local_file": local if dataset else None}

    def encoder_settings(self) -> dict:
        """gender.encoder's arguments (a scratch encoder) but its inputs and output."""
        model = self.gender["model"]
        return {"bert_config": model.get("bert_config", {}), "seed": model.get("seed", 0)}

    def seat_settings(self) -> dict:
        seat = self.gender["seat"]
        return {"n_samples": seat.get("n_samples", 100000), "seed": seat.get("seed", 0)}

    def task_split(self, task: str, split: str) -> dict:
        """The registry entry of a task split, with `single_text: true` when the task reads one text (CoLA, SST-2):
        the prepare step then leaves text_b empty instead of refusing a dataset without a second text."""
        spec = self.performance["tasks"][task][split]
        return {**spec, "single_text": True} if self.performance["tasks"][task].get("single_text") else spec

    def task_split_source(self, task: str, split: str) -> tuple[str, str, str]:
        """(source, owner, config key) of a task split's file."""
        return (self.performance["tasks"][task][split]["source"], f"gender task {task} {split}",
                f"gender.performance.tasks.{task}.{split}.source")

    def task_hparams(self) -> dict:
        """The fine-tuning hparams of every task (gender.performance.hparams)."""
        return self.performance.get("hparams", {})

    def task_metric(self, task: str) -> str:
        """A task's dev metric (gender.performance.tasks.<task>.metric; accuracy when unnamed)."""
        return self.performance["tasks"][task].get("metric", "accuracy")

    def mlm_head_settings(self) -> dict:
        return {"source": self.lm.get("head", "fit"), **self.lm.get("head_hparams", {})}

    def lm_bias_settings(self) -> dict:
        """gender.lm_bias's arguments the config sets (the head and CrowS-Pairs files are inputs)."""
        values = {"batch_size": self.lm.get("batch_size", 64), "max_length": self.lm.get("max_length", 128)}
        crows, stereoset = self.lm.get("crows_pairs"), self.lm.get("stereoset")
        if crows:
            values |= {"crows_max_pairs": crows.get("max_pairs", 0), "seed": crows.get("seed", 0)}
        if stereoset:
            values |= {"stereoset_intra": stereoset["intrasentence"], "stereoset_inter": stereoset["intersentence"],
                       "stereoset_split": stereoset.get("split", "validation")}
        return values

    def shrink_settings(self) -> dict:
        return {key: self.shrink.get(key, default) for key, default in
                (("batch", 32), ("length", 32), ("repeats", 20), ("rounds", 3))}

    def report_runs(self) -> list[dict]:
        return [run.record() for run in self.runs]

    # ------------------------------------------------------------------------------ paper D's FFW and the matrix

    def ffw_run_writing(self, mask: str) -> FFWRun:
        """The planned FFW run whose mask this is."""
        for run in self.ffw_runs:
            if run.out == mask:
                return run
        raise KeyError(f"gender: no planned FFW run writes {mask} (gender.ffw, seeds)")

    def ffw_settings(self, run: FFWRun) -> dict:
        """gender.ffw's run settings (GenderFFWSettings fields: all but the plan's keys) with the run's gamma."""
        return {**{k: v for k, v in self.ffw.items() if k not in FFW_PLAN_KEYS}, "gamma": run.gamma}

    def native_runs(self) -> list[GenderRun]:
        """Paper B's own rows of the matrix: its block and head movement-pruning runs (frozen and unfrozen)."""
        return [run for run in self.runs if run.kind in ("frozen", "unfrozen")]

    def matrix_records(self) -> list[dict]:
        """What the matrix records step reads of each run: its method, paper, knob, seed and files (the task
        column's only when the FFW runs are scored on it, gender.ffw.task_column); then the original encoder, one
        record per seed (its task column is fine-tuned per seed; its SEAT and masked-LM files
        are the seed-independent original's)."""
        ffw_tasks = bool(self.ffw_runs and self.ffw_runs[0].task_names)  # the task column, for every row or none
        records = [{"method": run.method, "paper": "D", "native": False, "knob": "gamma", "value": run.gamma,
                    "seed": run.seed, "summary": run.summary, "seat": run.seat, "lm": run.lm, "tasks": run.tasks}
                   for run in self.ffw_runs]
        records += [{"method": f"block_movement_{run.kind}_{run.granularity}_{run.layers}_{run.mode}", "paper": "B",
                     "native": True, "knob": "", "value": None, "seed": run.seed, "summary": run.summary,
                     "seat": run.seat, "lm": run.lm, "tasks": run.tasks if ffw_tasks else {}}
                    for run in self.native_runs()]
        records += [{"method": "baseline", "paper": "-", "native": False, "knob": "", "value": None, "seed": seed,
                     "summary": None, "seat": self.original_seat, "lm": self.original_lm[0] if self.original_lm
                     else None, "tasks": {task: f"{self.base}/original/seed~{seed}.task~{task}.json"
                                          for task in self.tasks} if ffw_tasks else {}}
                    for seed in self.seeds]
        return records

    def matrix_inputs(self) -> list[str]:
        """Every file the matrix records step reads."""
        files = [path for record in self.matrix_records()
                 for path in [record["summary"], record["seat"], record["lm"], *record["tasks"].values()] if path]
        return list(dict.fromkeys(files))

    def matrix_data(self) -> str:
        """The data of the gender cells, as the captions say it."""
        corpus = self.gender["corpus"]
        source = ("real MultiNLI sentences" if corpus["source"] == "dataset" else
                  "generated template sentences" if corpus["source"].startswith("generate:") else "real sentences")
        crows = self.lm.get("crows_pairs")
        parts = [f"corpus: {source} with Kaneko & Bollegala's gender words (held out {corpus.get('heldout', 1000)} "
                 "per category)", f"SEAT {', '.join(self.seat_tests)} (real sent-bias files)"]
        if crows:
            parts.append(f"CrowS-Pairs gender ({crows.get('max_pairs') or 262} pairs, real)")
        if self.ffw_runs and self.ffw_runs[0].task_names:
            parts.append(f"task column {', '.join(self.tasks)}")
        return "; ".join(parts)

    def matrix_benchmarks(self) -> list[str]:
        """gender_seat always; gender_crows when the config scores CrowS-Pairs (gender.lm_bias.crows_pairs)."""
        return ["gender_seat"] + (["gender_crows"] if self.lm.get("crows_pairs") else [])
