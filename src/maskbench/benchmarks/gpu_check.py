"""One prepared check of maskbench on a GPU machine: speed and memory of its training, mask search and evaluation
per precision, a resumed run against an uninterrupted one, and the smoke DAG on CUDA.

    python -m maskbench.benchmarks.gpu_check [--out results/benchmarks/gpu_check.json] [--quick] [--sections a,b]
                                        [--allow-cpu] [--threads N]

Sections (``--sections`` runs a subset, by name):

1. ``environment``: torch, transformers and CUDA versions, the device, its capability and memory, the CPU count;
2. ``finetune_steps``: BERT-base's shape (``transformers.BertConfig()`` defaults, randomly initialised, nothing
   downloaded), 3 labels, batches of 32 and 128 x 128 random token ids, AdamW, through ``maskbench.training.loop.fit`` (its
   ``train_step``): steps/s, peak CUDA memory and model FLOPs utilisation (``mfu``: the step's model FLOPs, 6 x
   non-embedding parameters x tokens + attention's 12 x layers x hidden x length x tokens, per second, over the card's
   dense peak for that precision, ``PEAK_TFLOPS``) in fp32, fp32 + TF32, bf16 autocast and fp16 with a GradScaler
   (batch 32; fp32, TF32 and bf16 at 128, variants named ``<precision>_b128``);
3. ``mask_search_steps``: the same model under the mask search's engine (``attach_scores``: frozen weights,
   movement scores trained, the threshold schedule moved every step), fp32 against bf16, batches 32 and 128;
4. ``reference_loop``: the same model and batches through a plain loop written as the PyTorch and Transformers docs
   show it (``AutoModelForSequenceClassification``, a pinned-memory ``DataLoader`` with non-blocking copies, fused
   AdamW, ``torch.autocast``, linear warm-up), fp32 and bf16 at batches 32 and 128: the rate maskbench's loop is
   held to, measured in the same process;
   ``side_by_side``: the targets' ratios (bf16 against fp32, maskbench's loop against the reference loop, the mask
   search against fine-tuning) as ratios of medians over 3 interleaved rounds at each batch size;
5. ``evaluation``: a HANS-sized set (30,000 pairs of 128 tokens) through ``maskbench.text.batches.predict_proba``
   in batches of 256: pairs/s in fp32 and bf16;
6. ``resume_on_cuda``: a tiny fine-tuning through ``fit`` with a resume state, stopped by an exception after a few
   steps and resumed, against the same run uninterrupted: the largest weight difference and whether the weights
   are bit-equal (fp32, and fp16 with its GradScaler state on CUDA); also runs on the CPU;
7. ``profile``: ``torch.profiler`` over a few bf16 steps at batch 32 of fine-tuning, the mask search and the
   reference loop: the device's busy time per step against the step's wall time, host syncs per step and the
   operators taking the most device time (the tables go to ``<out>_profile.txt``);
8. ``compiled``: the reference loop's bf16 step at batch 32 with ``torch.compile(model)``: its compile time and
   rate (what a ``torch.compile`` switch would buy);
9. ``smoke_dag``: ``snakemake --configfile configs/smoke.yaml`` in a temporary folder, capped at 4 minutes
   (``--smoke-timeout-s``), and
   the devices its steps recorded (CUDA only; snakemake is imported lazily).

Sections 2-5 and 7-9 need CUDA and are "skipped" without it (``--allow-cpu`` runs 2-4 on the CPU anyway, at
``--quick`` sizes in the tests: the code paths, not numbers). Each section records ``status`` (ok / skipped /
failed), a ``reason`` when not ok (a failure: the traceback's last lines), and its numbers; the JSON is rewritten
after every section, so a crash or a timeout keeps what finished. Each section prints one summary line.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from maskbench.precision import Precision
from maskbench.resume import read_state
from maskbench.runtime import atomic_write_json, git_commit, seed_everything

REPO = Path(__file__).resolve().parents[3]
SECTIONS = ("environment", "finetune_steps", "mask_search_steps", "reference_loop", "side_by_side", "evaluation",
            "resume_on_cuda", "profile", "compiled", "smoke_dag")
NUM_LABELS = 3
LEARNING_RATE = 3e-5  # the nlu fine-tuning rate; the timings do not depend on it
FINETUNE_VARIANTS = {"fp32": Precision("fp32"), "fp32_tf32": Precision("fp32", tf32=True),
                     "bf16": Precision("bf16"), "fp16_scaler": Precision("fp16")}
LARGE_BATCH_VARIANTS = ("fp32", "fp32_tf32", "bf16")  # at the larger batches (paper A's and C's 128)
SEARCH_VARIANTS = {"fp32": Precision("fp32"), "bf16": Precision("bf16")}
REFERENCE_VARIANTS = ("fp32", "bf16")
# dense (no sparsity) peak TFLOP/s per precision, from NVIDIA's data sheets (H100/H200 SXM: FP32 67, TF32 495, BF16
# and FP16 989; H100 PCIe: 51 / 378 / 756; A100: 19.5 / 156 / 312), matched on the device's name
PEAK_TFLOPS = {"H200": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
               "H100 PCIe": {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0},
               "H100": {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4},
               "A100": {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}}
EVAL_VARIANTS = {"fp32": Precision("fp32"), "bf16": Precision("bf16")}


class Interrupted(Exception):
    """What ``StopAfter`` raises: a job killed mid-run."""


class Skipped(Exception):
    """A section that cannot run here (no CUDA, snakemake missing): its reason."""


@dataclass(frozen=True)
class Sizes:
    """What a section runs on: the full check's sizes, or ``--quick``'s tiny ones (CPU tests)."""

    model: dict  # BertConfig keyword arguments
    batch: int
    seq: int
    large_batches: tuple[int, ...]  # the fine-tuning, mask search and reference loop also at these batch sizes
    warmup_steps: int
    timed_steps: int
    eval_pairs: int
    eval_batch: int
    resume_steps: int
    resume_stop_after: int
    smoke_timeout_s: float = 240  # the smoke DAG's cap (--smoke-timeout-s)


FULL = Sizes(model={}, batch=32, seq=128, large_batches=(128,), warmup_steps=5, timed_steps=40, eval_pairs=30_000,
             eval_batch=256, resume_steps=12, resume_stop_after=7)
QUICK = Sizes(model={"vocab_size": 500, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "intermediate_size": 64}, batch=4, seq=16, large_batches=(8,), warmup_steps=1, timed_steps=2, eval_pairs=64,
              eval_batch=32, resume_steps=6, resume_stop_after=4)
RESUME_MODEL = {"vocab_size": 500, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                "intermediate_size": 64}


# ------------------------------------------------------------------------------------------------ helpers
def cuda_present() -> bool:
    return torch.cuda.is_available()


def require_cuda(allow_cpu: bool = False) -> torch.device:
    if cuda_present():
        return torch.device("cuda")
    if allow_cpu:
        return torch.device("cpu")
    raise Skipped("no CUDA device: the precision settings act on CUDA only (--allow-cpu runs the code path on the CPU)")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def reset_memory(device: torch.device) -> None:
    if device.type == "cuda":  # the last variant's tensors freed before the peak is reset (a collection costs ~0.6 s)
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def peak_memory_mib(device: torch.device) -> float | None:
    if device.type != "cuda":
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def random_bert(model_kwargs: dict, seed: int = 0):
    """A randomly initialised ``BertForSequenceClassification``: BertConfig's defaults (bert-base-uncased's shape)
    unless ``model_kwargs`` says otherwise."""
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(seed)
    return BertForSequenceClassification(BertConfig(num_labels=NUM_LABELS, **model_kwargs))


class RandomTokens:
    """A stand-in tokenizer for ``EncodedPairs``: every row ``seq`` random token ids (no vocabulary file, nothing
    downloaded), so the data go through maskbench's own batching and padding."""

    pad_token_id = 0

    def __init__(self, vocab: int, seq: int, seed: int):
        self.vocab, self.seq, self.generator = vocab, seq, np.random.default_rng(seed)

    def __call__(self, text_a, text_b=None, truncation=True, max_length=None):
        n = len(text_a)
        ids = self.generator.integers(1, self.vocab, size=(n, self.seq))
        types = np.zeros((n, self.seq), dtype=np.int64)
        types[:, self.seq // 2:] = 1
        return {"input_ids": ids.tolist(), "token_type_ids": types.tolist()}


def random_pairs(n: int, vocab: int, seq: int, seed: int, labels: bool = True):
    from maskbench.text.batches import EncodedPairs

    rng = np.random.default_rng(seed + 1)
    blank = [""] * n
    return EncodedPairs(RandomTokens(vocab, seq, seed), blank, ["b"] * n,
                        rng.integers(0, NUM_LABELS, size=n) if labels else None, seq)


class StepClock:
    """A ``fit`` hook timing the steps after ``warmup`` (CUDA synchronised at both marks)."""

    def __init__(self, warmup: int, device: torch.device):
        self.warmup, self.device = warmup, device
        self.started = self.ended = None
        self.steps = 0

    def before_step(self, step: int, total: int) -> None:
        if step == self.warmup:
            synchronize(self.device)
            self.started = time.perf_counter()

    def after_step(self, step: int, total: int, model) -> bool:
        if step > self.warmup:
            self.steps += 1
        if step == total:
            synchronize(self.device)
            self.ended = time.perf_counter()
        return False

    def steps_per_second(self) -> float:
        return self.steps / (self.ended - self.started)


def model_flops_per_step(model, batch: int, seq: int) -> float:
    """A training step's model FLOPs (forward and backward, no recomputation): 6 x the non-embedding parameters x
    tokens, plus attention's scores and mixing, 12 x layers x hidden x length x tokens (Kaplan et al. 2020; PaLM's
    appendix B). The mask search's step counts the same: its backward forms the scores' gradient where fine-tuning
    forms the weights'. Counted on the plain model (before scores are attached)."""
    config = model.config
    params = sum(p.numel() for name, p in model.named_parameters() if ".embeddings." not in f".{name}")
    tokens = batch * seq
    return 6.0 * params * tokens + 12.0 * config.num_hidden_layers * config.hidden_size * seq * tokens


def peak_tflops(precision_name: str) -> float | None:
    """The card's dense peak for a variant's precision (``PEAK_TFLOPS``), None off CUDA or for an unknown card."""
    if not cuda_present():
        return None
    name = torch.cuda.get_device_properties(0).name
    kind = {"fp32_tf32": "tf32", "fp16_scaler": "fp16"}.get(precision_name.split("_b")[0], precision_name.split("_b")[0])
    for card, peaks in PEAK_TFLOPS.items():
        if card in name:
            return peaks.get(kind)
    return None


def utilisation(flops_per_step: float, steps_per_s: float, variant: str) -> dict:
    """The rate as model TFLOP/s and as a share of the card's peak for the variant's precision."""
    achieved = flops_per_step * steps_per_s / 1e12
    peak = peak_tflops(variant)
    return {"model_tflops_per_s": round(achieved, 2), "peak_tflops": peak,
            "mfu": round(achieved / peak, 4) if peak else None}


def variant_name(precision_name: str, batch: int, sizes: Sizes) -> str:
    return precision_name if batch == sizes.batch else f"{precision_name}_b{batch}"


def batch_plan(sizes: Sizes, small: Sequence[str], large: Sequence[str]) -> list[tuple[int, str]]:
    """(batch, precision) pairs: ``small`` at the check's batch, ``large`` at each larger one."""
    return [(sizes.batch, name) for name in small] + [(b, name) for b in sizes.large_batches for name in large]


def timed_fit(model, device, precision: Precision, sizes: Sizes, groups: list[dict] | None = None,
              step_hook_of: Callable | None = None, objective_extra: Callable | None = None,
              extra_hooks: Sequence = ()) -> dict:
    """``fit`` over ``warmup + timed`` steps of random batches; steps/s of the timed ones and the peak memory."""
    from maskbench.objectives.logits import logits_objective
    from maskbench.text.batches import model_inputs
    from maskbench.training.hparams import TrainHParams
    from maskbench.training.loop import fit

    total = sizes.warmup_steps + sizes.timed_steps
    vocab = model.config.vocab_size
    data = random_pairs(total * sizes.batch, vocab, sizes.seq, seed=1)
    hp = TrainHParams(epochs=1, batch_size=sizes.batch, learning_rate=LEARNING_RATE, max_length=sizes.seq,
                      warmup=0.1, log_every=10**9)
    objective = logits_objective(torch.nn.functional.cross_entropy, model_inputs, device,
                                 regularizer=objective_extra)
    clock = StepClock(sizes.warmup_steps, device)
    reset_memory(device)
    model.to(device)
    fit(model, data, objective, hp, seed=0, device=device, groups=groups,
        step_hook=step_hook_of, hooks=[clock, *extra_hooks], precision=precision)
    return {"steps_per_s": round(clock.steps_per_second(), 3), "timed_steps": clock.steps,
            "warmup_steps": sizes.warmup_steps, "batch_size": sizes.batch, "max_length": sizes.seq,
            "peak_memory_mib": peak_memory_mib(device)}


def free(*objects) -> None:
    del objects
    if cuda_present():
        gc.collect()
        torch.cuda.empty_cache()


# ------------------------------------------------------------------------------------------------ sections
def section_environment(sizes: Sizes, allow_cpu: bool) -> dict:
    import transformers

    out = {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
           "cuda_runtime": torch.version.cuda, "cuda_available": cuda_present(), "cpu_count": os.cpu_count(),
           "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
           "torch_threads": torch.get_num_threads(), "host": platform.node()}
    if cuda_present():
        props = torch.cuda.get_device_properties(0)
        out.update({"device_name": props.name, "capability": list(torch.cuda.get_device_capability(0)),
                    "memory_gib": round(props.total_memory / 2**30, 2), "device_count": torch.cuda.device_count(),
                    "cudnn": torch.backends.cudnn.version(), "bf16_supported": torch.cuda.is_bf16_supported()})
    return out


def section_finetune_steps(sizes: Sizes, allow_cpu: bool) -> dict:
    device = require_cuda(allow_cpu)
    out = {"device": str(device), "model": "BertConfig() defaults" if not sizes.model else sizes.model,
           "batch": sizes.batch, "seq": sizes.seq, "optimizer": "AdamW", "variants": {}}
    for batch, name in batch_plan(sizes, list(FINETUNE_VARIANTS), LARGE_BATCH_VARIANTS):
        model = random_bert(sizes.model)
        flops = model_flops_per_step(model, batch, sizes.seq)
        numbers = timed_fit(model, device, FINETUNE_VARIANTS[name], dataclasses.replace(sizes, batch=batch))
        out["variants"][variant_name(name, batch, sizes)] = {**numbers, **utilisation(flops, numbers["steps_per_s"],
                                                                                      name)}
        free(model)
    return out


def section_mask_search_steps(sizes: Sizes, allow_cpu: bool) -> dict:
    from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec

    device = require_cuda(allow_cpu)
    spec = MaskSearchSpec()
    out = {"device": str(device), "method": spec.method, "modules": spec.modules, "batch": sizes.batch,
           "seq": sizes.seq, "variants": {}}
    for batch, name in batch_plan(sizes, list(SEARCH_VARIANTS), list(SEARCH_VARIANTS)):
        numbers = timed_search(sizes, batch, name, device, spec)
        out["variants"][variant_name(name, batch, sizes)] = numbers
    return out


def timed_search(sizes: Sizes, batch: int, name: str, device, spec, extra_hooks: Sequence = ()) -> dict:
    """One mask-search variant: BERT-base with attached scores (weights frozen) through ``fit``."""
    from maskbench.tracks.nlu.mask_search_spec import attach_scores
    from maskbench.training.optim import trainable_groups

    model = random_bert(sizes.model)
    flops = model_flops_per_step(model, batch, sizes.seq)
    scores = attach_scores(model, spec, sizes.warmup_steps + sizes.timed_steps)
    # the mask search's groups: the scores alone at the score rate (paper A's 0.1), weights frozen
    groups = trainable_groups(model, LEARNING_RATE, 0.0, scores=scores, score_lr=0.1, weights=False)
    numbers = timed_fit(model, device, SEARCH_VARIANTS[name], dataclasses.replace(sizes, batch=batch), groups=groups,
                        step_hook_of=scores.set_step, objective_extra=scores.regularization, extra_hooks=extra_hooks)
    numbers = {**numbers, **utilisation(flops, numbers["steps_per_s"], name),
               "n_scores": sum(p.numel() for p in scores.parameters()),
               "density_after": round(float(scores.density()), 6)}
    free(model, scores)
    return numbers


def reference_fit(sizes: Sizes, batch: int, name: str, device, on_step: Callable[[], None] | None = None,
                  compiled: bool = False) -> dict:
    """The plain loop: what the PyTorch and Transformers docs show, nothing of maskbench's. Random token ids in a
    ``TensorDataset``, a shuffled ``DataLoader`` with pinned memory, non-blocking copies, fused AdamW (on CUDA),
    a linear warm-up and decay, ``torch.autocast`` for bf16, gradient clipping at 1.0; TF32 off (plain fp32)."""
    from torch.utils.data import DataLoader, TensorDataset
    from transformers import AutoModelForSequenceClassification, BertConfig, get_linear_schedule_with_warmup

    cuda = device.type == "cuda"
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(BertConfig(num_labels=NUM_LABELS, **sizes.model))
    flops = model_flops_per_step(model, batch, sizes.seq)
    model.to(device).train()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    total = sizes.warmup_steps + sizes.timed_steps
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(1, model.config.vocab_size, (total * batch, sizes.seq), generator=generator)
    types = torch.zeros_like(ids)
    types[:, sizes.seq // 2:] = 1
    labels = torch.randint(0, NUM_LABELS, (total * batch,), generator=generator)
    loader = DataLoader(TensorDataset(ids, types, torch.ones_like(ids), labels), batch_size=batch, shuffle=True,
                        pin_memory=cuda)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01, fused=cuda)
    scheduler = get_linear_schedule_with_warmup(optimizer, max(1, total // 10), total)
    step_model = torch.compile(model) if compiled else model
    reset_memory(device)
    began = time.perf_counter()
    started = warm_s = None
    for step, rows in enumerate(loader):
        if step == sizes.warmup_steps:
            synchronize(device)
            started = time.perf_counter()
            warm_s = started - began
        input_ids, token_type_ids, attention_mask, targets = (t.to(device, non_blocking=True) for t in rows)
        with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=cuda and name == "bf16"):
            loss = step_model(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask,
                              labels=targets).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        if on_step is not None:
            on_step()
    synchronize(device)
    rate = sizes.timed_steps / (time.perf_counter() - started)
    out = {"steps_per_s": round(rate, 3), "timed_steps": sizes.timed_steps, "warmup_steps": sizes.warmup_steps,
           "warmup_seconds": round(warm_s, 2), "batch_size": batch, "max_length": sizes.seq,
           "peak_memory_mib": peak_memory_mib(device), **utilisation(flops, rate, name)}
    free(model, step_model, optimizer)
    return out


def section_reference_loop(sizes: Sizes, allow_cpu: bool) -> dict:
    device = require_cuda(allow_cpu)
    out = {"device": str(device), "model": "BertConfig() defaults" if not sizes.model else sizes.model,
           "batch": sizes.batch, "seq": sizes.seq, "loop": "AutoModelForSequenceClassification, DataLoader(pin_memory), "
           "non_blocking copies, fused AdamW, torch.autocast, get_linear_schedule_with_warmup", "variants": {}}
    for batch, name in batch_plan(sizes, REFERENCE_VARIANTS, REFERENCE_VARIANTS):
        out["variants"][variant_name(name, batch, sizes)] = reference_fit(sizes, batch, name, device)
    return out


class ProfilerSteps:
    """A ``fit`` hook stepping a ``torch.profiler`` schedule after every step."""

    def __init__(self, step: Callable[[], None]):
        self.step = step

    def before_step(self, step: int, total: int) -> None:
        pass

    def after_step(self, step: int, total: int, model) -> bool:
        self.step()
        return False


PROFILE_WAIT, PROFILE_WARMUP, PROFILE_ACTIVE = 2, 2, 4
SYNC_EVENTS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "aten::_local_scalar_dense")


def profiled(run: Callable[[Callable[[], None]], None], device) -> tuple[dict, str]:
    """``run(step)`` under ``torch.profiler`` (``step`` called after every training step; the schedule waits 2,
    warms up 2 and records 4): device time per recorded step (the kernels' own time, summed) against the step's span
    on the host (``host_step_ms``; profiled, so slower than the timed runs), kernel launches and host syncs per step
    (``aten::_local_scalar_dense`` is a tensor read on the host: ``.item()``, ``float()``, ``bool()``), and the
    operator table (top 15 by self device time)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities,
                 schedule=schedule(wait=PROFILE_WAIT, warmup=PROFILE_WARMUP, active=PROFILE_ACTIVE)) as prof:
        run(prof.step)
    averages = prof.key_averages()

    def device_us(event) -> float:
        return float(getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0.0)) or 0.0)

    # the kernels' own time; the profiler's annotations on the device timeline (ProfilerStep#, Optimizer.step#...)
    # span kernels already counted
    kernels_us = sum(device_us(e) for e in averages if getattr(e, "device_type", None) == DeviceType.CUDA
                     and not getattr(e, "is_user_annotation", False) and "#" not in e.key
                     and not e.key.startswith("ProfilerStep"))
    # the profiler's own span of each recorded step on the host: the step's wall time as the host saw it
    host_us = sum(float(e.cpu_time_total) for e in averages if e.key.startswith("ProfilerStep"))
    syncs = {name: sum(e.count for e in averages if e.key == name) / PROFILE_ACTIVE for name in SYNC_EVENTS}
    launches = sum(e.count for e in averages if e.key in ("cudaLaunchKernel", "cuLaunchKernel", "cudaLaunchKernelExC"))
    sort_by = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    try:
        table = averages.table(sort_by=sort_by, row_limit=15)
    except (AttributeError, KeyError):
        table = averages.table(sort_by="self_device_time_total", row_limit=15)
    table += "\n\nBy self CPU time (the host's share of each operator):\n\n" + averages.table(
        sort_by="self_cpu_time_total", row_limit=12)
    numbers = {"recorded_steps": PROFILE_ACTIVE, "device_ms_per_step": round(kernels_us / PROFILE_ACTIVE / 1e3, 3),
               "host_step_ms": round(host_us / PROFILE_ACTIVE / 1e3, 3),
               "kernel_launches_per_step": launches / PROFILE_ACTIVE, "host_syncs_per_step": syncs}
    return numbers, table


def section_profile(sizes: Sizes, allow_cpu: bool, out: Path | None = None) -> dict:
    from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec

    device = require_cuda(allow_cpu)
    steps = PROFILE_WAIT + PROFILE_WARMUP + PROFILE_ACTIVE + 1
    short = dataclasses.replace(sizes, warmup_steps=1, timed_steps=steps - 1)
    runs = {
        "finetune_bf16": lambda step: timed_fit(random_bert(sizes.model), device, FINETUNE_VARIANTS["bf16"], short,
                                                extra_hooks=[ProfilerSteps(step)]),
        "mask_search_bf16": lambda step: timed_search(short, sizes.batch, "bf16", device, MaskSearchSpec(),
                                                      extra_hooks=[ProfilerSteps(step)]),
        "reference_bf16": lambda step: reference_fit(short, sizes.batch, "bf16", device, on_step=step)}
    result = {"device": str(device), "batch": sizes.batch, "seq": sizes.seq, "runs": {}}
    tables = []
    for name, run in runs.items():
        numbers, table = profiled(run, device)
        result["runs"][name] = numbers
        tables.append(f"## {name} (batch {sizes.batch} x {sizes.seq}, {PROFILE_ACTIVE} steps recorded)\n\n{table}\n")
        free()
    if out is not None:
        text_path = out.with_name(out.stem + "_profile.txt")
        text_path.write_text("\n".join(tables), encoding="utf-8")
        result["tables"] = str(text_path)
    return result


ROUNDS = 3


def section_side_by_side(sizes: Sizes, allow_cpu: bool) -> dict:
    """The targets' ratios from interleaved runs: ``ROUNDS`` rounds, each running maskbench's bf16 fine-tuning, the
    reference loop's bf16, maskbench's bf16 mask search (and, at the check's batch, maskbench's fp32 fine-tuning)
    one after the other at each batch size; each rate's median over the rounds, and the ratios of medians. A card's
    host can drift by a third between two runs of one loop minutes apart, so the ratios come from runs this close."""
    from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec

    device = require_cuda(allow_cpu)
    out = {"device": str(device), "seq": sizes.seq, "rounds": ROUNDS, "batches": {}}
    for batch in (sizes.batch, *sizes.large_batches):
        at = dataclasses.replace(sizes, batch=batch)
        runs = {"finetune_bf16": lambda at=at: timed_fit(random_bert(sizes.model), device, FINETUNE_VARIANTS["bf16"], at),
                "reference_bf16": lambda batch=batch: reference_fit(sizes, batch, "bf16", device),
                "mask_search_bf16": lambda batch=batch: timed_search(sizes, batch, "bf16", device, MaskSearchSpec())}
        if batch == sizes.batch:
            runs["finetune_fp32"] = lambda at=at: timed_fit(random_bert(sizes.model), device, FINETUNE_VARIANTS["fp32"],
                                                            at)
        rates: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(ROUNDS):
            for name, run in runs.items():
                rates[name].append(run()["steps_per_s"])
                free()
        medians = {name: float(np.median(values)) for name, values in rates.items()}
        entry = {"rates": rates, "medians": medians,
                 "finetune_vs_reference": round(medians["finetune_bf16"] / medians["reference_bf16"], 3),
                 "search_vs_finetune": round(medians["mask_search_bf16"] / medians["finetune_bf16"], 3)}
        if "finetune_fp32" in medians:
            entry["bf16_vs_fp32"] = round(medians["finetune_bf16"] / medians["finetune_fp32"], 3)
        out["batches"][str(batch)] = entry
    return out


def section_compiled(sizes: Sizes, allow_cpu: bool) -> dict:
    device = require_cuda(allow_cpu)
    eager = reference_fit(sizes, sizes.batch, "bf16", device)
    compiled = reference_fit(sizes, sizes.batch, "bf16", device, compiled=True)
    again = reference_fit(sizes, sizes.batch, "bf16", device)  # eager after it too: the host's drift
    return {"device": str(device), "batch": sizes.batch, "seq": sizes.seq,
            "variants": {"bf16_eager": eager, "bf16_compiled": compiled, "bf16_eager_after": again},
            "compiled_vs_eager": round(2 * compiled["steps_per_s"] / (eager["steps_per_s"] + again["steps_per_s"]),
                                       3)}


def section_evaluation(sizes: Sizes, allow_cpu: bool) -> dict:
    from maskbench.text.batches import predict_proba

    device = require_cuda(allow_cpu)
    out = {"device": str(device), "pairs": sizes.eval_pairs, "seq": sizes.seq, "batch": sizes.eval_batch,
           "variants": {}}
    model = random_bert(sizes.model)
    data = random_pairs(sizes.eval_pairs, model.config.vocab_size, sizes.seq, seed=2, labels=False)
    reference = None
    for name, precision in EVAL_VARIANTS.items():
        reset_memory(device)
        # warm-up: one small pass (kernel selection, the model's copy to the device) untimed
        predict_proba(model, random_pairs(sizes.eval_batch, model.config.vocab_size, sizes.seq, seed=3, labels=False),
                      sizes.eval_batch, device, precision=precision)
        synchronize(device)
        started = time.perf_counter()
        probs = predict_proba(model, data, sizes.eval_batch, device, precision=precision)
        synchronize(device)
        seconds = time.perf_counter() - started
        entry = {"pairs_per_s": round(len(data) / seconds, 1), "seconds": round(seconds, 3),
                 "peak_memory_mib": peak_memory_mib(device)}
        if reference is None:
            reference = probs
        else:  # how far the cheaper precision's probabilities and decisions move from fp32's
            entry["max_abs_prob_diff_vs_fp32"] = float(np.abs(probs - reference).max())
            entry["argmax_agreement_vs_fp32"] = float((probs.argmax(1) == reference.argmax(1)).mean())
        out["variants"][name] = entry
    free(model, data)
    return out


class StopAfter:
    """A ``fit`` hook that raises after ``n`` steps: a job killed mid-run."""

    def __init__(self, n: int):
        self.n = n

    def before_step(self, step: int, total: int) -> None:
        pass

    def after_step(self, step: int, total: int, model) -> bool:
        if step == self.n:
            raise Interrupted(f"stopped after step {step}")
        return False


def resumable_run(device, precision: Precision, sizes: Sizes, state: Path | None, stop_after: int | None):
    from maskbench.objectives.logits import logits_objective
    from maskbench.resume import Resume
    from maskbench.text.batches import model_inputs
    from maskbench.training.hparams import TrainHParams
    from maskbench.training.loop import fit

    seed_everything(0)
    model = random_bert(RESUME_MODEL, seed=0)
    data = random_pairs(sizes.resume_steps * 4, RESUME_MODEL["vocab_size"], 16, seed=4)
    hp = TrainHParams(epochs=2, batch_size=8, learning_rate=1e-3, max_length=16, warmup=0.2, log_every=10**9)
    objective = logits_objective(torch.nn.functional.cross_entropy, model_inputs, device)
    resume = Resume(state, every=2, key="gpu_check") if state is not None else None
    hooks = [StopAfter(stop_after)] if stop_after is not None else []
    fit(model, data, objective, hp, seed=0, device=device, hooks=hooks, resume=resume, precision=precision)
    return {k: v.detach().cpu() for k, v in model.state_dict().items()}


def compare_weights(a: dict, b: dict) -> dict:
    diff = max(float((a[k].double() - b[k].double()).abs().max()) for k in a)
    return {"max_abs_diff": diff, "equal": all(torch.equal(a[k], b[k]) for k in a)}


def section_resume_on_cuda(sizes: Sizes, allow_cpu: bool) -> dict:
    device = torch.device("cuda" if cuda_present() else "cpu")
    kinds = ["fp32", "fp16"] if device.type == "cuda" else ["fp32"]
    out = {"device": str(device), "model": RESUME_MODEL, "variants": {}}
    if device.type != "cuda":
        out["note"] = "no CUDA device: the resume run on the CPU (fp16 is CUDA-only)"
    for kind in kinds:
        precision = Precision(kind)
        uninterrupted = resumable_run(device, precision, sizes, None, None)
        repeated = resumable_run(device, precision, sizes, None, None)
        with tempfile.TemporaryDirectory() as tmp:
            state = Path(tmp) / ".resume.pt"
            stopped_at = None
            try:
                resumable_run(device, precision, sizes, state, sizes.resume_stop_after)
            except Interrupted:
                stopped_at = sizes.resume_stop_after
            saved = read_state(state)  # the verified state the loop wrote (checksum header first)
            resumed = resumable_run(device, precision, sizes, state, None)
        entry = {"stopped_after_step": stopped_at, "resumed_from_step": int(saved["step"]),
                 "grad_scaler_saved": "grad_scaler" in saved,
                 **compare_weights(uninterrupted, resumed),
                 # two uninterrupted runs: whether the kernels themselves repeat bit for bit
                 "uninterrupted_repeat": compare_weights(uninterrupted, repeated)}
        out["variants"][kind] = entry
    out["equal"] = all(v["equal"] for v in out["variants"].values())
    return out


def section_smoke_dag(sizes: Sizes, allow_cpu: bool) -> dict:
    if not cuda_present():
        raise Skipped("no CUDA device")
    try:
        import snakemake  # noqa: F401
    except ImportError as err:
        raise Skipped(f"snakemake is not installed ({err})") from None
    workdir = Path(tempfile.mkdtemp(prefix="maskbench-smoke-"))
    cores = os.cpu_count() or 1
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", str(cores),
           "--configfile", str(REPO / "configs/smoke.yaml"), "--directory", str(workdir)]
    env = {**os.environ, "PATH": os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")]),
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    returncode, stderr, timed_out = run_capped(cmd, workdir, env, sizes.smoke_timeout_s)
    wall = time.perf_counter() - started
    out = {"workdir": str(workdir), "cores": cores, "wall_s": round(wall, 1), "timeout_s": sizes.smoke_timeout_s,
           "timed_out": timed_out, "returncode": returncode, **smoke_progress(stderr), **recorded_devices(workdir)}
    if returncode != 0:
        out["stderr_tail"] = stderr[-3000:]
        shutil.rmtree(workdir, ignore_errors=True)
        raise SectionFailed(out, "timed out" if timed_out else f"snakemake exited {returncode}")
    shutil.rmtree(workdir, ignore_errors=True)
    return out


def run_capped(cmd: list[str], cwd: Path, env: dict, timeout: float) -> tuple[int | None, str, bool]:
    """Run ``cmd`` in a session of its own; past ``timeout`` stop the whole process group (snakemake and the jobs
    it started), SIGTERM first so that snakemake removes its incomplete outputs. Returns (exit code or None,
    stderr, timed out)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=timeout)
        return proc.returncode, stderr, False
    except subprocess.TimeoutExpired:
        for sig, grace in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                _, stderr = proc.communicate(timeout=grace)
                break
            except subprocess.TimeoutExpired:
                stderr = ""
        return None, stderr or "", True


