"""Predicting with a classifier under one or more masks, switched without reloading weights: reading JSON Lines of
text pairs, and one output record per example with every variant's label and probabilities (``maskbench predict``
and ``maskbench.predict``)."""

from __future__ import annotations

import json
from pathlib import Path

from maskbench.data.local_source import decode_line
from maskbench.data.schema import DataError
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.text.batches import EncodedPairs, predict_proba
from maskbench.text.models import input_view, model_labels

FIELD_PAIRS = (("text_a", "text_b"), ("premise", "hypothesis"), ("question1", "question2"), ("evidence", "claim"))


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


def predict_records(model, tokenizer, ids: list[str], text_a: list[str], text_b: list[str],
                    mask_sets: list[MaskSet], *, unmasked: bool = True, max_length: int = 128, batch_size: int = 64,
                    device="cpu") -> list[dict]:
    """One record per example: its id and, per variant (``none`` = the unmasked model, then each mask by its path),
    the predicted label and its probabilities (6 decimals). Every mask is checked against the model before the
    first prediction; the model is left unmasked."""
    labels = model_labels(model)
    switch = MaskSwitch(model)
    for mask_set in mask_sets:  # refuse a mask of another model before predicting anything
        switch.check(mask_set)
    data = EncodedPairs(tokenizer, text_a, text_b, None, max_length, input_view(model))
    variants = ([("none", None)] if unmasked or not mask_sets else []) + [(str(m.path), m) for m in mask_sets]
    outputs = {}
    for name, mask_set in variants:
        if mask_set is None:
            switch.revert()
        else:
            switch.apply(mask_set)
        outputs[name] = predict_proba(model, data, batch_size, device)
    switch.revert()
    records = []
    for i, example_id in enumerate(ids):
        record = {"id": example_id}
        for name, probs in outputs.items():
            record[name] = {"label": labels[int(probs[i].argmax())],
                            "probs": {label: round(float(p), 6) for label, p in zip(labels, probs[i], strict=True)}}
        records.append(record)
    return records


def records_text(records: list[dict]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


__all__ = ["FIELD_PAIRS", "predict_records", "read_pairs", "records_text"]
