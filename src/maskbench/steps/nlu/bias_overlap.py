"""Entry point: the hand-crafted bias model — logistic regression on lexical-overlap features (NLI,
paraphrase) or on the claim's pooled word vectors (fact verification) — its probabilities on the whole
training set and its accuracy on the evaluation sets.

    python -m maskbench.steps nlu.bias_overlap --train T.parquet --features overlap --embeddings-from M \
        --eval-data dev.parquet hans.parquet --eval-sets JSON --out probs.parquet --eval-dir D
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

from maskbench import runtime
from maskbench.data.schema import read_prepared
from maskbench.steps import run_step, step_main
from maskbench.tracks.nlu.bias.overlap_features import (
    FEATURE_SETS,
    claim_features,
    embedding_vectors,
    fasttext_vectors,
    pair_features,
)
from maskbench.tracks.nlu.bias.probs import write_probs
from maskbench.tracks.nlu.evaluation import load_eval_sets, parse_eval_sets, set_metrics

log = logging.getLogger("maskbench.steps.nlu.bias_overlap")


@dataclass
class BiasOverlapArgs:
    train: Path = field(metadata={"help": "prepared training parquet"})
    out: Path = field(metadata={"help": "bias probabilities of the training set"})
    eval_dir: Path = field(metadata={"help": "folder for <eval set>.json accuracies of the bias model"})
    eval_data: list[Path] = field(metadata={"help": "evaluation parquets, in the order of --eval-sets"})
    eval_sets: str = field(metadata={"help": "JSON list of {name, metric, merge}"})
    features: str = field(default="overlap", metadata={"help": "overlap (pairs) or claim (text_b pooled vectors)"})
    vectors: Path | None = field(default=None, metadata={"help": "fastText .vec file (else --embeddings-from)"})
    embeddings_from: Path | None = field(default=None, metadata={"help": "model folder whose input embeddings to use"})
    binary_positive: str = field(default="", metadata={"help": "train label-vs-rest (chrisc36's entail vs not) and "
                                                               "split the rest equally; empty: all labels"})
    feature_set: str = field(default="project", metadata={
        "help": "overlap features: project (5) or chrisc36 (7: + log length difference, second-smallest similarity)"})
    solver: str = field(default="lbfgs", metadata={"help": "sklearn LogisticRegression solver (chrisc36: liblinear)"})
    inverse_regularisation: float = field(default=0.0, metadata={
        "help": "LogisticRegression C (0: 100 for label-vs-rest as chrisc36, 1 over all labels)"})
    class_weight: str = field(default="none", metadata={"help": "none or balanced (chrisc36: balanced)"})
    task: str = field(default="", metadata={"help": "recorded"})
    seed: int = field(default=0, metadata={"help": "recorded; the model is deterministic"})


def featurise(frame, kind: str, vector, feature_set: str = "project") -> np.ndarray:
    if kind == "overlap":
        return np.stack([pair_features(a, b, vector, feature_set)
                         for a, b in zip(frame.text_a, frame.text_b, strict=True)])
    if kind == "claim":
        return np.stack([claim_features(b, vector) for b in frame.text_b])
    raise ValueError(f"--features {kind!r} is unknown; choose overlap or claim")


def word_vectors(args: BiasOverlapArgs):
    if args.vectors is not None:
        return fasttext_vectors(args.vectors)
    if args.embeddings_from is None:
        raise ValueError("give --vectors (a fastText .vec file) or --embeddings-from (a model folder)")
    from maskbench.text.models import load_classifier

    model, tokenizer = load_classifier(args.embeddings_from)
    return embedding_vectors(model, tokenizer)


SOLVERS = ("lbfgs", "liblinear")


class BiasModel:
    """Logistic regression over all labels, or label-vs-rest with the rest's probability split equally."""

    def __init__(self, labels: list[str], binary_positive: str = "", solver: str = "lbfgs", c: float = 0.0,
                 class_weight: str = "none"):
        self.labels, self.positive = labels, binary_positive
        if binary_positive and binary_positive not in labels:
            raise ValueError(f"--binary-positive {binary_positive!r} is not a label {labels}")
        if solver not in SOLVERS:
            raise ValueError(f"--solver {solver!r} is unknown; choose one of {SOLVERS}")
        if class_weight not in ("none", "balanced"):
            raise ValueError(f"--class-weight {class_weight!r} is unknown; choose none or balanced")
        if solver == "liblinear" and len(labels) > 2 and not binary_positive:
            raise ValueError(f"--solver liblinear fits two classes only, and the labels are {labels}: give "
                             "--binary-positive (chrisc36: entailment vs the rest) or use lbfgs")
        if c < 0:
            raise ValueError(f"--inverse-regularisation must be > 0 (0: the default), got {c}")
        c = c or (100.0 if binary_positive else 1.0)
        self.lr = LogisticRegression(max_iter=2000, C=c, solver=solver,
                                     class_weight=None if class_weight == "none" else class_weight)

    def fit(self, x: np.ndarray, y: np.ndarray) -> BiasModel:
        target = (y == self.labels.index(self.positive)).astype(int) if self.positive else y
        self.lr.fit(x, target)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        if not self.positive:
            out = np.zeros((len(x), len(self.labels)))
            out[:, self.lr.classes_] = self.lr.predict_proba(x)
            return out
        p = self.lr.predict_proba(x)[:, list(self.lr.classes_).index(1)]
        k = self.labels.index(self.positive)
        out = np.repeat(((1 - p) / (len(self.labels) - 1))[:, None], len(self.labels), axis=1)
        out[:, k] = p
        return out


