"""What a config's long cluster jobs need: runtime derived from a per-step cost x the config's step counts, and a
check that refuses a runtime request below a job's estimate unless the job resumes — for a run that goes to a
cluster, before its first submission, and only for the jobs it will execute (rules/lifecycle.smk's onstart); a local
run has no time limit and is never held to it.

The cost model:

- Measured, given ``curves`` (the recorded GPU check's step curves, ``maskbench.workflow.cost.assumptions.
  recorded_curves``, which rules/lifecycle.smk passes): a step's seconds on the line through the rates measured at 32
  and 128 rows of 128 tokens, a fine-tuning step's or a mask search's (frozen weights, trained scores: search_mask,
  paper C's mask training, paper B's pruning), at the job family's precision (paper A's nlu jobs
  ``compute.precision``, paper C ``srnets.precision``, paper B ``gender.precision``). The card measured is the card
  the estimate is for: a slower one needs larger requests, or resuming jobs' further submissions.
- Without curves (no recorded check): ``GPU_STEPS_PER_S``, one BERT-base training step
  (forward, backward, AdamW; fp32, 32 rows x 128 tokens) in 1/9 s on an A100 (an estimate); a step of ``n`` rows
  costs ``n / 32`` such steps.
- A forward pass alone costs ``FORWARD_SHARE`` of a step (backward ~ twice the forward).
- Paper B's step (Kaneko-Bollegala): each of the batch's 128 examples is a target and an attribute sentence (256
  rows trained) plus the original model's forward pass over the same 256 rows.
- ``MARGIN`` (1.5x) covers the dev evaluations inside a run (paper C: every 500-1000 steps), loading, and a slower
  or shared card.

A job longer than ``CAP_MIN`` (24 h, what most GPU partitions allow) is requested at the cap only when it resumes
(its state saved every ``compute.checkpoint_every`` steps, finished parts staged): it continues across
resubmissions (the profile's ``retries: 1`` and a rerun of snakemake), and needs ``ceil(estimate / cap)`` of them.

Step counts: ``examples / batch`` (rounded up) x epochs, with the real sizes of the datasets the paper config names
(``TRAIN_SIZES``; a config whose training set is not among them, e.g. a local cut, gets no estimate).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

GPU_STEPS_PER_S = 9.0
UNIT_ROWS = 32
FORWARD_SHARE = 1 / 3
MARGIN = 1.5
CAP_MIN = 24 * 60
SUBMISSIONS = 2  # profiles/slurm: retries: 1 — a job killed at its limit is submitted once more

# training-set sizes of the sources the paper config names: (source, config, split) -> examples
TRAIN_SIZES = {
    ("hf:nyu-mll/glue", "mnli", "train"): 392_702,
    ("hf:nyu-mll/glue", "qqp", "train"): 363_846,
    ("local:data/fever/fever.train.jsonl", None, None): 242_911,  # Schuster et al.'s NLI-style FEVER train
}
# evaluation sets of the paper config (rows scored per subnetwork); a set not here counts 0 (the negation subset:
# a few hundred rows)
EVAL_SIZES = {
    ("hf:nyu-mll/glue", "mnli", "validation_matched"): 9_815,
    ("hf:jhu-cogsci/hans", None, "validation"): 30_000,
    ("hf:nyu-mll/glue", "qqp", "validation"): 40_430,
    ("local:data/paws_qqp/dev_and_test.tsv", None, None): 677,
    ("hf:google-research-datasets/paws", "labeled_final", "test"): 8_000,
    ("local:data/fever/fever.dev.jsonl", None, None): 19_998,
    ("local:data/nli/fever_symmetric_full.jsonl", None, None): 717,
    ("local:data/nli/fever_symmetric_test.jsonl", None, None): 717,
}
# paper B's corpus (News Commentary v15 cut by the word lists): 246 batches of 128 an epoch, from paper B's 24,600
# steps over 100 epochs (the code counts the corpus's stereotype sentences; the corpus is not on this machine)
GENDER_BATCHES_PER_EPOCH = {"http://data.statmt.org/news-commentary/v15/training-monolingual/news-commentary-v15.en.gz":
                            246}


@dataclass(frozen=True)
class Estimate:
    family: str      # the job family (rules) and the case that decides it
    key: str         # the compute key whose value is the request
    requested: int   # minutes
    steps: int       # optimiser steps of the job (all runs of a sweep)
    units_per_step: float  # cost of one step in BERT-base 32 x 128 training steps
    resumes: bool
    rules: tuple[str, ...] = ()  # the rules whose jobs it estimates (a job of another rule is not held to it)
    task: str | None = None      # and their `task` wildcard, where the rule name does not carry the task
    precision: str = "fp32"      # the jobs' precision, and the kinds of step they take ("finetune", "search"):
    kinds: tuple[str, ...] = ("finetune",)  # the estimate covers the slowest
    rows: float | None = None    # rows of 128 tokens a step (None: units_per_step x 32); the rest of
    # units_per_step is a factor on the step (paper B's forward pass of the original model)
    curves: Mapping | None = field(default=None, repr=False, compare=False)  # measured step curves (step_seconds)

    def estimates_job(self, rule: str, wildcards: Mapping[str, str]) -> bool:
        return rule in self.rules and (self.task is None or wildcards.get("task") == self.task)

    @property
    def minutes(self) -> int:
        """The derived wall time: steps x a step's seconds (``step_seconds``) x margin."""
        rows = self.rows if self.rows is not None else self.units_per_step * UNIT_ROWS
        factor = self.units_per_step * UNIT_ROWS / rows
        seconds = max(step_seconds(kind, self.precision, rows, self.curves) for kind in self.kinds) * factor
        return math.ceil(self.steps * seconds * MARGIN / 60)

    @property
    def request(self) -> int:
        """What to ask for: the estimate, capped where the job resumes."""
        return min(self.minutes, CAP_MIN) if self.resumes else self.minutes

    @property
    def submissions(self) -> int:
        return math.ceil(self.minutes / self.requested) if self.requested else 0

    def problem(self) -> str | None:
        if self.requested >= self.minutes:
            return None
        if not self.resumes:
            return (f"compute.{self.key}: {self.requested} min is below the derived {self.minutes} min of "
                    f"{self.family} ({self.steps:,} steps), which does not resume; ask for at least {self.minutes}")
        if self.submissions > SUBMISSIONS:
            return (f"compute.{self.key}: {self.requested} min needs {self.submissions} submissions of {self.family} "
                    f"(derived {self.minutes} min, {self.steps:,} steps); the SLURM profile retries a job "
                    f"{SUBMISSIONS - 1} time(s): ask for at least {math.ceil(self.minutes / SUBMISSIONS)}")
        return None


