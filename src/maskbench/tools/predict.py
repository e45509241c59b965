"""Entry point: predict with a fine-tuned model under one or more masks, switched without reloading weights.

    python -m maskbench.tools.predict --model results/.../method~finetune/loss~ce/seed~1 \
        --mask a.mask b.mask --input pairs.jsonl --out predictions.jsonl

``--input`` is UTF-8 JSON Lines with ``text_a`` and ``text_b`` on every line (``premise``/``hypothesis``,
``question1``/``question2`` and ``evidence``/``claim`` are accepted too, but always both of one pair; an ``id``
is kept when present); a bad line stops it, naming the file and line, before the model is loaded. Each output
line holds the input's id, and per mask (``none`` = the unmasked model) the predicted label and its
probabilities. Without ``--mask`` the unmasked model predicts; ``--no-unmasked`` leaves the unmasked model out.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.masking.apply import MaskSet
from maskbench.steps import run_step
from maskbench.text.models import load_classifier
from maskbench.text.pair_predictions import predict_records, read_pairs, records_text

log = logging.getLogger("maskbench.tools.predict")


@dataclass
class PredictArgs:
    model: Path = field(metadata={"help": "fine-tuned checkpoint folder"})
    input: Path = field(metadata={"help": "JSON Lines of text pairs"})
    mask: list[Path] = field(default_factory=list, metadata={"help": "mask files to switch between"})
    out: Path | None = field(default=None, metadata={"help": "JSON Lines output (default: stdout)"})
    no_unmasked: bool = field(default=False, metadata={"help": "do not also predict with the unmasked model"})
    max_length: int = field(default=128, metadata={"help": "truncation length"})
    batch_size: int = field(default=64, metadata={"help": "batch size"})
    threads: int = field(default=0, metadata={"help": "torch CPU threads (0: torch's default)"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda[:N]"})


def main(argv=None) -> int:
    setup_logging()
    args = parse_dataclass(PredictArgs, argv, "python -m maskbench.tools.predict", __doc__.splitlines()[0])
    ids, text_a, text_b = read_pairs(args.input)
    mask_sets = [MaskSet.load(path) for path in args.mask]
    runtime.set_threads(args.threads)
    device = runtime.pick_device(args.device)
    model, tokenizer = load_classifier(args.model)
    model.to(device)
    records = predict_records(model, tokenizer, ids, text_a, text_b, mask_sets, unmasked=not args.no_unmasked,
                              max_length=args.max_length, batch_size=args.batch_size, device=device)
    text = records_text(records)
    if args.out is None:
        sys.stdout.write(text)
    else:
        runtime.atomic_write_text(args.out, text)
        log.info("wrote %d predictions x %d variants to %s", len(ids), len(records[0]) - 1, args.out)
    return 0


if __name__ == "__main__":
    run_step(main)  # a bad input (data, mask file, checkpoint): one line and exit code 1, not a traceback
