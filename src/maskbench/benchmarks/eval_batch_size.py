"""Tool (no rule calls it): what an evaluation's batch size costs on this machine, to size a config's
``eval_batch_size``.

    python -m maskbench.benchmarks.eval_batch_size --data results/budget-masks/nlu/data/prepared/mnli_dev.parquet \
        --model results/budget-masks/nlu/mnli/minilm-l6/models/method~finetune/loss~ce/seed~3 \
        --out results/benchmarks/eval_batch_size.json

Scores the prepared set with ``predict_proba`` (length-sorted, as every evaluation of the configs) at each of
``--batch-sizes``, side by side in one process: ``--repeats`` rounds, each timing every batch size once in turn, and
records per batch size the median seconds, the ratio to the first batch size's median, the padded tokens the
batches hold (a batch pads to its longest row: sorted longest first, a large batch spans many lengths) and how far
its probabilities are from the first batch size's (the largest absolute difference, and the share of rows whose
predicted class is the same). A model folder is a checkpoint (``load_classifier``); ``package:`` or a Hub name is a
pretrained encoder with a new head, which times the same.
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.benchmarks import show_and_write
from maskbench.cli import parse_dataclass


@dataclass
class EvalBatchArgs:
    data: Path = field(metadata={"help": "a prepared parquet to score (e.g. the dev part)"})
    model: str = field(metadata={"help": "a checkpoint folder, or package:/Hub name of a pretrained encoder"})
    out: Path | None = field(default=None, metadata={"help": "JSON to write"})
    batch_sizes: list[int] = field(default_factory=lambda: [256, 128, 64, 32, 16],
                                   metadata={"help": "evaluation batch sizes; the first is the reference"})
    threads: int = field(default=2, metadata={"help": "torch threads"})
    repeats: int = field(default=3, metadata={"help": "timed rounds (each times every batch size once)"})
    max_length: int = field(default=128, metadata={"help": "truncation length"})


def padded_tokens(lengths: list[int], batch_size: int) -> int:
    """Tokens the length-sorted batches hold, padding included: each batch of the rows sorted longest first is
    as wide as its first row."""
    ordered = sorted(lengths, reverse=True)
    return sum(len(ordered[i:i + batch_size]) * ordered[i] for i in range(0, len(ordered), batch_size))


def load(args: EvalBatchArgs):
    """The model and the set as EncodedPairs."""
    from maskbench.data.schema import read_prepared
    from maskbench.text.batches import EncodedPairs
    from maskbench.text.models import build_model_and_tokenizer, load_classifier

    frame, labels, _ = read_prepared(args.data)
    if Path(args.model).is_dir():
        model, tokenizer = load_classifier(args.model)
    else:
        model, tokenizer = build_model_and_tokenizer({"init": "pretrained", "path": args.model}, labels, [], Path("."))
    return model, EncodedPairs(tokenizer, frame.text_a, frame.text_b, None, args.max_length)


def measure(args: EvalBatchArgs) -> dict:
    import numpy as np
    import torch

    from maskbench.text.batches import predict_proba

    if not args.batch_sizes or any(b < 1 for b in args.batch_sizes) or args.repeats < 1:
        raise SystemExit(f"eval_batch_size: --batch-sizes must be positive and --repeats >= 1, got "
                         f"{args.batch_sizes} and {args.repeats}")
    torch.set_num_threads(args.threads)
    model, data = load(args)
    cpu = torch.device("cpu")
    predict_proba(model, data, args.batch_sizes[0], cpu, length_sorted=True)  # warm-up: first-call allocations
    seconds = {b: [] for b in args.batch_sizes}
    probs = {}
    for _ in range(args.repeats):
        for b in args.batch_sizes:
            started = time.perf_counter()
            probs[b] = predict_proba(model, data, b, cpu, length_sorted=True)
            seconds[b].append(time.perf_counter() - started)
    reference = args.batch_sizes[0]
    lengths = data.lengths
    rows = {}
    for b in args.batch_sizes:
        median = statistics.median(seconds[b])
        rows[str(b)] = {
            "median_s": round(median, 3), "seconds": [round(s, 3) for s in seconds[b]],
            "ratio_to_reference": round(median / statistics.median(seconds[reference]), 3),
            "padded_tokens": padded_tokens(lengths, b),
            "max_abs_prob_diff_to_reference": float(np.abs(probs[b] - probs[reference]).max()),
            "same_argmax_share": float((probs[b].argmax(1) == probs[reference].argmax(1)).mean()),
        }
    return {"data": str(args.data), "model": args.model, "rows": len(data), "real_tokens": sum(lengths),
            "max_length": args.max_length, "threads": args.threads, "repeats": args.repeats,
            "reference_batch_size": reference, "length_sorted": True, "machine": platform.machine(),
            "torch": torch.__version__, "batch_sizes": rows}


def main(argv=None) -> int:
    args = parse_dataclass(EvalBatchArgs, argv, "python -m maskbench.benchmarks.eval_batch_size", __doc__)
    show_and_write(measure(args), args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