def step_seconds(kind: str, precision: str, rows: float, curves: Mapping | None = None) -> float:
    """Seconds of one BERT-base step of ``rows`` rows of 128 tokens: on ``curves[kind][precision]`` (anything with a
    ``seconds(rows)``: the measured ``StepCurve``) where given, else at GPU_STEPS_PER_S."""
    if curves and precision in curves.get(kind, {}):
        return curves[kind][precision].seconds(rows)
    return rows / UNIT_ROWS / GPU_STEPS_PER_S


def steps_of(examples: int, batch_size: int, epochs: int) -> int:
    return math.ceil(examples / batch_size) * epochs


def size_of(dataset: Mapping, table: Mapping) -> int | None:
    source = dataset.get("source")
    size = table.get((source, dataset.get("config"), dataset.get("split")))
    return size if size is not None else table.get((source, None, None))


def train_size(dataset: Mapping) -> int | None:
    return size_of(dataset, TRAIN_SIZES)


def srnet_subnetworks(srn: Mapping, task: str) -> int:
    """The subnetworks evaluate_srnets scores for one (task, seed): every grid run's sparsities, the named sweeps'
    runs, theta_ft (rules/nlu/srnets_common.smk, srn_items)."""
    from maskbench.tracks.nlu.srnets import grid as srnet_grid

    runs = srnet_grid.grid(srn)
    count = sum(len(srn.get("sparsities", [])) for run in runs
                if task in srnet_grid.tasks_of(srn, runs, run, [task]))
    for sweep in srnet_grid.named_sweeps(srn):
        if task in srnet_grid.tasks_of(srn, runs, sweep, [task]):
            count += len(srnet_grid.named_runs(srn, sweep))
    return count + (1 if srn.get("theta_ft") is not None else 0)


def merged(*layers: Mapping | None) -> dict:
    out: dict = {}
    for layer in layers:
        out.update(layer or {})
    return out


