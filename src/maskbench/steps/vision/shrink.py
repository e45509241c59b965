"""Entry point: structured FFW subnetworks turned into smaller dense models — pruned channels and neurons really
removed — with their outputs checked against the gated model's, their parameter counts and CPU latency beside the
dense model's.

    python -m maskbench.steps vision.shrink --masks M1.mask ... --test T.safetensors \
        --out results/benchmarks/vision_structured.json

Per mask: the shrunk model beside it (``<mask stem>.shrunk.safetensors``) and a record in ``--out``: the largest
absolute difference between the shrunk model's logits and the masked model's on the test split, parameters (dense,
shrunk, ratio), per-layer widths, and the median CPU latency of one forward pass (batch and input shape stated;
dense and shrunk measured side by side, interleaved, in one process).
"""

from __future__ import annotations

import logging
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import torch

from maskbench import runtime
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.masking.savings import count_parameters
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, load_run_model, loader, read_split
from maskbench.tracks.vision.models import save_model
from maskbench.tracks.vision.shrink import cpu_latency, shrink

log = logging.getLogger("maskbench.steps.vision.shrink")


@dataclass
class VisionShrinkArgs:
    masks: list[Path] = field(metadata={"help": "structured FFW masks (their meta names the model folder)"})
    test: Path = field(metadata={"help": "the split the outputs are compared on"})
    out: Path = field(metadata={"help": "the benchmark JSON to write"})
    batch: int = field(default=100, metadata={"help": "batch size of the latency measurement"})
    repeats: int = field(default=30, metadata={"help": "timed forward passes per model and round"})
    threads: int = field(default=1, metadata={"help": "torch CPU threads for the latency measurement"})


@torch.no_grad()
def logits_of(model, data) -> torch.Tensor:
    model.eval()
    return torch.cat([model(batch["image"]) for batch in data])


@step_main(VisionShrinkArgs)
def main(args: VisionShrinkArgs) -> int:
    masks = [MaskSet.load(path) for path in args.masks]
    for path, mask in zip(args.masks, masks, strict=True):
        if not mask.meta.get("structured"):
            raise ValueError(f"{path}: field 'meta.structured' is {mask.meta.get('structured')!r}; only structured "
                             "masks (whole channels and neurons) can be shrunk")
    test = read_split(args.test)
    runtime.set_threads(args.threads)
    args.out.unlink(missing_ok=True)
    records = []
    for path, mask in zip(args.masks, masks, strict=True):
        model, meta = load_run_model(mask.meta["model_dir"])
        data = loader(image_dataset(test, meta["model_spec"]), 500)
        small, layers = shrink(model, mask.masks, zero_bias=bool(mask.meta.get("zero_bias_of_empty_rows", False)))
        switch = MaskSwitch(model)
        switch.apply(mask)
        masked_logits = logits_of(model, data)
        switch.revert()
        diff = float((logits_of(small, data) - masked_logits).abs().max())
        shape = tuple(test.images.shape[1:])
        rounds = {"dense": [], "shrunk": []}
        for _ in range(3):  # interleaved, so that a change of machine load hits both alike
            rounds["dense"].append(cpu_latency(model, shape, args.batch, args.repeats))
            rounds["shrunk"].append(cpu_latency(small, shape, args.batch, args.repeats))
        dense_s, small_s = statistics.median(rounds["dense"]), statistics.median(rounds["shrunk"])
        shrunk_path = path.with_name(path.stem + ".shrunk.safetensors")
        save_model(small, shrunk_path, {**meta, "shrunk_from": str(path)})
        dense_params, small_params = count_parameters(model), count_parameters(small)
        records.append({"mask": str(path), "shrunk_model": str(shrunk_path), "max_abs_logit_diff": diff,
                        "params_dense": dense_params, "params_shrunk": small_params,
                        "params_ratio": small_params / dense_params, "latency_dense_s": dense_s,
                        "latency_shrunk_s": small_s, "latency_ratio": small_s / dense_s,
                        "latency_rounds_s": rounds, "batch": args.batch, "input_shape": list(shape),
                        "threads": args.threads, "widths": small.spec["kwargs"], "layers": layers})
        log.info("%s: params %d -> %d (%.3f), latency %.2f -> %.2f ms (%.3f), max |logit diff| %.2e", path,
                 dense_params, small_params, small_params / dense_params, 1e3 * dense_s, 1e3 * small_s,
                 small_s / dense_s, diff)
    runtime.atomic_write_json(args.out, {"records": records, "provenance": runtime.provenance(args)})
    return 0


if __name__ == "__main__":
    run_step(main)
