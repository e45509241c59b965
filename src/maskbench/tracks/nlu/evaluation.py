"""Scoring sentence-pair classifiers on evaluation sets: reading and checking the sets, mapping a model's labels onto a set's, and writing one metrics JSON and one predictions parquet per (model, set)."""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from maskbench import runtime
from maskbench.compute import Compute, step_arguments
from maskbench.data.schema import DataError, read_prepared
from maskbench.metrics import compute_metrics
from maskbench.text.batches import EncodedPairs, predict_proba
from maskbench.text.models import input_view, model_labels

log = logging.getLogger(__name__)


GROUP_COLUMNS = ("heuristic", "subcase")


@step_arguments(Compute, kw_only=True)
class EvalSetArgs:
    """The arguments every evaluation entry point shares: the sets, how to score them, what to record."""

    data: list[Path] = field(metadata={"help": "prepared evaluation parquets, in the order of --eval-sets"})
    eval_sets: str = field(metadata={"help": "JSON list of {name, metric, merge} in the order of --data"})
    task: str = field(default="", metadata={"help": "recorded in the JSON"})
    seed: int = field(default=-1, metadata={"help": "the models' seed (recorded)"})
    max_length: int = field(default=128, metadata={"help": "truncation length"})
    batch_size: int = field(default=256, metadata={"help": "evaluation batch size"})
    length_sorted: bool = field(default=False, metadata={"help": "score in batches of similar length (faster; the "
                                                                 "same predictions up to float-sum order)"})


@dataclass
class EvalSet:
    name: str
    data: Path
    metric: str = "accuracy"
    merge: dict[str, str] = field(default_factory=dict)


def parse_eval_sets(specs_json: str, data: list[Path]) -> list[EvalSet]:
    """The --eval-sets JSON list ({name, metric, merge}) paired with its data files, in order."""
    specs = json.loads(specs_json)
    if len(specs) != len(data):
        raise ValueError(f"--eval-sets names {len(specs)} sets but the data files are {len(data)}")
    return [EvalSet(name=s["name"], data=Path(d), metric=s.get("metric", "accuracy"), merge=s.get("merge", {}))
            for s, d in zip(specs, data, strict=True)]


def load_eval_sets(eval_sets: list[EvalSet], model_label_names: list[str]) -> list[tuple]:
    """Read and check every set before any prediction: (eval_set, frame, eval_labels, meta, mapped) each."""
    loaded = []
    for eval_set in eval_sets:
        frame, eval_labels, meta = read_prepared(eval_set.data)
        mapped = map_predictions(model_label_names, eval_set.merge, eval_labels, str(eval_set.data))
        loaded.append((eval_set, frame, eval_labels, meta, mapped))
    return loaded


def set_metrics(eval_set: EvalSet, frame: pd.DataFrame, eval_labels: list[str], pred: np.ndarray) -> dict:
    """The set's metrics from predicted label names (already in the set's label space)."""
    gold = np.array(eval_labels, dtype=object)[frame.label.to_numpy()]
    groups = {c: frame[c].astype(str).tolist() for c in GROUP_COLUMNS if c in frame and eval_set.metric == "hans"}
    return compute_metrics(eval_set.metric, gold.tolist(), list(pred), groups or None)


def map_predictions(model_label_names: list[str], merge: dict[str, str], eval_labels: list[str], where: str):
    """The evaluation-space name of every model label; refuse an evaluation set the model cannot answer."""
    unknown = sorted(set(merge) - set(model_label_names))
    if unknown:
        raise DataError(f"{where}: field 'merge' names {unknown[0]!r}, which is not a model label {model_label_names}")
    mapped = [merge.get(name, name) for name in model_label_names]
    unreachable = sorted(set(eval_labels) - set(mapped))
    if unreachable:
        raise DataError(
            f"{where}: field 'label' has value {unreachable[0]!r} that the model (labels {model_label_names}, "
            f"merge {merge}) can never predict"
        )
    return np.array(mapped, dtype=object)


def score(model, tokenizer, names, eval_set: EvalSet, frame, eval_labels, mapped, args, device) -> tuple[dict, pd.DataFrame]:
    started = time.perf_counter()
    data = EncodedPairs(tokenizer, frame.text_a, frame.text_b, None, args.max_length, input_view(model))
    probs = predict_proba(model, data, args.batch_size, device, args.length_sorted)
    seconds = time.perf_counter() - started
    pred_index = probs.argmax(axis=1)
    gold = np.array(eval_labels, dtype=object)[frame.label.to_numpy()]
    pred = mapped[pred_index]
    metrics = set_metrics(eval_set, frame, eval_labels, pred)
    predictions = pd.DataFrame({"id": frame.id, "gold": gold.astype(str), "pred": pred.astype(str),
                                "model_pred": np.array(names, dtype=object)[pred_index].astype(str)})
    for j, name in enumerate(names):
        predictions[f"prob_{name}"] = probs[:, j]
    return {"metrics": metrics, "n_examples": int(len(frame)), "seconds": seconds}, predictions


def score_all(model, tokenizer, loaded: list[tuple], args, device, out_dir: Path, record: dict,
              model_dir: Path) -> list[str]:
    """Score the model on every loaded set and write ``<out_dir>/<name>.json`` and its predictions."""
    names = model_labels(model)
    written = []
    for eval_set, frame, eval_labels, meta, mapped in loaded:
        result, predictions = score(model, tokenizer, names, eval_set, frame, eval_labels, mapped, args, device)
        pred_path = out_dir / f"{eval_set.name}.predictions.parquet"
        json_path = out_dir / f"{eval_set.name}.json"
        runtime.atomic_write_parquet(predictions, pred_path)
        runtime.atomic_write_json(json_path, {
            "track": "nlu", **record, "eval_set": eval_set.name,
            "metric_kind": eval_set.metric, **result, "predictions": str(pred_path), "data": str(eval_set.data),
            "dataset_meta": meta, "model": {"dir": str(model_dir), "labels": names, "merge": eval_set.merge},
            "provenance": runtime.provenance(args),
        })
        log.info("%s %s: %s", record.get("row", ""), eval_set.name,
                 {k: round(v, 2) for k, v in result["metrics"].items() if "/" not in k})
        written.append(str(json_path))
    return written