def smoke_progress(stderr: str) -> dict:
    """snakemake's own count: the last 'N of M steps (P%) done' line."""
    import re

    found = re.findall(r"(\d+) of (\d+) steps \((\d+)%\) done", stderr)
    if not found:
        return {"jobs_done": 0, "jobs_planned": None}
    done, planned, _ = found[-1]
    return {"jobs_done": int(done), "jobs_planned": int(planned)}


def recorded_devices(workdir: Path) -> dict:
    """The devices the steps recorded: the ``"device"`` of every output JSON (training and mask-search summaries)."""
    counts: dict[str, int] = {}
    for path in workdir.rglob("*.json"):
        if ".snakemake" in path.parts:
            continue
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and isinstance(record.get("device"), str):
            counts[record["device"]] = counts.get(record["device"], 0) + 1
    return {"devices_recorded": counts, "steps_on_cuda": any(d.startswith("cuda") for d in counts)}


class SectionFailed(Exception):
    """A section that ran but failed, with the numbers it has."""

    def __init__(self, numbers: dict, reason: str):
        super().__init__(reason)
        self.numbers, self.reason = numbers, reason


RUNNERS: dict[str, Callable[[Sizes, bool], dict]] = {
    "environment": section_environment, "finetune_steps": section_finetune_steps,
    "mask_search_steps": section_mask_search_steps, "reference_loop": section_reference_loop,
    "side_by_side": section_side_by_side,
    "evaluation": section_evaluation, "resume_on_cuda": section_resume_on_cuda, "profile": section_profile,
    "compiled": section_compiled, "smoke_dag": section_smoke_dag}


