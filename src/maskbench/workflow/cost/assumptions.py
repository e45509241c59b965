"""Every figure the cost sheet prices a job with, each with where it comes from. Nothing here is measured on a GPU
by this project unless `results/benchmarks/gpu_check.json` says so: `per_step_figures` reads its CUDA steps per second
(section ``finetune_steps``, one entry per precision) over the assumed one when the file exists.

A job's GPU time is its optimiser steps x seconds per step, where one *unit* is a BERT-base training step of 32 rows x
128 tokens in fp32 (forward, backward, AdamW) and a step of other shape costs

    units = rows / 32 x length / 128 x model factor / precision speed-up   (a forward pass alone: FORWARD_SHARE)

A model's factor is its parameters over BERT-base's (compute is ~6 x parameters x tokens), never below
SMALL_MODEL_FLOOR: a tiny model on a GPU is bound by kernel launches, not arithmetic.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from maskbench.workflow import cluster_requests


@dataclass(frozen=True)
class Figure:
    value: float
    source: str


GPU_CHECK = Path("results/benchmarks/gpu_check.json")

FIGURES: dict[str, Figure] = {
    "bert_base_steps_per_s_fp32": Figure(
        cluster_requests.GPU_STEPS_PER_S,
        "assumption: ~9 steps/s BERT-base fp32 batch 32 len 128 on an A100, the figure this project was given "
        "(maskbench.workflow.cluster_requests.GPU_STEPS_PER_S; not measured here)"),
    "speedup_bf16": Figure(2.0, "assumption: bf16 autocast on A100 tensor cores ~2x fp32 for BERT-base training "
                                "(not measured here)"),
    "speedup_fp16": Figure(2.0, "assumption: as bf16 (fp16 autocast with a loss scaler; not measured here)"),
    "forward_share": Figure(cluster_requests.FORWARD_SHARE,
                            "assumption: a forward pass is 1/3 of a training step (backward ~2x forward; "
                            "maskbench.workflow.cluster_requests.FORWARD_SHARE)"),
    "small_model_floor": Figure(0.1, "assumption: a model far smaller than BERT-base still costs 1/10 of its step "
                                     "(launch-bound; BERT-tiny has 4% of its parameters)"),
    "eval_item_overhead_s": Figure(10.0, "assumption: loading a checkpoint or applying a mask before scoring, per "
                                         "subnetwork"),
    "gate_epochs": Figure(30.0, "assumption: FFW gate training stops on its temperature schedule after ~30 epochs "
                                "(the configs cap it at max_gate_epochs, 200; not measured at paper scale)"),
    "seat_min": Figure(5.0, "assumption: SEAT encodes a few hundred sentences and runs the permutation test on the "
                            "host: ~5 min a job"),
    "lm_bias_min": Figure(20.0, "assumption: CrowS-Pairs (262 gender pairs) and StereoSet's gender validation "
                                "sentences scored token by token under the masked-LM head: ~20 min a job"),
    "cuda_context_gb": Figure(1.0, "assumption: the CUDA context and the allocator's slack"),
    "host_base_gb": Figure(5.0, "assumption: a step's process with torch, CUDA and transformers loaded, its "
                                "tokenised data and a host copy of the model"),
    "gpu_memory_gb": Figure(40.0, "assumption: the smaller A100 (40 GB); an 80 GB card halves no estimate here"),
    "margin": Figure(cluster_requests.MARGIN, "the runtime margin of maskbench.workflow.cluster_requests (dev evaluations "
                                              "inside a run, loading, a slower or shared card)"),
    "mem_margin": Figure(1.2, "assumption: a memory request should exceed the estimated peak by 20%"),
}

# model shapes: (layers, hidden, heads, parameters, maskable weights: the encoder's Q/K/V/O/FFN matrices)
MODELS = {
    "bert-base-uncased": (12, 768, 12, 110e6, 85e6),
    "google/bert_uncased_L-2_H-128_A-2": (2, 128, 2, 4.4e6, 0.4e6),
}
BERT_BASE = "bert-base-uncased"

# training-set sizes beyond maskbench.workflow.cluster_requests.TRAIN_SIZES (the Hub's dataset cards; PAWS-QQP from its
# builder's counts; FEVER-Symmetric v0.2 dev shipped in data/nli/)
EXTRA_TRAIN_SIZES = {
    ("hf:nyu-mll/glue", "cola", "train"): 8_551,
    ("hf:nyu-mll/glue", "sst2", "train"): 67_349,
    ("hf:nyu-mll/glue", "mrpc", "train"): 3_668,
    ("hf:nyu-mll/glue", "qnli", "train"): 104_743,
    ("hf:nyu-mll/glue", "rte", "train"): 2_490,
    ("hf:nyu-mll/glue", "wnli", "train"): 635,
    ("hf:nyu-mll/glue", "stsb", "train"): 5_749,
    ("hf:jhu-cogsci/hans", None, "train"): 30_000,
    ("local:data/paws_qqp/train.tsv", None, None): 11_988,
    ("hf:google-research-datasets/paws", "labeled_final", "train"): 49_401,
    ("local:data/nli/fever_symmetric_dev.jsonl", None, None): 708,
}

# paper D's images: training images per dataset and the seconds of one training step of its net at batch 100 on the
# card (assumptions: MNIST nets are input-bound, ResNet-18 at 224 px trains ~900 images/s in fp32 on an A100)
VISION_TRAIN_IMAGES = {"biased_mnist": 60_000, "multi_color_mnist": 60_000, "corrupted_cifar10": 50_000,
                       "celeba": 162_770}
VISION_IMAGE_BYTES = {"biased_mnist": 28 * 28 * 3, "multi_color_mnist": 28 * 28 * 3,
                      "corrupted_cifar10": 32 * 32 * 3, "celeba": 224 * 224 * 3}
# datasets read from disk batch by batch rather than held in memory (the vision track streams CelebA's 224-px
# images), and the host buffer assumed for them
VISION_STREAMED = Figure(2.0, "assumption: a streamed dataset (CelebA) holds ~2 GB of images on the host at a time")
VISION_STREAMED_DATASETS = {"celeba"}
VISION_STEP_S = {"simple_conv": 0.005, "mlp": 0.002, "resnet18_cifar": 0.02, "resnet18_celeba": 0.11}
VISION_PARAMS = {"simple_conv": 0.52e6, "mlp": 0.1e6, "resnet18_cifar": 11.2e6, "resnet18_celeba": 11.2e6}
# activations of a training batch of 100 in fp32, GB (assumptions: ResNet-18 at 224 px ~9 GB, at 32 px with
# torchvision's stride-2 stem and max-pool well under 1 GB, the MNIST nets a fraction of that)
VISION_ACTIVATION_GB = {"simple_conv": 0.3, "mlp": 0.01, "resnet18_cifar": 0.2, "resnet18_celeba": 9.0}
VISION_GATE_IMAGES = Figure(10_000, "assumption: the unbiased split FFW's gates train on holds ~10,000 images")
VISION_TEST_IMAGES = Figure(10_000, "assumption: a test split of ~10,000 images (MNIST's and CIFAR-10's test sets)")


def figure(name: str) -> float:
    return FIGURES[name].value


def precision_speedup(precision: str) -> float:
    return 1.0 if precision == "fp32" else figure(f"speedup_{precision}")


def model_factor(model: str | None) -> float:
    """A model's step cost relative to BERT-base (unknown names: BERT-base's)."""
    shape = MODELS.get(model or BERT_BASE, MODELS[BERT_BASE])
    return max(shape[3] / MODELS[BERT_BASE][3], figure("small_model_floor"))


# the gpu_check variant each precision's rate is read from (TF32 off, as the paper config runs)
MEASURED_VARIANT = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16_scaler"}


def per_step_figures(gpu_check: Path | None = None) -> dict[str, Figure]:
    """The BERT-base fp32-equivalent steps per second per precision: measured ones from gpu_check.json's
    ``finetune_steps`` section (CUDA only; a precision it lacks keeps its assumption), the rest assumed."""
    base = FIGURES["bert_base_steps_per_s_fp32"]
    out = {p: Figure(base.value * precision_speedup(p), base.source if p == "fp32" else
                     f"{base.source} x {FIGURES[f'speedup_{p}'].source}") for p in ("fp32", "bf16", "fp16")}
    path = GPU_CHECK if gpu_check is None else gpu_check
    if not path.exists():
        return out
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err})") from None
    # gpu_check.json's own layout (sections -> finetune_steps -> variants; fp16 is measured with its GradScaler as
    # "fp16_scaler"), or a flat {finetune_steps: {precision: ...}}
    sections = doc.get("sections", doc) if isinstance(doc, dict) else {}
    section = sections.get("finetune_steps") if isinstance(sections, dict) else None
    if not isinstance(section, dict) or not _is_cuda(doc, section):
        return out
    environment = sections.get("environment") if isinstance(sections.get("environment"), dict) else {}
    device = doc.get("device") or environment.get("device_name") or section.get("device") or "a CUDA device"
    variants = section.get("variants", section)
    for precision in out:
        entry = variants.get(MEASURED_VARIANT[precision], variants.get(precision))
        rate = entry.get("steps_per_s") if isinstance(entry, dict) else entry
        if isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0:
            shape = entry if isinstance(entry, dict) else {}
            rows = shape.get("batch_size", section.get("batch", 32))
            length = shape.get("max_length", section.get("seq", 128))
            # a measured step of another shape, brought to the 32 x 128 unit
            out[precision] = Figure(rate * rows / 32 * length / 128,
                                    f"measured: {rate:g} steps/s at {rows} x {length} on {device} ({path})")
    return out


def search_step_figures(gpu_check: Path | None = None, fine_tuning: dict[str, Figure] | None = None
                        ) -> dict[str, Figure]:
    """The mask search's steps per second per precision (a step of frozen weights and trained scores, the mask
    decided in fp32 outside autocast): measured ones from gpu_check.json's ``mask_search_steps`` section (fp16, not
    measured there, as its measured bf16), else a fine-tuning step's figure (``fine_tuning``)."""
    fine_tuning = dict(fine_tuning or per_step_figures(gpu_check))
    out = {p: Figure(f.value, f"assumption: as a fine-tuning step ({f.source})") for p, f in fine_tuning.items()}
    path = GPU_CHECK if gpu_check is None else gpu_check
    if not path.exists():
        return out
    doc = json.loads(path.read_text())
    sections = doc.get("sections", {}) if isinstance(doc, dict) else {}
    section = sections.get("mask_search_steps") if isinstance(sections, dict) else None
    if not isinstance(section, dict) or section.get("status") != "ok" or not _is_cuda(doc, section):
        return out
    device = (sections.get("environment") or {}).get("device_name") or "a CUDA device"
    variants = section.get("variants", {})
    rows, length = section.get("batch", 32), section.get("seq", 128)
    for precision, variant in (("fp32", "fp32"), ("bf16", "bf16"), ("fp16", "bf16")):
        rate = (variants.get(variant) or {}).get("steps_per_s")
        if isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0:
            said = "" if precision == variant else f" (fp16 not measured: its {variant} rate)"
            out[precision] = Figure(rate * rows / 32 * length / 128, f"measured: {rate:g} mask-search steps/s at "
                                    f"{rows} x {length} on {device} ({path}){said}")
    return out


