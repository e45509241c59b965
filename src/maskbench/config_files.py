"""Workflow config files read as snakemake reads several `--configfile`s: merged in order, a later file's mappings
updating an earlier one's key by key (lists and scalars replaced)."""

from __future__ import annotations

from pathlib import Path

import yaml


def merge(base: dict, update: dict) -> dict:
    out = dict(base)
    for key, value in update.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def read_configs(paths: list[Path]) -> dict:
    """The config files merged in order; a missing file or one that is not a mapping is a DataError naming it."""
    from maskbench.data.schema import DataError

    config: dict = {}
    for path in map(Path, paths):
        if not path.is_file():
            raise DataError(f"{path}: the config file does not exist (field --configfile)")
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, dict):
            raise DataError(f"{path}: not a YAML mapping (field --configfile)")
        config = merge(config, loaded)
    return config
