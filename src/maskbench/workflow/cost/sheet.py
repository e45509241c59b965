"""Price planned jobs (maskbench.workflow.cost.plan) and sum them per rule family.

Each job is priced from its own command line: optimiser steps (examples of its training set / batch, rounded up, x
epochs, x the runs it trains in turn) x the units of one step (maskbench.workflow.cost.assumptions) / the steps per second of
its precision; an evaluation from its subnetworks x rows scored x seconds per row. Peak GPU memory: weights,
gradients and AdamW state plus the activations of one batch; host memory: a process with its data; disk: the
checkpoints and masks the job writes. Each job's request is checked against its estimate: wall time x margin within
the runtime (or within the profile's submissions where the job resumes), memory within mem_mb, GPU memory within the
card. How a job is priced is what its step's module declares (``PRICED_AS``, ``CARRIES_OVER``: ``declared``), the step
named by the rule's command. Which table or figure a family serves is read from the plan itself: the report jobs each
job feeds, each named by its rule's docstring (``plan.rule_docstrings``).
"""

from __future__ import annotations

import ast
import functools
import json
import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from maskbench.workflow import cluster_requests
from maskbench.workflow.cost import assumptions as A
from maskbench.workflow.cost.plan import PlannedJob

STEPS = Path(__file__).resolve().parents[2] / "steps"
DECLARED = ("PRICED_AS", "CARRIES_OVER")
# a step's PRICED_AS: a training run over its --train rows, a scoring of subnetworks x rows, paper B's corpus (its
# debiasing, masked-LM head, gates, SEAT and LM bias), gates over examples, paper D's images
PRICE_KINDS = ("training", "evaluation", "corpus", "gates", "images")
GENDER_CORPUS_ROWS = 128  # GENDER_BATCHES_PER_EPOCH counts batches of paper B's 128 examples


@dataclass
class JobCost:
    rule: str
    family: str
    step: str
    gpus: int
    minutes: float | None           # estimated wall time (no margin); None: no model for this step
    gpu_mem_gb: float = 0.0
    host_mem_gb: float = 0.0
    disk_gb: float = 0.0            # written by the job
    kept_gb: float = 0.0            # left on disk once the run is over (temp checkpoints deleted)
    requested_min: float = 0.0
    requested_mem_mb: float = 0.0
    resumes: bool = False
    precision: str = "fp32"
    problems: list[str] = field(default_factory=list)

    @property
    def gpu_hours(self) -> float:
        return (self.minutes or 0.0) * self.gpus / 60 if self.gpus else 0.0


def _json(opts: Mapping[str, list[str]], key: str) -> dict | list:
    values = opts.get(key)
    if not values:
        return {}
    try:
        return json.loads(values[0])
    except json.JSONDecodeError:
        return {}


def _first(opts: Mapping[str, list[str]], key: str, default=None):
    values = opts.get(key)
    return values[0] if values else default


