"""One results folder per config: a run claims its config's `results:` folder, and a config that names a folder
another config has claimed is refused at planning, before any job runs.

The claim is a small file, `<results>/.maskbench-config`, holding the name of the config that first ran there (the
last `--configfile`'s file name: `smoke.yaml` for configs/smoke.yaml; `config.yaml` for the embedded default). Planning reads it (no side effect: dry runs and cluster jobs only read); the workflow's `onstart`
writes it when a run starts. A folder without a claim is free; deleting the claim file frees it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

CLAIM_FILE = ".maskbench-config"


class ResultsFolderTaken(ValueError):
    """The config's results folder holds another config's results."""


def config_name(configfiles: Sequence[str | os.PathLike], default: str = "config.yaml") -> str:
    """The name a run's results folder is claimed by: the last config file's name (an overlay such as
    configs/paper-miniature.yaml, given after configs/paper.yaml, names the run), `default` when none is given."""
    if not configfiles:
        return default
    return Path(configfiles[-1]).name


def claim_path(results: str | os.PathLike) -> Path:
    return Path(results) / CLAIM_FILE


def check_results_folder(results: str | os.PathLike, name: str) -> None:
    """Refuses a results folder claimed by another config, in one line naming the folder, the claim and the config."""
    claim = claim_path(results)
    if not claim.is_file():
        return
    owner = claim.read_text(encoding="utf-8").strip()
    if owner and owner != name:
        raise ResultsFolderTaken(
            f"{claim}: the results folder {str(results)!r} holds the results of config {owner!r}; config {name!r} "
            f"(field results: {str(results)!r}) would overwrite them — give this config a folder of its own (its "
            f"`results:` key, or --config results=...), or delete {claim} to hand the folder over")


def claim_results_folder(results: str | os.PathLike, name: str) -> None:
    """Writes the claim when the folder has none (after check_results_folder has let the run through)."""
    claim = claim_path(results)
    if claim.is_file():
        return
    claim.parent.mkdir(parents=True, exist_ok=True)
    partial = claim.with_name(claim.name + ".partial")
    partial.write_text(name + "\n", encoding="utf-8")
    os.replace(partial, claim)