@dataclass(frozen=True)
class StepCurve:
    """Seconds of one BERT-base step against its rows of 128 tokens: ``at_32`` at 32 rows and, where the GPU check
    measured it, ``at_128`` at 128. Through both points the step is a fixed cost (the host queuing the step's
    kernels: on an H100 or H200 a bf16 step of 32 rows waits on the host, results/benchmarks/gpu_check_profile.txt)
    plus a cost per row; with only ``at_32``, or where the fit's fixed cost would come out negative, the step costs
    in proportion to its rows (the sheet's model before batch 128 was measured)."""

    at_32: float
    at_128: float | None
    source: str

    def seconds(self, rows: float) -> float:
        proportional = self.at_32 * rows / 32
        if self.at_128 is None:
            return proportional
        per_row = max(0.0, (self.at_128 - self.at_32) / 96)
        fixed = self.at_32 - 32 * per_row
        return fixed + per_row * rows if fixed >= 0 else proportional

    def describe(self) -> str:
        at_128 = f", {1 / self.at_128:.3g} at 128 x 128" if self.at_128 else " (128 rows: 4x the time, not measured)"
        return f"{1 / self.at_32:.3g} steps/s at 32 x 128{at_128} ({self.source})"


# the GPU check's variants at 128 rows (fp16 was measured at 32 rows only: its bf16 rate stands in)
LARGE_VARIANT = {"fp32": "fp32_b128", "bf16": "bf16_b128", "fp16": "bf16_b128"}