@step_main(BiasOverlapArgs)
def main(args: BiasOverlapArgs) -> int:
    train, labels, meta = read_prepared(args.train)
    loaded = load_eval_sets(parse_eval_sets(args.eval_sets, args.eval_data), labels)  # checked before fitting
    model = BiasModel(labels, args.binary_positive, args.solver, args.inverse_regularisation, args.class_weight)
    if args.feature_set not in FEATURE_SETS:
        raise ValueError(f"--feature-set {args.feature_set!r} is unknown; choose one of {sorted(FEATURE_SETS)}")
    vector = word_vectors(args)
    train_x = featurise(train, args.features, vector, args.feature_set)
    model.fit(train_x, train.label.to_numpy())
    probs = model.predict_proba(train_x)
    for es, frame, eval_labels, _, mapped in loaded:
        pred = mapped[model.predict_proba(featurise(frame, args.features, vector, args.feature_set)).argmax(1)]
        metrics = set_metrics(es, frame, eval_labels, pred)
        runtime.atomic_write_json(args.eval_dir / f"{es.name}.json", {
            "track": "nlu", "task": args.task, "row": "bias_overlap", "seed": args.seed, "eval_set": es.name,
            "metric_kind": es.metric, "n_examples": int(len(frame)), "metrics": metrics,
            "model": {"kind": "logistic_regression", "features": args.features, "labels": labels,
                      **({} if args.feature_set == "project" else {"feature_set": args.feature_set}),
                      **({} if args.solver == "lbfgs" else {"solver": args.solver}),
                      **({} if args.class_weight == "none" else {"class_weight": args.class_weight}),
                      **({"C": args.inverse_regularisation} if args.inverse_regularisation else {})},
            "provenance": runtime.provenance(args)})
        log.info("bias model on %s: accuracy %.2f", es.name, metrics["accuracy"])
    write_probs(args.out, train.id, probs, labels, {"task": meta.get("task"), "dataset": meta.get("dataset"),
                                                    "source": f"overlap:{args.features}",
                                                    "provenance": runtime.provenance(args)})
    log.info("in-sample accuracy %.2f", float((probs.argmax(1) == train.label.to_numpy()).mean() * 100))
    return 0


if __name__ == "__main__":
    run_step(main)
