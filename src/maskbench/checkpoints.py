"""Writing a checkpoint folder the way every entry point does: weights, config and tokenizer through a staging
folder, ``train_summary.json`` last — a folder without the summary is an unfinished run."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pandas as pd
from torch import nn

from maskbench import runtime


def write_checkpoint(out_dir: Path, model: nn.Module, tokenizer, summary: dict, mask_set=None,
                     curve: list[dict] | None = None, files_from: Path | None = None) -> None:
    """Weights, config and tokenizer (and ``mask.mask`` from a ``MaskSet``, ``train_curve.csv``, the files of
    ``files_from``, e.g. a from-scratch tokenizer's vocab.txt) via a staging folder, then ``train_summary.json``."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        if files_from is not None:
            for item in Path(files_from).iterdir():
                shutil.copy2(item, staging / item.name)
        model.save_pretrained(staging, safe_serialization=True)
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
    finally:
        shutil.rmtree(staging, ignore_errors=True)
