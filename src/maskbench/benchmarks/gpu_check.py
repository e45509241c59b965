"""One prepared check of maskbench on a GPU machine: speed and memory of its training, mask search and evaluation
per precision, a resumed run against an uninterrupted one, and the smoke DAG on CUDA.

    python -m maskbench.benchmarks.gpu_check [--out results/benchmarks/gpu_check.json] [--quick] [--sections a,b]
                                        [--allow-cpu] [--threads N]

Sections (``--sections`` runs a subset, by name):

1. ``environment``: torch, transformers and CUDA versions, the device, its capability and memory, the CPU count;
2. ``finetune_steps``: BERT-base's shape (``transformers.BertConfig()`` defaults, randomly initialised, nothing
   downloaded), 3 labels, batch 32 x 128 random token ids, AdamW, through ``maskbench.train.fit`` (its
   ``train_step``): steps/s and peak CUDA memory in fp32, fp32 + TF32, bf16 autocast and fp16 with a GradScaler;
3. ``mask_search_steps``: the same model under the mask search's engine (``attach_scores``: frozen weights,
   movement scores trained, the threshold schedule moved every step), fp32 against bf16;
4. ``evaluation``: a HANS-sized set (30,000 pairs of 128 tokens) through ``maskbench.text.batches.predict_proba``
   in batches of 256: pairs/s in fp32 and bf16;
5. ``resume_on_cuda``: a tiny fine-tuning through ``fit`` with a resume state, stopped by an exception after a few
   steps and resumed, against the same run uninterrupted: the largest weight difference and whether the weights
   are bit-equal (fp32, and fp16 with its GradScaler state on CUDA); also runs on the CPU;
6. ``smoke_dag``: ``snakemake --configfile configs/smoke.yaml`` in a temporary folder, capped at 4 minutes
   (``--smoke-timeout-s``), and
   the devices its steps recorded (CUDA only; snakemake is imported lazily).

Sections 2-4 and 6 need CUDA and are "skipped" without it (``--allow-cpu`` runs 2-4 on the CPU anyway, at
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
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from maskbench.precision import Precision
from maskbench.resume import read_state
from maskbench.runtime import atomic_write_json, git_commit, seed_everything

REPO = Path(__file__).resolve().parents[3]
SECTIONS = ("environment", "finetune_steps", "mask_search_steps", "evaluation", "resume_on_cuda", "smoke_dag")
NUM_LABELS = 3
LEARNING_RATE = 3e-5  # the nlu fine-tuning rate; the timings do not depend on it
FINETUNE_VARIANTS = {"fp32": Precision("fp32"), "fp32_tf32": Precision("fp32", tf32=True),
                     "bf16": Precision("bf16"), "fp16_scaler": Precision("fp16")}
SEARCH_VARIANTS = {"fp32": Precision("fp32"), "bf16": Precision("bf16")}
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
    warmup_steps: int
    timed_steps: int
    eval_pairs: int
    eval_batch: int
    resume_steps: int
    resume_stop_after: int
    smoke_timeout_s: float = 240  # the smoke DAG's cap (--smoke-timeout-s)


FULL = Sizes(model={}, batch=32, seq=128, warmup_steps=5, timed_steps=40, eval_pairs=30_000, eval_batch=256,
             resume_steps=12, resume_stop_after=7)
QUICK = Sizes(model={"vocab_size": 500, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
                     "intermediate_size": 64}, batch=4, seq=16, warmup_steps=1, timed_steps=2, eval_pairs=64,
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


def timed_fit(model, device, precision: Precision, sizes: Sizes, groups: list[dict] | None = None,
              step_hook_of: Callable | None = None, objective_extra: Callable | None = None) -> dict:
    """``fit`` over ``warmup + timed`` steps of random batches; steps/s of the timed ones and the peak memory."""
    from maskbench.objectives.logits import logits_objective
    from maskbench.text.batches import model_inputs
    from maskbench.train import TrainHParams, fit

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
        step_hook=step_hook_of, hooks=[clock], precision=precision)
    return {"steps_per_s": round(clock.steps_per_second(), 3), "timed_steps": clock.steps,
            "warmup_steps": sizes.warmup_steps, "peak_memory_mib": peak_memory_mib(device)}


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
    for name, precision in FINETUNE_VARIANTS.items():
        model = random_bert(sizes.model)
        out["variants"][name] = timed_fit(model, device, precision, sizes)
        free(model)
    return out


def section_mask_search_steps(sizes: Sizes, allow_cpu: bool) -> dict:
    from maskbench.tracks.nlu.mask_search_spec import MaskSearchSpec, attach_scores
    from maskbench.train import trainable_groups

    device = require_cuda(allow_cpu)
    spec = MaskSearchSpec()
    out = {"device": str(device), "method": spec.method, "modules": spec.modules, "batch": sizes.batch,
           "seq": sizes.seq, "variants": {}}
    for name, precision in SEARCH_VARIANTS.items():
        model = random_bert(sizes.model)
        scores = attach_scores(model, spec, sizes.warmup_steps + sizes.timed_steps)
        # the mask search's groups: the scores alone at the score rate (paper A's 0.1), weights frozen
        groups = trainable_groups(model, LEARNING_RATE, 0.0, scores=scores, score_lr=0.1, weights=False)
        out["variants"][name] = {**timed_fit(model, device, precision, sizes, groups=groups,
                                             step_hook_of=scores.set_step, objective_extra=scores.regularization),
                                 "n_scores": sum(p.numel() for p in scores.parameters()),
                                 "density_after": round(float(scores.density()), 6)}
        free(model, scores)
    return out


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
    from maskbench.train import TrainHParams, fit

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
    "mask_search_steps": section_mask_search_steps, "evaluation": section_evaluation,
    "resume_on_cuda": section_resume_on_cuda, "smoke_dag": section_smoke_dag}


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
    return f"{name}: ok, " + "; ".join(parts)


def run_sections(names: list[str], sizes: Sizes, out: Path, allow_cpu: bool = False) -> dict:
    begun = time.perf_counter()
    quick = dataclasses.replace(sizes, smoke_timeout_s=QUICK.smoke_timeout_s) == QUICK  # the cap aside
    report = {"tool": "maskbench.benchmarks.gpu_check", "commit": git_commit(REPO), "quick": quick, "sections": {}}
    for name in names:
        started = time.perf_counter()
        try:
            result = {"status": "ok", **RUNNERS[name](sizes, allow_cpu)}
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


def markdown(report: dict, source: str) -> str:
    """A recorded check as Markdown: one row per measured variant (rates, peak memory, ratio to fp32 in the same
    section, measured side by side in one process), then every other section's status."""
    sections = report.get("sections", {})
    device = sections.get("environment", {}).get("device_name", "no GPU")
    rows = ["| section | variant | rate | vs fp32 | peak CUDA memory (MiB) |", "|---|---|---:|---:|---:|"]
    for name in ("finetune_steps", "mask_search_steps", "evaluation"):
        section = sections.get(name, {})
        if section.get("status") != "ok":
            continue
        variants = section.get("variants", {})
        key = "pairs_per_s" if name == "evaluation" else "steps_per_s"
        base = variants.get("fp32", {}).get(key)
        for variant, numbers in variants.items():
            ratio = f"{numbers[key] / base:.2f}x" if base else "–"
            rows.append(f"| {name} | {variant} | {numbers[key]:,.1f} {key.replace('_per_s', '/s')} | {ratio} | "
                        f"{numbers.get('peak_memory_mib', float('nan')):,.0f} |")
    lines = [f"On {device} (`{source}`, commit `{report.get('commit', '?')}`, {report.get('total_seconds', '?')} s "
             "in all):", "", *rows, ""]
    for name, section in sections.items():
        if name in ("environment", "finetune_steps", "mask_search_steps", "evaluation"):
            continue
        status = section.get("status")
        if name == "resume_on_cuda":
            detail = f"resumed weights equal the uninterrupted run's: {section.get('equal')}"
        elif status == "ok" and "jobs_done" in section:
            detail = (f"{section['jobs_done']} of {section['jobs_planned']} jobs in {section['wall_s']} s on "
                      f"{section['cores']} cores, steps' recorded devices {section.get('devices_recorded')}"
                      + (f" (commit `{section['commit']}`)" if section.get("commit") else ""))
        else:
            detail = (section.get("reason") or "").splitlines()[0] if section.get("reason") else ""
        lines.append(f"- `{name}`: {status}" + (f" — {detail}" if detail else ""))
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
        run_sections(names, sizes, args.out, args.allow_cpu)
    finally:
        torch.set_num_threads(before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
