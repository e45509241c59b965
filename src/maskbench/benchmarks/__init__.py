"""Benchmarks a person runs by hand, no rule: how long `snakemake -n` plans each config (`dag_benchmark`), the peak
memory of reading a CelebA-layout split whole or streamed (`vision_memory_benchmark`), what a text config's training
step costs on this machine (`text_training_profile`), what an evaluation's batch size costs (`eval_batch_size`) and
the prepared check on a GPU machine (`gpu_check`). Each writes its record under results/benchmarks/
(`python -m maskbench.benchmarks.<benchmark> --help`)."""

from __future__ import annotations

import json
from pathlib import Path


def show_and_write(record: dict, out: Path | None, indent: int = 1) -> None:
    """Print a benchmark's record as JSON and, with ``out``, write it there (its folder made, atomically)."""
    from maskbench.runtime import atomic_write_text

    text = json.dumps(record, indent=indent)
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out, text + "\n")
