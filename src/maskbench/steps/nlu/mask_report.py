"""Entry point: paper A figure 2 (pruning rate per module type and layer) and the seed overlap of masks.

    python -m maskbench.steps nlu.mask_report --masks a.mask b.mask --keys mnli/md_undertrained/1 mnli/md_undertrained/2 \
        --out-rates pruning_rates.csv --out-figure pruning_rates.png --out-overlap overlap.csv \
        --out-overlap-summary overlap_summary.csv

``--keys`` names each mask's task/row/seed, in the order of ``--masks``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.cli import require_same_lengths
from maskbench.masking.codec import read_mask_file
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.report.pruning_rates import (
    plot_pruning_heatmaps,
    pruning_rate_table,
    seed_overlap_summary,
    seed_overlap_table,
)

log = logging.getLogger("maskbench.steps.nlu.mask_report")


@dataclass
class MaskReportArgs:
    masks: list[Path] = field(metadata={"help": "mask files"})
    keys: list[str] = field(metadata={"help": "task/row/seed of each mask, in the order of --masks"})
    out_rates: Path = field(metadata={"help": "CSV: mean pruned %% per task, row, layer and module type"})
    out_figure: Path = field(metadata={"help": "PNG heatmaps, one panel per task and row"})
    out_overlap: Path = field(metadata={"help": "CSV: Jaccard of pruned sets for every pair of seeds"})
    out_overlap_summary: Path = field(metadata={"help": "CSV: the overlap per task and row"})


def parse_key(key: str) -> dict:
    parts = key.split("/")
    if len(parts) != 3 or not parts[2].lstrip("-").isdigit():
        raise ValueError(f"--keys: {key!r} is not task/row/seed")
    return {"task": parts[0], "row": parts[1], "seed": int(parts[2])}


@step_main(MaskReportArgs)
def main(args: MaskReportArgs) -> int:
    require_same_lengths(masks=args.masks, keys=args.keys)
    keys = [parse_key(k) for k in args.keys]
    records = []
    for path, key in zip(args.masks, keys, strict=True):
        masks, meta = read_mask_file(path)
        if meta.get("task") not in (None, key["task"]) or meta.get("seed") not in (None, key["seed"]):
            raise ValueError(f"{path}: field 'meta' says task {meta.get('task')!r} seed {meta.get('seed')!r}, "
                             f"but --keys gives {key}")
        records.append({**key, "mask": masks})
    rates = pruning_rate_table(records)
    overlap = seed_overlap_table(records)
    runtime.atomic_write_text(args.out_rates, rates.to_csv(index=False))
    runtime.atomic_write_text(args.out_overlap, overlap.to_csv(index=False))
    runtime.atomic_write_text(args.out_overlap_summary, seed_overlap_summary(overlap).to_csv(index=False))
    plot_pruning_heatmaps(rates, args.out_figure)
    log.info("wrote %s, %s, %s from %d masks", args.out_rates, args.out_figure, args.out_overlap, len(records))
    return 0


if __name__ == "__main__":
    run_step(main)
