"""Cut the negation subset (gold entailment + negated hypothesis) out of a prepared NLI file.

python -m maskbench.steps nlu.negation_subset --input X.parquet --out Y.parquet --summary Y.json [--words JSON-list]
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.data.negation import NEGATION_WORDS, negation_subset
from maskbench.data.schema import DataError, read_prepared, write_prepared_with_summary
from maskbench.runtime import provenance
from maskbench.steps import run_step, step_main


def _words_json(text: str) -> tuple[str, ...]:
    try:
        words = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--words is not valid JSON: {err}") from err
    if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
        raise ValueError(f"--words must be a non-empty JSON list of strings, got {text!r}")
    return tuple(words)


@dataclass(frozen=True)
class NegationSubsetArgs:
    input: Path = field(metadata={"help": "prepared NLI parquet"})
    out: Path = field(metadata={"help": "subset parquet to write"})
    summary: Path = field(metadata={"help": "summary JSON to write"})
    words: tuple[str, ...] = field(default=NEGATION_WORDS, metadata={
        "help": "negation words as a JSON list (default: paper A's list)", "parse": _words_json})
    entailment_label: str = field(default="entailment", metadata={"help": "label name of gold entailment"})


def run(args: NegationSubsetArgs) -> dict:
    start = time.perf_counter()
    df, labels, meta = read_prepared(args.input)
    subset = negation_subset(df, labels, entailment_label=args.entailment_label, words=args.words)
    if len(subset) == 0:
        raise DataError(
            f"{args.input}: field 'text_b' has no gold-{args.entailment_label} hypothesis containing any of "
            f"{list(args.words)} (negation subset would be empty, {len(df)} input rows)"
        )
    meta = {k: v for k, v in meta.items() if k != "labels"}
    meta.update(subset="negation", parent=str(args.input), words=list(args.words),
                entailment_label=args.entailment_label)
    summary = {
        "input": str(args.input),
        "dataset": meta.get("dataset"),
        "task": meta.get("task"),
        "n_input": len(df),
        "n_examples": len(subset),
        "words": list(args.words),
        "entailment_label": args.entailment_label,
        "out": str(args.out),
        "provenance": provenance(args),
    }
    summary["seconds"] = round(time.perf_counter() - start, 3)
    write_prepared_with_summary(subset, labels, args.out, meta, args.summary, summary)
    return summary


@step_main(NegationSubsetArgs)
def main(args: NegationSubsetArgs) -> int:
    summary = run(args)
    print(f"negation subset: {summary['n_examples']} of {summary['n_input']} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    run_step(main)