def summary_line(name: str, result: dict) -> str:
    status = result["status"]
    if status != "ok":
        return f"{name}: {status} ({result.get('reason', '').splitlines()[-1] if result.get('reason') else ''})"
    variants = result.get("variants", {})
    parts = []
    for variant, numbers in variants.items():
        for key in ("steps_per_s", "pairs_per_s", "max_abs_diff"):
            if key in numbers:
                parts.append(f"{variant} {key} {numbers[key]}"
                             + (f" peak {numbers['peak_memory_mib']} MiB" if numbers.get("peak_memory_mib") else ""))
    if name == "environment":
        parts.append(f"torch {result['torch']} cuda {result['cuda_runtime']} {result.get('device_name', 'no GPU')}")
    if name == "smoke_dag":
        parts.append(f"{result['jobs_done']}/{result['jobs_planned']} jobs in {result['wall_s']} s, devices "
                     f"{result['devices_recorded']}")
    if name == "resume_on_cuda":
        parts.append(f"equal {result['equal']}")
    for batch, entry in result.get("batches", {}).items():  # side by side
        parts.append(f"batch {batch}: ours/reference {entry['finetune_vs_reference']}, search/finetune "
                     f"{entry['search_vs_finetune']}" + (f", bf16/fp32 {entry['bf16_vs_fp32']}" if "bf16_vs_fp32" in entry
                                                          else ""))
    for run, numbers in result.get("runs", {}).items():  # the profile
        parts.append(f"{run} device {numbers['device_ms_per_step']} ms of a {numbers['host_step_ms']} ms step")
    return f"{name}: ok, " + "; ".join(parts)


