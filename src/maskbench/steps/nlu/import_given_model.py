"""Entry point: take in a classifier fine-tuned outside maskbench as the frozen baseline of a task (config
``model: {init: finetuned, path: ...}``), as it is: no training.

    python -m maskbench.steps nlu.import_given_model --path checkpoints/my-model --train T.parquet \
        --out-dir results/nlu/claims/my-model/models/method~given [--train-probs-out P.parquet]

``--path`` is a folder written by ``save_pretrained`` or a Hub id. Its labels (``config.json``: ``id2label``) must be
the training set's, in the same order, which is checked before any weight is loaded. Writes into ``--out-dir`` what a
maskbench fine-tuning writes (weights with their checksum, config and tokenizer, ``train_summary.json`` last), so
that the mask searches, the evaluations and the export read it like any baseline; with ``--train-probs-out`` also the
model's probabilities on the training set (the teacher of confidence regularisation).
"""

from __future__ import annotations

import json
import logging
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.checkpoints import sweep_staging, write_checkpoint
from maskbench.compute import Device, start, step_arguments
from maskbench.data.checksum import sha256_file
from maskbench.data.schema import DataError, read_prepared
from maskbench.steps import run_step, step_main
from maskbench.text.batches import EncodedPairs, predict_proba
from maskbench.text.models import CheckpointError, model_labels, resolve_model_path
from maskbench.tracks.nlu.bias.probs import write_probs
from maskbench.tracks.nlu.given_model import check_checkpoint_labels

log = logging.getLogger("maskbench.steps.nlu.import_given_model")


@step_arguments(Device)
class ImportModelArgs:
    path: str = field(metadata={"help": "the fine-tuned classifier: a save_pretrained folder or a Hub id"})
    train: Path = field(metadata={"help": "prepared training parquet (its labels; --train-probs-out scores it)"})
    out_dir: Path = field(metadata={"help": "checkpoint folder to write"})
    model_spec: str = field(default="{}", metadata={"help": "JSON model spec (config `model:`), recorded"})
    train_probs_out: Path | None = field(default=None, metadata={
        "help": "also write the model's probabilities on the whole training set"})
    max_length: int = field(default=128, metadata={"help": "tokens per pair when scoring the training set"})
    batch_size: int = field(default=256, metadata={"help": "batch size when scoring the training set"})
    length_sorted: bool = field(default=False, metadata={"help": "score in batches of similar length"})


@step_main(ImportModelArgs)
def main(args: ImportModelArgs) -> int:
    train, labels, meta = read_prepared(args.train)
    folder = Path(resolve_model_path(args.path))  # offline, a Hub id is its snapshot in the Hub cache
    if not folder.is_dir():
        from maskbench.hub import is_hub_id, model_snapshot

        if not is_hub_id(args.path):
            raise DataError(f"model: field 'path' has value {args.path!r}, which is neither a folder nor a Hub id")
        try:
            folder = model_snapshot(args.path)  # online: downloaded into the Hub cache
        except DataError as err:  # say the folder is missing too: a local path reads as a Hub id
            raise DataError(f"model: field 'path' has value {args.path!r}, which is no folder here; as a Hub id: "
                            f"{err}") from err
    check_checkpoint_labels(folder, labels, f"the training set {args.train} (task {meta.get('task')!r})")
    (args.out_dir / "train_summary.json").unlink(missing_ok=True)  # a crash below leaves no finished-looking folder
    sweep_staging(args.out_dir)
    device = start(args)
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    try:
        model = AutoModelForSequenceClassification.from_pretrained(str(folder))
        tokenizer = AutoTokenizer.from_pretrained(str(folder))
    except Exception as err:  # SafetensorError, OSError, ValueError, JSON errors...: name the checkpoint
        raise CheckpointError(f"{folder}: the checkpoint does not load ({type(err).__name__}: {err})") from err
    if model_labels(model) != labels:  # config.json said so; the loaded config must agree
        raise CheckpointError(f"{folder}: the loaded model predicts {model_labels(model)}, not {labels}")
    model.eval()
    model.config.maskbench_input_view = "pair"  # what evaluation feeds it: both texts (text_b empty if single-text)
    weights = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("pytorch_model*.bin"))
    if args.train_probs_out is not None:
        data = EncodedPairs(tokenizer, train.text_a, train.text_b, None, args.max_length, "pair")
        write_probs(args.train_probs_out, train.id,
                    predict_proba(model, data, args.batch_size, device, args.length_sorted), labels,
                    {"task": meta.get("task"), "dataset": meta.get("dataset"), "source": str(args.out_dir),
                     "provenance": runtime.provenance(args)})
    summary = {
        "given": args.path, "folder": str(folder), "labels": labels, "input_view": "pair", "trained": False,
        "weights_sha256": {w.name: sha256_file(w) for w in weights}, "model_spec": json.loads(args.model_spec),
        "n_parameters": sum(p.numel() for p in model.parameters()), "train": str(args.train),
        "provenance": runtime.provenance(args),
    }
    write_checkpoint(args.out_dir, model, tokenizer, summary)
    log.info("took in %s (%s) as %s: labels %s, no training", args.path, folder, args.out_dir, labels)
    return 0


if __name__ == "__main__":
    run_step(main)
