"""The user's own files of an nlu config, checked while the workflow plans (rules/nlu/common.smk calls
``check_own_files`` for a config that has them): the classifier of ``model: {init: finetuned}`` (its labels, from its
config.json) and the columns of every precomputed bias source (each value in [0, 1], no row without one, a
distribution summing to 1). A failure is one line naming the file, the field and the value, raised before any job
runs, so nothing is written; the steps check the same again (``nlu.import_given_model``, ``nlu.precomputed_bias``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from maskbench.tracks.nlu.workflow_plan import FINETUNED, PRECOMPUTED


def check_own_files(config: Mapping, train_file: Callable[[str], str | Path]) -> None:
    """``train_file(dataset)``: the local file of a dataset (rules/common.smk's ``local_file``, which stops the
    workflow on a missing one). The readers are imported here, not with the module: planning a config without
    such files imports no pandas."""
    from maskbench.data.local_source import read_local_table
    from maskbench.data.schema import DataError
    from maskbench.tracks.nlu.bias.precomputed import checked_values
    from maskbench.tracks.nlu.given_model import check_checkpoint_labels, local_folder, missing_model

    datasets, tasks = config["datasets"], config["tasks"]
    model = config["model"]
    if model["init"] == FINETUNED:
        folder = local_folder(model["path"])
        problem = missing_model(model["path"]) if folder is None else None
        if problem is not None:
            raise DataError(problem)
        for task, spec in tasks.items():
            labels = datasets[spec["train"]].get("labels")
            if folder is not None and labels is not None:  # a synthetic set's labels: the import step checks them
                check_checkpoint_labels(folder, labels, f"datasets.{spec['train']}.labels (task {task!r})")
    for name, source in config["bias"]["sources"].items():
        if source["kind"] != PRECOMPUTED:
            continue
        for task, spec in tasks.items():
            dataset = datasets[spec["train"]]
            path = Path(train_file(spec["train"]))
            table = read_local_table(path, dataset.get("format"))
            if dataset.get("labels") is None:
                raise DataError(f"config: datasets.{spec['train']}.labels is required for bias source {name!r}")
            checked_values(table.frame, source, task, list(dataset["labels"]), f"{path} (bias.sources.{name})",
                           table.position)