def run_sections(names: list[str], sizes: Sizes, out: Path, allow_cpu: bool = False, commit: str | None = None) -> dict:
    begun = time.perf_counter()
    quick = dataclasses.replace(sizes, smoke_timeout_s=QUICK.smoke_timeout_s) == QUICK  # the cap aside
    report = {"tool": "maskbench.benchmarks.gpu_check", "commit": commit or git_commit(REPO), "quick": quick,
              "sections": {}}
    for name in names:
        started = time.perf_counter()
        try:
            runner = RUNNERS[name]
            numbers = runner(sizes, allow_cpu, out) if runner is section_profile else runner(sizes, allow_cpu)
            result = {"status": "ok", **numbers}
        except Skipped as err:
            result = {"status": "skipped", "reason": str(err)}
        except SectionFailed as err:
            result = {"status": "failed", "reason": err.reason, **err.numbers}
        except Exception:  # noqa: BLE001  every failure is recorded, and the next section still runs
            result = {"status": "failed", "reason": "".join(traceback.format_exc().splitlines(True)[-8:])}
        result["section_seconds"] = round(time.perf_counter() - started, 2)
        report["sections"][name] = result
        report["total_seconds"] = round(time.perf_counter() - begun, 2)
        atomic_write_json(out, report)
        try:
            line = summary_line(name, result)
        except Exception as err:  # noqa: BLE001  the JSON is written; a summary line must not stop the check
            line = f"{name}: {result['status']} (no summary line: {err!r})"
        print(line, flush=True)
    return report


