"""Entry point: paper D's magnitude-pruning baseline (its figure 6) — every conv and linear weight of a trained
vision model pruned layer by layer to each sparsity, without retraining.

    python -m maskbench.steps vision.magnitude --model-dir M --sparsities 0.5 0.9 --out-dir D

Writes ``<out-dir>/sparsity~<s>.mask`` per sparsity (the project's mask format, with the model's fingerprint).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.masking.apply import MaskSet, model_fingerprint
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import load_run_model
from maskbench.tracks.vision.ffw import gate_targets
from maskbench.tracks.vision.training import magnitude_masks

log = logging.getLogger("maskbench.steps.vision.magnitude")


@dataclass
class VisionMagnitudeArgs:
    model_dir: Path = field(metadata={"help": "the trained model's folder (vision_train)"})
    out_dir: Path = field(metadata={"help": "folder of the mask files"})
    sparsities: list[float] = field(default_factory=list, metadata={"help": "fractions of weights to prune"})


def mask_path(out_dir: Path, sparsity: float) -> Path:
    return out_dir / f"sparsity~{sparsity:g}.mask"


@step_main(VisionMagnitudeArgs)
def main(args: VisionMagnitudeArgs) -> int:
    bad = [s for s in args.sparsities if not 0 < s < 1]
    if not args.sparsities or bad:
        raise ValueError(f"--sparsities {args.sparsities}: give one or more fractions strictly between 0 and 1")
    model, _ = load_run_model(args.model_dir)
    fingerprint = model_fingerprint(model)
    targets = gate_targets(model, structured=False)
    for sparsity in args.sparsities:
        keep = magnitude_masks(model, targets, sparsity)
        MaskSet(keep, {"method": "magnitude", "sparsity_target": sparsity, "model_dir": str(args.model_dir),
                       "model_fingerprint": fingerprint, "zero_bias_of_empty_rows": False}).save(
            mask_path(args.out_dir, sparsity))
        log.info("magnitude pruning at %.3f: wrote %s", sparsity, mask_path(args.out_dir, sparsity))
    return 0


if __name__ == "__main__":
    run_step(main)