@functools.cache
def declared(step: str) -> dict[str, object]:
    """What a step module declares for the sheet, read from its source (not imported): ``PRICED_AS``, how a job of
    it is priced (one of ``PRICE_KINDS``; none: not priced), and ``CARRIES_OVER`` (False: its saved state serves
    within a run only, so a second submission trains the finished runs again). {} for a step with no module."""
    source = STEPS.joinpath(*step.split(".")).with_suffix(".py") if step else None
    if source is None or not source.is_file():
        return {}
    found = {}
    for node in ast.parse(source.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in DECLARED:
            found[node.targets[0].id] = ast.literal_eval(node.value)
    if found.get("PRICED_AS", PRICE_KINDS[0]) not in PRICE_KINDS:
        raise ValueError(f"{source}: PRICED_AS is {found['PRICED_AS']!r}, not one of {', '.join(PRICE_KINDS)}")
    return found


def family_of(rule: str, tasks: Sequence[str]) -> str:
    """A rule's family: per-task copies of a rule (`evaluate_mnli`, `bias_overlap_qqp`) are one family."""
    for task in tasks:
        if rule.endswith(f"_{task}"):
            return rule[: -len(task)] + "<task>"
    return rule


class Pricer:
    def __init__(self, config: Mapping, rates: Mapping[str, A.Figure] | None = None,
                 search_rates: Mapping[str, A.Figure] | None = None,
                 curves: Mapping[str, Mapping[str, A.StepCurve]] | None = None):
        self.config = config
        self.rates = dict(rates or A.per_step_figures())
        # a mask-search step (frozen weights, trained scores) where measured; else a fine-tuning step's rate
        self.search_rates = dict(search_rates or {p: A.Figure(f.value, f.source) for p, f in self.rates.items()})
        # a training step's seconds against its rows (A.StepCurve); without a measured curve, in proportion to rows
        self.curves = {kind: dict(c) for kind, c in (curves or {}).items()} or {
            "finetune": {p: A.StepCurve(1 / f.value, None, f.source) for p, f in self.rates.items()},
            "search": {p: A.StepCurve(1 / f.value, None, f.source) for p, f in self.search_rates.items()}}
        self.datasets = config.get("datasets") or {}
        self.tasks = list((config.get("tasks") or {}).keys())
        gender = config.get("gender") or {}
        self.gender_tasks = ((gender.get("performance") or {}).get("tasks") or {})
        self.gender_batches = cluster_requests.GENDER_BATCHES_PER_EPOCH.get((gender.get("corpus") or {}).get("source"))
        self.sizes = {**cluster_requests.TRAIN_SIZES, **A.EXTRA_TRAIN_SIZES}
        self.vision = config.get("vision") or {}
        self.default_model = (config.get("model") or {}).get("path")
        self.default_precision = str((config.get("compute") or {}).get("precision") or config.get("precision")
                                     or "fp32")

    # ---------------------------------------------------------------------------------------------- sizes
    def dataset_of(self, path: str) -> Mapping | None:
        """The config's dataset spec behind a prepared file's path."""
        found = re.search(r"/gender/data/tasks/(\w+)/(train|dev)\.parquet$", path)
        if found:
            return (self.gender_tasks.get(found.group(1)) or {}).get(found.group(2))
        found = re.search(r"/prepared/([^/]+)\.parquet$", path)
        return self.datasets.get(found.group(1)) if found else None

    def train_rows(self, path: str | None) -> int | None:
        spec = self.dataset_of(path) if path else None
        return cluster_requests.size_of(spec, self.sizes) if spec else None

    def eval_rows(self, paths: Sequence[str]) -> int:
        rows = 0
        for path in paths:
            spec = self.dataset_of(path)
            rows += (cluster_requests.size_of(spec, cluster_requests.EVAL_SIZES) or 0) if spec else 0
        return rows

    # ---------------------------------------------------------------------------------------------- pricing
    def rate(self, precision: str) -> float:
        if precision not in self.rates:
            raise ValueError(f"precision: value {precision!r} is not one of {sorted(self.rates)}")
        return self.rates[precision].value

    def price(self, job: PlannedJob) -> JobCost:
        step, opts = job.step()
        hp = _json(opts, "hparams") or {}
        # a step's command carries --precision whenever it is not fp32 (the rules leave it out at fp32), so a job
        # without one runs in fp32 whatever compute.precision says (paper C's and D's jobs under the paper config)
        precision = str(hp.get("precision") or _first(opts, "precision") or "fp32")
        self.rate(self.default_precision)  # the config's setting must have a rate too (checked once per job)
        cost = JobCost(rule=job.rule, family=family_of(job.rule, self.tasks), step=step, gpus=job.gpus, minutes=None,
                       requested_min=job.resource("runtime"), requested_mem_mb=job.resource("mem_mb"),
                       resumes=int(float(_first(opts, "checkpoint-every", 0) or 0)) > 0
                       and declared(step).get("CARRIES_OVER", True), precision=precision)
        model = self.model_of(opts)
        kind = declared(step).get("PRICED_AS")
        if kind == "training":
            self._training(cost, job, opts, hp, model)
        elif kind == "evaluation":
            self._evaluation(cost, opts, model)
        elif kind == "corpus":
            self._gender(cost, opts, hp, model)
        elif kind == "gates":
            self._gates(cost, opts, int(json.loads(_first(opts, "examples", "{}")).get("gate_train", 0)),
                        int(_first(opts, "max-length", 128)), model)
        elif kind == "images":
            self._vision(cost, job, opts, hp)
        cost.disk_gb, cost.kept_gb = self.disk(job, opts, model)
        self.check(cost)
        return cost

    def model_of(self, opts: Mapping[str, list[str]]) -> str | None:
        spec = _json(opts, "model-spec")
        if isinstance(spec, dict) and spec.get("path"):
            return spec["path"]
        return _first(opts, "model") or self.default_model

    def _minutes(self, steps: float, rows: float, factor: float, precision: str, scored: bool = False) -> float:
        """Minutes of ``steps`` steps of ``rows`` rows of 128 tokens, each ``factor`` x a BERT-base step (a smaller
        model, a forward pass alone, a second pass), on the mask search's curve where ``scored``."""
        self.rate(precision)  # an unknown precision is an error naming it
        curves = self.curves["search" if scored and precision in self.curves["search"] else "finetune"]
        return steps * factor * curves[precision].seconds(rows) / 60

    def _training(self, cost, job, opts, hp, model):
        rows = self.train_rows(_first(opts, "train"))
        if rows is None:
            cost.problems.append(f"no size known for its training set {_first(opts, 'train')}: not priced")
            return
        subset = _first(opts, "train-subset")
        rows = min(rows, int(subset)) if subset else rows
        for part in _json(opts, "mix-train") or []:
            extra = self.train_rows(part.get("path"))
            rows += (extra or 0) * int(part.get("repeat", 1))
        batch, length = int(hp.get("batch_size", 32)), int(hp.get("max_length", 128))
        runs = (len(opts.get("sparsities", [])) or len(_json(opts, "runs") or []) or len(opts.get("masks", []))
                or 1) if cost.step.startswith("nlu.srnet") else 1
        steps = runs * cluster_requests.steps_of(rows, batch, int(hp.get("epochs", 3)))
        # mask search and paper C's mask training keep a score (and its AdamW state) per maskable weight, and step at
        # the mask search's rate
        scored = cost.step in ("nlu.mask_search", "nlu.srnet_mask_train")
        cost.minutes = self._minutes(steps, batch * length / 128, A.model_factor(model), cost.precision, scored)
        self._memory(cost, model, batch, length, train=True, scored=scored)

    def _memory(self, cost, model, rows, length, train=True, scored=False, extra_forward_rows=0):
        shape = A.MODELS.get(model or A.BERT_BASE, A.MODELS[A.BERT_BASE])
        params, maskable = shape[3], shape[4]
        if train and scored:    # frozen weights + scores with gradient and AdamW moments
            static = params * 4 + maskable * 16
        elif train:             # weights, gradients, two AdamW moments
            static = params * 16
        else:
            static = params * 4
        acts = A.activation_gb(model, rows, length, cost.precision) if train else \
            A.activation_gb(model, rows, length, cost.precision) / shape[0]
        acts += A.activation_gb(model, extra_forward_rows, length, cost.precision) / shape[0]
        cost.gpu_mem_gb = static / 1e9 + acts + A.figure("cuda_context_gb") if cost.gpus else 0.0
        cost.host_mem_gb = A.figure("host_base_gb") + params * 4 / 1e9

    def _evaluation(self, cost, opts, model):
        items = len(opts.get("model-dirs") or opts.get("masks") or [])
        rows = self.eval_rows(opts.get("data", []))
        batch, length = int(_first(opts, "batch-size", 256)), int(_first(opts, "max-length", 128))
        forward_units = A.figure("forward_share") * length / 128 * A.model_factor(model) / 32
        cost.minutes = (items * rows * forward_units / self.rate(cost.precision)
                        + items * A.figure("eval_item_overhead_s")) / 60
        cost.resumes = True  # every evaluation step keeps the subnetworks it scored (maskbench.workflow.staging)
        self._memory(cost, model, batch, length, train=False)

    def _gender(self, cost, opts, hp, model):
        corpus = (self.gender_batches or 0) * GENDER_CORPUS_ROWS
        if cost.step == "gender.debias":
            if not corpus:
                cost.problems.append("no size known for paper B's corpus: not priced")
                return
            batch, length = int(hp.get("batch_size", 128)), int(hp.get("max_length", 128))
            steps = cluster_requests.steps_of(corpus, batch, int(hp.get("epochs", 1)))
            # a target and an attribute sentence per example, and the original model's forward pass over both; with
            # frozen weights (block and head pruning) a step of trained scores, at the mask search's rate
            spec = _json(opts, "spec") or {}
            cost.minutes = self._minutes(steps, 2 * batch * length / 128,
                                         (1 + A.figure("forward_share")) * A.model_factor(model), cost.precision,
                                         scored=bool(spec.get("freeze_weights")))
            self._memory(cost, model, 2 * batch, length, train=True, scored=bool(spec.get("freeze_weights")),
                         extra_forward_rows=2 * batch)
        elif cost.step == "gender.mlm_head":
            batch, length = int(_first(opts, "batch-size", 32)), int(_first(opts, "max-length", 128))
            steps = cluster_requests.steps_of(corpus, batch, int(_first(opts, "epochs", 1)))
            cost.minutes = self._minutes(steps, batch * length / 128, A.figure("forward_share") * A.model_factor(model),
                                         cost.precision)
            self._memory(cost, model, batch, length, train=False)
        elif cost.step == "gender.ffw":
            settings = _json(opts, "settings") or {}
            self._gates(cost, opts, 2 * corpus, int(settings.get("max_length", 128)), model,
                        int(settings.get("batch_size", 32)))
        elif cost.step in ("gender.seat", "gender.lm_bias"):
            cost.minutes = A.figure("seat_min" if cost.step == "gender.seat" else "lm_bias_min")
            self._memory(cost, model, int(_first(opts, "batch-size", 64)), 128, train=False)

    def _gates(self, cost, opts, examples, length, model, batch=None):
        settings = _json(opts, "settings") or {}
        batch = batch or int(settings.get("batch_size", 32))
        epochs = min(A.figure("gate_epochs"), float(settings.get("max_gate_epochs", A.figure("gate_epochs"))))
        steps = math.ceil(examples / batch) * epochs
        cost.minutes = self._minutes(steps, batch * length / 128, A.model_factor(model), cost.precision)
        cost.resumes = False
        self._memory(cost, model, batch, length, train=True, scored=True)

    def _vision(self, cost, job, opts, hp):
        name = job.wildcards.get("vdataset") or next(
            (d for d in A.VISION_TRAIN_IMAGES if f"/vision/{d}/" in " ".join(job.outputs)), None)
        spec = (self.vision.get("datasets") or {}).get(name or "", {})
        net = spec.get("model")
        if net not in A.VISION_STEP_S or name not in A.VISION_TRAIN_IMAGES:
            if cost.step in ("vision.train", "vision.ffw", "vision.debias_mask", "vision.evaluate"):
                cost.problems.append(f"no step time known for dataset {name!r} / net {net!r}: not priced")
            return
        images, step_s = A.VISION_TRAIN_IMAGES[name], A.VISION_STEP_S[net]
        settings = _json(opts, "settings") or {}
        if cost.step == "vision.train":
            batch = int(hp.get("batch_size", 100))
            steps = cluster_requests.steps_of(images, batch, int(hp.get("epochs", 1)))
        elif cost.step == "vision.debias_mask":
            batch = int(settings.get("batch_size", 100))
            steps = cluster_requests.steps_of(images, batch, int(settings.get("epochs", 1)))
        elif cost.step == "vision.ffw":
            batch = int(settings.get("batch_size", 100))
            epochs = min(A.figure("gate_epochs"), float(settings.get("max_gate_epochs", A.figure("gate_epochs"))))
            steps = math.ceil(A.VISION_GATE_IMAGES.value / batch) * epochs
        elif cost.step == "vision.evaluate":
            batch = 100
            runs = len(_json(opts, "runs") or [])
            steps = runs * math.ceil(A.VISION_TEST_IMAGES.value / batch) * A.figure("forward_share")
        else:
            return
        cost.minutes = steps * step_s * batch / 100 / 60 / A.precision_speedup(cost.precision)
        held = (A.VISION_STREAMED.value if name in A.VISION_STREAMED_DATASETS
                else images * A.VISION_IMAGE_BYTES[name] / 1e9)
        cost.host_mem_gb = A.figure("host_base_gb") + held
        cost.gpu_mem_gb = (A.figure("cuda_context_gb") + A.VISION_PARAMS[net] * 16 / 1e9
                           + A.VISION_ACTIVATION_GB[net] * batch / 100) if cost.gpus else 0.0

    # ---------------------------------------------------------------------------------------------- disk
    def disk(self, job: PlannedJob, opts, model) -> tuple[float, float]:
        """Checkpoints (a folder with a model.safetensors or a train_summary.json among the outputs, plus the
        snapshots a run writes beside them) and masks the job writes."""
        vision_net = None
        if job.rule.startswith(("train_vision", "vision")) or "/vision/" in " ".join(job.outputs):
            spec = (self.vision.get("datasets") or {}).get(job.wildcards.get("vdataset", ""), {})
            vision_net = spec.get("model")
        ckpt = (A.VISION_PARAMS.get(vision_net, 0) * 4 / 1e9) if vision_net else A.checkpoint_gb(model)
        mask = (A.VISION_PARAMS.get(vision_net, 0) / 8 / 1e9) if vision_net else A.mask_gb(model)
        folders = {path.rpartition("/")[0] for path in job.outputs
                   if path.endswith(("/model.safetensors", "/train_summary.json"))}
        snapshots = len(opts.get("snapshot-steps", []))
        spec = _json(opts, "model-spec")
        snapshots += len(spec.get("snapshot_epochs") or []) if isinstance(spec, dict) else 0
        masks = sum(path.endswith(".mask") for path in job.outputs)
        written = (len(folders) + snapshots) * ckpt + masks * mask
        # the checkpoints its rule flags temp() (compute.temp_checkpoints: rules/common.smk's scored_checkpoint) are
        # deleted once scored: the plan says which (PlannedJob.temporary)
        deleted = {path.rpartition("/")[0] for path in job.temporary if path.endswith("/model.safetensors")}
        return written, written - len(deleted & folders) * ckpt

    # ---------------------------------------------------------------------------------------------- checks
    def check(self, cost: JobCost) -> None:
        if cost.minutes is None:
            return
        needed = cost.minutes * A.figure("margin")
        if cost.requested_min and needed > cost.requested_min:
            submissions = math.ceil(needed / cost.requested_min)
            if not cost.resumes:
                cost.problems.append(f"runtime {cost.requested_min:g} min < {needed:.0f} min (estimate x margin) "
                                     "and the job does not carry finished work over")
            elif submissions > cluster_requests.SUBMISSIONS:
                cost.problems.append(f"runtime {cost.requested_min:g} min needs {submissions} submissions of "
                                     f"{needed:.0f} min; the profile allows {cluster_requests.SUBMISSIONS}")
        if cost.requested_mem_mb and cost.host_mem_gb * A.figure("mem_margin") * 1000 > cost.requested_mem_mb:
            cost.problems.append(f"mem_mb {cost.requested_mem_mb:g} < {cost.host_mem_gb * 1000:.0f} MB estimated "
                                 f"x {A.figure('mem_margin'):g}")
        if cost.gpu_mem_gb > A.figure("gpu_memory_gb"):
            cost.problems.append(f"GPU memory {cost.gpu_mem_gb:.1f} GB > the card's {A.figure('gpu_memory_gb'):g} GB")


def serves(jobs: Sequence[PlannedJob], reports: Mapping[str, str]) -> list[set[str]]:
    """For each job, the report jobs it feeds, directly or not (read from the plan's inputs and outputs), each named
    by ``reports`` (rule -> its docstring: what the rule makes)."""
    producer = {path: i for i, job in enumerate(jobs) for path in job.outputs}
    parents = [{producer[p] for p in job.inputs if p in producer} for job in jobs]
    out: list[set[str]] = [set() for _ in jobs]
    for i, job in enumerate(jobs):
        label = reports.get(job.rule)
        if not label:
            continue
        seen, todo = set(), [i]
        while todo:
            j = todo.pop()
            if j in seen:
                continue
            seen.add(j)
            out[j].add(label)
            todo.extend(parents[j] - seen)
    return out


@dataclass
class Family:
    family: str
    jobs: int = 0
    gpu_jobs: int = 0
    gpu_hours: float = 0.0
    cpu_request_hours: float = 0.0
    peak_gpu_mem_gb: float = 0.0
    peak_host_mem_gb: float = 0.0
    disk_gb: float = 0.0
    kept_gb: float = 0.0
    unpriced: int = 0
    flagged: int = 0
    serves: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def summarise(jobs: Sequence[PlannedJob], costs: Sequence[JobCost], local: set[str] = frozenset(),
              reports: Mapping[str, str] | None = None) -> tuple[list[Family], Family]:
    """Per-family sums (GPU-hours of jobs on a GPU; requested hours of the rest) and the total, largest first; jobs
    of `local` rules (run by snakemake itself: tables, figures) and target rules are left out; `reports`: the rules
    whose docstrings name what they make, the families' "serves"."""
    families: dict[str, Family] = {}
    labels: dict[str, set[str]] = defaultdict(set)
    # summed in the order of the jobs' rules and outputs, not of the dry run's text (which varies from one planning
    # to the next): the same plan gives the same bits
    priced = sorted(zip(jobs, costs, serves(jobs, reports or {}), strict=True),
                    key=lambda item: (item[0].rule, item[0].outputs))
    for job, cost, feeds in priced:
        if job.local or job.rule in local or not job.command:
            continue
        fam = families.setdefault(cost.family, Family(cost.family))
        labels[cost.family] |= feeds
        fam.jobs += 1
        if cost.gpus:
            fam.gpu_jobs += 1
            fam.gpu_hours += cost.gpu_hours
        else:
            fam.cpu_request_hours += cost.requested_min / 60
        fam.unpriced += cost.gpus > 0 and cost.minutes is None
        fam.peak_gpu_mem_gb = max(fam.peak_gpu_mem_gb, cost.gpu_mem_gb)
        fam.peak_host_mem_gb = max(fam.peak_host_mem_gb, cost.host_mem_gb)
        fam.disk_gb += cost.disk_gb
        fam.kept_gb += cost.kept_gb
        if cost.problems:
            fam.flagged += 1
            for problem in cost.problems:
                if problem not in fam.problems:
                    fam.problems.append(problem)
    for name, fam in families.items():
        fam.serves = sorted(labels[name])
    ordered = sorted(families.values(), key=lambda f: (-f.gpu_hours, -f.disk_gb, f.family))
    total = Family("total", serves=[])
    for fam in ordered:
        for key in ("jobs", "gpu_jobs", "gpu_hours", "cpu_request_hours", "disk_gb", "kept_gb", "unpriced",
                    "flagged"):
            setattr(total, key, getattr(total, key) + getattr(fam, key))
        total.peak_gpu_mem_gb = max(total.peak_gpu_mem_gb, fam.peak_gpu_mem_gb)
        total.peak_host_mem_gb = max(total.peak_host_mem_gb, fam.peak_host_mem_gb)
    return ordered, total


def markdown(families: Sequence[Family], total: Family, rates: Mapping[str, A.Figure], precision: str,
             search_rates: Mapping[str, A.Figure] | None = None,
             curves: Mapping[str, Mapping[str, A.StepCurve]] | None = None) -> str:
    head = ("| family (rule) | jobs | GPU-h | CPU-h requested | peak GPU GB | peak host GB | disk GB written "
            "| disk GB kept | serves |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
    rows = [f"| `{f.family}` | {f.jobs:,} | {f.gpu_hours:,.0f}{' (+' + str(f.unpriced) + ' unpriced)' if f.unpriced else ''} "
            f"| {f.cpu_request_hours:,.0f} | {f.peak_gpu_mem_gb:.1f} | {f.peak_host_mem_gb:.1f} | {f.disk_gb:,.1f} "
            f"| {f.kept_gb:,.1f} "
            f"| {'; '.join(f.serves) or '—'} |" for f in families]
    rows.append(f"| **total** | {total.jobs:,} | **{total.gpu_hours:,.0f}** | {total.cpu_request_hours:,.0f} "
                f"| {total.peak_gpu_mem_gb:.1f} | {total.peak_host_mem_gb:.1f} | **{total.disk_gb:,.1f}** "
                f"| **{total.kept_gb:,.1f}** | |")
    flags = [f"- `{f.family}` ({f.flagged} of {f.jobs} jobs): " + "; ".join(f.problems[:2])
             + (f" (+{len(f.problems) - 2} more)" if len(f.problems) > 2 else "") for f in families if f.flagged]
    if curves:
        per_step = [f"- {label}, {p}: {curve.describe()}" for kind, label in (("finetune", "fine-tuning"),
                                                                            ("search", "mask search"))
                    for p, curve in curves.get(kind, {}).items()]
    else:
        per_step = [f"- fine-tuning, {p}: {f.value:g} BERT-base steps/s of 32 x 128 ({f.source})"
                    for p, f in rates.items()]
        per_step += [f"- mask search, {p}: {f.value:g} steps/s ({f.source})" for p, f in (search_rates or {}).items()]
    lines = [head + "\n".join(rows), "", "Per step, by precision (each job at its own `--precision`; fp32 without one; "
             "a step of other rows on the line through the two measured batch sizes, `StepCurve`):",
             *per_step, "", "Requests that do not cover the estimate:" if flags else "Every request covers its estimate.",
             *flags]
    return "\n".join(lines) + "\n"


def assumptions_markdown() -> str:
    lines = ["| figure | value | source |", "|---|---:|---|"]
    lines += [f"| `{name}` | {fig.value:g} | {fig.source} |" for name, fig in A.FIGURES.items()]
    return "\n".join(lines) + "\n"


def as_json(families: Sequence[Family], total: Family, rates: Mapping[str, A.Figure], precision: str) -> dict:
    return {"precision": precision, "steps_per_s": {k: asdict(v) for k, v in rates.items()},
            "families": [asdict(f) for f in families], "total": asdict(total),
            "assumptions": {name: asdict(fig) for name, fig in A.FIGURES.items()}}
