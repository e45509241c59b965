"""Entry point: the model a fine-tuning run starts from, as a checkpoint (paper C's theta_pt).

    python -m maskbench.initial_model --train T.parquet --model-spec JSON --seed 1 --out-dir results/.../init/seed~1

For a from-scratch model that is the seeded random initialisation (with the vocabulary of the training texts);
for a pretrained one, the pre-trained encoder with its seeded classification head. Built exactly as
``maskbench.finetune`` builds it for the same seed, so it is the starting point of that seed's baseline
(tested against ``finetune --init-out``).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from maskbench import runtime
from maskbench.checkpoints import write_checkpoint
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.data.schema import read_prepared
from maskbench.models import build_model_and_tokenizer


@dataclass
class InitialModelArgs:
    train: Path = field(metadata={"help": "prepared training parquet (labels; vocabulary of a scratch model)"})
    model_spec: str = field(metadata={"help": "JSON model spec (config `model:`)"})
    seed: int = field(metadata={"help": "the fine-tuning seed whose starting point this is"})
    out_dir: Path = field(metadata={"help": "checkpoint folder to write"})


def main(argv=None) -> int:
    setup_logging()
    args = parse_dataclass(InitialModelArgs, argv, "python -m maskbench.initial_model", __doc__.splitlines()[0])
    spec = json.loads(args.model_spec)
    train_df, labels, _ = read_prepared(args.train)
    runtime.seed_everything(args.seed)
    args.out_dir.parent.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=f".{args.out_dir.name}.vocab.", dir=args.out_dir.parent))
    try:
        model, tokenizer = build_model_and_tokenizer(spec, labels, pd.concat([train_df.text_a, train_df.text_b]),
                                                     workdir)
        model.config.maskbench_input_view = "pair"
        write_checkpoint(args.out_dir, model, tokenizer, {
            "initial_weights": True, "labels": labels, "input_view": "pair", "model_spec": spec,
            "n_parameters": sum(p.numel() for p in model.parameters()),
            "provenance": runtime.provenance(args, args.seed)})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