def step_curves(gpu_check: Path | None, fine_tuning: dict[str, Figure], search: dict[str, Figure]
                ) -> dict[str, dict[str, StepCurve]]:
    """Per kind ("finetune", "search") and precision, the step-time curve: 32 rows from the rates (measured or
    assumed, ``per_step_figures`` / ``search_step_figures``), 128 rows from the GPU check's ``<precision>_b128``
    variants where it has them."""
    path = GPU_CHECK if gpu_check is None else gpu_check
    sections = {}
    if path.exists():
        doc = json.loads(path.read_text())
        sections = doc.get("sections", {}) if isinstance(doc, dict) else {}
    out: dict[str, dict[str, StepCurve]] = {}
    for kind, rates, section_name in (("finetune", fine_tuning, "finetune_steps"),
                                      ("search", search, "mask_search_steps")):
        section = sections.get(section_name) if isinstance(sections.get(section_name), dict) else {}
        variants = section.get("variants", {}) if section.get("status", "ok") == "ok" else {}
        out[kind] = {}
        for precision, figure in rates.items():
            large = variants.get(LARGE_VARIANT.get(precision, ""), {})
            rate = large.get("steps_per_s") if isinstance(large, dict) else None
            measured = isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0 and \
                large.get("batch_size", 128) == 128 and large.get("max_length", 128) == 128
            source = figure.source
            if measured:
                stand_in = "" if LARGE_VARIANT[precision].startswith(precision) else \
                    f"; at 128 rows its {LARGE_VARIANT[precision].split('_')[0]} rate"
                source = f"{figure.source}; 128 x 128: measured {rate:g} steps/s ({path}){stand_in}"
            out[kind][precision] = StepCurve(1 / figure.value, 1 / rate if measured else None, source)
    return out


