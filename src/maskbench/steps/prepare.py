"""Prepare one dataset: load it through the registry, validate, write parquet + summary JSON.

python -m maskbench.steps prepare --name NAME --spec JSON --out OUT.parquet --summary OUT.json [--task TASK]
    [--local-file PATH] [--single-text]
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from maskbench.data.registry import SOURCE_ID, load_dataset
from maskbench.data.schema import write_prepared_with_summary
from maskbench.runtime import provenance
from maskbench.steps import run_step, step_main


def _spec_json(text: str) -> dict:
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"--spec is not valid JSON: {err}") from err
    if not isinstance(spec, dict):
        raise ValueError(f"--spec must be a JSON object, got {type(spec).__name__}")
    return spec


@dataclass(frozen=True)
class PrepareArgs:
    name: str = field(metadata={"help": "dataset name (config key); used for default ids"})
    spec: dict = field(metadata={"help": "the dataset's spec as a JSON object", "parse": _spec_json})
    out: Path = field(metadata={"help": "prepared parquet to write"})
    summary: Path = field(metadata={"help": "summary JSON to write"})
    task: str | None = field(default=None, metadata={"help": "task name (default: the spec's 'task')"})
    local_file: Path | None = field(default=None, metadata={
        "help": "a local: source's file as the workflow resolved it (default: the spec's path, relative to the "
                "working directory)"})
    single_text: bool = field(default=False, metadata={
        "help": "the task is single-text: text_b is empty (default: a text pair, text_b required)"})


def prepare(args: PrepareArgs) -> dict:
    """Write the prepared parquet and summary; return the summary."""
    start = time.perf_counter()
    spec = dict(args.spec)
    # a spec may say it is single-text itself (the gender track's task splits: gender.performance.tasks.<t>.single_text)
    single_text = args.single_text or bool(spec.pop("single_text", False))
    df, labels = load_dataset(args.name, spec, base_dir=Path("."), single_text=single_text,
                              local_path=args.local_file)
    task = args.task or args.spec.get("task")
    source = args.spec["source"]
    counts = df["label"].value_counts()
    summary = {
        "name": args.name,
        "task": task,
        "source": source,
        "n_examples": len(df),
        "label_counts": {label: int(counts.get(i, 0)) for i, label in enumerate(labels)},
        "labels": labels,
        "columns": list(df.columns),
        "out": str(args.out),
        "provenance": provenance(args),
    }
    meta = {"dataset": args.name, "task": task, "source": source, "spec": args.spec}
    if spec.get("duplicate_ids") == "renumber":
        # rows whose repeated id became "<id>-<k>" (the registry's duplicate_ids: renumber; the old id in source_id)
        renumbered = int((df["id"] != df[SOURCE_ID]).sum())
        summary["ids_renumbered"] = meta["ids_renumbered"] = renumbered
    summary["seconds"] = round(time.perf_counter() - start, 3)
    write_prepared_with_summary(df, labels, args.out, meta, args.summary, summary)
    return summary


@step_main(PrepareArgs)
def main(args: PrepareArgs) -> int:
    summary = prepare(args)
    print(f"prepared {summary['name']}: {summary['n_examples']} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    run_step(main)