RATE_SECTIONS = ("finetune_steps", "mask_search_steps", "reference_loop", "evaluation")


def markdown(report: dict, source: str) -> str:
    """A recorded check as Markdown: one row per measured variant (rate, ratio to fp32 at the same batch size in the
    same section, measured side by side in one process, model FLOPs utilisation, peak memory), then every other
    section's status and its headline numbers."""
    sections = report.get("sections", {})
    device = sections.get("environment", {}).get("device_name", "no GPU")
    rows = ["| section | variant | rate | vs fp32 | MFU | peak CUDA memory (MiB) |", "|---|---|---:|---:|---:|---:|"]
    for name in RATE_SECTIONS:
        section = sections.get(name, {})
        if section.get("status") != "ok":
            continue
        variants = section.get("variants", {})
        key = "pairs_per_s" if name == "evaluation" else "steps_per_s"
        for variant, numbers in variants.items():
            suffix = variant[variant.rindex("_b"):] if "_b" in variant and variant.rsplit("_b", 1)[1].isdigit() else ""
            base = variants.get("fp32" + suffix, {}).get(key)
            ratio = f"{numbers[key] / base:.2f}x" if base else "–"
            mfu = f"{100 * numbers['mfu']:.1f} %" if numbers.get("mfu") else "–"
            rows.append(f"| {name} | {variant} | {numbers[key]:,.1f} {key.replace('_per_s', '/s')} | {ratio} | {mfu} | "
                        f"{numbers.get('peak_memory_mib') or float('nan'):,.0f} |")
    lines = [f"On {device} (`{source}`, commit `{report.get('commit', '?')}`, {report.get('total_seconds', '?')} s "
             "in all):", "", *rows, ""]
    for name, section in sections.items():
        if name in ("environment", *RATE_SECTIONS):
            continue
        status = section.get("status")
        if name == "resume_on_cuda":
            detail = f"resumed weights equal the uninterrupted run's: {section.get('equal')}"
        elif status == "ok" and name == "profile":
            detail = "; ".join(f"{run}: device {n['device_ms_per_step']} ms of a {n['host_step_ms']} ms step, "
                               f"{n['host_syncs_per_step'].get('aten::_local_scalar_dense', 0):g} host reads a step"
                               for run, n in section.get("runs", {}).items())
        elif status == "ok" and name == "side_by_side":
            detail = "; ".join(f"batch {batch}: maskbench / reference loop {e['finetune_vs_reference']}x, mask search / "
                               f"fine-tuning {e['search_vs_finetune']}x"
                               + (f", bf16 / fp32 {e['bf16_vs_fp32']}x" if "bf16_vs_fp32" in e else "")
                               for batch, e in section.get("batches", {}).items())
            detail += f" (ratios of medians over {section.get('rounds')} interleaved rounds)"
        elif status == "ok" and name == "compiled":
            detail = f"torch.compile / eager, bf16: {section.get('compiled_vs_eager')}x"
        elif status == "ok" and "jobs_done" in section:
            detail = (f"{section['jobs_done']} of {section['jobs_planned']} jobs in {section['wall_s']} s on "
                      f"{section['cores']} cores, steps' recorded devices {section.get('devices_recorded')}"
                      + (f" (commit `{section['commit']}`)" if section.get("commit") else ""))
        else:
            detail = (section.get("reason") or "").splitlines()[0] if section.get("reason") else ""
        lines.append(textwrap.fill(f"- `{name}`: {status}" + (f" — {detail}" if detail else ""), width=160,
                                   subsequent_indent="  ", break_on_hyphens=False))
    return "\n".join(lines) + "\n"


