"""A model the user fine-tuned elsewhere (config ``model: {init: finetuned, path: ...}``,
``workflow_plan.FINETUNED``): its label names, read from its ``config.json`` without torch, so that the workflow
can refuse a checkpoint for other labels while it plans (tracks/nlu/own_files.py) and the import step
(``maskbench.steps.nlu.import_given_model``) again before it loads any weight.

Such a model is the frozen baseline every mask search of its task starts from: it is evaluated as it is and never
fine-tuned again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from maskbench.data.schema import DataError

# the names transformers gives labels nobody named (LABEL_0, LABEL_1, ...): they say nothing about the label order
_DEFAULT_NAME = re.compile(r"LABEL_\d+")


def checkpoint_labels(folder: str | Path) -> list[str]:
    """The label names of a Hugging Face classifier folder, in id order, from its ``config.json`` (``id2label``, with
    ``num_labels`` where the file states it). A missing or unreadable file, or ids that are not 0..n-1, is a
    DataError naming the file."""
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise DataError(f"{path}: field 'path' names a folder without config.json; is it a folder written by "
                        "save_pretrained?")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataError(f"{path}: the file is not JSON ({err})") from err
    id2label = config.get("id2label")
    if not isinstance(id2label, Mapping) or not id2label:
        raise DataError(f"{path}: field 'id2label' has value {id2label!r}; a classifier's config names its labels")
    try:
        by_id = {int(k): str(v) for k, v in id2label.items()}
    except ValueError as err:
        raise DataError(f"{path}: field 'id2label' has a key that is not a class id: {sorted(id2label)}") from err
    if sorted(by_id) != list(range(len(by_id))):
        raise DataError(f"{path}: field 'id2label' has ids {sorted(by_id)}, not 0..{len(by_id) - 1}")
    stated = config.get("num_labels")
    if stated is not None and stated != len(by_id):
        raise DataError(f"{path}: field 'num_labels' has value {stated}, but id2label names {len(by_id)} labels")
    return [by_id[i] for i in range(len(by_id))]


def check_checkpoint_labels(folder: str | Path, labels: list[str], where: str) -> None:
    """Refuse a checkpoint whose labels are not ``labels`` (count, names and order): one line naming its
    config.json, the field and both values; ``where`` says which config key gave ``labels``."""
    found = checkpoint_labels(folder)
    path = Path(folder) / "config.json"
    if len(found) != len(labels):
        raise DataError(f"{path}: field 'num_labels' has value {len(found)} ({found}), but {where} has "
                        f"{len(labels)} labels {labels}")
    if found != list(labels):
        hint = ""
        if all(_DEFAULT_NAME.fullmatch(name) for name in found):
            hint = ("; the checkpoint was saved with transformers' default names: write its label names into "
                    "id2label (and label2id) of its config.json")
        raise DataError(f"{path}: field 'id2label' has value {found}, but {where} is {list(labels)} (the same names "
                        f"in the same order){hint}")


def missing_model(path: str) -> str | None:
    """Why ``model.path`` cannot be taken in, found while planning (``local_folder`` found nothing): not a folder
    here, and no Hub model of that id in the Hub cache, where the import job could not fetch it either — the Hub
    is off ($HF_HUB_OFFLINE), or the path's parent folder is here (a local path whose last folder is missing).
    None where the job may still download it (a Hub id, online) or the path is a ``package:`` model."""
    from maskbench.hub import FETCH_HINT, hub_cache_dir, hub_offline, is_hub_id

    if path.startswith("package:"):
        return None
    parent = Path(path).expanduser().parent
    if is_hub_id(path) and not hub_offline() and not (parent != Path(".") and parent.is_dir()):
        return None
    return (f"config: model.path has value {path!r}, which is no folder here and no Hub model in the Hub cache "
            f"{hub_cache_dir()}: copy your checkpoint (save_pretrained's files) to that folder (docs/your-model.md, "
            f"step 2), or, for a Hub model, {FETCH_HINT}")


def local_folder(path: str) -> Path | None:
    """The folder a ``model.path`` names on this machine while planning: a local folder, or a Hub id's snapshot
    already in the Hub cache (None when it is not there yet: the import step checks it after the download)."""
    if Path(path).expanduser().is_dir():
        return Path(path).expanduser()
    if path.startswith("package:"):
        return None
    from maskbench.hub import is_hub_id, model_snapshot

    if not is_hub_id(path):
        return None
    try:
        return model_snapshot(path, local_files_only=True)
    except Exception:  # not cached yet (HubError, or huggingface_hub's own errors): the import step checks it
        return None
