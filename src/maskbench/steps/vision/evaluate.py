"""Entry point: score the vision runs of one (dataset, level, seed) — the vanilla model and every mask found on it
— in one process that loads each model and the data once.

    python -m maskbench.steps vision.evaluate --runs JSON --head-train UT.safetensors --test T.safetensors \
        --biased-test BT.safetensors --seed 1 --out results/vision/biased_mnist/0.99/eval/seed~1.json

``--runs`` is a JSON list of {name, model_dir, mask (or null), params}. Writes ``--out``: {"runs": [a record per
run]}, each with
task accuracy on the unbiased test split (pooled over the split, per bias-alignment group, and the unweighted mean of
the groups — paper D's "Unbiased" of Table 5), on the biased test split,
bias accuracy (a fresh head per bias attribute trained on the model's features of the unbiased training split,
scored on the unbiased test split; the mean over attributes) and sparsity over the gated layers (per layer too).
Each run's record is kept across a kill or a time limit as soon as it is scored, and a rerun scores only the rest
(maskbench/workflow/staged_records.py).
"""

from __future__ import annotations

import json
import logging
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Compute, start, step_arguments
from maskbench.ffw.heads import HeadSettings
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, load_run_model, loader, read_split
from maskbench.tracks.vision.evaluation import (
    bias_accuracy,
    group_mean_accuracy,
    sparsity_report,
    task_accuracy,
)
from maskbench.tracks.vision.ffw import gate_targets
from maskbench.workflow.staged_records import StagedRecords

PRICED_AS = "images"  # how the cost sheet prices a job of this step (maskbench.workflow.cost.sheet)
log = logging.getLogger("maskbench.steps.vision.evaluate")


@step_arguments(Compute)
class VisionEvaluateArgs:
    runs: str = field(metadata={"help": "JSON list of {name, model_dir, mask, params}"})
    head_train: Path = field(metadata={"help": "unbiased training split: the fresh bias heads train on it"})
    test: Path = field(metadata={"help": "unbiased test split"})
    out: Path = field(metadata={"help": "the JSON to write (a record per run)"})
    seed: int = field(metadata={"help": "fixes the fresh heads' initialisation and order"})
    name: str = field(default="", metadata={"help": "the config's dataset name, recorded"})
    level: str = field(default="", metadata={"help": "the dataset level, recorded"})
    biased_test: Path | None = field(default=None, metadata={"help": "test split biased as the training data"})
    head_settings: str = field(default="{}", metadata={"help": "JSON of HeadSettings fields (config vision.ffw.head)"})


def parse_runs(text: str) -> list[dict]:
    runs = json.loads(text)
    if not isinstance(runs, list) or not runs:
        raise ValueError("--runs: give a non-empty JSON list of {name, model_dir, mask, params}")
    for i, run in enumerate(runs):
        missing = [k for k in ("name", "model_dir") if k not in run]
        if missing:
            raise ValueError(f"--runs[{i}]: field {missing[0]!r} is missing")
        if not Path(run["model_dir"]).is_dir():
            raise ValueError(f"--runs[{i}]: field 'model_dir' is {run['model_dir']!r}, which is not a model folder")
    return runs


def job_fields(args: VisionEvaluateArgs) -> tuple:
    """What shapes every run's record besides the run itself: a part of its staging key."""
    return ("vision.evaluate", str(args.head_train), str(args.test), str(args.biased_test), args.seed, args.name,
            args.level, args.head_settings)


@step_main(VisionEvaluateArgs)
def main(args: VisionEvaluateArgs) -> int:
    runs = parse_runs(args.runs)
    head_settings = HeadSettings(**json.loads(args.head_settings))
    head_train, test = read_split(args.head_train), read_split(args.test)
    biased_test = read_split(args.biased_test) if args.biased_test else None
    masks = {run["name"]: MaskSet.load(run["mask"]) for run in runs if run.get("mask")}
    device = start(args)
    args.out.unlink(missing_ok=True)
    # each run's record kept across a cut-off as soon as it is scored (maskbench/workflow/staged_records.py)
    names = [json.dumps(run, sort_keys=True) for run in runs]
    staged = StagedRecords(args.out, job_fields(args),
                           [args.head_train, args.test, args.biased_test,
                            *(p for run in runs for p in (run["model_dir"], run.get("mask")))],
                           names, unit="run")
    models: dict[str, tuple] = {}
    records = []
    with staged.signals():
        for name, run in zip(names, runs, strict=True):
            record = staged.get(name)
            if record is None:
                record = staged.put(name, score_run(run, masks.get(run["name"]), models, args, device, head_settings,
                                                    (head_train, test, biased_test)))
            records.append(record)
    runtime.atomic_write_json(args.out, {"runs": records, "dataset": args.name or test.dataset, "level": args.level,
                                         "generator": test.dataset, "seed": args.seed,
                                         "provenance": runtime.provenance(args, args.seed)})
    staged.finish()
    return 0


def score_run(run: dict, mask: MaskSet | None, models: dict, args: VisionEvaluateArgs, device,
              head_settings: HeadSettings, splits: tuple) -> dict:
    """The record of one run: its model (loaded once per folder, with the splits as it sees them, into
    ``models``) under its mask, scored on the splits."""
    head_train, test, biased_test = splits
    folder = str(run["model_dir"])
    if folder not in models:  # each model, and the splits as it sees them, built once
        model, meta = load_run_model(folder)
        spec = meta["model_spec"]
        loaders = {name: loader(image_dataset(split, spec), 500)
                   for name, split in (("head_train", head_train), ("test", test), ("biased_test", biased_test))
                   if split is not None}
        models[folder] = (model.to(device).eval(), MaskSwitch(model), loaders)
    model, switch, loaders = models[folder]
    if mask is not None:
        switch.apply(mask)
    else:
        switch.revert()
    runtime.seed_everything(args.seed)
    accuracy, groups = task_accuracy(model, loaders["test"], test.bias_names)
    result = {"run": run["name"], "params": run.get("params", {}), "model_dir": folder,
              "mask": run.get("mask"), "seed": args.seed, "dataset": test.dataset, "num_labels": test.num_classes,
              "task_accuracy": accuracy, "task_groups": groups,
              "unbiased_accuracy": group_mean_accuracy(groups),
              "biased_test_accuracy": task_accuracy(model, loaders["biased_test"])[0]
              if "biased_test" in loaders else None}
    per_attr = bias_accuracy(model, loaders["head_train"], loaders["test"], test.bias_classes, head_settings,
                             args.seed)
    result["bias_accuracy_per_attribute"] = dict(zip(test.bias_names, per_attr.values(), strict=True))
    result["bias_accuracy"] = sum(per_attr.values()) / len(per_attr)
    result.update(sparsity_report(mask.masks if mask is not None else None, model,
                                  [n.replace("\\.", ".") for n in gate_targets(model, structured=False)]))
    log.info("%s: task %.2f (biased test %s), bias %.2f, sparsity %.2f %%", run["name"], accuracy,
             result["biased_test_accuracy"], result["bias_accuracy"], result["sparsity"])
    return result


if __name__ == "__main__":
    run_step(main)