def estimates(config: Mapping, curves: Mapping | None = None) -> list[Estimate]:
    """The derived runtime of each long job family the config plans whose step count is known (``curves``: the
    measured step curves, ``step_seconds``)."""
    compute = config.get("compute", {})
    train_min = int(compute.get("train_runtime_min", 30))
    resumes = int(compute.get("checkpoint_every", 0)) > 0
    out: list[Estimate] = []
    datasets, tasks = config.get("datasets", {}), config.get("tasks", {})
    sizes = {task: train_size(datasets.get(spec.get("train"), {})) for task, spec in tasks.items()}
    sizes = {task: n for task, n in sizes.items() if n is not None}
    finetune = config.get("finetune") or {}
    nlu_precision = str(compute.get("precision") or config.get("precision") or "fp32")
    for task, n in sizes.items():
        if finetune:
            out.append(Estimate(f"finetune_baseline/finetune_debiased ({task})", "train_runtime_min", train_min,
                                steps_of(n, finetune.get("batch_size", 32), finetune.get("epochs", 3)),
                                finetune.get("batch_size", 32) / UNIT_ROWS, resumes,
                                ("finetune_baseline", "finetune_debiased"), task, nlu_precision, curves=curves))
        search = (config.get("mask_search") or {}).get("hparams")
        if search:
            out.append(Estimate(f"search_mask ({task})", "train_runtime_min", train_min,
                                steps_of(n, search["batch_size"], search["epochs"]),
                                search["batch_size"] / UNIT_ROWS, resumes, ("search_mask",), task, nlu_precision,
                                ("search",), curves=curves))
    srn = config.get("srnets") or {}
    srn_min = int(compute.get("srnet_runtime_min", train_min))
    # mask training resumes within a run and keeps its finished sparsities; a retraining sweep resumes within a
    # run only (its finished sparsities are trained again) and IMP keeps its finished levels but restarts a round:
    # both are held to one request
    srn_precision = str(srn.get("precision") or "fp32")
    for method, rule, runs, sweep_resumes in (
            ("mask_training", "srnet_mask_train", len(srn.get("sparsities", [])), resumes),
            ("retrain", "srnet_retrain", len(srn.get("sparsities", [])), False),
            ("imp", "srnet_imp", 1, False)):
        section = srn.get(method)
        for task, n in sizes.items() if section else []:
            hp = merged(section.get("hparams"), (section.get("tasks", {}).get(task) or {}).get("hparams"))
            what = f"{runs} sparsities in turn" if runs > 1 else "one run"
            out.append(Estimate(f"{rule} ({task}, {what})", "srnet_runtime_min", srn_min,
                                runs * steps_of(n, hp.get("batch_size") or 32, hp.get("epochs") or 3),
                                (hp.get("batch_size") or 32) / UNIT_ROWS, sweep_resumes, (rule,), task, srn_precision,
                                ("search",) if method == "mask_training" else ("finetune",), curves=curves))
    eval_min = int(compute.get("srnet_eval_runtime_min", compute.get("eval_runtime_min", 15)))
    eval_batch = int(finetune.get("eval_batch_size", 256))
    for task, spec in tasks.items() if srn else []:
        rows = sum(size_of(datasets.get(name, {}), EVAL_SIZES) or 0 for name in spec.get("eval_sets", {}))
        if rows:
            items = srnet_subnetworks(srn, task)
            batches = items * math.ceil(rows / eval_batch)  # forward passes only; an item staged once scored
            out.append(Estimate(f"evaluate_srnets_{task} ({items} subnetworks x {rows:,} rows)",
                                "srnet_eval_runtime_min", eval_min, batches,
                                eval_batch / UNIT_ROWS * FORWARD_SHARE, True, (f"evaluate_srnets_{task}",),
                                precision=srn_precision, rows=eval_batch, curves=curves))
    gender = config.get("gender") or {}
    batches = GENDER_BATCHES_PER_EPOCH.get((gender.get("corpus") or {}).get("source"))
    hp = (gender.get("pruning") or {}).get("hparams")
    if batches and hp:
        rows = 2 * hp["batch_size"]  # a target and an attribute sentence per example
        out.append(Estimate("gender_prune_frozen/gender_train_weights (paper B)",
                            "gender_runtime_min", int(compute.get("gender_runtime_min", train_min)),
                            batches * hp["epochs"], rows / UNIT_ROWS * (1 + FORWARD_SHARE), resumes,
                            ("gender_prune_frozen", "gender_train_weights"),
                            precision=str(gender.get("precision") or "fp32"), kinds=("finetune", "search"),
                            rows=rows, curves=curves))
    return out


def check_requests(config: Mapping, jobs: Iterable[tuple[str, Mapping[str, str]]] | None = None,
                   curves: Mapping | None = None) -> None:
    """Refuse a runtime request below a job's derived estimate, unless the job resumes within the profile's
    submissions: one line naming the key and value. With ``jobs`` (rule name, wildcards of each job a run will
    execute), only the estimates of those jobs: a job the run does not execute is not held to its request."""
    jobs = None if jobs is None else list(jobs)
    for estimate in estimates(config, curves):
        if jobs is not None and not any(estimate.estimates_job(rule, w) for rule, w in jobs):
            continue
        problem = estimate.problem()
        if problem:
            raise ValueError(problem)
