"""Entry point: the accuracy of the vanilla model and of its FFW masks on a level's biased dev split — the matrix's
``id_dev`` of the baseline and paper D's native rows.

    python -m maskbench.steps vision.dev_scores --runs JSON --biased-dev BD.safetensors --seed 1 --out D.json
"""

from __future__ import annotations

import json
import logging
from dataclasses import field
from pathlib import Path

from maskbench import runtime
from maskbench.compute import Threads, start, step_arguments
from maskbench.masking.apply import MaskSet, MaskSwitch
from maskbench.steps import run_step, step_main
from maskbench.tracks.vision.data import image_dataset, load_run_model, loader, read_split
from maskbench.tracks.vision.evaluation import task_accuracy

log = logging.getLogger("maskbench.steps.vision.dev_scores")


@step_arguments(Threads)
class DevScoresArgs:
    runs: str = field(metadata={"help": "JSON list of {name, model_dir, mask (or null), params}, one model"})
    biased_dev: Path = field(metadata={"help": "the biased dev split"})
    seed: int = field(metadata={"help": "recorded"})
    out: Path = field(metadata={"help": "the JSON to write"})


@step_main(DevScoresArgs)
def main(args: DevScoresArgs) -> int:
    runs = json.loads(args.runs)
    folders = {run["model_dir"] for run in runs}
    if not runs or len(folders) != 1:
        raise ValueError(f"--runs: give a non-empty list of runs on one model folder, got {sorted(folders)}")
    dev = read_split(args.biased_dev)
    masks = {run["name"]: MaskSet.load(run["mask"]) for run in runs if run.get("mask")}
    args.out.unlink(missing_ok=True)
    start(args)
    model, meta = load_run_model(folders.pop())
    model.eval()
    data = loader(image_dataset(dev, meta["model_spec"]), 500)
    switch = MaskSwitch(model)
    records = []
    for run in runs:
        mask = masks.get(run["name"])
        switch.apply(mask) if mask is not None else switch.revert()
        records.append({"run": run["name"], "params": run.get("params", {}), "mask": run.get("mask"),
                        "biased_dev_accuracy": task_accuracy(model, data)[0]})
        log.info("%s: biased dev accuracy %.2f", run["name"], records[-1]["biased_dev_accuracy"])
    switch.revert()
    runtime.atomic_write_json(args.out, {"runs": records, "seed": args.seed, "n": len(dev),
                                         "provenance": runtime.provenance(args, args.seed)})
    return 0


if __name__ == "__main__":
    run_step(main)
