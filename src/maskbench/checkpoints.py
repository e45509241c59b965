"""Writing a checkpoint folder the way every entry point does: weights (with their checksum,
maskbench/checkpoint_integrity.py), config and tokenizer through a staging folder, ``train_summary.json`` last — a
folder without the summary is an unfinished run."""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd
from torch import nn

from maskbench import runtime
from maskbench.checkpoint_integrity import seal_safetensors

log = logging.getLogger(__name__)


def staging_folders(out_dir: Path) -> list[Path]:
    """The staging folders of ``out_dir`` (``.<name>.<8 random characters>/`` beside it, as `write_checkpoint`
    makes them with ``tempfile.mkdtemp``); a longer output name (``seed~1.5`` for ``seed~1``) does not match."""
    pattern = re.compile(rf"\.{re.escape(out_dir.name)}\.[a-z0-9_]{{8}}")
    if not out_dir.parent.is_dir():
        return []
    return sorted(item for item in out_dir.parent.iterdir() if pattern.fullmatch(item.name) and item.is_dir())


def sweep_staging(out_dir: Path) -> list[Path]:
    """Remove the staging folders a killed job (``kill -9``, a cancelled cluster job) left beside ``out_dir``.

    Only this output's own: one output is written by one job at a time, so any staging folder of the same name
    is a leftover, while other outputs' jobs in the same folder may be running. Returns what was removed."""
    stale = staging_folders(out_dir)
    for folder in stale:
        shutil.rmtree(folder, ignore_errors=True)
        log.info("removed %s, the staging folder of an earlier run that was cut off", folder)
    return stale


def write_checkpoint(out_dir: Path, model: nn.Module, tokenizer, summary: dict, mask_set=None,
                     curve: list[dict] | None = None, files_from: Path | None = None) -> None:
    """Weights (with their checksum), config and tokenizer (and ``mask.mask`` from a ``MaskSet``,
    ``train_curve.csv``, the files of ``files_from``, e.g. a from-scratch tokenizer's vocab.txt) via a staging
    folder, then ``train_summary.json``."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    sweep_staging(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    weights = sum(p.numel() * p.element_size() for p in model.state_dict().values())
    try:
        if files_from is not None:
            for item in Path(files_from).iterdir():
                shutil.copy2(item, staging / item.name)
        model.save_pretrained(staging, safe_serialization=True)
        for weights in sorted(staging.glob("*.safetensors")):  # model.safetensors (or its shards): its checksum
            seal_safetensors(weights)
        tokenizer.save_pretrained(staging)
        if curve:
            pd.DataFrame(curve).to_csv(staging / "train_curve.csv", index=False)
        if mask_set is not None:
            mask_set.save(staging / "mask.mask")
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "train_summary.json").unlink(missing_ok=True)  # never a stale summary over new files
        for item in staging.iterdir():
            item.replace(out_dir / item.name)
        runtime.atomic_write_json(out_dir / "train_summary.json", summary)
    except runtime.DiskFullError:
        raise
    except Exception as err:
        if runtime.is_disk_full(err, staging):
            # the staging folder goes below; the folder has no train_summary.json, so it is not a finished run
            raise runtime.disk_full(out_dir / "model.safetensors", needed=weights, about=True) from err
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