# the project's own recorded check, wherever the workflow runs from (the cost tool reads GPU_CHECK from its cwd)
RECORDED_GPU_CHECK = Path(__file__).resolve().parents[4] / "results/benchmarks/gpu_check.json"


@functools.cache
def recorded_curves(path: Path = RECORDED_GPU_CHECK) -> dict[str, dict[str, StepCurve]] | None:
    """The step curves of a recorded GPU check with measured rates (the cluster requests' estimates), else None."""
    if not path.is_file():
        return None
    rates = per_step_figures(path)
    if not any(figure.source.startswith("measured") for figure in rates.values()):
        return None
    return step_curves(path, rates, search_step_figures(path, rates))


def _is_cuda(doc: dict, section: dict) -> bool:
    said = " ".join(str(x) for x in (doc.get("device"), doc.get("backend"), section.get("device"),
                                     doc.get("cuda"), section.get("cuda")))
    return "cuda" in said.lower() or doc.get("cuda") is True or section.get("cuda") is True


def activation_gb(model: str | None, rows: int, length: int, precision: str) -> float:
    """Training activations kept for backward: per layer s*b*h*(34 + 5*a*s/h) bytes at 16 bits (Korthikanti et al.,
    "Reducing Activation Recomputation in Large Transformer Models", 2022), twice that in fp32."""
    layers, hidden, heads, _, _ = MODELS.get(model or BERT_BASE, MODELS[BERT_BASE])
    per_layer = length * rows * hidden * (34 + 5 * heads * length / hidden)
    return layers * per_layer * (2 if precision == "fp32" else 1) / 1e9


def checkpoint_gb(model: str | None) -> float:
    """A model's safetensors file: 4 bytes a parameter (fp32)."""
    return MODELS.get(model or BERT_BASE, MODELS[BERT_BASE])[3] * 4 / 1e9


def mask_gb(model: str | None) -> float:
    """A mask file: one bit per maskable weight (the codec packs bits; its header is small)."""
    return MODELS.get(model or BERT_BASE, MODELS[BERT_BASE])[4] / 8 / 1e9
