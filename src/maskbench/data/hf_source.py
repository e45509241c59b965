"""Hugging Face Hub datasets: the split's parquet files in the Hub cache, or an on-disk mirror.

The Hub: the parquet files of the config and split in the repo snapshot at the spec's revision
(``maskbench.hub.dataset_split_files``), downloaded into the Hub cache unless ``HF_HUB_OFFLINE=1``, when only the
cache is read (filled beforehand by ``python -m maskbench.steps fetch``).
Mirror layout: <mirror>/<hub id>/<config or "default">/<split>/ holding either a
`Dataset.save_to_disk` folder or the Hub's parquet-conversion files (*.parquet); with no config, the one config
folder holding the split is taken too (a copy of the parquet branch: jhu-cogsci/hans's plain_text/<split>/).
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from maskbench.data.schema import DataError

MIRROR_ENV = "MASKBENCH_HF_MIRROR"


def mirror_split_dir(mirror, hub_id: str, config: str | None, split: str) -> Path:
    """<mirror>/<hub id>/<config>/<split>; with no config, ``default`` or else the one config folder holding the
    split (a copy of the Hub's parquet branch: jhu-cogsci/hans is ``plain_text/<split>/``)."""
    base = Path(mirror) / hub_id
    if config is None and not (base / "default" / split).is_dir():
        found = sorted(p for p in base.glob(f"*/{split}") if p.is_dir())
        if len(found) == 1:
            return found[0]
    return base / (config or "default") / split


def _is_saved_dataset(folder: Path) -> bool:
    return (folder / "state.json").is_file() or (folder / "dataset_dict.json").is_file()


def _load_mirror(folder: Path, split: str):
    import datasets

    if _is_saved_dataset(folder):
        loaded = datasets.load_from_disk(str(folder))
        if isinstance(loaded, datasets.DatasetDict):
            if split not in loaded:
                raise DataError(
                    f"{folder}: field 'split' has value {split!r} not among saved splits {list(loaded)}"
                )
            loaded = loaded[split]
        return loaded
    files = sorted(str(p) for p in folder.glob("*.parquet"))
    if files:
        return datasets.load_dataset("parquet", data_files=files, split="train")
    return None


def _load_hub(hub_id: str, config: str | None, split: str, revision: str | None):
    """The split from the Hub cache's snapshot of the repo (downloaded first unless offline), read with datasets'
    parquet builder so that the features stored in the files (ClassLabel, Image) come back."""
    import datasets

    from maskbench.hub import dataset_split_files

    _, files = dataset_split_files(hub_id, config, split, revision)
    return datasets.load_dataset("parquet", data_files=[str(f) for f in files], split="train")


def load_hf_frame(
    hub_id: str,
    config: str | None,
    split: str,
    revision: str | None = None,
    mirror=None,
) -> tuple[pd.DataFrame, str]:
    """Return (frame, where): the split as pandas and a description of where it came from.

    mirror defaults to $MASKBENCH_HF_MIRROR; the mirror is tried before the Hub.
    """
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    tried = []
    if mirror:
        folder = mirror_split_dir(mirror, hub_id, config, split)
        if folder.is_dir():
            dataset = _load_mirror(folder, split)
            if dataset is not None:
                return dataset.to_pandas(), str(folder)
            tried.append(f"mirror {folder} (no save_to_disk files and no *.parquet)")
        else:
            tried.append(f"mirror {folder} (no such folder)")
    else:
        tried.append(f"mirror (not set: ${MIRROR_ENV} or spec 'mirror')")
    # Any Hub failure (offline, unknown config, bad revision) ends up in one message with the mirror attempt.
    try:
        dataset = _load_hub(hub_id, config, split, revision)
    except Exception as err:
        # a DataError (maskbench.hub's: the cache lacks the snapshot or the split) is already one line, kept whole
        reason = (str(err).splitlines() or [""])[0][:None if isinstance(err, DataError) else 300]
        tried.append(f"Hub {hub_id!r} (config {config!r}, split {split!r}, revision {revision!r}) -> "
                     f"{type(err).__name__}: {reason}")
        raise DataError(
            f"hf:{hub_id}: field 'split' has value {split!r} (config {config!r}) that could not be loaded; "
            f"tried: " + "; ".join(tried)
        ) from err
    return dataset.to_pandas(), f"hf:{hub_id}/{config or 'default'}/{split}"
