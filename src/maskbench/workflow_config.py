"""The workflow config's cross-reference checks: the shared keys, then those of every track the config names.

rules/common.smk calls `check_references` right after `snakemake.utils.validate`, so a dangling name stops the
run before any job starts, with the key path in the message. Each track's checks live with the track, as
`check(config)` in `tracks/<track>/config_checks.py`; the tracks are the packages under `maskbench/tracks/`, found
here, so a new track registers nothing in this file.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping

from maskbench import tracks
from maskbench.config_checks import ConfigError, check_datasets, check_renamed_keys

DEFAULT_TRACK = "nlu"
__all__ = ["TRACK_CHECKS", "ConfigError", "check_references", "check_renamed_keys", "tracks_of"]

# track -> its cross-reference checks (schemas/<track>.schema.yaml describes its keys)
TRACK_CHECKS: dict[str, Callable[[Mapping], None]] = {
    info.name: importlib.import_module(f"maskbench.tracks.{info.name}.config_checks").check
    for info in pkgutil.iter_modules(tracks.__path__) if info.ispkg}


def tracks_of(config: Mapping) -> list[str]:
    """The tracks a config names: `track:` is one name or a list of names (default: nlu)."""
    track = config.get("track", DEFAULT_TRACK)
    return [track] if isinstance(track, str) else list(track)


def check_references(config: Mapping) -> None:
    if "datasets" in config:
        check_datasets(config)
    for track in tracks_of(config):
        if track not in TRACK_CHECKS:
            raise ConfigError(f"config: track has {track!r}, which is not a track {sorted(TRACK_CHECKS)}")
        TRACK_CHECKS[track](config)
