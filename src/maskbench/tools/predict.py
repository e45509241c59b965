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

import json
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path

from maskbench import runtime
from maskbench.cli import parse_dataclass, setup_logging
from maskbench.data.local_source import decode_line
from maskbench.data.schema import DataError
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.steps import run_step
from maskbench.text.batches import EncodedPairs, predict_proba
from maskbench.text.models import input_view, load_classifier, model_labels

log = logging.getLogger("maskbench.tools.predict")

FIELD_PAIRS = (("text_a", "text_b"), ("premise", "hypothesis"), ("question1", "question2"), ("evidence", "claim"))


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


def read_pairs(path: Path) -> tuple[list[str], list[str], list[str]]:
    """(ids, text_a, text_b) of a JSON Lines file; errors name the file, line and field.

    Every line needs both texts of one pair of field names; a line with only one of them (``text_a`` with
    ``hypothesis``, or no ``hypothesis``) is refused rather than read with an empty second text.
    """
    ids, text_a, text_b = [], [], []
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            line = decode_line(raw, path, number)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataError(f"{path}: line {number} is not JSON ({err.msg})") from err
            if not isinstance(record, dict):
                raise DataError(f"{path}: line {number} is not a JSON object: {line.strip()[:80]!r}")
            names = next(((a, b) for a, b in FIELD_PAIRS if a in record), None)
            if names is None:
                raise DataError(f"{path}: line {number} has none of the fields "
                                f"{[a for a, _ in FIELD_PAIRS]} (keys: {sorted(record)})")
            if names[1] not in record:
                raise DataError(f"{path}: line {number} has field {names[0]!r} but not {names[1]!r} (keys: "
                                f"{sorted(record)}); every line needs one of the pairs "
                                f"{[f'{a}/{b}' for a, b in FIELD_PAIRS]}")
            for name in names:
                if not isinstance(record[name], str):
                    raise DataError(f"{path}: line {number}: field {name!r} has non-string value "
                                    f"{record[name]!r:.80}")
            ids.append(str(record.get("id", number)))
            text_a.append(record[names[0]])
            text_b.append(record[names[1]])
    if not ids:
        raise DataError(f"{path}: no examples")
    return ids, text_a, text_b


def main(argv=None) -> int:
    setup_logging()
    args = parse_dataclass(PredictArgs, argv, "python -m maskbench.tools.predict", __doc__.splitlines()[0])
    ids, text_a, text_b = read_pairs(args.input)
    mask_sets = [MaskSet.load(path) for path in args.mask]
    runtime.set_threads(args.threads)
    device = runtime.pick_device(args.device)
    model, tokenizer = load_classifier(args.model)
    model.to(device)
    labels = model_labels(model)
    switch = MaskSwitch(model)
    for mask_set in mask_sets:  # refuse a mask of another model before predicting anything
        switch.check(mask_set)
    data = EncodedPairs(tokenizer, text_a, text_b, None, args.max_length, input_view(model))
    variants = ([] if args.no_unmasked and mask_sets else [("none", None)]) + [(str(m.path), m) for m in mask_sets]
    outputs = {}
    for name, mask_set in variants:
        if mask_set is None:
            switch.revert()
        else:
            switch.apply(mask_set)
        outputs[name] = predict_proba(model, data, args.batch_size, device)
    switch.revert()
    lines = []
    for i, example_id in enumerate(ids):
        record = {"id": example_id}
        for name, probs in outputs.items():
            record[name] = {"label": labels[int(probs[i].argmax())],
                            "probs": {label: round(float(p), 6) for label, p in zip(labels, probs[i], strict=True)}}
        lines.append(json.dumps(record))
    text = "\n".join(lines) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        runtime.atomic_write_text(args.out, text)
        log.info("wrote %d predictions x %d variants to %s", len(ids), len(outputs), args.out)
    return 0


if __name__ == "__main__":
    run_step(main)  # a bad input (data, mask file, checkpoint): one line and exit code 1, not a traceback