def parse_sections(text: str | None) -> list[str]:
    if not text:
        return list(SECTIONS)
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        raise SystemExit(f"--sections: unknown section(s) {unknown}; known: {list(SECTIONS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m maskbench.benchmarks.gpu_check", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/gpu_check.json"))
    parser.add_argument("--quick", action="store_true", help="tiny sizes and a few steps (the CPU test)")
    parser.add_argument("--sections", help=f"comma-separated subset of {','.join(SECTIONS)}")
    parser.add_argument("--allow-cpu", action="store_true",
                        help="run the CUDA benchmark sections on the CPU when there is no GPU (code paths only)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch CPU threads (0: torch's default; 1 keeps --quick fast on a crowded CI machine)")
    parser.add_argument("--smoke-timeout-s", type=float, default=FULL.smoke_timeout_s,
                        help="the smoke DAG's cap in seconds (default %(default)s)")
    parser.add_argument("--commit", help="the commit whose working tree runs here, recorded as the check's (a copy "
                        "of the tree on another machine may carry an older .git); default: git's HEAD")
    parser.add_argument("--markdown", type=Path, metavar="JSON",
                        help="print a recorded check (its JSON) as Markdown instead of running one")
    args = parser.parse_args(argv)
    if args.markdown is not None:
        print(markdown(json.loads(args.markdown.read_text(encoding="utf-8")), str(args.markdown)), end="")
        return 0
    names = parse_sections(args.sections)
    before = torch.get_num_threads()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    try:
        sizes = dataclasses.replace(QUICK if args.quick else FULL, smoke_timeout_s=args.smoke_timeout_s)
        run_sections(names, sizes, args.out, args.allow_cpu, args.commit)
    finally:
        torch.set_num_threads(before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
