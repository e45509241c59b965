"""Entry point: benchmark mask search, mask files and mask switching side by side in one process.

The measurements are maskbench/tracks/nlu/mask_benchmark.py's (what each one is, its targets); this writes their
record::

    python -m maskbench.steps nlu.mask_benchmark --out results/benchmarks/masks.json [--threads 2] [size options]
"""

from __future__ import annotations

import logging

from maskbench import runtime
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.mask_benchmark import MaskBenchmarkArgs, run

log = logging.getLogger("maskbench.steps.nlu.mask_benchmark")


@step_main(MaskBenchmarkArgs)
def main(args: MaskBenchmarkArgs) -> int:
    result = run(args)
    runtime.atomic_write_json(args.out, result)
    log.info("wrote %s in %.1fs: search step ratio %.3f, mask bytes / entropy %.4f, mask bytes / fp32 %.5f, "
             "apply + revert %.1f ms, revert bit-exact %s", args.out, result["seconds"], result["search_step_ratio"],
             result["mask_bytes_over_entropy"], result["mask_bytes_over_fp32"], result["apply_revert_ms"],
             result["revert_bit_exact"])
    return 0


if __name__ == "__main__":
    run_step(main)
