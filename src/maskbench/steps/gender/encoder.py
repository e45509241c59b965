"""Entry point: a BERT encoder initialised from scratch for the gender track's smoke and unit runs (no pre-trained
model offline that small): a word-level tokenizer over the corpus and the SEAT sentences, and a seeded BertModel.

    python -m maskbench.steps gender.encoder --corpus results/gender/data/corpus.parquet \
        --tests data/gender/seat/sent-weat6.jsonl --bert-config '{"hidden_size": 32}' --seed 0 \
        --out-dir results/gender/tiny/encoder

Writes the model and tokenizer through a staging folder, ``train_summary.json`` last (the rules' marker).
"""

from __future__ import annotations

import json
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from maskbench.checkpoints import write_checkpoint
from maskbench.steps import run_step, step_main
from maskbench.text.models import data_vocab_tokenizer
from maskbench.tracks.gender.seat import KEYS, read_seat

log = logging.getLogger("maskbench.steps.gender.encoder")


@dataclass
class GenderEncoderArgs:
    corpus: Path = field(metadata={"help": "corpus table (its sentences make the vocabulary)"})
    tests: list[Path] = field(metadata={"help": "SEAT files (their sentences join the vocabulary)"})
    out_dir: Path = field(metadata={"help": "encoder folder to write"})
    bert_config: str = field(default="{}", metadata={"help": "JSON of transformers.BertConfig fields"})
    seed: int = field(default=0, metadata={"help": "initialises the weights"})


@step_main(GenderEncoderArgs)
def main(args: GenderEncoderArgs) -> int:
    from transformers import BertConfig, BertModel

    tests = [read_seat(path) for path in args.tests]
    texts = list(pd.read_parquet(args.corpus)["text"])
    texts += [e for test in tests for key in KEYS for e in getattr(test, key).examples]
    with tempfile.TemporaryDirectory() as vocab_dir:
        tokenizer = data_vocab_tokenizer(texts, Path(vocab_dir))
    torch.manual_seed(args.seed)
    model = BertModel(BertConfig(vocab_size=len(tokenizer), **json.loads(args.bert_config)))
    write_checkpoint(args.out_dir, model, tokenizer, {"vocab_size": len(tokenizer), "seed": args.seed,
                                                      "bert_config": json.loads(args.bert_config)})
    log.info("wrote %s: vocabulary %d, %d parameters", args.out_dir, len(tokenizer),
             sum(p.numel() for p in model.parameters()))
    return 0


if __name__ == "__main__":
    run_step(main)
